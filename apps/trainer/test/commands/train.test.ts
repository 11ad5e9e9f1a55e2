/**
 * `train` in this process: a new run trains, prints its held-out table, artifacts and report; a
 * finished run is refused without --resume and extended with --resume --set train.steps=n; the
 * flags of the asynchronous modes and a --resume that changes the recipe are refused in one
 * RecipeError line before anything is written. (The same command as its own process, killed and
 * resumed: test/main.test.ts, test/kill-resume.test.ts; the learner with rollout workers:
 * test/run/async-rl.test.ts.)
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { commandTrain } from "../../src/commands/train.ts";
import { RecipeError } from "../../src/recipe.ts";
import { inProcess, tinyCommandRecipe } from "../tiny.ts";

const { recipePath, storeRoot } = tinyCommandRecipe(
  "tr",
  `sft: { steps: 1, batchSize: 4 }
train: { steps: 1, tasksPerStep: 2, evalEvery: 0, evalTasks: 2, checkpointEvery: 10 }`,
);
const train = (...args: string[]) => inProcess(() => commandTrain(["--recipe", recipePath, ...args]));
/** The runs in the store, but the warm starts' cache (runs named sft-<hash>). */
const runs = () =>
  (existsSync(join(storeRoot, "runs")) ? readdirSync(join(storeRoot, "runs")).sort() : []).filter(
    (id) => !id.startsWith("sft-"),
  );

describe("train command", () => {
  it("refuses bad flags and a --resume without a run in one line, writing nothing", async () => {
    const refused: [string[], string][] = [
      [["--resume"], `--resume: no run of recipe "tr" with a committed step in file://${storeRoot}`],
      [["--mode", "sideways"], '--mode: expected all, rollout or learner, got "sideways"'],
      [["--mode", "learner"], "--mode learner: pass --run <id>, the same for the learner and its workers"],
      [["--mode", "rollout", "--run", "x"], "--mode rollout: pass --worker <id>, unique per worker process"],
      [["--lease-seconds", "0"], "--lease-seconds: expected a positive number"],
      [["--idle-seconds", "0"], "--idle-seconds: expected a positive number"],
    ];
    for (const [args, message] of refused) {
      await expect(train(...args), args.join(" ")).rejects.toThrow(new RecipeError(message));
    }
    expect(runs()).toEqual([]);
  });

  it("trains a new run, then refuses it again without --resume, and extends it with --resume --set train.steps", async () => {
    const first = await train("--run", "tr-a");
    expect(first.code).toBe(0);
    expect(first.stderr).toMatch(/run tr-a: plan-path · team .* · atgrpo · steps 0–0 · store file:/);
    expect(first.stdout).toMatch(/\nrun tr-a: finished at step 0\n/);
    expect(first.stdout).toContain(
      `artifacts: ${join(storeRoot, "runs", "tr-a")}/ (config.json, steps/, checkpoints/, metrics.jsonl)`,
    );
    expect(first.stdout).toMatch(/\nreport: .*index\.html\n$/);
    expect(runs()).toEqual(["tr-a"]);

    await expect(train("--run", "tr-a")).rejects.toThrow(
      "run tr-a already has committed steps: pass --resume to continue it",
    );
    await expect(train("--run", "tr-a", "--resume", "--set", "seed=2")).rejects.toThrow(
      "--set seed=2: --resume continues a run with its own recipe; it takes only --set train.steps=<n> (to extend it) and --set store=<uri> (where the run is)",
    );
    // Without --run, --resume takes the recipe's newest run.
    const extended = await train("--resume", "--set", "train.steps=2");
    expect(extended.code).toBe(0);
    expect(extended.stdout).toMatch(/\nrun tr-a: finished at step 1\n/);
    expect(runs()).toEqual(["tr-a"]);
  });
});
