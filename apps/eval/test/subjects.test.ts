/** What an eval run opens: `name@ref` parsed, and whether a published team runs on the embedded engine. */
import type { TeamManifest } from "@troupe/teams";
import { afterAll, describe, expect, it } from "vitest";
import { isEmbedded, parseTeamRef } from "../src/subjects.ts";
import { EvalUsageError } from "../src/suite.ts";
import { publishTinyTeam, tempDir } from "./fixtures.ts";

const tmp = tempDir("troupe-eval-subjects-");
afterAll(() => tmp.cleanup());

describe("subjects", () => {
  it("parseTeamRef: name and ref (latest when none); an empty part is one usage error", () => {
    expect(parseTeamRef("tiny")).toEqual(["tiny", "latest"]);
    expect(parseTeamRef("tiny@stable")).toEqual(["tiny", "stable"]);
    expect(parseTeamRef("tiny@v3")).toEqual(["tiny", "v3"]);
    for (const bad of ["@stable", "tiny@", ""]) {
      expect(() => parseTeamRef(bad), bad).toThrow(
        new EvalUsageError(`--team: expected name[@alias|@version], got "${bad}"`),
      );
    }
  });

  it("isEmbedded: every policy published with its ONNX decode graph", async () => {
    const manifest = await publishTinyTeam(tmp.store, "tiny");
    expect(isEmbedded(manifest)).toBe(true);
    const [first, ...rest] = Object.entries(manifest.policies);
    const { onnx: _onnx, ...withoutGraph } = first![1];
    const mixed = {
      ...manifest,
      policies: Object.fromEntries([[first![0], withoutGraph], ...rest]),
    } as TeamManifest;
    expect(isEmbedded(mixed)).toBe(false);
  });
});
