/** Where everything of a run lives: keys, padding and the id rules that keep keys safe. */
import { expect, it } from "vitest";
import {
  checkFileName,
  checkId,
  checkpointFolder,
  checkpointsPrefix,
  configKey,
  metricsJsonlKey,
  metricsKey,
  pad,
  rolloutFolder,
  runRoot,
  stepFolder,
  stepsPrefix,
  workFolder,
} from "../src/layout.ts";

it("steps and versions are zero-padded to 8 digits, so keys sort numerically", () => {
  expect(pad(0)).toBe("00000000");
  expect(pad(42)).toBe("00000042");
  expect(pad(99_999_999)).toBe("99999999");
  const keys = [10, 9, 100].map((n) => stepFolder("r", n)).sort();
  expect(keys).toEqual(["runs/r/steps/00000009", "runs/r/steps/00000010", "runs/r/steps/00000100"]);
  for (const bad of [-1, 1.5, Number.NaN, 2 ** 53])
    expect(() => pad(bad)).toThrow(`step/version must be a non-negative integer, got ${bad}`);
});

it("every key of a run", () => {
  expect(runRoot("run-a")).toBe("runs/run-a");
  expect(configKey("run-a")).toBe("runs/run-a/config.json");
  expect(stepsPrefix("run-a")).toBe("runs/run-a/steps/");
  expect(stepFolder("run-a", 3)).toBe("runs/run-a/steps/00000003");
  expect(checkpointsPrefix("run-a", "coder")).toBe("runs/run-a/checkpoints/coder/");
  expect(checkpointFolder("run-a", "coder", 7)).toBe("runs/run-a/checkpoints/coder/00000007");
  expect(metricsKey("run-a", 2, "learner")).toBe("runs/run-a/metrics/00000002.learner.json");
  expect(metricsJsonlKey("run-a")).toBe("runs/run-a/metrics.jsonl");
  expect(rolloutFolder("run-a", 1, "w0", 5)).toBe("runs/run-a/rollouts/00000001/w0-00000005");
  expect(workFolder("run-a")).toBe("runs/run-a/work/");
});

it("ids become key segments: letters, digits, '_', '-', '.' not leading, at most 128", () => {
  expect(checkId("runId", "a.b-c_1")).toBe("a.b-c_1");
  expect(checkId("runId", "x".repeat(128))).toBe("x".repeat(128));
  for (const bad of ["", ".hidden", "-x", "a/b", "..", "a b", "x".repeat(129)])
    expect(() => checkId("runId", bad)).toThrow(`runId "${bad}" must match`);
  expect(() => runRoot("../etc")).toThrow('runId "../etc" must match');
  expect(() => checkpointsPrefix("r", "p/q")).toThrow('policyId "p/q" must match');
  expect(() => rolloutFolder("r", 0, "w/0", 0)).toThrow('workerId "w/0" must match');
  expect(() => metricsKey("r", 0, "a/b")).toThrow('metrics source "a/b" must match');
});

it("checkpoint file names are relative keys, never the manifest's", () => {
  expect(checkFileName("model.safetensors")).toBe("model.safetensors");
  expect(checkFileName("tokenizer/vocab.json")).toBe("tokenizer/vocab.json");
  expect(() => checkFileName("manifest.json")).toThrow('checkpoint file name "manifest.json" is reserved');
  expect(() => checkFileName("../x")).toThrow('has an empty, "." or ".." segment');
});
