import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { IntegrityError, sha256Hex } from "@troupe/storage";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  artifactKey,
  claimKey,
  createTeamRegistry,
  ManifestError,
  manifestKey,
  PublishConflictError,
  type PublishInput,
  parseTeamManifest,
  TeamNotFoundError,
} from "../src/index.ts";
import { tempStore, tinyTeamInput } from "./fixtures.ts";

const tmp = tempStore();
afterAll(() => tmp.cleanup());
let input: PublishInput;
beforeAll(async () => {
  input = await tinyTeamInput("pathfinders");
});

describe("team registry on a FileStore", () => {
  it("publish → resolve → readFile gives back the exact bytes, with checksums in the manifest", async () => {
    const registry = createTeamRegistry(tmp.store);
    const manifest = await registry.publish({ ...input, name: "roundtrip" });
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
      for (const [file, bytes] of Object.entries(input.policies[policyId]!.files)) {
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
      readFileSync(join(tmp.root, "teams/roundtrip/versions/00000001/planner/config.json")).byteLength,
    ).toBe(resolved.policies.planner!.files["config.json"]!.bytes);
    const summary = (await registry.list()).find((t) => t.name === "roundtrip");
    expect(summary).toMatchObject({ versions: [1], aliases: {}, latest: { version: 1 } });
  });

  it("numbers versions, keeps them immutable, and refuses a taken version", async () => {
    const registry = createTeamRegistry(tmp.store);
    const v1 = await registry.publish({ ...input, name: "versions" });
    const v2 = await registry.publish({ ...input, name: "versions", source: { runId: "fixture", step: 7 } });
    expect([v1.version, v2.version]).toEqual([1, 2]);
    expect((await registry.resolve("versions", "v1")).source.step).toBe(0);
    expect((await registry.resolve("versions", "2")).source.step).toBe(7);
    expect((await registry.resolve("versions")).version).toBe(2);
    // Asking for a taken version is refused, and v1's manifest is left untouched.
    const before = await tmp.store.get(manifestKey("versions", 1));
    await expect(registry.publish({ ...input, name: "versions", version: 1 })).rejects.toThrow(
      PublishConflictError,
    );
    expect(Buffer.from(await tmp.store.get(manifestKey("versions", 1))).equals(Buffer.from(before))).toBe(
      true,
    );
    // Two publishers at once: the conditional put gives each its own version.
    const [a, b] = await Promise.all([
      registry.publish({ ...input, name: "versions", source: { runId: "a", step: 1 } }),
      registry.publish({ ...input, name: "versions", source: { runId: "b", step: 1 } }),
    ]);
    expect([a.version, b.version].sort()).toEqual([3, 4]);
    expect((await registry.resolve("versions", `v${a.version}`)).source.runId).toBe("a");
    expect((await registry.resolve("versions", `v${b.version}`)).source.runId).toBe("b");
    // A publisher that claimed v5 and died leaves no visible version; the next publish skips it.
    expect(await tmp.store.putIfAbsent(claimKey("versions", 5), new Uint8Array([1]))).toBe(true);
    expect((await registry.publish({ ...input, name: "versions" })).version).toBe(6);
    expect((await registry.list()).find((t) => t.name === "versions")!.versions).toEqual([1, 2, 3, 4, 6]);
    await expect(registry.resolve("versions", "v5")).rejects.toThrow(
      'team "versions" has no version 5 (versions: 1, 2, 3, 4, 6)',
    );
  });

  it("moves aliases with history and rolls them back", async () => {
    const registry = createTeamRegistry(tmp.store);
    for (let i = 0; i < 3; i++) await registry.publish({ ...input, name: "aliased" });
    await registry.setAlias("aliased", "stable", 1);
    await registry.setAlias("aliased", "stable", 3);
    await registry.setAlias("aliased", "stable", 2);
    expect((await registry.resolve("aliased", "stable")).version).toBe(2);
    expect((await registry.aliasHistory("aliased", "stable")).map((h) => h.version)).toEqual([1, 3, 2]);
    expect(await registry.rollbackAlias("aliased", "stable")).toBe(3);
    expect((await registry.resolve("aliased", "stable")).version).toBe(3);
    expect(await registry.rollbackAlias("aliased", "stable")).toBe(1);
    await expect(registry.rollbackAlias("aliased", "stable")).rejects.toThrow(/no earlier version/);
    expect((await registry.list()).find((t) => t.name === "aliased")!.aliases).toEqual({ stable: 1 });
    // publish --alias moves it too.
    const v4 = await registry.publish({ ...input, name: "aliased", alias: "stable" });
    expect((await registry.resolve("aliased", "stable")).version).toBe(v4.version);
    await expect(registry.setAlias("aliased", "stable", 9)).rejects.toThrow(TeamNotFoundError);
    await expect(registry.setAlias("aliased", "latest", 1)).rejects.toThrow(/implicit/);
    await expect(registry.resolve("aliased", "beta")).rejects.toThrow(
      'team "aliased" has no alias "beta" (aliases: latest, stable)',
    );
    await expect(registry.resolve("nobody")).rejects.toThrow('team "nobody" not found');
  });

  it("reports a corrupted or missing artifact by its key", async () => {
    const registry = createTeamRegistry(tmp.store);
    const manifest = await registry.publish({ ...input, name: "corrupt" });
    const key = artifactKey("corrupt", 1, "fixer", "model.safetensors");
    const path = join(tmp.root, key);
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
    await tmp.store.delete(artifactKey("corrupt", 1, "planner", "config.json"));
    await expect(registry.readFile(manifest, "planner", "config.json")).rejects.toThrow(
      "teams/corrupt/versions/00000001/planner/config.json: missing (the manifest lists it)",
    );
    await expect(registry.readFile(manifest, "critic", "config.json")).rejects.toThrow(
      'has no policy "critic" (policies: planner, fixer)',
    );
  });

  it("list(): a team with a corrupt manifest is left out and reported; without a handler it throws", async () => {
    const registry = createTeamRegistry(tmp.store);
    await registry.publish({ ...input, name: "listed" });
    await tmp.store.put(manifestKey("garbled", 1), new TextEncoder().encode("{ not json"));
    const unreadable: [string, string][] = [];
    const names = (await registry.list({ onUnreadable: (name, e) => unreadable.push([name, e.name]) })).map(
      (t) => t.name,
    );
    expect(names).toContain("listed");
    expect(names).not.toContain("garbled");
    expect(unreadable).toEqual([["garbled", "ManifestError"]]);
    await expect(registry.list()).rejects.toThrow(ManifestError);
    await tmp.store.delete(manifestKey("garbled", 1));
  });

  it("refuses an invalid manifest, naming the field", async () => {
    const registry = createTeamRegistry(tmp.store);
    const good = await registry.publish({ ...input, name: "strict" });
    const cases: [unknown, string, (string | number)[]][] = [
      [{ ...good, schemaVersion: 2 }, "schemaVersion", ["schemaVersion"]],
      [{ ...good, extra: 1 }, 'extra: unknown key "extra"', ["extra"]],
      [
        { ...good, roles: [{ id: "planner", policy: "critic" }] },
        'roles.0.policy: policy "critic"',
        ["roles", 0, "policy"],
      ],
      [
        { ...good, policies: { ...good.policies, fixer: { ...good.policies.fixer!, files: {} } } },
        "policies.fixer.files.config.json: config.json is missing",
        ["policies", "fixer", "files", "config.json"],
      ],
      [
        {
          ...good,
          policies: {
            ...good.policies,
            planner: { ...good.policies.planner!, sampling: { temperature: -1, topP: 1, maxTokens: 8 } },
          },
        },
        "policies.planner.sampling.temperature",
        ["policies", "planner", "sampling", "temperature"],
      ],
      [{ ...good, name: "Bad Name" }, "name:", ["name"]],
    ];
    for (const [value, message, path] of cases) {
      let error: unknown;
      try {
        parseTeamManifest(value);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ManifestError);
      expect((error as ManifestError).message).toContain(message);
      expect((error as ManifestError).path).toEqual(path);
    }
    // A bad manifest in the store is refused on resolve, naming the object and the field.
    await tmp.store.put(
      manifestKey("broken", 1),
      new TextEncoder().encode(JSON.stringify({ ...good, name: "broken", createdAt: "yesterday" })),
    );
    await expect(registry.resolve("broken")).rejects.toThrow(
      "teams/broken/versions/00000001/manifest.json: createdAt:",
    );
    // publish refuses before writing anything.
    await expect(
      registry.publish({ ...input, name: "nothing", roles: [{ id: "planner", policy: "nobody" }] }),
    ).rejects.toThrow(ManifestError);
    expect(await tmp.store.list("teams/nothing/")).toEqual([]);
  });
});
