import { describe, expect, it } from "vitest";
import { aliasKey, artifactKey, claimKey, manifestKey, parseVersionKey } from "../src/layout.ts";

describe("the store layout of published teams", () => {
  it("keys as docs/serving.md lists them, versions padded so they sort in numeric order", () => {
    expect(manifestKey("pp", 3)).toBe("teams/pp/versions/00000003/manifest.json");
    expect(claimKey("pp", 12)).toBe("teams/pp/versions/00000012/claim.json");
    expect(artifactKey("pp", 1, "planner", "model.onnx")).toBe(
      "teams/pp/versions/00000001/planner/model.onnx",
    );
    expect(aliasKey("pp", "stable")).toBe("teams/pp/aliases/stable.json");
    expect([manifestKey("pp", 10), manifestKey("pp", 9)].sort()).toEqual([
      manifestKey("pp", 9),
      manifestKey("pp", 10),
    ]);
  });

  it("parses a version's own files only (not a policy's, not an alias)", () => {
    expect(parseVersionKey(manifestKey("pp", 3))).toEqual({ name: "pp", version: 3, file: "manifest.json" });
    expect(parseVersionKey(artifactKey("pp", 3, "planner", "config.json"))).toBeUndefined();
    expect(parseVersionKey(aliasKey("pp", "stable"))).toBeUndefined();
    expect(parseVersionKey("teams/pp/versions/3/manifest.json")).toBeUndefined();
  });
});
