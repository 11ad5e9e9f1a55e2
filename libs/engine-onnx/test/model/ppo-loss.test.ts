/**
 * The PPO-clip loss as graph nodes against @troupe/engine's per-token reference (tokenLoss): the
 * weighted loss, its metrics, and ∂loss/∂ℓ, on tokens chosen to hit every branch (clipped above and
 * below, dual-clipped, unclipped, masked out).
 */
import { type PolicyLossConfig, tokenLoss } from "@troupe/engine";
import { FULL_POLICY_LOSS } from "@troupe/engine/testing";
import { describe, expect, it } from "vitest";
import { gradients } from "../../src/graph/autodiff.ts";
import { Graph } from "../../src/graph/builder.ts";
import { ppoLoss } from "../../src/model/ppo-loss.ts";
import { runGraph } from "../fixtures.ts";

//                  unclipped  r > 1+ε, A > 0  r < 1−ε, A < 0  dual clip  masked out
const logprobs = [-1.0, -0.5, -2.5, -0.2, -1.2];
const oldLogprobs = [-1.1, -1.0, -1.5, -2.0, -1.0];
const advantages = [0.5, 1.0, -0.7, -2.0, 0.3];
const refLogprobs = [-0.9, -0.8, -2.0, -1.0, -1.1];
const entropy = [1.2, 0.4, 2.0, 0.9, 0.7];
const mask = [1, 1, 1, 1, 0];
const weights = [0.25, 0.25, 0.125, 0.375, 0];

async function graphLoss(config: PolicyLossConfig) {
  const graph = new Graph("ppo");
  const vec = (name: string) => graph.input(name, "float64", [5]);
  const scalar = (value: number) => graph.scalar(value, "float64");
  const lp = vec("logprobs");
  const out = ppoLoss({
    logprobs: lp,
    entropy: vec("entropy_in"),
    oldLogprobs: vec("old"),
    advantages: vec("advantages"),
    refLogprobs: vec("ref"),
    tokenWeights: vec("weights"),
    mask: vec("mask"),
    clipLow: scalar(config.clipLow),
    clipHigh: scalar(config.clipHigh),
    dualClip: scalar(config.dualClip ?? 0),
    dualClipOn: scalar(config.dualClip === undefined ? 0 : 1),
    klCoef: scalar(config.klCoef),
    entropyCoef: scalar(config.entropyCoef),
    nllCoef: scalar(config.nllCoef ?? 0),
  });
  const [grad] = gradients(out.loss, [lp]);
  for (const [name, value] of Object.entries(out)) graph.output(value, name);
  graph.output(grad!, "grad");
  const feed = (values: number[]) => ({ data: Float64Array.from(values), dims: [5] });
  const result = await runGraph(graph, {
    logprobs: feed(logprobs),
    entropy_in: feed(entropy),
    old: feed(oldLogprobs),
    advantages: feed(advantages),
    ref: feed(refLogprobs),
    weights: feed(weights),
    mask: feed(mask),
  });
  return Object.fromEntries(Object.entries(result).map(([k, v]) => [k, Array.from(v as Float64Array)]));
}

describe("PPO loss graph", () => {
  for (const [name, config] of [
    ["every term on (dual clip, KL, entropy, NLL)", FULL_POLICY_LOSS],
    ["plain PPO-clip", { clipLow: 0.2, clipHigh: 0.2, klCoef: 0, entropyCoef: 0, aggregation: "token-mean" }],
  ] as const) {
    it(`matches the reference per token: ${name}`, async () => {
      const out = await graphLoss(config);
      const terms = logprobs.map((lp, i) =>
        tokenLoss(lp, oldLogprobs[i]!, advantages[i]!, config, refLogprobs[i]!, entropy[i]!),
      );
      const sum = (f: (i: number) => number) => terms.reduce((s, _, i) => s + f(i), 0);
      expect(out.loss![0]).toBeCloseTo(
        sum((i) => weights[i]! * terms[i]!.loss),
        12,
      );
      expect(out.pgLoss![0]).toBeCloseTo(
        sum((i) => weights[i]! * terms[i]!.pg),
        12,
      );
      expect(out.kl![0]).toBeCloseTo(config.klCoef === 0 ? 0 : sum((i) => weights[i]! * terms[i]!.kl), 12);
      expect(out.entropy![0]).toBeCloseTo(
        sum((i) => weights[i]! * entropy[i]!),
        12,
      );
      expect(out.clipped![0]).toBe(sum((i) => (mask[i]! && terms[i]!.clipped ? 1 : 0)));
      expect(out.oldMinusNew![0]).toBeCloseTo(
        sum((i) => mask[i]! * (oldLogprobs[i]! - logprobs[i]!)),
        12,
      );
      out.grad!.forEach((g, i) => expect(g).toBeCloseTo(weights[i]! * terms[i]!.grad, 12));
    });
  }

  it("the chosen tokens hit every branch: two clipped by the PPO range, one by the dual clip", () => {
    const clipped = logprobs.map(
      (lp, i) =>
        tokenLoss(lp, oldLogprobs[i]!, advantages[i]!, FULL_POLICY_LOSS, refLogprobs[i]!, entropy[i]!)
          .clipped,
    );
    expect(clipped).toEqual([false, true, true, true, false]);
    const noDual = tokenLoss(logprobs[3]!, oldLogprobs[3]!, advantages[3]!, {
      ...FULL_POLICY_LOSS,
      dualClip: undefined,
    });
    expect(noDual.pg).toBeGreaterThan(-advantages[3]! * FULL_POLICY_LOSS.dualClip!);
  });
});
