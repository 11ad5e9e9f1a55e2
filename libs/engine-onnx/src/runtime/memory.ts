/**
 * How much memory a run of one of our graphs needs, estimated from the graph itself.
 *
 * Every value of a built graph has a dtype and a shape whose symbolic dims ("B", "T", "N" = B·T,
 * "2*T", "C+1", …) are bound at run time. For concrete dims, a liveness pass over the nodes in
 * their (topological) order — each output allocated when its node runs, each intermediate freed
 * after its last consumer — gives the peak bytes of live tensors, which is what ORT's allocation
 * planner reuses buffers against. A training graph keeps most forward activations alive until
 * their backward node runs, and the pass sees that because the backward nodes consume them.
 *
 * What counts: the inputs with a symbolic dim (ids, RoPE tables, the attention bias, per-token
 * loss inputs: host arrays that live for the whole run), the intermediates and the outputs with a
 * symbolic dim. Inputs and outputs of fixed shape are the weights and their gradients (the
 * engine's fixed memory, counted once per policy by `policyFixedBytes`), and constants are tiny
 * or baked weights.
 *
 * Why written here: ORT offers no memory estimate before a run, and a run that is too big is
 * killed by the kernel instead of failing. The estimate is checked against the measured peak RSS
 * of real runs (test/memory.test.ts, bench/memory-plan.ts) and scaled by `ORT_OVERHEAD`.
 */
import type { QwenConfig } from "@troupe/engine";
import { qwenParameterCount } from "@troupe/engine";
import type { Dim, DType, Graph } from "../graph/builder.ts";

const BYTES: Record<DType, number> = { float32: 4, float64: 8, int64: 8, bool: 1 };

/**
 * Measured peak RSS growth of a run over the liveness estimate: ORT's arena rounds allocations up
 * and keeps free chunks it cannot reuse for a different size, and kernels (Gemm packing, Softmax)
 * take scratch space. On the shapes of bench/memory-plan.ts the ratio stayed at or below 1.3.
 */
export const ORT_OVERHEAD = 1.5;

/** Values of the symbolic dims; `N` defaults to B·T and `S` to T (no KV cache). */
export type DimBindings = Readonly<Record<string, number>>;

/** Evaluates a dim: a number, a bound name, or sums of products of those ("2*T", "C+1"). */
export function dimValue(dim: Dim, bindings: DimBindings): number {
  if (typeof dim === "number") return dim;
  let sum = 0;
  for (const term of dim.split("+")) {
    let product = 1;
    for (const factor of term.split("*")) {
      const name = factor.trim();
      const value = /^\d+$/.test(name) ? Number(name) : bindings[name];
      if (value === undefined) throw new Error(`memory estimate: the dim "${dim}" uses unbound "${name}"`);
      product *= value;
    }
    sum += product;
  }
  return sum;
}

function withDefaults(bindings: DimBindings): DimBindings {
  const B = bindings.B ?? 1;
  const T = bindings.T ?? 1;
  return { N: B * T, S: T, ...bindings };
}

/** Peak bytes of the tensors that grow with the run's dims (see the module comment). */
export function estimateGraphPeakBytes(graph: Graph, bindings: DimBindings): number {
  const env = withDefaults(bindings);
  const symbolic = (shape: readonly Dim[]) => shape.some((d) => typeof d === "string");
  const sizes = new Map<string, number>();
  const bytesOf = (shape: readonly Dim[], dtype: DType) =>
    shape.reduce<number>((n, d) => n * dimValue(d, env), 1) * BYTES[dtype];

  // Inputs with a symbolic dim live for the whole run.
  let live = 0;
  for (const v of graph.inputs) if (symbolic(v.shape)) live += bytesOf(v.shape, v.dtype);
  const outputs = new Set(graph.outputs.map((v) => v.name));
  // Last node index that reads each value.
  const lastUse = new Map<string, number>();
  graph.nodes.forEach((node, i) => {
    for (const name of node.inputs) if (name !== "") lastUse.set(name, i);
  });

  let peak = live;
  graph.nodes.forEach((node, i) => {
    for (const name of node.outputs) {
      const v = graph.valueInfo.get(name);
      if (v === undefined) continue;
      if (outputs.has(name) && !symbolic(v.shape)) continue; // a gradient: fixed memory
      const size = bytesOf(v.shape, v.dtype);
      sizes.set(name, size);
      live += size;
    }
    peak = Math.max(peak, live);
    for (const name of new Set(node.inputs)) {
      if (lastUse.get(name) !== i || outputs.has(name)) continue;
      const size = sizes.get(name);
      if (size !== undefined) {
        live -= size;
        sizes.delete(name);
      }
    }
    // An output nobody reads is freed at once (unless it is a graph output).
    for (const name of node.outputs) {
      if (!lastUse.has(name) && !outputs.has(name) && sizes.has(name)) {
        live -= sizes.get(name)!;
        sizes.delete(name);
      }
    }
  });
  return peak;
}

/**
 * Memory a policy holds whatever the batch (float32): the weights, their gradients, AdamW's two
 * moments, the decode step's baked copy and ORT's pre-packed copy of it, and one more copy in
 * flight while a checkpoint is serialised.
 */
export function policyFixedBytes(config: QwenConfig, bytesPerValue = 4): number {
  return 7 * qwenParameterCount(config) * bytesPerValue;
}
