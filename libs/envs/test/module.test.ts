/**
 * Environments from modules of one's own (prepareEnvironment, registerEnvironmentModule): a
 * JavaScript module registered under its file's name, recorded as {path, sha256} and loaded again
 * from the record; a changed file, a taken name and a built-in's name each refused in one line.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, test } from "vitest";
import {
  createEnvironment,
  environmentModule,
  environmentNames,
  registerEnvironmentModule,
} from "../src/index.ts";
import { prepareEnvironment } from "../src/module.ts";

const root = mkdtempSync(join(tmpdir(), "troupe-module-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
symlinkSync(resolve(fileURLToPath(import.meta.url), "../../../../node_modules"), join(root, "node_modules"));

/** An entry whose environment says "ok" once; `name` as given (none: the file's name). */
const entrySource = (name?: string) => `import { z } from "zod";
export default {
  ${name ? `name: ${JSON.stringify(name)},` : ""}
  description: "one agent says ok",
  options: z.object({ turns: z.number().int().default(1) }).strict(),
  build(options) {
    const env = {
      name: "echo",
      agents: ["a"],
      reset: (task) => ({ said: null }),
      observe: () => ({ messages: [{ role: "user", content: "say ok" }] }),
      step: (state, actions) => ({ state: { said: actions.a }, teamReward: actions.a === "ok" ? 1 : 0, localRewards: {}, done: true }),
    };
    return {
      env,
      generateTasks: (split, count) => Array.from({ length: count }, (_, i) => ({ id: split + i, split, payload: {} })),
      team: () => ({ name: "echo", roles: [{ id: "a", policy: "a" }], turnOrder: "sequential", maxTurns: options.turns }),
    };
  },
};
`;

mkdirSync(join(root, "tasks"));
writeFileSync(join(root, "tasks", "Echo Task.mjs"), entrySource());
writeFileSync(join(root, "tasks", "other.mjs"), entrySource("echo-task"));
writeFileSync(join(root, "tasks", "builtin.mjs"), entrySource("math"));

describe("an environment from a module", () => {
  test("is registered under its file's name, recorded and loaded again from the record", async () => {
    const options = { base: join(root, "tasks"), root };
    const prepared = await prepareEnvironment({ module: "./Echo Task.mjs", options: { turns: 2 } }, options);
    expect(prepared).toEqual({
      name: "echo-task",
      module: { path: "tasks/Echo Task.mjs", sha256: expect.stringMatching(/^[0-9a-f]{64}$/) },
      options: { turns: 2 },
    });
    expect(environmentNames()).toContain("echo-task");
    expect(environmentModule("echo-task")).toEqual(prepared.module);
    const registered = createEnvironment("echo-task", { turns: 2 });
    expect(registered.team("per-role").maxTurns).toBe(2);
    expect(registered.render({ said: "ok" }, [])).toEqual({ kind: "state", state: { said: "ok" } });
    await expect(prepareEnvironment(prepared, options)).resolves.toEqual(prepared);
    expect(() => createEnvironment("echo-task", { turn: 2 })).toThrow(
      'environment.options.turn: not an option of environment "echo-task" (its options: turns)',
    );
  });

  test("a changed file, a taken name, a built-in's name and both name and module are one line each", async () => {
    const options = { base: join(root, "tasks"), root, recordedBy: "run r1" };
    const prepared = await prepareEnvironment({ module: "./Echo Task.mjs" }, options);
    writeFileSync(join(root, "tasks", "Echo Task.mjs"), `${entrySource()}// edited\n`);
    await expect(prepareEnvironment(prepared, options)).rejects.toThrow(
      /^environment\.module: tasks\/Echo Task\.mjs changed since run r1 recorded it \(sha256 [0-9a-f]{12}… then, [0-9a-f]{12}… now\): restore it, or train and publish again with the new file$/,
    );
    await expect(prepareEnvironment({ module: "./other.mjs" }, options)).rejects.toThrow(
      'environment.module: tasks/other.mjs: environment "echo-task" is already loaded from tasks/Echo Task.mjs; give the entry another name',
    );
    await expect(prepareEnvironment({ module: "./builtin.mjs" }, options)).rejects.toThrow(
      'environment.module: tasks/builtin.mjs: its name "math" is a built-in environment\'s; give the entry another name',
    );
    await expect(prepareEnvironment({ name: "math", module: "./other.mjs" }, options)).rejects.toThrow(
      "environment: give environment.name (a built-in) or environment.module (your own file), not both",
    );
    expect(() => registerEnvironmentModule({ default: { description: "x" } }, prepared.module!)).toThrow(
      "environment.module: tasks/Echo Task.mjs: its entry has no build(options, runner) function",
    );
  });
});
