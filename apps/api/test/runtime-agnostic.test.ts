/**
 * createApp must run on Cloudflare Workers: app.ts and every file it imports (transitively, within
 * this app) use web-standard APIs only — no `node:` modules, no Node-only packages.
 */
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const src = resolve(dirname(fileURLToPath(import.meta.url)), "../src");
const NODE_ONLY = [
  /^node:/,
  /^@hono\/node-server/,
  /^@troupe\/teams\/onnx/,
  /^onnxruntime/,
  /^@troupe\/engine-onnx/,
];

function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  return [...text.matchAll(/^(?:import|export)\s[^;]*?from\s+"([^"]+)"/gms)].map((m) => m[1]!);
}

describe("app.ts is runtime-agnostic", () => {
  it("imports no node: module or Node-only package, directly or through its own files", () => {
    const seen = new Set<string>();
    const offending: string[] = [];
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      for (const spec of importsOf(file)) {
        if (spec.startsWith(".")) visit(join(dirname(file), spec));
        else if (NODE_ONLY.some((re) => re.test(spec)))
          offending.push(`${file.slice(src.length + 1)} → ${spec}`);
      }
    };
    visit(join(src, "app.ts"));
    expect([...seen].map((f) => f.slice(src.length + 1)).sort()).toContain("team-cache.ts");
    expect(offending).toEqual([]);
    // The check can see an offender: node.ts has several.
    expect(importsOf(join(src, "node.ts")).filter((s) => s.startsWith("node:")).length).toBeGreaterThan(0);
  });
});
