import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

describe("portability", () => {
  it("src imports nothing from node: (runs in Cloudflare Workers)", () => {
    const dir = join(import.meta.dirname, "../src");
    for (const file of readdirSync(dir)) {
      const text = readFileSync(join(dir, file), "utf8");
      expect(text, file).not.toMatch(/from "node:/);
      expect(text, file).not.toMatch(/\bprocess\.|\bBuffer\b|require\(/);
    }
  });
});
