/**
 * Every shipped environment answers POST /v1/solve with a task of inputs only (no reference
 * answer, no hidden tests): a tiny untrained team (one shared policy, hidden 32 × 1 layer) per
 * environment, published into a temp store and asked through the app with a sandbox. Environments
 * with labels (math, coding) answer `solved: null`; the games and writing judge from the answer
 * itself, so they answer true or false.
 */
import { createEnvironment } from "@troupe/envs";
import { createSandbox, type Sandbox } from "@troupe/sandbox";
import { checkpointSummary, createTeamRegistry, servingFiles } from "@troupe/teams";
import { createOnnxBackend } from "@troupe/teams/onnx";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tinyCheckpoint } from "../../../../libs/teams/test/fixtures.ts";
import { createApp } from "../../src/app.ts";
import { tempStore } from "../fixtures.ts";

const { store, cleanup } = tempStore();
const registry = createTeamRegistry(store);
const backend = createOnnxBackend();
let sandbox: Sandbox;
let files: Awaited<ReturnType<typeof tinyCheckpoint>>;

beforeAll(async () => {
  sandbox = await createSandbox();
  files = servingFiles(await tinyCheckpoint("shared", 3));
});
afterAll(async () => {
  await backend.close();
  cleanup();
});

/** Publishes the tiny shared-policy team for an environment and asks it `task`. */
async function solveWith(
  name: string,
  environment: { name: string; options: Record<string, unknown> },
  task: unknown,
) {
  const { model, parameters } = checkpointSummary(files);
  const registered = createEnvironment(environment.name, { ...environment.options, runner: sandbox });
  const team = registered.team("shared");
  await registry.publish({
    name,
    environment,
    team: { specialisation: "shared", maxTurns: 1 },
    roles: team.roles.map((r) => ({ id: r.id, policy: r.policy })),
    policies: { shared: { files, model, parameters, sampling: { temperature: 1, topP: 1, maxTokens: 8 } } },
    source: { runId: "inputs-only", step: 0 },
  });
  const app = createApp({ registry, backend, sandbox, log: () => {} });
  const res = await app.request("/v1/solve", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ team: name, input: { task }, options: { seed: 1 } }),
  });
  const body = (await res.json()) as { solved: boolean | null; answer: { kind: string }; turns: unknown[] };
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body;
}

const generated = (name: string, options: Record<string, unknown> = {}) =>
  createEnvironment(name, { ...options, runner: {} as never }).generateTasks("test", 1, 0)[0]!.payload;

const PROMPT = 'def add(a, b):\n    """Return the sum of a and b.\n    >>> add(2, 3)\n    5\n    """\n';

describe("POST /v1/solve with a task's inputs only", () => {
  it("math: a question without its answer is answered and not judged", async () => {
    const body = await solveWith(
      "math-open",
      { name: "math", options: { maxTurns: 1 } },
      {
        question: "Ann has 3 apples and buys 4 more. How many apples does she have?",
      },
    );
    expect(body.solved).toBeNull();
    expect(body.answer.kind).toBe("math");
  });

  it("coding (helper + main): a prompt without hidden tests is written and not judged", async () => {
    const body = await solveWith(
      "code-open",
      { name: "coding", options: { maxTurns: 1 } },
      {
        prompt: PROMPT,
        entryPoint: "add",
      },
    );
    expect(body.solved).toBeNull();
    expect(body.answer).toMatchObject({ kind: "code", entryPoint: "add", tests: null });
  });

  it("coding (coder + tester): the coder's code runs against the tester's own tests, not judged", async () => {
    const body = await solveWith(
      "code-tester-open",
      { name: "coding", options: { roles: "coder-tester", test: "humaneval", maxTurns: 1 } },
      { prompt: PROMPT, entryPoint: "add" },
    );
    expect(body.solved).toBeNull();
    expect(body.answer).toMatchObject({ kind: "code", entryPoint: "add", tests: null });
    expect(Object.keys((body.answer as unknown as { parts: object }).parts).sort()).toEqual([
      "coder",
      "tester",
    ]);
  });

  it("writing: a post alone (writing has no labels: the tiers judge the texts)", async () => {
    const body = await solveWith(
      "writing-open",
      { name: "writing", options: {} },
      {
        kind: "tldr",
        text: "I moved to a new city last month and found a quiet flat near the river.",
      },
    );
    expect(typeof body.solved).toBe("boolean");
    expect(body.answer.kind).toBe("writing");
  });

  it("the OpenAPI document names each environment's label fields", async () => {
    const app = createApp({ registry, backend, log: () => {} });
    const doc = (await (await app.request("/openapi.json")).json()) as {
      components: { schemas: { SolveInput: { properties: { task: Record<string, unknown> } } } };
    };
    const task = doc.components.schemas.SolveInput.properties.task;
    expect(task["x-labels"]).toEqual({
      coding: ["test", "canonicalSolution"],
      math: ["answer", "solution", "expression"],
    });
    expect(task.description).toContain("math: inputs id, question; labels answer, solution, expression");
  });

  for (const game of ["plan-path", "sokoban", "sudoku"]) {
    it(`${game}: the puzzle alone (the games have no labels: reaching the goal is judged on the board)`, async () => {
      const body = await solveWith(`${game}-open`, { name: game, options: {} }, generated(game));
      expect(typeof body.solved).toBe("boolean");
      expect(body.answer.kind).toBe(game);
    });
  }
});
