/**
 * The data-file environment: a JSONL (or Parquet) file of tasks, a template per role, a reward
 * module. Files are loaded through prepareEnvironment as the trainer loads them, from a temp folder.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parquetWriteBuffer } from "hyparquet-writer";
import { afterAll, describe, expect, test } from "vitest";
import { createEnvironment, renderPrompt } from "../../src/index.ts";
import { prepareEnvironment } from "../../src/module.ts";

const root = mkdtempSync(join(tmpdir(), "troupe-data-file-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const rows = Array.from({ length: 20 }, (_, i) => ({
  id: `q${i}`,
  question: `What is ${i} + 1?`,
  answer: String(i + 1),
  note: "not a field the team reads",
}));
writeFileSync(join(root, "tasks.jsonl"), rows.map((r) => JSON.stringify(r)).join("\n"));
writeFileSync(
  join(root, "reward.ts"),
  `export function reward(task: Record<string, unknown>, actions: { role: string; turn: number; text: string }[]) {
  const last = actions.at(-1)!;
  const right = last.text.trim() === task.answer;
  return { team: right ? 1 : 0, perRole: { [last.role]: right ? 0.5 : 0 }, success: right, done: right };
}
`,
);
writeFileSync(join(root, "no-reward.js"), "export const nothing = 1;\n");

const options = {
  tasks: "./tasks.jsonl",
  inputs: ["question"],
  labels: ["answer"],
  prompts: {
    solver: "Q: {{question}}\nturn {{turn}}/{{maxTurns}}",
    checker: "{{question}} said: {{solver}}",
  },
  maxTurns: 2,
  reward: "./reward.ts",
  demonstrations: { solver: "answer", checker: "answer" },
};

async function build(extra: Record<string, unknown> = {}) {
  const prepared = await prepareEnvironment(
    { name: "data-file", options: { ...options, ...extra } },
    { base: root, root },
  );
  return { prepared, registered: createEnvironment(prepared.name, prepared.options) };
}

describe("data-file environment", () => {
  test("records each file as {path, sha256}, relative to the root", async () => {
    const { prepared } = await build();
    expect(prepared.options.tasks).toEqual({
      path: "tasks.jsonl",
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(prepared.options.reward).toMatchObject({ path: "reward.ts" });
    // Recorded refs load again; a changed file is one line naming it.
    await expect(prepareEnvironment(prepared, { base: root, root })).resolves.toEqual(prepared);
    const changed = { ...prepared.options, tasks: { path: "tasks.jsonl", sha256: "0".repeat(64) } };
    await expect(
      prepareEnvironment({ name: "data-file", options: changed }, { base: root, root, recordedBy: "run r" }),
    ).rejects.toThrow(
      /^environment\.options\.tasks: tasks\.jsonl changed since run r recorded it \(sha256 000000000000… then, [0-9a-f]{12}… now\)/,
    );
  });

  test("sequential turns: templates, the reward's rewards, done when it says, success only with labels", async () => {
    const { registered } = await build();
    const { env } = registered;
    const [task] = registered.generateTasks("train", 1, 0);
    const payload = task!.payload as Record<string, unknown>;
    expect(Object.keys(payload).sort()).toEqual(["answer", "id", "question"]);
    let state = await env.reset(task!, 0);
    expect(env.observe(state, "solver").messages[0]!.content).toBe(`Q: ${payload.question}\nturn 1/2`);
    let step = await env.step(state, { solver: "wrong" });
    expect(step).toMatchObject({ teamReward: 0, localRewards: { solver: 0 }, done: false, success: false });
    state = step.state;
    expect(env.observe(state, "checker").messages[0]!.content).toBe(`${payload.question} said: wrong`);
    step = await env.step(state, { checker: String(payload.answer) });
    expect(step).toMatchObject({ teamReward: 1, localRewards: { checker: 0.5 }, done: true, success: true });

    // Inputs only: played to the last turn, never judged.
    let open = await env.reset({ id: "x", split: "test", payload: { question: "What is 2 + 2?" } }, 0);
    const seen: unknown[] = [];
    for (const agent of ["solver", "checker", "solver", "checker"]) {
      const result = await env.step(open, { [agent]: "4" });
      seen.push([result.teamReward, result.success, result.done]);
      open = result.state;
    }
    expect(seen).toEqual([
      [0, undefined, false],
      [0, undefined, false],
      [0, undefined, false],
      [0, undefined, true],
    ]);
  });

  test("parallel turns, demonstrations, splits and a Parquet file", async () => {
    const { registered } = await build({ turnOrder: "parallel" });
    expect(registered.team("per-role")).toMatchObject({ turnOrder: "parallel", maxTurns: 2 });
    const train = registered.generateTasks("train", 100, 0);
    const test = registered.generateTasks("test", 100, 0);
    expect(train.length + test.length).toBe(20);
    expect(train.filter((t) => test.some((u) => u.id === t.id))).toEqual([]);
    const state = await registered.env.reset(train[0]!, 0);
    expect(registered.demo!(train[0]!, state, "solver")).toBe(
      (train[0]!.payload as { answer: string }).answer,
    );

    writeFileSync(
      join(root, "tasks.parquet"),
      Buffer.from(
        parquetWriteBuffer({
          columnData: [
            { name: "id", data: rows.map((r) => r.id), type: "STRING" },
            { name: "question", data: rows.map((r) => r.question), type: "STRING" },
            { name: "answer", data: rows.map((r) => r.answer), type: "STRING" },
          ],
        }),
      ),
    );
    const fromParquet = await build({ tasks: "./tasks.parquet" });
    expect(fromParquet.registered.generateTasks("test", 100, 0)).toEqual(test);
  });

  test("bad options are one line naming the key", async () => {
    await expect(build({ prompts: { solver: "{{answer}}" } })).rejects.toThrow(
      "environment.options.prompts.solver: {{answer}} is a label: agents never read labels (inputs: question)",
    );
    await expect(build({ prompts: { solver: "{{qestion}}" } })).rejects.toThrow(
      "environment.options.prompts.solver: unknown placeholder {{qestion}} (known: question, solver, history, turn, maxTurns)",
    );
    await expect(build({ reward: "./no-reward.js" })).rejects.toThrow(
      "environment.options.reward: no-reward.js exports no function reward(task, actions)",
    );
    await expect(build({ tasks: "./missing.jsonl" })).rejects.toThrow(
      `environment.options.tasks: cannot read ${join(root, "missing.jsonl")} (ENOENT)`,
    );
    await expect(build({ inputs: ["question", "topic"] })).rejects.toThrow(
      'environment.options.tasks: row 1 has no field "topic"',
    );
    const { registered } = await build();
    await expect(
      (async () => registered.env.reset({ id: "y", split: "test", payload: { answer: "3" } }, 0))(),
    ).rejects.toThrow("data-file task y: payload: question: missing (an input of every task)");
  });

  test("renderPrompt fills {{history}} with every answer so far", () => {
    const state = {
      task: { question: "q" },
      turn: 1,
      actions: [
        { role: "a", turn: 1, text: "x" },
        { role: "b", turn: 1, text: "y" },
      ],
    };
    expect(renderPrompt("{{question}}|{{history}}|{{b}}|{{turn}}", state, 3)).toBe("q|a: x\nb: y|y|2");
  });
});
