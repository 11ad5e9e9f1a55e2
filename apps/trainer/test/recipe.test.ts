import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { applyOverrides, loadRecipeText, parseOverrideValue } from "../src/recipe.ts";
import { MINIMAL_RECIPE as minimal } from "./minimal-recipe.ts";

describe("recipes", () => {
  it("fills every default from the papers and the engine", () => {
    const r = loadRecipeText(minimal);
    expect(r.strategy).toMatchObject({ name: "atgrpo", candidates: 4, teamWeight: 1, selection: "argmax" });
    expect(r.loss).toMatchObject({ clipLow: 0.2, clipHigh: 0.2, aggregation: "token-mean" });
    expect(r.store).toBe("file://./.troupe");
    expect(r.engine.kind).toBe("onnx");
  });

  it("declares every default in the schema: sections left out or given empty parse alike", () => {
    const recipe = loadRecipeText(minimal);
    expect(recipe.train).toEqual({
      steps: 50,
      tasksPerStep: 8,
      microBatchSize: 16,
      epochs: 1,
      evalEvery: 10,
      evalTasks: 64,
      evalTemperature: 0,
      checkpointEvery: 10,
    });
    expect(loadRecipeText(`${minimal}train: {}\n`).train).toEqual(recipe.train);
    expect(loadRecipeText(`${minimal}train: { steps: 3 }\n`).train).toEqual({ ...recipe.train, steps: 3 });
    expect(loadRecipeText(`${minimal}sft: { steps: 5 }\n`).sft).toEqual({
      steps: 5,
      batchSize: 32,
      lr: 3e-3,
      mistakeRate: 0.3,
      schedule: "constant",
      warmupSteps: 0,
      minLrRatio: 0.1,
      decayFraction: 0.2,
    });
    for (const section of ["model", "loss", "optimizer", "advantage"] as const)
      expect(loadRecipeText(`${minimal}${section}: {}\n`)[section]).toEqual(recipe[section]);
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

  it("reads AT-GRPO's former `alpha` as teamWeight (recipes and stored run configs keep parsing)", () => {
    expect(loadRecipeText(minimal, ["strategy.alpha=0.5"]).strategy).toMatchObject({ teamWeight: 0.5 });
    expect(() => loadRecipeText(minimal, ["strategy.alpha=0.5", "strategy.teamWeight=1"])).toThrow(
      /unknown key "strategy\.alpha"/,
    );
    expect(() => loadRecipeText(minimal, ["advantage.baseline=median"])).toThrow(
      /recipe: advantage\.baseline: unknown baseline "median" \(known: mean, rloo, max, raw\)/,
    );
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

describe("engine section", () => {
  it("every recipe in recipes/ parses", () => {
    const dir = fileURLToPath(new URL("../recipes", import.meta.url));
    const names = readdirSync(dir).filter((f) => f.endsWith(".yaml"));
    expect(names).toContain("qwen-gpu.yaml");
    for (const name of names) {
      expect(() => loadRecipeText(readFileSync(join(dir, name), "utf8"), [], name), name).not.toThrow();
    }
  });

  it("keeps `engine: {}` the embedded engine and rejects torch fields for it", () => {
    expect(loadRecipeText(`${minimal}engine: {}\n`).engine).toEqual({ kind: "onnx" });
    expect(() => loadRecipeText(minimal, ["engine.device=cuda"])).toThrow(/unknown key "engine\.device"/);
    expect(() => loadRecipeText(minimal, ["engine.kind=jax"])).toThrow(/engine\.kind: .*'onnx' \| 'torch'/);
    expect(() => loadRecipeText(minimal, ["engine.kind=torch", "engine.device=gpu"])).toThrow(
      /engine\.device: expected "auto", "cpu", "cuda" or "cuda:N"/,
    );
  });
});

describe("recipe loss", () => {
  it("takes a KL weight to the warm start (the learner scores the reference); refuses a negative one", () => {
    const base = "name: k\nenvironment: { name: plan-path }\nstrategy: { name: atgrpo }\n";
    expect(loadRecipeText(base, ["loss.klCoef=0.1"]).loss.klCoef).toBe(0.1);
    expect(loadRecipeText(base).loss.klCoef).toBe(0);
    expect(() => loadRecipeText(base, ["loss.klCoef=-0.1"])).toThrow(/loss\.klCoef/);
  });
});

describe("recipe advantage", () => {
  const base = "name: a\nenvironment: { name: plan-path }\nstrategy: { name: atgrpo }\n";
  it("refuses eps ≤ 0, naming the key and why", () => {
    for (const eps of ["0", "-0.001"])
      expect(() =>
        loadRecipeText(base, [
          "advantage.baseline=raw",
          "advantage.normalizeStd=true",
          `advantage.eps=${eps}`,
        ]),
      ).toThrow(/advantage\.eps: eps must be > 0: it is the ε in \(R − baseline\) \/ \(std \+ ε\)/);
  });
  it("has one default for every strategy (GRPO's); takes std: sample (verl's unbiased std)", () => {
    const grpo = { baseline: "mean", normalizeStd: true, eps: 1e-6 };
    for (const name of ["parallel", "magrpo", "atgrpo"]) {
      expect(loadRecipeText(base, [`strategy.name=${name}`]).advantage).toEqual(grpo);
    }
    const r = loadRecipeText(base, ["advantage.std=sample"]);
    expect(r.advantage).toEqual({ ...grpo, std: "sample" });
    expect(() => loadRecipeText(base, ["advantage.std=biased"])).toThrow(/advantage\.std/);
  });
  it("moves a stored run's strategy.advantage and strategy.filters into advantage; refuses both places", () => {
    const old = loadRecipeText(base, [
      "strategy.advantage.normalizeStd=false",
      "strategy.filters.dropZeroVariance=true",
    ]);
    expect(old.advantage).toEqual({
      baseline: "mean",
      normalizeStd: false,
      eps: 1e-6,
      filters: { dropZeroVariance: true, dropLowestMeanFraction: 0 },
    });
    expect("advantage" in old.strategy).toBe(false);
    expect(() =>
      loadRecipeText(base, ["strategy.advantage.normalizeStd=false", "advantage.eps=0.1"]),
    ).toThrow(
      "recipe: strategy.advantage and advantage both given: the advantage stage's settings go in `advantage` only",
    );
  });
});
