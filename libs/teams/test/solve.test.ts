import { enginePolicy, readSafetensorsWeights } from "@troupe/engine";
import { qwenReferenceLogits } from "@troupe/engine/reference";
import { attentionBias, createOnnxEngine, padBatch, ropeTables } from "@troupe/engine-onnx";
import type { PlanPathPuzzle } from "@troupe/envs";
import { rolloutGrpo } from "@troupe/rl";
import * as ort from "onnxruntime-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTeamRegistry,
  type LoadedTeam,
  loadTeam,
  needsSandbox,
  type PlanPathAnswer,
  SolveAbortedError,
  SolveInputError,
  type SolveResult,
  solve,
  type TeamManifest,
  type TeamRegistry,
  type TurnEvent,
  UnsupportedTeamError,
} from "../src/index.ts";
import { createOnnxBackend, type OnnxBackend } from "../src/onnx-backend.ts";
import { tempStore, tinyConfig, tinyTeamInput } from "./fixtures.ts";

const tmp = tempStore();
let registry: TeamRegistry;
let manifest: TeamManifest;
let backend: OnnxBackend;
let team: LoadedTeam;

beforeAll(async () => {
  registry = createTeamRegistry(tmp.store);
  manifest = await registry.publish(await tinyTeamInput("tiny"));
  backend = createOnnxBackend({ maxConcurrent: 1 });
  team = await loadTeam(registry, manifest, backend);
}, 60_000);
afterAll(async () => {
  await backend.close();
  tmp.cleanup();
});

/** Everything of a result but the timings. */
const timeless = (r: SolveResult) => ({
  ...r,
  latencyMs: 0,
  turns: r.turns.map((t) => ({ ...t, ms: 0 })),
});

/** The compact prompt of Plan-Path's first turn, built by hand from the puzzle. */
function firstPlannerPrompt(p: PlanPathPuzzle): string {
  const rows = p.grid.map((row, r) =>
    [...row]
      .map((ch, c) =>
        r === p.start[0] && c === p.start[1] ? "A" : r === p.goal[0] && c === p.goal[1] ? "G" : ch,
      )
      .join(""),
  );
  return ["path planner", ...rows, "plan:"].join("\n");
}

describe("solve with the ONNX backend (a real tiny team on Plan-Path)", () => {
  it("emits a TurnEvent per agent turn, usage per role, and the same result for the same seed", async () => {
    const events: TurnEvent[] = [];
    const result = await solve(
      team,
      { generate: { split: "test", seed: 3 } },
      { sampling: { seed: 42 } },
      (e) => events.push(e),
    );
    expect(events).toEqual(result.turns);
    expect(result.turns.length).toBeGreaterThanOrEqual(1);
    // Sequential compact roles: planner then fixer, turn by turn, until done or 2 turns.
    result.turns.forEach((e, i) => {
      expect(e.turn).toBe(Math.floor(i / 2));
      expect(e.agent).toBe(i % 2 === 0 ? "planner" : "fixer");
      expect(e.policy).toBe(e.agent);
      expect(e.completionTokens).toBeGreaterThan(0);
      expect(e.completionTokens).toBeLessThanOrEqual(8); // the manifest's maxTokens
    });
    const last = result.turns.at(-1)!;
    expect(last.done || result.turns.length === 4).toBe(true);
    if (!last.done) expect(result.turns).toHaveLength(4);
    // The served prompt is the training prompt: the environment's observation, verbatim.
    const puzzle = result.task.payload as PlanPathPuzzle;
    expect(result.turns[0]!.prompt).toBe(firstPlannerPrompt(puzzle));
    expect(result.turns[0]!.messages).toEqual([{ role: "user", content: firstPlannerPrompt(puzzle) }]);
    // ChatML with the byte tokenizer: <|im_start|> "user\n" content <|im_end|> "\n" <|im_start|> "assistant\n".
    const contentBytes = new TextEncoder().encode(result.turns[0]!.prompt).length;
    expect(result.turns[0]!.promptTokens).toBe(1 + 5 + contentBytes + 1 + 1 + 1 + 10);
    // Usage per role adds up the events.
    for (const role of ["planner", "fixer"]) {
      const mine = result.turns.filter((t) => t.role === role);
      if (mine.length === 0) continue;
      expect(result.usage[role]).toEqual({
        calls: mine.length,
        promptTokens: mine.reduce((s, t) => s + t.promptTokens, 0),
        completionTokens: mine.reduce((s, t) => s + t.completionTokens, 0),
      });
    }
    expect(result.teamReturn).toBeCloseTo(
      result.turns.reduce((s, t) => s + t.teamReward, 0),
      12,
    );
    expect(typeof result.solved).toBe("boolean");
    expect(result.seed).toBe(42);
    // The answer: the final board and the path replayed from the executed plans.
    const answer = result.answer as PlanPathAnswer;
    expect(answer.kind).toBe("plan-path");
    expect(answer.start).toEqual(puzzle.start);
    expect(answer.path[0]).toEqual(puzzle.start);
    expect(answer.path.at(-1)).toEqual(answer.position);
    expect(answer.path).toHaveLength(answer.moves.length + 1);
    expect(answer.grid).toHaveLength(puzzle.rows);
    expect(answer.grid.join("")).toContain("A");

    const again = await solve(team, { generate: { split: "test", seed: 3 } }, { sampling: { seed: 42 } });
    expect(timeless(again)).toEqual(timeless(result));
  }, 60_000);

  it("reproduces the trainer's evaluation episode (same seeds, same prompts, same engine)", async () => {
    const task = team.environment.generateTasks("test", 1, 5)[0]!;
    const result = await solve(team, { task }, { sampling: { seed: 7 } });
    expect(result.task).toEqual({ id: task.id, payload: task.payload });
    const engine = await createOnnxEngine({
      policies: await Promise.all(
        ["planner", "fixer"].map(async (id) => {
          const files = await registry.readPolicyFiles(manifest, id);
          delete files["model.onnx"];
          return { id, checkpoint: files };
        }),
      ),
    });
    const policies = { planner: enginePolicy(engine, "planner"), fixer: enginePolicy(engine, "fixer") };
    const rollout = await rolloutGrpo(
      {
        runId: "eval",
        step: 0,
        seed: 7,
        env: team.environment.env,
        team: team.team,
        policies,
        sampling: team.sampling.planner!,
      },
      [task],
      {
        groupSize: 1,
        gamma: 1,
        teamWeight: 1,
        localWeight: 0,
      },
    );
    await engine.close();
    expect(result.teamReturn).toBeCloseTo(rollout.episodes[0]!.teamReturn, 12);
    expect(result.solved).toBe(rollout.episodes[0]!.success);
    const sampled = [...rollout.samples]
      .sort((a, b) => a.provenance.turn - b.provenance.turn || (a.provenance.agent === "planner" ? -1 : 1))
      .map((s) => ({
        agent: s.provenance.agent,
        prompt: s.observation[0]!.content,
        completion: s.completionText,
      }));
    expect(result.turns.map((t) => ({ agent: t.agent, prompt: t.prompt, completion: t.completion }))).toEqual(
      sampled,
    );
  }, 60_000);

  it("honours maxTurns and aborts at the deadline", async () => {
    const one = await solve(team, { generate: { seed: 3 } }, { maxTurns: 1, sampling: { seed: 42 } });
    expect(one.turns.every((t) => t.turn === 0)).toBe(true);
    expect(one.turns.length).toBeLessThanOrEqual(2);

    const before = new AbortController();
    before.abort(new Error("deadline"));
    await expect(solve(team, { generate: { seed: 3 } }, { signal: before.signal })).rejects.toThrow(
      SolveAbortedError,
    );
    // Aborted after the first agent's turn: no further turn is generated.
    const mid = new AbortController();
    const seen: TurnEvent[] = [];
    const error = await solve(
      team,
      { generate: { seed: 3 } },
      { signal: mid.signal, sampling: { seed: 42 } },
      (e) => {
        seen.push(e);
        mid.abort(new Error("504"));
      },
    ).catch((e) => e);
    expect(error).toBeInstanceOf(SolveAbortedError);
    expect(error.message).toBe("solve aborted: 504");
    expect(seen).toHaveLength(1);
  }, 60_000);

  /** Three solves one after the other, then at once: the same results (seeded sampling). */
  async function sequentialThenConcurrent(loaded: LoadedTeam) {
    const inputs = [3, 4, 5].map((seed) => ({ generate: { seed } }) as const);
    const sequential = [];
    for (const input of inputs) sequential.push(await solve(loaded, input, { sampling: { seed: 1 } }));
    const concurrent = await Promise.all(
      inputs.map((input) => solve(loaded, input, { sampling: { seed: 1 } })),
    );
    expect(concurrent.map(timeless)).toEqual(sequential.map(timeless));
  }

  it("shares one FIFO pool between concurrent requests and caches engines per policy", async () => {
    await sequentialThenConcurrent(team);
    const stats = backend.stats();
    expect(stats.maxActive).toBe(1);
    expect(stats.active).toBe(0);
    expect(stats.pending).toBe(0);
    expect(stats.loaded.sort()).toEqual(["tiny@1/fixer", "tiny@1/planner"]);
    expect(stats.loads).toBe(2);
  }, 60_000);

  it("with batching, concurrent turns of a policy share a batch, with the results of one at a time", async () => {
    const batched = createOnnxBackend({ batching: true });
    await sequentialThenConcurrent(await loadTeam(registry, manifest, batched));
    // The three requests' turns ran together.
    expect(batched.stats()).toMatchObject({ maxActive: 3, active: 0, pending: 0, loads: 2 });
    await batched.close();
  }, 60_000);

  it("a team unloaded and loaded again solves as before", async () => {
    const fresh = createOnnxBackend();
    const options = { sampling: { seed: 42 } };
    const first = await solve(await loadTeam(registry, manifest, fresh), { generate: { seed: 3 } }, options);
    await fresh.unload(manifest);
    expect(fresh.stats().loaded).toEqual([]);
    const again = await solve(await loadTeam(registry, manifest, fresh), { generate: { seed: 3 } }, options);
    expect(timeless(again)).toEqual(timeless(first));
    expect(fresh.stats().loads).toBe(4);
    await fresh.close();
  }, 60_000);

  it("names the bad field of a bad input or option", async () => {
    const task = team.environment.generateTasks("test", 1, 5)[0]!;
    const puzzle = task.payload as PlanPathPuzzle;
    const cases: [unknown, object, (string | number)[]][] = [
      [
        { task: { ...puzzle, grid: [puzzle.grid[0], "..", ...puzzle.grid.slice(2)] } },
        {},
        ["task", "payload", "grid", 1],
      ],
      [{ task: { ...puzzle, optimal: puzzle.optimal + 1 } }, {}, ["task", "payload", "optimal"]],
      [{ task: { payload: puzzle, extra: 1 } }, {}, ["task", "extra"]],
      [{ task: "grid" }, {}, ["task"]],
      [{ generate: { seed: -1 } }, {}, ["generate", "seed"]],
      [{ generate: { seed: 1, split: "validation" } }, {}, ["generate", "split"]],
      [{ solve: 1 }, {}, ["solve"]],
      [{ generate: { seed: 1 } }, { maxTurns: 3 }, ["options", "maxTurns"]],
      [{ generate: { seed: 1 } }, { sampling: { temperature: -1 } }, ["options", "sampling", "temperature"]],
      [{ generate: { seed: 1 } }, { sampling: { topK: 5 } }, ["options", "sampling", "topK"]],
    ];
    for (const [input, options, path] of cases) {
      const error = await solve(team, input as never, options).catch((e) => e);
      expect(error, JSON.stringify(input)).toBeInstanceOf(SolveInputError);
      expect((error as SolveInputError).path).toEqual(path);
    }
    // A task given as {id, payload} keeps its id.
    const ok = await solve(
      team,
      { task: { id: "mine", payload: puzzle } },
      { maxTurns: 1, sampling: { seed: 1 } },
    );
    expect(ok.task.id).toBe("mine");
  }, 60_000);

  it("refuses a team whose environment runs code when no sandbox is available", async () => {
    const toolTeam = { ...manifest, environment: { name: "plan-path", options: { roles: "tool" } } };
    expect(needsSandbox(toolTeam.environment)).toBe(true);
    expect(needsSandbox(manifest.environment)).toBe(false);
    expect(needsSandbox({ name: "coding", options: { roles: "coder-tester", test: "humaneval" } })).toBe(
      true,
    );
    expect(needsSandbox({ name: "math", options: {} })).toBe(true);
    expect(needsSandbox({ name: "writing", options: { task: "arxiv" } })).toBe(false);
    await expect(loadTeam(registry, toolTeam, backend)).rejects.toThrow(UnsupportedTeamError);
  });

  it("publishes an ONNX decode graph that computes the model's logits from the safetensors weights", async () => {
    const bytes = await registry.readFile(manifest, "planner", "model.onnx");
    const { weights } = readSafetensorsWeights(
      await registry.readFile(manifest, "planner", "model.safetensors"),
    );
    const session = await ort.InferenceSession.create(bytes, { intraOpNumThreads: 1 });
    // Its inputs: the host inputs and exactly the tensors of model.safetensors, by name.
    const host = ["input_ids", "rope_cos", "rope_sin", "attn_bias", "past_key.0", "past_value.0"];
    expect([...session.inputNames].sort()).toEqual([...host, ...weights.keys()].sort());
    const ids = [256, 104, 105, 258, 10];
    const T = ids.length;
    const padded = padBatch([ids], "left");
    const { cos, sin } = ropeTables(padded.positions, tinyConfig.head_dim, tinyConfig.rope_theta, "float32");
    const feeds: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor("int64", padded.ids, [1, T]),
      rope_cos: new ort.Tensor("float32", cos as Float32Array, [1, T, 1, tinyConfig.head_dim]),
      rope_sin: new ort.Tensor("float32", sin as Float32Array, [1, T, 1, tinyConfig.head_dim]),
      attn_bias: new ort.Tensor("float32", attentionBias(padded.valid, 1, 0, T, "float32") as Float32Array, [
        1,
        1,
        1,
        T,
        T,
      ]),
    };
    for (const [name, t] of weights) feeds[name] = new ort.Tensor("float32", t.data, [...t.shape]);
    for (let i = 0; i < tinyConfig.num_hidden_layers; i++) {
      const empty = new Float32Array(0);
      const shape = [1, tinyConfig.num_key_value_heads, 0, tinyConfig.head_dim];
      feeds[`past_key.${i}`] = new ort.Tensor("float32", empty, shape);
      feeds[`past_value.${i}`] = new ort.Tensor("float32", empty, shape);
    }
    const out = await session.run(feeds);
    await session.release();
    const logits = out.logits!.data as Float32Array;
    const reference = qwenReferenceLogits(tinyConfig, weights, ids);
    const V = tinyConfig.vocab_size;
    expect(logits).toHaveLength(V);
    let maxDiff = 0;
    for (let v = 0; v < V; v++)
      maxDiff = Math.max(maxDiff, Math.abs(logits[v]! - reference[(T - 1) * V + v]!));
    expect(maxDiff).toBeLessThan(1e-4);
  });
});
