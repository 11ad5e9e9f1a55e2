/**
 * The trainer's command line as a user meets it, each call its own process: a dozen bad inputs
 * (flags, `--set` keys and values, recipe files, environment variables, steps) each end in exactly
 * one `error:` line naming what is wrong, exit 2, and no stack trace; `--help` works on every
 * command; a failed launch leaves no run behind; `--resume --set train.steps=n` extends a
 * finished run.
 */
import { spawn } from "node:child_process";
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { tempRoot, trainerProcess, writeTinyRecipe } from "./tiny.ts";

const root = tempRoot("cli");

const { recipePath: recipe, storeRoot } = writeTinyRecipe(
  root,
  "tiny",
  5,
  `strategy: { name: atgrpo, candidates: 2 }
sampling: { temperature: 1, maxTokens: 8 }
train: { steps: 2, tasksPerStep: 2, evalEvery: 0, evalTasks: 2, checkpointEvery: 10 }`,
);
const badYaml = join(root, "bad.yaml");
writeFileSync(badYaml, "name: [unclosed\n  steps: : :\n");
const unknownKey = join(root, "unknown.yaml");
writeFileSync(
  unknownKey,
  "name: u\nenvironment: { name: plan-path }\nstrategy: { name: atgrpo }\ntrian: {}\n",
);

interface Result {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function cli(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<Result> {
  return new Promise((done, fail) => {
    const [command, argv, options] = trainerProcess(args, { TROUPE_DEBUG: "", ...env });
    const child = spawn(command, argv, options);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", fail);
    child.on("close", (status) => done({ status, stdout, stderr }));
  });
}

/** Runs `calls` at most `width` at a time (each is a process that loads the trainer). */
async function pooled<T>(calls: readonly (() => Promise<T>)[], width = 3): Promise<T[]> {
  const out: T[] = new Array(calls.length);
  let next = 0;
  const worker = async () => {
    while (next < calls.length) {
      const i = next++;
      out[i] = await calls[i]!();
    }
  };
  await Promise.all(Array.from({ length: width }, worker));
  return out;
}

const runs = () => (existsSync(join(storeRoot, "runs")) ? readdirSync(join(storeRoot, "runs")) : []);

/** `train` of the tiny recipe, and that again continuing its finished run tiny-done. */
const train = ["train", "--recipe", recipe];
const resumeDone = [...train, "--run", "tiny-done", "--resume"];

beforeAll(async () => {
  const trained = await cli([...train, "--run", "tiny-done"]);
  expect(trained.status, trained.stderr).toBe(0);
}, 300_000);

describe("bad input: one error line naming the field, no stack", () => {
  const cases: [string, string[], RegExp, NodeJS.ProcessEnv?][] = [
    [
      "a --set typo",
      [...train, "--set", "train.stepz=3"],
      /--set train\.stepz: .*did you mean train\.steps\?/,
    ],
    ["a field one section off", [...train, "--set", "steps=3"], /--set steps: .*did you mean train\.steps\?/],
    ["a bad --set value", [...train, "--set", "train.steps=-1"], /train\.steps: /],
    ["a bad environment value", [...train, "--set", "environment.options.rows=-3"], /rows: Too small/],
    ["an unknown environment", [...train, "--set", "environment.name=nope"], /environment\.name: .*nope/],
    ["a recipe that is not YAML", ["train", "--recipe", badYaml], /bad\.yaml: not valid YAML/],
    ["a recipe with an unknown key", ["train", "--recipe", unknownKey], /unknown key "trian"/],
    [
      "a recipe that does not exist",
      ["train", "--recipe", "no-such-recipe"],
      /recipe "no-such-recipe" not found/,
    ],
    ["an unknown flag", [...train, "--stepz", "3"], /Unknown option '--stepz'/],
    ["a bad --mode", [...train, "--mode", "sideways"], /--mode: expected all, rollout or learner/],
    ["a bad --lease-seconds", [...train, "--lease-seconds", "0"], /--lease-seconds/],
    [
      "a bad environment variable",
      [...train, "--set", "engine.kind=torch"],
      /TROUPE_PYTHON: no file/,
      { TROUPE_PYTHON: "/no/such/python" },
    ],
    [
      "eval --step 0 without its checkpoints",
      ["eval", "--recipe", recipe, "--run", "tiny-done", "--step", "0"],
      /--step: run tiny-done has no committed step with checkpoints at 0 \(steps with checkpoints: 1\)/,
    ],
    [
      "eval --step that is not a number",
      ["eval", "--recipe", recipe, "--step", "two"],
      /--step: expected a whole number/,
    ],
    ["eval --tasks 0", ["eval", "--recipe", recipe, "--tasks", "0"], /--tasks: expected a whole number ≥ 1/],
    [
      "eval of an unknown run",
      ["eval", "--recipe", recipe, "--run", "nope"],
      /no object at "runs\/nope\/config\.json"/,
    ],
    [
      "publish without --name",
      ["publish", "--recipe", recipe, "--run", "tiny-done"],
      /--name <team> is required/,
    ],
    [
      "--resume with another change",
      [...train, "--resume", "--set", "seed=3"],
      /--set seed=3: --resume .* only --set train\.steps/,
    ],
    ["an unknown command", ["frobnicate"], /unknown command "frobnicate"/],
    [
      "a memory budget that is not a size",
      [...train, "--set", "memoryBudget=lots"],
      /memoryBudget: expected a size such as 2GiB/,
    ],
    [
      "a memory budget below what the trainer holds",
      [...train, "--set", "memoryBudget=256MiB"],
      /memoryBudget 256 MiB is less than the trainer holds before any batch \(.*\); raise memoryBudget/,
    ],
    [
      "a memory budget too small for the model's longest sequence",
      [...train, "--set", "memoryBudget=540MiB", "--set", "model.max_position_embeddings=4096"],
      /memoryBudget 540 MiB is too small: one sequence of 4096 tokens \(model\.max_position_embeddings\) needs an estimated .* raise memoryBudget to at least .* or lower model\.max_position_embeddings/,
    ],
  ];

  it("each bad input", async () => {
    expect(cases.length).toBeGreaterThanOrEqual(12);
    const results = await pooled(
      cases.map(
        ([, args, , env]) =>
          () =>
            cli(args, env),
      ),
    );
    for (const [i, [what, , named]] of cases.entries()) {
      const { status, stderr } = results[i]!;
      const errorLines = stderr.split("\n").filter((l) => l.startsWith("error:"));
      expect({ what, status, errorLines: errorLines.length }, stderr).toEqual({
        what,
        status: 2,
        errorLines: 1,
      });
      expect(errorLines[0], what).toMatch(named);
      expect(stderr, what).not.toMatch(/\n\s+at /);
    }
    // None of them left a run behind.
    expect(runs()).toEqual(["tiny-done"]);
  }, 300_000);
});

describe("the command line", () => {
  it("--help on every command", async () => {
    const commands = ["train", "sft", "eval", "compare", "sweep", "report", "publish"];
    const results = await pooled(commands.map((c) => () => cli([c, "--help"])));
    for (const [i, command] of commands.entries()) {
      expect({ command, status: results[i]!.status }).toEqual({ command, status: 0 });
      expect(results[i]!.stdout).toMatch(new RegExp(`^usage: trainer ${command} `));
    }
  }, 120_000);

  it("a launch that fails before its first step leaves nothing; eval and --resume take the newest run", async () => {
    // A torch worker that cannot start: the run folder was made, and is gone again.
    const failed = await cli([...train, "--set", "engine.kind=torch", "--set", "engine.python=/bin/false"]);
    expect(failed.status).not.toBe(0);
    expect(failed.stderr.split("\n").filter((l) => l.startsWith("error:"))).toHaveLength(1);
    expect(runs()).toEqual(["tiny-done"]);
    const evaluated = await cli(["eval", "--recipe", recipe]);
    expect(evaluated.status, evaluated.stderr).toBe(0);
    expect(evaluated.stdout).toMatch(/tiny-done\s+1\s/);
  }, 120_000);

  it("--resume --set train.steps=n extends a finished run, steps numbered from 0 throughout", async () => {
    const extended = await cli([...resumeDone, "--set", "train.steps=3"]);
    expect(extended.status, extended.stderr).toBe(0);
    expect(extended.stderr).toMatch(/resuming run tiny-done after committed step 1/);
    expect(extended.stderr).toMatch(/step 2\/2 .*\neval @ step 2: /);
    expect(extended.stdout).toMatch(/run tiny-done: finished at step 2\n/);
    expect(extended.stdout).toContain(`artifacts: ${join(storeRoot, "runs", "tiny-done")}/ `);

    // the store may be named on the command line (where the run is); how it trains may not
    const refused = await cli([...resumeDone, "--set", "seed=2"]);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toBe(
      "error: --set seed=2: --resume continues a run with its own recipe; it takes only --set train.steps=<n> (to extend it) and --set store=<uri> (where the run is)\n",
    );
    const elsewhere = await cli([
      ...resumeDone,
      "--set",
      `store=file://${storeRoot}/`,
      "--set",
      "train.steps=4",
    ]);
    expect(elsewhere.status, elsewhere.stderr).toBe(0);
    expect(elsewhere.stdout).toMatch(/run tiny-done: finished at step 3\n/);
  }, 120_000);
});
