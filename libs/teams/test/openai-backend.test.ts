import { ByteTokenizer } from "@troupe/engine";
import type { PlanPathPuzzle } from "@troupe/envs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createOpenAIBackend,
  createTeamRegistry,
  type InferenceBackend,
  loadTeam,
  type PlanPathAnswer,
  solve,
  type TeamManifest,
  type TeamRegistry,
} from "../src/index.ts";
import { tempStore, tinyTeamInput } from "./fixtures.ts";
import { bfsPlan, PlanPathServer } from "./openai-server.ts";

const tmp = tempStore();
let server: PlanPathServer;
let registry: TeamRegistry;
let manifest: TeamManifest;
const backends: InferenceBackend[] = [];

beforeAll(async () => {
  server = await PlanPathServer.start();
  registry = createTeamRegistry(tmp.store);
  manifest = await registry.publish(await tinyTeamInput("openteam"));
}, 60_000);
afterAll(async () => {
  for (const b of backends) await b.close?.();
  await server.close();
  tmp.cleanup();
});

function backend(options: Partial<Parameters<typeof createOpenAIBackend>[0]> = {}) {
  const b = createOpenAIBackend({ baseUrl: `${server.url}/v1`, apiKey: "sk-test", retries: 0, ...options });
  backends.push(b);
  return b;
}

describe("solve with the OpenAI backend against a local OpenAI-compatible server", () => {
  it("sends each agent's training prompt as token ids to <team>-<policy>, and solves with both roles", async () => {
    const team = await loadTeam(registry, manifest, backend());
    const task = team.environment.generateTasks("test", 1, 11)[0]!;
    const puzzle = task.payload as PlanPathPuzzle;
    server.requests.length = 0;
    const result = await solve(team, { task }, { sampling: { seed: 9 } });

    // The planner gives the first move of a shortest path, the fixer the rest: solved in turn 0.
    expect(result.solved).toBe(true);
    expect(result.turns.map((t) => [t.turn, t.agent, t.done])).toEqual([
      [0, "planner", false],
      [0, "fixer", true],
    ]);
    const rows = puzzle.grid.map((row, r) =>
      [...row]
        .map((ch, c) =>
          r === puzzle.start[0] && c === puzzle.start[1]
            ? "A"
            : r === puzzle.goal[0] && c === puzzle.goal[1]
              ? "G"
              : ch,
        )
        .join(""),
    );
    const plan = bfsPlan(rows);
    expect(plan).toHaveLength(puzzle.optimal);
    // The fixer sees the board after the planner's move, so it answers the rest of the path.
    expect(result.turns.map((t) => t.completion)).toEqual([plan.slice(0, 1), plan.slice(1)]);
    const answer = result.answer as PlanPathAnswer;
    expect(answer.moves).toBe(plan);
    expect(answer.path).toHaveLength(puzzle.optimal + 1);
    expect(answer.path[0]).toEqual(puzzle.start);
    expect(answer.path.at(-1)).toEqual(puzzle.goal);
    expect(answer.position).toEqual(puzzle.goal);
    // Rewards: optimal path → goal + optimal bonus + per-move costs and shaping (−0.01 + 1/4 per move).
    expect(result.teamReturn).toBeCloseTo(1 + 0.5 + puzzle.optimal * (-0.01 + 1 / 4), 10);

    // What the server saw: one request per agent turn, the model named <team>-<policy>, the
    // prompt as the policy's own tokenizer renders the environment's observation.
    const tokenizer = new ByteTokenizer();
    expect(server.requests.map((r) => r.model)).toEqual(["openteam-planner", "openteam-fixer"]);
    server.requests.forEach((r, i) => {
      expect(r.prompt).toEqual(tokenizer.encodeChat(result.turns[i]!.messages));
      expect(r).toMatchObject({ temperature: 1, topP: 1, maxTokens: 8, authorization: "Bearer sk-test" });
      expect(result.turns[i]!.promptTokens).toBe(r.prompt.length);
    });
    expect(result.usage).toEqual({
      planner: { calls: 1, promptTokens: server.requests[0]!.prompt.length, completionTokens: 2 },
      fixer: { calls: 1, promptTokens: server.requests[1]!.prompt.length, completionTokens: plan.length },
    });

    // The same seed sends the same per-request seeds; another seed, others; overrides reach the server.
    const seeds = server.requests.map((r) => r.seed);
    server.requests.length = 0;
    await solve(team, { task }, { sampling: { seed: 9 } });
    expect(server.requests.map((r) => r.seed)).toEqual(seeds);
    server.requests.length = 0;
    await solve(team, { task }, { sampling: { seed: 10, temperature: 0, topP: 0.5, maxTokens: 6 } });
    expect(server.requests.map((r) => r.seed)).not.toEqual(seeds);
    expect(server.requests[0]).toMatchObject({ temperature: 0, topP: 0.5, maxTokens: 6 });
  }, 60_000);

  it("uses modelFor for model names, and reports a server's refusal", async () => {
    const named = await loadTeam(
      registry,
      manifest,
      backend({ modelFor: (m, policyId) => `${m.name}-v${m.version}-${policyId}` }),
    );
    server.requests.length = 0;
    await solve(named, { generate: { seed: 2 } }, { maxTurns: 1, sampling: { seed: 1 } });
    expect(server.requests[0]!.model).toBe("openteam-v1-planner");

    const unknown = await loadTeam(registry, manifest, backend({ modelFor: () => "nobody" }));
    await expect(solve(unknown, { generate: { seed: 2 } })).rejects.toThrow(/nobody/);
  }, 60_000);

  it("serves a role that samples on its own with its manifest sampling, the request's overrides on top", async () => {
    const input = await tinyTeamInput("roleteam");
    const roles = input.roles.map((r) =>
      r.id === "fixer" ? { ...r, sampling: { temperature: 0.5, topP: 0.9, maxTokens: 20, stop: ["\n"] } } : r,
    );
    const published = await registry.publish({ ...input, roles });
    expect(published.roles[1]!.sampling).toEqual({
      temperature: 0.5,
      topP: 0.9,
      maxTokens: 20,
      stop: ["\n"],
    });
    const team = await loadTeam(
      registry,
      published,
      backend({ modelFor: (_, policyId) => `openteam-${policyId}` }),
    );
    const task = team.environment.generateTasks("test", 1, 11)[0]!;
    server.requests.length = 0;
    await solve(team, { task }, { maxTurns: 1, sampling: { seed: 3 } });
    expect(server.requests.map((r) => [r.model, r.temperature, r.topP, r.maxTokens])).toEqual([
      ["openteam-planner", 1, 1, 8],
      ["openteam-fixer", 0.5, 0.9, 20],
    ]);
    server.requests.length = 0;
    await solve(team, { task }, { maxTurns: 1, sampling: { seed: 3, temperature: 0 } });
    expect(server.requests.map((r) => [r.temperature, r.maxTokens])).toEqual([
      [0, 8],
      [0, 20],
    ]);
  }, 60_000);
});
