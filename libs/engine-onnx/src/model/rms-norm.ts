/**
 * RMSNorm over the last axis, as one composite op with a closed-form gradient:
 *
 *   r = 1 / √(mean(x²) + ε),   x̂ = x · r,   y = x̂ · w
 *   ∂w = Σ_rows g · x̂
 *   ∂x = r · (ĝ − x̂ · mean(ĝ · x̂)),   ĝ = g · w
 *
 * (four backward nodes per norm instead of the ~12 the chain rule through Pow/Mean/Sqrt emits).
 */
import type { Value } from "../graph/builder.ts";
import * as op from "../graph/ops.ts";

export function rmsNorm(x: Value, weight: Value, eps: number): Value {
  const graph = x.graph;
  let normalized: Value | undefined;
  let inverseRms: Value | undefined;
  const [y] = graph.composite(
    "RMSNorm",
    [x, weight],
    () => {
      const meanSquare = op.reduceMean(op.mul(x, x), [-1], true);
      inverseRms = op.reciprocal(op.sqrt(op.add(meanSquare, op.scalarLike(x, eps))));
      normalized = op.mul(x, inverseRms);
      return [op.mul(normalized, weight)];
    },
    ([g], [needX, needW]) => {
      if (!g) return [undefined, undefined];
      const xHat = normalized!;
      const gHat = op.mul(g, weight);
      return [
        needX
          ? op.mul(inverseRms!, op.sub(gHat, op.mul(xHat, op.reduceMean(op.mul(gHat, xHat), [-1], true))))
          : undefined,
        needW ? op.unbroadcast(op.mul(g, xHat), weight.shape) : undefined,
      ];
    },
  );
  return y!;
}
