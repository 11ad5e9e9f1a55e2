/**
 * The /docs page rendered from an OpenAPI document: each operation with its method, path, auth,
 * parameters, body and responses, schema references as links to their section, everything from
 * the document HTML-escaped, and nothing loaded from elsewhere.
 */
import { describe, expect, it } from "vitest";
import { renderDocsPage } from "../src/docs-page.ts";

const doc = {
  openapi: "3.1.0",
  info: { title: "Troupe <API>", version: "1.2", description: "Teams & agents" },
  paths: {
    "/v1/teams/{name}": {
      get: {
        summary: "One team's manifest",
        security: [{ bearer: [] }],
        parameters: [
          { name: "name", in: "path", required: true, schema: { type: "string" } },
          { name: "ref", in: "query", schema: { type: "string" } },
        ],
        responses: {
          200: {
            description: "The manifest.",
            content: { "application/json": { schema: { $ref: "#/components/schemas/Manifest" } } },
          },
          404: { description: "`not_found`" },
        },
      },
    },
    "/healthz": {
      get: { summary: "Liveness", security: [], responses: { 200: { description: "up" } } },
    },
    "/v1/solve": {
      post: {
        summary: "Solve",
        requestBody: { content: { "application/json": { schema: { type: "object", title: "<b>" } } } },
        responses: {},
      },
    },
  },
  components: { schemas: { Manifest: { type: "object", description: 'a "team"' } } },
};

describe("renderDocsPage", () => {
  const html = renderDocsPage(doc);

  it("a title from info, a contents list and a section per operation, in document order", () => {
    expect(html.startsWith("<!doctype html>")).toBe(true);
    expect(html).toContain("<title>Troupe &lt;API&gt; 1.2</title>");
    expect(html).toContain("<p>Teams &amp; agents</p>");
    const sections = [...html.matchAll(/<section class="op" id="([^"]+)">/g)].map((m) => m[1]);
    expect(sections).toEqual(["get-/v1/teams/{name}", "get-/healthz", "post-/v1/solve"]);
    expect(html).toContain(
      '<li><a href="#get-/v1/teams/{name}"><code>GET /v1/teams/{name}</code></a> One team&#39;s manifest</li>',
    );
  });

  it("marks secured operations, tables parameters and responses, and links schema references", () => {
    const team = html.slice(html.indexOf('id="get-/v1/teams/{name}"'), html.indexOf('id="get-/healthz"'));
    expect(team).toContain('<span class="auth">Bearer key</span>');
    expect(team).toContain(
      "<tr><td><code>name</code></td><td>path</td><td>yes</td><td><pre>{\n  &quot;type&quot;: &quot;string&quot;\n}</pre></td></tr>",
    );
    expect(team).toContain("<tr><td><code>ref</code></td><td>query</td><td>no</td>");
    expect(team).toContain(
      '<tr><td>200</td><td>The manifest.</td><td><code>application/json</code> <a href="#schema-Manifest">Manifest</a></td></tr>',
    );
    expect(team).toContain("<tr><td>404</td><td>`not_found`</td><td></td></tr>");
    const health = html.slice(html.indexOf('id="get-/healthz"'), html.indexOf('id="post-/v1/solve"'));
    expect(health).not.toContain("Bearer key");
    expect(health).not.toContain("<h4>Parameters</h4>");
    const solve = html.slice(html.indexOf('id="post-/v1/solve"'));
    expect(solve).toContain("<h4>Request body</h4><p><code>application/json</code>: <pre>");
    expect(solve).toContain("&quot;title&quot;: &quot;&lt;b&gt;&quot;");
    expect(html).toContain('<section id="schema-Manifest"><h3>Manifest</h3><pre>');
    expect(html).toContain("&quot;a \\&quot;team\\&quot;&quot;");
  });

  it("loads nothing from elsewhere: no scripts, no external links or stylesheets", () => {
    expect(html).not.toMatch(/<script|<link|src=|https?:\/\//);
    expect(renderDocsPage({})).toContain("<title>API</title>");
  });
});
