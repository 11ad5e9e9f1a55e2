import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { IntegrityError } from "@troupe/storage";
import { describe, expect, it } from "vitest";
import { artifactKey } from "../src/index.ts";
import { registryFixture } from "./registry-fixture.ts";

const fx = registryFixture();

describe("artifacts read back", () => {
  it("reports a corrupted or missing artifact by its key", async () => {
    const { registry } = fx;
    const manifest = await registry.publish({ ...fx.input, name: "corrupt" });
    const key = artifactKey("corrupt", 1, "fixer", "model.safetensors");
    const path = join(fx.root, key);
    const bytes = readFileSync(path);
    bytes[bytes.length - 1] ^= 0xff; // same size, one flipped byte
    writeFileSync(path, bytes);
    const error = await registry.readFile(manifest, "fixer", "model.safetensors").catch((e) => e);
    expect(error).toBeInstanceOf(IntegrityError);
    expect(error.objectKey).toBe("teams/corrupt/versions/00000001/fixer/model.safetensors");
    expect(error.message).toMatch(/sha256 [0-9a-f]{64}, manifest says [0-9a-f]{64} \(corrupted\)$/);
    await expect(registry.readPolicyFiles(manifest, "fixer")).rejects.toThrow(
      "teams/corrupt/versions/00000001/fixer/model.safetensors",
    );
    writeFileSync(path, bytes.subarray(0, 10));
    await expect(registry.readFile(manifest, "fixer", "model.safetensors")).rejects.toThrow(
      "teams/corrupt/versions/00000001/fixer/model.safetensors: size 10 bytes, manifest says",
    );
    await fx.store.delete(artifactKey("corrupt", 1, "planner", "config.json"));
    await expect(registry.readFile(manifest, "planner", "config.json")).rejects.toThrow(
      "teams/corrupt/versions/00000001/planner/config.json: missing (the manifest lists it)",
    );
    await expect(registry.readFile(manifest, "critic", "config.json")).rejects.toThrow(
      'has no policy "critic" (policies: planner, fixer)',
    );
  });
});
