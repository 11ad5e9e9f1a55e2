/** Manifests: entries, encoding and parsing, and the byte checks every reader goes through. */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  decodeJson,
  encodeManifest,
  IntegrityError,
  MANIFEST_VERSION,
  manifestEntry,
  newAttemptId,
  newManifest,
  parseManifest,
  readVerified,
  verifyBytes,
} from "../src/manifest.ts";
import { tempFileStore } from "./stores.ts";

const bytes = (text: string) => new TextEncoder().encode(text);
// sha256("abc"), the FIPS 180-2 test vector.
const ABC = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

describe("manifest", () => {
  it("an entry is the key, the byte size and the sha256", async () => {
    expect(await manifestEntry("w0.parquet", bytes("abc"))).toEqual({
      key: "w0.parquet",
      size: 3,
      sha256: ABC,
    });
  });

  it("newManifest stamps the version and the time; encode → parse round-trips", async () => {
    const before = Date.now();
    const manifest = newManifest("step", "0123456789ab", [await manifestEntry("a", bytes("abc"))], {
      step: 3,
    });
    expect(manifest).toMatchObject({
      manifestVersion: MANIFEST_VERSION,
      kind: "step",
      attempt: "0123456789ab",
      objects: [{ key: "a", size: 3, sha256: ABC }],
      meta: { step: 3 },
    });
    expect(Date.parse(manifest.committedAt)).toBeGreaterThanOrEqual(before - 1000);
    const encoded = encodeManifest(manifest);
    expect(new TextDecoder().decode(encoded).endsWith("}\n")).toBe(true);
    expect(parseManifest(encoded, "runs/r/manifest.json")).toEqual(manifest);
    // meta defaults to {} for a manifest written without it.
    const { meta: _, ...bare } = manifest;
    expect(parseManifest(bytes(JSON.stringify(bare)), "m").meta).toEqual({});
  });

  it("a manifest that is not JSON, or of the wrong shape, is an IntegrityError naming the object and the field", () => {
    const notJson = (() => {
      try {
        parseManifest(bytes('{"manifestVersion": 1, "ki'), "runs/r/steps/00000001/manifest.json");
      } catch (error) {
        return error;
      }
    })();
    expect(notJson).toBeInstanceOf(IntegrityError);
    expect((notJson as IntegrityError).objectKey).toBe("runs/r/steps/00000001/manifest.json");
    expect((notJson as Error).message).toBe(
      "runs/r/steps/00000001/manifest.json: manifest is not valid JSON (truncated or corrupted?)",
    );
    const badSha = {
      manifestVersion: 1,
      kind: "step",
      attempt: "a",
      committedAt: "t",
      objects: [{ key: "k", size: 1, sha256: "xyz" }],
    };
    expect(() => parseManifest(bytes(JSON.stringify(badSha)), "m.json")).toThrow(
      /^m\.json: manifest: objects\.0\.sha256: /,
    );
    expect(() => decodeJson(bytes("[1]"), "claim.json", "claim", z.object({ a: z.number() }))).toThrow(
      /^claim\.json: claim: \(root\): /,
    );
    expect(decodeJson(bytes('{"a": 2}'), "claim.json", "claim", z.object({ a: z.number() }))).toEqual({
      a: 2,
    });
  });

  it("verifyBytes checks the size, then the sha256, naming the object", async () => {
    const expected = { size: 3, sha256: ABC };
    expect(await verifyBytes("k", bytes("abc"), expected)).toEqual(bytes("abc"));
    await expect(verifyBytes("k", bytes("ab"), expected)).rejects.toThrow(
      new IntegrityError("k", "size 2 bytes, manifest says 3 (truncated?)"),
    );
    await expect(verifyBytes("k", bytes("abd"), expected)).rejects.toThrow(
      /^k: sha256 [0-9a-f]{64}, manifest says ba7816bf.* \(corrupted\)$/,
    );
  });

  it("readVerified reads <folder>/<key> and checks it against its entry", async () => {
    const store = await tempFileStore();
    await store.put("f/a.bin", bytes("abc"));
    const entry = await manifestEntry("a.bin", bytes("abc"));
    expect(await readVerified(store, "f", entry)).toEqual(bytes("abc"));
    await store.put("f/a.bin", bytes("abX"));
    await expect(readVerified(store, "f", entry)).rejects.toThrow(/^f\/a\.bin: sha256 /);
  });

  it("attempt ids are 12 hex digits, fresh each time", () => {
    const ids = Array.from({ length: 50 }, newAttemptId);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{12}$/);
    expect(new Set(ids).size).toBe(50);
  });
});
