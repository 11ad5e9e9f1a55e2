/**
 * The playground's HTML: one self-contained page with the script and style inlined exactly once,
 * every element the script looks up by id present, and nothing loaded from elsewhere.
 */
import { describe, expect, it } from "vitest";
import { PLAYGROUND_SCRIPT } from "../../src/playground/client.ts";
import { PLAYGROUND_STYLE, playgroundHtml } from "../../src/playground/page.ts";

describe("playgroundHtml", () => {
  it("inlines the script as a module and the style, each exactly once, byte for byte", () => {
    const html = playgroundHtml("console.log(1)", "body{color:red}");
    expect(html.startsWith("<!doctype html>")).toBe(true);
    expect(html.split("<style>body{color:red}</style>")).toHaveLength(2);
    expect(html.split('<script type="module">console.log(1)</script>')).toHaveLength(2);
    expect(html.match(/<script/g)).toHaveLength(1);
    expect(html.match(/<style/g)).toHaveLength(1);
    expect(html).toContain("<title>Troupe playground</title>");
  });

  it("has every element the script looks up by id, each id once", () => {
    const html = playgroundHtml(PLAYGROUND_SCRIPT, PLAYGROUND_STYLE);
    const wanted = new Set([...PLAYGROUND_SCRIPT.matchAll(/\$\("([a-z0-9-]+)"\)/g)].map((m) => m[1]!));
    expect(wanted.size).toBeGreaterThan(10);
    for (const id of wanted) {
      expect(html.split(`id="${id}"`).length - 1, id).toBe(1);
    }
  });

  it("loads nothing from elsewhere: no external src or href, the icon a data: URL", () => {
    const html = playgroundHtml(PLAYGROUND_SCRIPT, PLAYGROUND_STYLE);
    expect(html).not.toMatch(/\bsrc=/);
    expect([...html.matchAll(/href="([^"]*)"/g)].map((m) => m[1])).toEqual(["data:,", "/docs"]);
    expect(PLAYGROUND_STYLE).not.toMatch(/url\(|@import/);
  });
});
