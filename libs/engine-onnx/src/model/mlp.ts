/**
 * The feed-forward half of a decoder layer, SwiGLU with a residual:
 *
 *   x = x + W_down (SiLU(W_gate h) ⊙ W_up h),   h = RMSNorm(x)
 */
import type { Value } from "../graph/builder.ts";
import * as op from "../graph/ops.ts";
import { rmsNorm } from "./rms-norm.ts";
import type { LayerWeights } from "./weights.ts";

/** x + MLP(RMSNorm(x)) over rows x [N, d]. */
export function mlp(x: Value, layer: LayerWeights, eps: number): Value {
  const h = rmsNorm(x, layer.postNorm, eps);
  const [gate, up] = layer.gateUp(h);
  return op.add(x, op.linear(swiGlu(gate, up), layer.down));
}

/**
 * SwiGLU y = SiLU(a) · b as one composite with a closed-form gradient (s = σ(a), u = a·s):
 *   ∂b = g · u,   ∂a = g · b · s(1 + a(1 − s)) = (g · b) · (s + u − u·s)
 * three [N, I] products in the backward pass instead of the five of SiLU's and Mul's rules.
 */
export function swiGlu(a: Value, b: Value): Value {
  const [y] = a.graph.composite(
    "SwiGLU",
    [a, b],
    () => {
      const s = op.sigmoid(a);
      const u = op.mul(a, s);
      return { outputs: [op.mul(u, b)], saved: { s, u } };
    },
    ([g], [needA, needB], { s, u }) => {
      if (!g) return [undefined, undefined];
      const dA = needA ? op.mul(op.mul(g, b), op.sub(op.add(s, u), op.mul(u, s))) : undefined;
      return [dA, needB ? op.mul(g, u) : undefined];
    },
  );
  return y!;
}
