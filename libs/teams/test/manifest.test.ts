/** Team manifests: strict validation naming the first bad field, and the JSON they are stored as. */
import { describe, expect, it } from "vitest";
import {
  decodeTeamManifest,
  encodeTeamManifest,
  ManifestError,
  parseTeamManifest,
  type TeamManifest,
} from "../src/manifest.ts";

const file = (n: number) => ({ sha256: n.toString(16).padStart(64, "0"), bytes: 100 + n });
const policy = (seed: number) => ({
  files: { "config.json": file(seed), "model.safetensors": file(seed + 1), "tokenizer.json": file(seed + 2) },
  model: "qwen3 hidden 32 × 1 layers",
  parameters: 1234,
  sampling: { temperature: 1, topP: 1, maxTokens: 8 },
});

/** A valid manifest of the planner+fixer team. */
const good: TeamManifest = {
  schemaVersion: 1,
  name: "pathfinders",
  version: 1,
  createdAt: "2026-01-02T03:04:05.000Z",
  environment: { name: "plan-path", options: { roles: "compact" } },
  team: { specialisation: "per-role" },
  roles: [
    { id: "planner", policy: "planner" },
    { id: "fixer", policy: "fixer" },
  ],
  policies: { planner: policy(1), fixer: policy(5) },
  source: { runId: "fixture", step: 0 },
};

describe("team manifest", () => {
  it("a valid manifest parses to itself; encode → decode round-trips", () => {
    expect(parseTeamManifest(good)).toEqual(good);
    const bytes = encodeTeamManifest(good);
    expect(new TextDecoder().decode(bytes)).toBe(`${JSON.stringify(good, null, 2)}\n`);
    expect(decodeTeamManifest(bytes, "m.json")).toEqual(good);
  });

  it("refuses an invalid manifest, naming the field", () => {
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
  });

  it("cross-field rules: duplicate roles, unused policies, a missing tokenizer, an ONNX file not in files", () => {
    const message = (value: unknown) => {
      try {
        parseTeamManifest(value, "teams/x/manifest.json");
      } catch (error) {
        return (error as Error).message;
      }
      return "parsed";
    };
    expect(message({ ...good, roles: [...good.roles, { id: "planner", policy: "fixer" }] })).toBe(
      'teams/x/manifest.json: roles.2.id: duplicate role "planner"',
    );
    expect(message({ ...good, roles: [{ id: "planner", policy: "planner" }] })).toBe(
      "teams/x/manifest.json: policies.fixer: no role uses this policy",
    );
    const { "tokenizer.json": _, ...noTokenizer } = good.policies.planner!.files;
    expect(
      message({
        ...good,
        policies: { ...good.policies, planner: { ...good.policies.planner!, files: noTokenizer } },
      }),
    ).toBe(
      "teams/x/manifest.json: policies.planner.files: the tokenizer is missing (tokenizer.json or tokenizer_config.json)",
    );
    const onnx = { file: "model.onnx", graph: "decode", opset: 21, weights: "model.safetensors" };
    expect(
      message({ ...good, policies: { ...good.policies, planner: { ...good.policies.planner!, onnx } } }),
    ).toBe("teams/x/manifest.json: policies.planner.onnx.file: model.onnx is not in files");
  });

  it("bytes that are not JSON (or not UTF-8) are a ManifestError naming where they came from", () => {
    expect(() => decodeTeamManifest(new TextEncoder().encode('{"schemaVersion":'), "teams/t/m.json")).toThrow(
      /^teams\/t\/m\.json: not valid JSON: /,
    );
    expect(() => decodeTeamManifest(new Uint8Array([0x7b, 0xff, 0x7d]), "m.json")).toThrow(ManifestError);
    expect(() => encodeTeamManifest({ ...good, version: 0 })).toThrow("team manifest: version:");
  });
});
