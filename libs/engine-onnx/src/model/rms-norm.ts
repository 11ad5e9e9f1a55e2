/**
 * RMSNorm over the last axis, as one composite op with a closed-form gradient:
 *
 *   s = √(mean(x²) + ε),   x̂ = x / s,   y = x̂ · w
 *   ∂w = Σ_rows g · x̂
 *   ∂x = (ĝ − x̂ · mean(ĝ · x̂)) · (1/s),   ĝ = g · w
 *
 * (four backward nodes per norm instead of the ~12 the chain rule through Pow/Mean/Sqrt emits).
 * The forward is spelled exactly as ORT's SimplifiedLayerNormFusion pattern (Pow 2 → ReduceMean →
 * Add ε → Sqrt → Div → Mul w), so in graphs without a backward pass (scoring, decode) ORT replaces
 * the six nodes by one SimplifiedLayerNormalization kernel.
 */
import type { Value } from "../graph/builder.ts";
import * as op from "../graph/ops.ts";

export function rmsNorm(x: Value, weight: Value, eps: number): Value {
  const [y] = x.graph.composite(
    "RMSNorm",
    [x, weight],
    () => {
      const meanSquare = op.reduceMean(op.pow(x, 2), [-1], true);
      const rms = op.sqrt(op.add(meanSquare, op.scalarLike(x, eps)));
      const normalized = op.div(x, rms);
      return { outputs: [op.mul(normalized, weight)], saved: { rms, xHat: normalized } };
    },
    ([g], [needX, needW], { rms, xHat }) => {
      if (!g) return [undefined, undefined];
      const gHat = op.mul(g, weight);
      return [
        needX
          ? op.mul(
              op.sub(gHat, op.mul(xHat, op.reduceMean(op.mul(gHat, xHat), [-1], true))),
              op.reciprocal(rms), // [N, 1]: one division per row instead of per element
            )
          : undefined,
        needW ? op.unbroadcast(op.mul(g, xHat), weight.shape) : undefined,
      ];
    },
  );
  return y!;
}
