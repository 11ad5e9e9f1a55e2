/**
 * A prompt longer than the model's context is refused before anything is generated: `loadTeam`
 * reads each policy's max_position_embeddings and tokenizer from its published files, and `solve`
 * counts every agent's prompt with them first.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTeamRegistry,
  type InferenceBackend,
  type LoadedTeam,
  loadTeam,
  SolveInputError,
  solve,
} from "../src/index.ts";
import { createOnnxBackend } from "../src/onnx-backend.ts";
import { tempStore, tinyTeamInput } from "./fixtures.ts";

const tmp = tempStore();
const onnx = createOnnxBackend();
let generations = 0;
let team: LoadedTeam;

/** The ONNX backend, counting generation calls. */
const counting: InferenceBackend = {
  name: "onnx",
  async policies(manifest, registry) {
    const set = await onnx.policies(manifest, registry);
    return Object.fromEntries(
      Object.entries(set).map(([id, policy]) => [
        id,
        {
          ...policy,
          generate: (requests, sampling, options) => {
            generations++;
            return policy.generate(requests, sampling, options);
          },
        },
      ]),
    );
  },
};

beforeAll(async () => {
  const registry = createTeamRegistry(tmp.store);
  team = await loadTeam(registry, await registry.publish(await tinyTeamInput("tiny")), counting);
}, 60_000);

afterAll(async () => {
  await onnx.close();
  tmp.cleanup();
});

const openGrid = (n: number) => ({
  rows: n,
  cols: n,
  grid: Array.from({ length: n }, () => ".".repeat(n)),
  start: [0, 0],
  goal: [n - 1, n - 1],
  optimal: 2 * n - 2,
});

describe("prompts and the model's context", () => {
  it("loadTeam reads each policy's context from its config.json", () => {
    expect(team.contexts?.planner?.maxPositions).toBe(512);
    expect(team.contexts?.fixer?.maxPositions).toBe(512);
  });

  it("a 22×22 grid (a 543-token prompt) is refused before any generation; 20×20 (457) is solved", async () => {
    const error = await solve(team, { task: openGrid(22) }, { sampling: { seed: 1 } }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SolveInputError);
    expect((error as SolveInputError).path).toEqual(["task"]);
    expect((error as Error).message).toBe(
      "task: the prompt of agent planner is 543 tokens, and its model reads at most 512 " +
        "(max_position_embeddings of policy planner): give a smaller task",
    );
    expect(generations).toBe(0);
    // (21×21 starts at 499 tokens, but the fixer's prompt, which adds the planner's report, outgrows
    // 512 on its turn: the same 422 then, before that turn is generated.)
    const result = await solve(team, { task: openGrid(20) }, { sampling: { seed: 1 } });
    expect(result.turns[0]!.promptTokens).toBe(457);
    expect(generations).toBeGreaterThan(0);
  }, 60_000);
});
