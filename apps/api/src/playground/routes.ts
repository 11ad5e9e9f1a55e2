/**
 * `GET /` — the playground page, as a Hono sub-app that createApp mounts at the root.
 *
 * The page inlines its script and style, so it is one public response with no other routes to
 * authorise. A Content-Security-Policy pins exactly those two inline blocks by their sha256 and
 * allows network requests only to this origin: nothing else can run in the page or be loaded into it.
 * The hashes are computed once, lazily (Web Crypto is async, and Workers allow no I/O-like work
 * at module load).
 */
import { Hono } from "hono";
import { PLAYGROUND_SCRIPT } from "./client.ts";
import { PLAYGROUND_STYLE, playgroundHtml } from "./page.ts";

async function cspHash(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  let binary = "";
  for (const byte of new Uint8Array(digest)) binary += String.fromCharCode(byte);
  return `'sha256-${btoa(binary)}'`;
}

let page: Promise<{ html: string; csp: string }> | undefined;

function playgroundPage(): Promise<{ html: string; csp: string }> {
  page ??= (async () => {
    const [script, style] = await Promise.all([cspHash(PLAYGROUND_SCRIPT), cspHash(PLAYGROUND_STYLE)]);
    const csp = [
      "default-src 'none'",
      `script-src ${script}`,
      `style-src ${style}`,
      "connect-src 'self'",
      "img-src 'self' data:",
      "base-uri 'none'",
      "form-action 'none'",
      "frame-ancestors 'none'",
    ].join("; ");
    return { html: playgroundHtml(PLAYGROUND_SCRIPT, PLAYGROUND_STYLE), csp };
  })();
  return page;
}

export const playgroundRoutes = new Hono();

playgroundRoutes.get("/", async (c) => {
  const { html, csp } = await playgroundPage();
  c.header("content-security-policy", csp);
  c.header("x-content-type-options", "nosniff");
  c.header("cache-control", "no-cache");
  return c.html(html);
});
