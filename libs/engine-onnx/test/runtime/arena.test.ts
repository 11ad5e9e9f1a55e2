/**
 * Bounded arenas: the ledger releases idle arenas, least recently used first, until the arenas
 * (each counted at ARENA_GROWTH × its largest run) and the coming run fit the limit; an arena
 * with a run in flight is never released; a run too large for an arena runs without one; a
 * runner whose arenas crowd its budget gives the same numbers as one that never releases them.
 */
import { defaultPolicyLossConfig, initQwenWeights, tinyQwenConfig } from "@troupe/engine";
import { SMALL_QWEN_SHAPE } from "@troupe/engine/testing";
import { afterAll, describe, expect, it } from "vitest";
import { Graph } from "../../src/graph/builder.ts";
import * as op from "../../src/graph/ops.ts";
import { packWeights } from "../../src/model/fused-weights.ts";
import { ARENA_GROWTH, ArenaLedger, BoundedSession } from "../../src/runtime/arena.ts";
import { ModelRunner } from "../../src/runtime/runner.ts";
import type { LossSequenceInput } from "../../src/runtime/sequence-runner.ts";
import { type GraphSession, tensor } from "../../src/runtime/session.ts";

/** y = 2x over [N] floats: a real session, small. */
function doubler(): Graph {
  const g = new Graph("doubler");
  const x = g.input("x", "float32", ["N"]);
  g.output(op.add(x, x), "y");
  return g;
}

const double = (values: number[]) => async (session: GraphSession) =>
  Array.from(
    (await session.run({ x: tensor("float32", Float32Array.from(values), [values.length]) })).y!
      .data as Float32Array,
  );

describe("ArenaLedger", () => {
  const sessions: BoundedSession[] = [];
  afterAll(async () => {
    for (const s of sessions) await s.release();
  });
  const bounded = (ledger: ArenaLedger, label: string) => {
    const s = new BoundedSession(label, doubler, {}, ledger);
    sessions.push(s);
    return s;
  };
  // Run sizes below are in units of 1/ARENA_GROWTH, so each arena holds the round number.
  const u = 1 / ARENA_GROWTH;

  it("releases idle arenas, least recently used first, until the others and the run fit", async () => {
    const ledger = new ArenaLedger();
    const [a, b, c] = [bounded(ledger, "a"), bounded(ledger, "b"), bounded(ledger, "c")];
    expect(await a.run(60 * u, 100, double([1, 2]))).toEqual([2, 4]);
    expect([a.heldBytes, ledger.heldBytes]).toEqual([60, 60]);
    // 60 + 50 > 100: a goes.
    expect(await b.run(50 * u, 100, double([3]))).toEqual([6]);
    expect([a.live, a.heldBytes, b.live, b.heldBytes, ledger.heldBytes]).toEqual([false, 0, true, 50, 50]);
    // 50 + 40 ≤ 100: a comes back (created again), b stays.
    expect(await a.run(40 * u, 100, double([5]))).toEqual([10]);
    expect([a.created, b.live, ledger.heldBytes]).toEqual([2, true, 90]);
    // 90 + 30 > 100: b (used before a) goes, a stays: 40 + 30.
    await c.run(30 * u, 100, double([0]));
    expect([a.live, b.live, c.live, ledger.heldBytes]).toEqual([true, false, true, 70]);
    // A smaller run keeps what its arena already holds: 40 + 30 + 10, nothing released.
    await b.run(10 * u, 100, double([0]));
    expect([a.live, c.live, ledger.heldBytes]).toEqual([true, true, 80]);
    // An unbounded limit never releases.
    await c.run(1e12, Number.POSITIVE_INFINITY, double([0]));
    expect([a.live, b.live, c.live, a.plainRuns + b.plainRuns + c.plainRuns]).toEqual([true, true, true, 0]);
  });

  it("runs a run too large for an arena without one, after releasing what it needs", async () => {
    const ledger = new ArenaLedger();
    const [a, b] = [bounded(ledger, "a"), bounded(ledger, "b")];
    await a.run(30 * u, 100, double([0]));
    await b.run(40 * u, 100, double([0]));
    // ARENA_GROWTH × 60 > 100: too large for an arena, it runs without one, and 30 + 40 + 60 > 100
    // releases a (least recently used): 40 + 60.
    expect(await b.run(60, 100, double([7]))).toEqual([14]);
    expect([b.plainRuns, b.created, b.heldBytes, a.live, b.live, ledger.heldBytes]).toEqual([
      1,
      1,
      40,
      false,
      true,
      40,
    ]);
    // 40 + 90 > 100: its own arena goes too.
    await b.run(90, 100, double([0]));
    expect([b.plainRuns, b.live, ledger.heldBytes]).toEqual([2, false, 0]);
  });

  it("never releases an arena with a run in flight", async () => {
    const ledger = new ArenaLedger();
    const [a, b] = [bounded(ledger, "a"), bounded(ledger, "b")];
    let finish!: () => void;
    const gate = new Promise<void>((resolve) => (finish = resolve));
    const running = a.run(80 * u, 100, async (s) => {
      await gate;
      return double([1])(s);
    });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(await b.run(80 * u, 100, double([2]))).toEqual([4]);
    expect(a.live).toBe(true);
    finish();
    expect(await running).toEqual([2]);
    // Once idle, it is the one to go.
    await b.run(90 * u, 100, double([2]));
    expect([a.live, b.live]).toEqual([false, true]);
  });
});

describe("a runner's bounded arenas", () => {
  const config = tinyQwenConfig(SMALL_QWEN_SHAPE);
  const weights = packWeights(config, initQwenWeights(config, 7));
  const sequences: LossSequenceInput[] = [
    [5, 9, 2, 11, 40, 3],
    [8, 1],
  ].map((promptTokenIds, b) => {
    const completionTokenIds = b === 0 ? [4, 4, 17] : [30, 2, 2, 9, 1];
    const n = completionTokenIds.length;
    return {
      promptTokenIds,
      completionTokenIds,
      oldLogprobs: Array.from({ length: n }, (_, j) => -2 - 0.1 * j),
      advantages: Array.from({ length: n }, () => (b === 0 ? 1 : -0.5)),
      tokenWeights: Array.from({ length: n }, () => 1 / 8),
      mask: Array.from({ length: n }, () => 1),
    };
  });
  const settings = { ...defaultPolicyLossConfig, klCoef: 0, entropyCoef: 0.01 };
  const runners: ModelRunner[] = [];
  afterAll(async () => {
    for (const r of runners) await r.release();
  });

  it("releases the idle arena a run needs room from, or runs without one, with the same numbers", async () => {
    const unbounded = new ModelRunner(config, "float32", "unbounded");
    const probe = new ModelRunner(config, "float32", "probe");
    const trainBytes = probe.memory.runBytes("train", 2, 9);
    const scoreBytes = probe.memory.runBytes("score", 2, 9);
    expect(scoreBytes).toBeLessThan(trainBytes);
    // Room for the training arena alone, not beside the scoring one; the tiny budget fits neither.
    const bounded = new ModelRunner(config, "float32", "bounded", {
      arenaBudgetBytes: ARENA_GROWTH * (trainBytes + scoreBytes / 2),
    });
    const tiny = new ModelRunner(config, "float32", "tiny", { arenaBudgetBytes: trainBytes });
    runners.push(unbounded, probe, bounded, tiny);
    const runs = async (r: ModelRunner) => {
      const first = await r.sequences.trainMicroBatch(weights, sequences, settings);
      const scored = await r.sequences.score(weights, sequences);
      const second = await r.sequences.trainMicroBatch(weights, sequences, settings);
      return { first, scored, second };
    };
    const want = await runs(unbounded);
    const same = (got: Awaited<ReturnType<typeof runs>>) => {
      for (const k of ["first", "second"] as const) {
        expect(got[k].loss).toBe(want[k].loss);
        expect(got[k].logprobs).toEqual(want[k].logprobs);
        for (const [name, g] of want[k].grads) expect(got[k].grads.get(name)).toEqual(g);
      }
      expect(got.scored).toEqual(want.scored);
    };
    same(await runs(bounded));
    // Training, then scoring released it, then training released scoring.
    const { train, scoring } = bounded.arenaSessions;
    expect([train.created, scoring.created, train.live, scoring.live]).toEqual([2, 1, true, false]);
    expect([train.plainRuns, scoring.plainRuns, train.heldBytes]).toEqual([0, 0, ARENA_GROWTH * trainBytes]);
    // Too large for an arena in the tiny budget: training ran without one; scoring fit one.
    same(await runs(tiny));
    const t = tiny.arenaSessions;
    expect([t.train.plainRuns, t.train.created, t.scoring.plainRuns]).toEqual([2, 0, 0]);
  });
});
