/**
 * GET /docs: the API reference as one self-contained HTML page, rendered on the server from the
 * same OpenAPI document as /openapi.json. No scripts, fonts or styles from elsewhere: it works on
 * an air-gapped machine and under a strict Content-Security-Policy. (Scalar / Swagger UI load a
 * multi-megabyte bundle from a CDN at runtime, which this page must not need.)
 */

// biome-ignore lint/suspicious/noExplicitAny: an OpenAPI document is walked generically
type Json = any;

const escapeHtml = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[ch]!,
  );

const METHODS = ["get", "post", "put", "patch", "delete"] as const;

/** `#/components/schemas/Foo` → a link to the schema's section. */
function schemaHtml(schema: Json): string {
  if (schema?.$ref) {
    const name = String(schema.$ref).split("/").at(-1)!;
    return `<a href="#schema-${escapeHtml(name)}">${escapeHtml(name)}</a>`;
  }
  return `<pre>${escapeHtml(JSON.stringify(schema, null, 2))}</pre>`;
}

function operationHtml(path: string, method: string, op: Json): string {
  const params = (op.parameters ?? []) as Json[];
  const body = op.requestBody?.content as Record<string, Json> | undefined;
  const responses = Object.entries((op.responses ?? {}) as Record<string, Json>);
  const secured = (op.security ?? []).length > 0;
  return `<section class="op" id="${escapeHtml(`${method}-${path}`)}">
<h3><span class="method ${method}">${method.toUpperCase()}</span> <code>${escapeHtml(path)}</code>${secured ? ' <span class="auth">Bearer key</span>' : ""}</h3>
${op.summary ? `<p><strong>${escapeHtml(op.summary)}</strong></p>` : ""}
${op.description ? `<p>${escapeHtml(op.description)}</p>` : ""}
${
  params.length
    ? `<h4>Parameters</h4><table><tr><th>name</th><th>in</th><th>required</th><th>schema</th></tr>${params
        .map(
          (p) =>
            `<tr><td><code>${escapeHtml(p.name)}</code></td><td>${escapeHtml(p.in)}</td><td>${p.required ? "yes" : "no"}</td><td>${schemaHtml(p.schema)}</td></tr>`,
        )
        .join("")}</table>`
    : ""
}
${
  body
    ? `<h4>Request body</h4>${Object.entries(body)
        .map(([type, media]) => `<p><code>${escapeHtml(type)}</code>: ${schemaHtml(media.schema)}</p>`)
        .join("")}`
    : ""
}
<h4>Responses</h4><table><tr><th>status</th><th>meaning</th><th>body</th></tr>${responses
    .map(
      ([status, r]) =>
        `<tr><td>${escapeHtml(status)}</td><td>${escapeHtml(r.description ?? "")}</td><td>${Object.entries(
          (r.content ?? {}) as Record<string, Json>,
        )
          .map(
            ([type, media]) =>
              `<code>${escapeHtml(type)}</code> ${media.schema ? schemaHtml(media.schema) : ""}`,
          )
          .join("<br>")}</td></tr>`,
    )
    .join("")}</table>
</section>`;
}

export function renderDocsPage(doc: Json): string {
  const title = `${doc.info?.title ?? "API"} ${doc.info?.version ?? ""}`.trim();
  const ops: string[] = [];
  const toc: string[] = [];
  for (const [path, item] of Object.entries((doc.paths ?? {}) as Record<string, Json>)) {
    for (const method of METHODS) {
      if (!item[method]) continue;
      ops.push(operationHtml(path, method, item[method]));
      toc.push(
        `<li><a href="#${escapeHtml(`${method}-${path}`)}"><code>${method.toUpperCase()} ${escapeHtml(path)}</code></a> ${escapeHtml(item[method].summary ?? "")}</li>`,
      );
    }
  }
  const schemas = Object.entries((doc.components?.schemas ?? {}) as Record<string, Json>).map(
    ([name, schema]) =>
      `<section id="schema-${escapeHtml(name)}"><h3>${escapeHtml(name)}</h3><pre>${escapeHtml(JSON.stringify(schema, null, 2))}</pre></section>`,
  );
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;max-width:980px;margin:2rem auto;padding:0 1rem;color:#1b1b1b}
code,pre{font:13px ui-monospace,Menlo,Consolas,monospace}pre{background:#f5f5f7;padding:.6rem;overflow:auto;border-radius:6px}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top}
.op{border-top:2px solid #eee;margin-top:1.5rem}.method{display:inline-block;min-width:3.5rem;padding:0 .4rem;border-radius:4px;color:#fff;font-size:13px;text-align:center}
.get{background:#2f7d32}.post{background:#1565c0}.put,.patch{background:#8d6e00}.delete{background:#b71c1c}.auth{font-size:12px;color:#8d6e00}
</style></head><body>
<h1>${escapeHtml(title)}</h1>
${doc.info?.description ? `<p>${escapeHtml(doc.info.description)}</p>` : ""}
<p>Machine-readable: <a href="/openapi.json"><code>/openapi.json</code></a>.</p>
<h2>Endpoints</h2><ul>${toc.join("")}</ul>
${ops.join("\n")}
<h2>Schemas</h2>
${schemas.join("\n")}
</body></html>`;
}
