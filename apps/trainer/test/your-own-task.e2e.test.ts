/**
 * docs/your-own-task.md end to end: its two examples (examples/your-own-task: an environment
 * module, and the same task as a data file with a reward module), each copied as it is into a temp
 * folder, trained a few steps by the trainer CLI, published, and asked one question with inputs
 * only through the team registry the API serves from (which loads the module from the manifest).
 * Then the module is edited: `trainer eval` and the served team refuse it in one line.
 */
import { appendFileSync, cpSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { createEnvironment } from "@troupe/envs";
import { manifestEnvironmentLoader, prepareEnvironment } from "@troupe/envs/module";
import { FileStore } from "@troupe/storage/node";
import { createTeamRegistry, loadTeam, solve, UnsupportedTeamError } from "@troupe/teams";
import { createOnnxBackend } from "@troupe/teams/onnx";
import { describe, expect, it } from "vitest";
import { appRoot, tempRoot, trainerInProcess } from "./tiny.ts";

const example = resolve(appRoot, "../../examples/your-own-task");
const root = tempRoot("your-own-task");
cpSync(example, join(root, "example"), { recursive: true });
// A project of one's own has its own node_modules (zod, for the module's schemas): this one's.
symlinkSync(resolve(appRoot, "../../node_modules"), join(root, "node_modules"));

/** A few steps of the example's recipe (a smaller run than the page's), into `store`. */
const short = (store: string) => [
  "--set",
  `store=file://${store}`,
  "--set",
  "sft.steps=3",
  "--set",
  "train.steps=2",
  "--set",
  "train.tasksPerStep=2",
  "--set",
  "train.evalTasks=4",
];

async function trainAndPublish(recipe: string, store: string, team: string) {
  const trained = await trainerInProcess([
    "train",
    "--recipe",
    recipe,
    "--run",
    `${team}-run`,
    ...short(store),
  ]);
  expect(trained.code, trained.stderr).toBe(0);
  const published = await trainerInProcess([
    "publish",
    "--run",
    `${team}-run`,
    "--name",
    team,
    "--store",
    `file://${store}`,
  ]);
  expect(published.code).toBe(0);
  expect(published.stdout).toContain(`published ${team}@1`);
}

/** The team as api:serve resolves it: its environment's files loaded from the manifest. */
function servingRegistry(store: string) {
  return createTeamRegistry(new FileStore(store), {
    prepareEnvironment: manifestEnvironmentLoader(root, (m) => new UnsupportedTeamError(m)),
  });
}

/**
 * The published team, served as api:serve serves it, asked about a sentence with inputs only: it
 * answers in the example's two turns, unjudged (nothing says what the sum should be); with its
 * labels `a` and `b` the same sentence is judged. Its manifest and the open answer, for more checks.
 */
async function answersWithoutNumbers(
  store: string,
  team: string,
  { sentence, a, b, seed }: { sentence: string; a: number; b: number; seed: number },
) {
  const registry = servingRegistry(store);
  const manifest = await registry.resolve(team);
  const backend = createOnnxBackend();
  try {
    const loaded = await loadTeam(registry, manifest, backend);
    const open = await solve(loaded, { task: { sentence } }, { sampling: { seed } });
    expect(open.solved).toBeNull();
    expect(open.turns.map((t) => t.agent)).toEqual(["reader", "calculator"]);
    expect(open.turns[0]!.prompt).toBe(`${sentence}\nnumbers:`);
    const judged = await solve(loaded, { task: { sentence, a, b } }, { sampling: { seed } });
    expect(typeof judged.solved).toBe("boolean");
    return { manifest, open };
  } finally {
    await backend.close();
  }
}

describe("your own task (docs/your-own-task.md)", () => {
  it("a module environment trains, publishes and answers a sentence without its numbers", async () => {
    const store = join(root, "module-store");
    const recipe = join(root, "example", "recipe.yaml");
    await trainAndPublish(recipe, store, "sum-sentence");

    const config = JSON.parse(readFileSync(join(store, "runs", "sum-sentence-run", "config.json"), "utf8"));
    const modulePath = join(root, "example", "sum-sentence.ts");
    expect(config.environment).toMatchObject({ name: "sum-sentence", module: { path: modulePath } });
    expect(config.environment.module.sha256).toMatch(/^[0-9a-f]{64}$/);

    const { manifest, open } = await answersWithoutNumbers(store, "sum-sentence", {
      sentence: "Eli has 5 coins and gets 3 more.",
      a: 5,
      b: 3,
      seed: 1,
    });
    expect(manifest.environment.module).toEqual(config.environment.module);
    expect(open.answer.kind).toBe("state");

    // The module changes: the run and the published team refuse it, naming the file.
    appendFileSync(modulePath, "// edited\n");
    // (eval reads the store from a recipe: the copy's, pointed at this store)
    writeFileSync(recipe, `${readFileSync(recipe, "utf8")}store: file://${store}\n`);
    const evaluated = await trainerInProcess(["eval", "--recipe", recipe, "--run", "sum-sentence-run"]);
    expect(evaluated.code).toBe(2);
    expect(evaluated.stderr).toMatch(
      new RegExp(
        `^error: run sum-sentence-run config: environment\\.module: ${modulePath.replace(/[.]/g, "\\.")} changed since run sum-sentence-run config recorded it \\(sha256 [0-9a-f]{12}… then, [0-9a-f]{12}… now\\): restore it, or train and publish again with the new file\\n$`,
      ),
    );
    await expect(servingRegistry(store).resolve("sum-sentence")).rejects.toThrow(
      /^team sum-sentence v1: environment\.module: .* changed since team sum-sentence v1 recorded it/,
    );
  });

  it("the data-file shortcut trains, publishes and answers a sentence without its numbers", async () => {
    const store = join(root, "data-store");
    const recipe = join(root, "example", "data-file", "recipe.yaml");
    await trainAndPublish(recipe, store, "sum-sentence-data");

    const { manifest, open } = await answersWithoutNumbers(store, "sum-sentence-data", {
      sentence: "Fay has 2 books and gets 7 more.",
      a: 2,
      b: 7,
      seed: 2,
    });
    expect(manifest.environment.name).toBe("data-file");
    expect(manifest.environment.options.tasks).toMatchObject({
      path: join(root, "example", "data-file", "tasks.jsonl"),
    });
    expect(manifest.environment.options.reward).toMatchObject({
      path: join(root, "example", "data-file", "reward.ts"),
    });
    expect(open.turns[1]!.prompt).toBe(`numbers: ${open.turns[0]!.completion}\nsum:`);
  });

  it("the page's testing snippet: the solver's answers solve a task", async () => {
    const here = join(root, "example");
    const prepared = await prepareEnvironment({ module: "./sum-sentence.ts" }, { base: here, root: here });
    const { env, generateTasks, demo } = createEnvironment(prepared.name, prepared.options);
    const [task] = generateTasks("train", 1, 0);
    const state = await env.reset(task!, 0);
    const read = await env.step(state, { reader: demo!(task!, state, "reader") });
    const added = await env.step(read.state, { calculator: demo!(task!, read.state, "calculator") });
    expect(added).toMatchObject({ teamReward: 1, done: true, success: true });
  });

  it("the code on the page is the example's files", () => {
    const page = readFileSync(resolve(appRoot, "../../docs/your-own-task.md"), "utf8");
    const blocks = [...page.matchAll(/<!-- file: (\S+) -->\n```\w+\n([\s\S]*?)\n```/g)];
    expect(blocks.map((b) => b[1])).toEqual([
      "examples/your-own-task/sum-sentence.ts",
      "examples/your-own-task/recipe.yaml",
      "examples/your-own-task/data-file/reward.ts",
      "examples/your-own-task/data-file/recipe.yaml",
    ]);
    for (const [, path, code] of blocks) {
      expect(`${code}\n`, path).toBe(readFileSync(resolve(appRoot, "../..", path!), "utf8"));
    }
  });

  it("a module that exports no entry, or a missing file, is one line naming it", async () => {
    const options = { base: root, root };
    await expect(prepareEnvironment({ module: "./nowhere.ts" }, options)).rejects.toThrow(
      `environment.module: cannot read ${join(root, "nowhere.ts")} (ENOENT)`,
    );
    await expect(prepareEnvironment({ module: "./example/data-file/reward.ts" }, options)).rejects.toThrow(
      /^environment\.module: .*reward\.ts: its entry has no build\(options, runner\) function$/,
    );
  });
});
