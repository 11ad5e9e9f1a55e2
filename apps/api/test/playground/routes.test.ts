/**
 * GET / — the playground page with a Content-Security-Policy that pins exactly its inline script
 * and style by sha256 and lets the page talk only to its own origin.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { PLAYGROUND_SCRIPT } from "../../src/playground/client.ts";
import { PLAYGROUND_STYLE, playgroundHtml } from "../../src/playground/page.ts";
import { playgroundRoutes } from "../../src/playground/routes.ts";

const sha256 = (text: string) => `'sha256-${createHash("sha256").update(text, "utf8").digest("base64")}'`;

describe("playground route", () => {
  it("serves the page with its CSP, nosniff and no-cache, the same page on every request", async () => {
    const res = await playgroundRoutes.request("/");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("cache-control")).toBe("no-cache");
    expect(await res.text()).toBe(playgroundHtml(PLAYGROUND_SCRIPT, PLAYGROUND_STYLE));
    expect(res.headers.get("content-security-policy")).toBe(
      [
        "default-src 'none'",
        `script-src ${sha256(PLAYGROUND_SCRIPT)}`,
        `style-src ${sha256(PLAYGROUND_STYLE)}`,
        "connect-src 'self'",
        "img-src 'self' data:",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
      ].join("; "),
    );
    const again = await playgroundRoutes.request("/");
    expect(again.headers.get("content-security-policy")).toBe(res.headers.get("content-security-policy"));
  });

  it("serves only GET /", async () => {
    expect((await playgroundRoutes.request("/other")).status).toBe(404);
    expect((await playgroundRoutes.request("/", { method: "POST" })).status).toBe(404);
  });
});
