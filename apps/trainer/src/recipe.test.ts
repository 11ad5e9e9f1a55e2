import { describe, expect, it } from "vitest";
import { applyOverrides, loadRecipeText, parseOverrideValue } from "./recipe.ts";

const minimal = `
name: demo
environment: { name: plan-path }
strategy: { name: atgrpo }
`;

describe("recipes", () => {
  it("fills every default from the papers and the engine", () => {
    const r = loadRecipeText(minimal);
    expect(r.strategy).toMatchObject({ name: "atgrpo", candidates: 4, alpha: 1, selection: "argmax" });
    expect(r.loss).toMatchObject({ clipLow: 0.2, clipHigh: 0.2, aggregation: "token-mean" });
    expect(r.store).toBe("file://./.troupe/runs");
    expect(r.engine.kind).toBe("onnx");
  });

  it("--set overrides nested keys with typed values", () => {
    const r = loadRecipeText(minimal, [
      "strategy.candidates=8",
      "train.steps=3",
      "team.specialisation=shared",
      'sampling.stop=["\\n"]',
    ]);
    expect(r.strategy).toMatchObject({ candidates: 8 });
    expect(r.train.steps).toBe(3);
    expect(r.team.specialisation).toBe("shared");
    expect(r.sampling.stop).toEqual(["\n"]);
  });

  it("a bad key fails naming the key", () => {
    expect(() => loadRecipeText(minimal, ["train.stepz=3"])).toThrow(/unknown key "train\.stepz"/);
    expect(() => loadRecipeText(`${minimal}\nbogus: 1\n`)).toThrow(/unknown key "bogus"/);
  });

  it("a bad value fails naming the key and the allowed values", () => {
    expect(() => loadRecipeText(minimal, ["team.specialisation=solo"])).toThrow(
      /team\.specialisation: .*"shared".*"per-role"/,
    );
    expect(() => loadRecipeText(minimal, ["strategy.name=ppo"])).toThrow(/strategy\.name/);
    expect(() => loadRecipeText(minimal, ["train.steps=-1"])).toThrow(/train\.steps/);
  });

  it("strategy-specific keys are checked against the chosen strategy", () => {
    expect(() => loadRecipeText(minimal, ["strategy.jointMode=cross"])).toThrow(
      /unknown key "strategy\.jointMode"/,
    );
    const m = loadRecipeText(minimal, ["strategy.name=magrpo", "strategy.jointMode=aligned"]);
    expect(m.strategy).toMatchObject({ name: "magrpo", jointMode: "aligned", groupSize: 4, gamma: 0.9 });
  });

  it("parses override values like YAML scalars", () => {
    expect(parseOverrideValue("3")).toBe(3);
    expect(parseOverrideValue("true")).toBe(true);
    expect(parseOverrideValue("1e-3")).toBe(0.001);
    expect(parseOverrideValue("s3://b/p")).toBe("s3://b/p");
    expect(() => applyOverrides({}, ["novalue"])).toThrow(/key=value/);
    expect(() => applyOverrides({}, ["__proto__.x=1"])).toThrow(/bad key/);
  });

  it("rejects invalid YAML and non-mapping documents", () => {
    expect(() => loadRecipeText("name: [unclosed")).toThrow(/not valid YAML/);
    expect(() => loadRecipeText("- a\n- b")).toThrow(/mapping/);
  });
});
