/** `trainer:compare`'s flags: --seeds, --eval-tasks against --set, and --samples' default per environment. */
import { expect, it } from "vitest";
import {
  DEFAULT_EVAL_TASKS,
  evalTasksOverride,
  parseSamples,
  parseSeeds,
} from "../../src/commands/compare.ts";
import { loadRecipeText } from "../../src/recipe.ts";
import { TINY_ONE_TURN } from "../tiny.ts";

it("command-line helpers: seeds, --eval-tasks (default 500) against --set", () => {
  expect(parseSeeds("1, 2,3")).toEqual([1, 2, 3]);
  expect(() => parseSeeds("1,x")).toThrow('--seeds: "x" is not a non-negative integer');
  expect(() => parseSeeds("1,,2")).toThrow('--seeds: "" is not a non-negative integer');
  expect(() => parseSeeds("2,2")).toThrow('--seeds: "2,2" repeats a seed');
  expect(DEFAULT_EVAL_TASKS).toBe(500);
  expect(evalTasksOverride(undefined, [])).toEqual(["train.evalTasks=500"]);
  expect(evalTasksOverride("64", ["train.steps=3"])).toEqual(["train.evalTasks=64"]);
  expect(evalTasksOverride(undefined, ["train.evalTasks=32"])).toEqual([]);
  expect(() => evalTasksOverride("64", ["train.evalTasks=32"])).toThrow(/once/);
  expect(() => evalTasksOverride("0", [])).toThrow(/positive integer/);
});

it("--samples: 10 episodes per task for coding, none elsewhere, else the flag's count", () => {
  const planPath = loadRecipeText(`name: p\n${TINY_ONE_TURN}`);
  const coding = loadRecipeText("name: c\nenvironment: { name: coding }\nstrategy: { name: atgrpo }\n");
  expect(parseSamples(undefined, planPath)).toBe(0);
  expect(parseSamples(undefined, coding)).toBe(10);
  expect(parseSamples("3", planPath)).toBe(3);
  expect(parseSamples("0", coding)).toBe(0);
  expect(() => parseSamples("-1", planPath)).toThrow('--samples: "-1" is not a non-negative integer');
  expect(() => parseSamples("2.5", planPath)).toThrow('--samples: "2.5" is not a non-negative integer');
});
