/**
 * The PPO-clip loss of `@troupe/engine` (libs/engine/src/loss.ts) as graph nodes, per token then summed
 * with host-computed aggregation weights w (token-mean, sequence-mean or sequence-sum are all
 * loss = Σ_{b,t} w_{b,t} · L_{b,t}; see `aggregationWeights`). Because w is global to the whole
 * batch, summing the gradients of micro-batches gives exactly the full-batch gradient.
 *
 *   r = exp(ℓ − ℓ_old)
 *   pg = max(−A·r, −A·clip(r, 1 − ε_low, 1 + ε_high))               (ties take the unclipped branch)
 *   dual-clip where A < 0:  pg = min(pg, −A·c)
 *   k3 = exp(δ) − δ − 1,  δ = ℓ_ref − ℓ
 *   L = pg + β_KL·k3 − β_H·H − β_NLL·ℓ
 */
import type { Value } from "../graph/builder.ts";
import * as op from "../graph/ops.ts";

export interface PpoLossInputs {
  readonly logprobs: Value;
  readonly entropy: Value;
  readonly oldLogprobs: Value;
  readonly advantages: Value;
  /** When the KL term is off, feed ℓ_old here (keeps exp(δ) finite) and klCoef = 0. */
  readonly refLogprobs: Value;
  readonly tokenWeights: Value;
  readonly mask: Value;
  readonly clipLow: Value;
  readonly clipHigh: Value;
  readonly dualClip: Value;
  readonly dualClipOn: Value;
  readonly klCoef: Value;
  readonly entropyCoef: Value;
  readonly nllCoef: Value;
}

export interface PpoLossOutputs {
  readonly loss: Value;
  readonly pgLoss: Value;
  readonly kl: Value;
  readonly entropy: Value;
  /** Number of masked-in tokens whose PPO term was clipped. */
  readonly clipped: Value;
  /** Σ over masked-in tokens of ℓ_old − ℓ. */
  readonly oldMinusNew: Value;
}

export function ppoLoss(x: PpoLossInputs): PpoLossOutputs {
  const lp = x.logprobs;
  const one = op.scalarLike(lp, 1);
  const zero = op.scalarLike(lp, 0);
  const negA = op.neg(x.advantages);
  const ratio = op.exp(op.sub(lp, x.oldLogprobs));
  const unclipped = op.mul(negA, ratio);
  const clippedRatio = op.clip(ratio, op.sub(one, x.clipLow), op.add(one, x.clipHigh));
  const clippedLoss = op.mul(negA, clippedRatio);
  const ppo = op.max(unclipped, clippedLoss);
  const dualBound = op.mul(negA, x.dualClip);
  const dualActive = op.and(op.less(x.advantages, zero), op.greater(x.dualClipOn, zero));
  const pg = op.where(dualActive, op.min(ppo, dualBound), ppo);
  const delta = op.sub(x.refLogprobs, lp);
  const k3 = op.sub(op.sub(op.exp(delta), delta), one);
  const perToken = op.sub(
    op.sub(op.add(pg, op.mul(x.klCoef, k3)), op.mul(x.entropyCoef, x.entropy)),
    op.mul(x.nllCoef, lp),
  );
  const weighted = (v: Value) => op.sumAll(op.mul(x.tokenWeights, v));
  const graph = lp.graph;
  const metrics = graph.untaped(() => {
    const clippedFlag = op.or(
      op.greater(clippedLoss, unclipped),
      op.and(dualActive, op.less(dualBound, ppo)),
    );
    return {
      clipped: op.sumAll(op.mul(x.mask, op.cast(clippedFlag, lp.dtype))),
      oldMinusNew: op.sumAll(op.mul(x.mask, op.sub(x.oldLogprobs, lp))),
      pgLoss: op.sumAll(op.mul(x.tokenWeights, pg)),
      kl: op.sumAll(
        op.mul(
          x.tokenWeights,
          op.mul(k3, op.cast(op.or(op.greater(x.klCoef, zero), op.less(x.klCoef, zero)), lp.dtype)),
        ),
      ),
      entropy: op.sumAll(op.mul(x.tokenWeights, x.entropy)),
    };
  });
  return { loss: weighted(perToken), ...metrics };
}
