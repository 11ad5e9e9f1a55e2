import { readFileSync } from "node:fs";
import { join } from "node:path";
import { sha256Hex } from "@troupe/storage";
import { describe, expect, it } from "vitest";
import { ManifestError, manifestKey } from "../src/index.ts";
import { registryFixture } from "./registry-fixture.ts";

const fx = registryFixture();

describe("team registry on a FileStore", () => {
  it("publish → resolve → readFile gives back the exact bytes, with checksums in the manifest", async () => {
    const { registry } = fx;
    const manifest = await registry.publish({ ...fx.input, name: "roundtrip" });
    expect(manifest).toMatchObject({ schemaVersion: 1, name: "roundtrip", version: 1 });
    expect(Object.keys(manifest.policies.planner!.files).sort()).toEqual([
      "config.json",
      "model.onnx",
      "model.safetensors",
      "tokenizer.json",
      "tokenizer_config.json",
    ]);
    const resolved = await registry.resolve("roundtrip");
    expect(resolved).toEqual(manifest);
    for (const policyId of ["planner", "fixer"]) {
      for (const [file, bytes] of Object.entries(fx.input.policies[policyId]!.files)) {
        const read = await registry.readFile(resolved, policyId, file);
        expect(Buffer.from(read).equals(Buffer.from(bytes))).toBe(true);
        expect(resolved.policies[policyId]!.files[file]).toEqual({
          sha256: await sha256Hex(bytes),
          bytes: bytes.byteLength,
        });
      }
    }
    // Where things are, as docs/serving.md describes.
    expect(
      readFileSync(join(fx.root, "teams/roundtrip/versions/00000001/planner/config.json")).byteLength,
    ).toBe(resolved.policies.planner!.files["config.json"]!.bytes);
    const summary = (await registry.list()).find((t) => t.name === "roundtrip");
    expect(summary).toMatchObject({ versions: [1], aliases: {}, latest: { version: 1 } });
  });
  it("list(): a team with a corrupt manifest is left out and reported; without a handler it throws", async () => {
    const { registry } = fx;
    await registry.publish({ ...fx.input, name: "listed" });
    await fx.store.put(manifestKey("garbled", 1), new TextEncoder().encode("{ not json"));
    const unreadable: [string, string][] = [];
    const names = (await registry.list({ onUnreadable: (name, e) => unreadable.push([name, e.name]) })).map(
      (t) => t.name,
    );
    expect(names).toContain("listed");
    expect(names).not.toContain("garbled");
    expect(unreadable).toEqual([["garbled", "ManifestError"]]);
    await expect(registry.list()).rejects.toThrow(ManifestError);
    await fx.store.delete(manifestKey("garbled", 1));
  });
});
