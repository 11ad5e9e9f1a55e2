/**
 * The weight products of one cached-sampling call, and nothing else: every Gemm the prefill and the
 * decode steps multiply by the model's weights, with the same shapes and the same session options,
 * but no attention, norms, RoPE, cache writes, sampling or JavaScript between them. A call of
 * `generateBatch` cannot be faster than this on the machine it runs on (the same float32 arithmetic
 * in the same MLAS kernels), so it bounds what any change to the rest of the decode loop can gain:
 * `sample-compare.ts` times it beside the checkouts it compares, in the same rounds.
 *
 * What it runs, for B prompts of T tokens and N new tokens (generate.ts, decode-runner.ts):
 *   prefill  layers 0..L−2 over B·T rows: qkv, o, gate_up, down; the last layer over B·T rows for its
 *            keys/values only and over the B last columns for its queries, o and MLP; the head over B
 *   steps    N − 1 runs: per layer qkv, o, gate_up, down over B rows, then the head over B rows
 * Both with the weights baked in (pre-packed once by ORT, as the step session has them; the prefill
 * session takes them as inputs, which MLAS packs per run): the lowest bound, the one a prefill with
 * baked weights would meet too.
 */
import type { QwenConfig } from "@troupe/engine";
import { Graph, type Value } from "../src/graph/builder.ts";
import * as op from "../src/graph/ops.ts";
import { GraphSession, type ort, tensor } from "../src/runtime/session.ts";

/** One weight product: `rows` × `inputs` activations by an [outputs, inputs] weight. */
interface Product {
  readonly rows: number;
  readonly inputs: number;
  readonly outputs: number;
}

/** The weight products of the decode step (B rows) and of the prefill (B prompts × T tokens). */
export function weightProducts(
  config: QwenConfig,
  B: number,
  T: number,
): { step: Product[]; prefill: Product[] } {
  const d = config.hidden_size;
  const q = config.num_attention_heads * config.head_dim;
  const kv = 2 * config.num_key_value_heads * config.head_dim;
  const I = config.intermediate_size;
  const layer = (rows: number, qkvRows = rows): Product[] => [
    { rows: qkvRows, inputs: d, outputs: q + kv },
    { rows, inputs: q, outputs: d },
    { rows, inputs: d, outputs: 2 * I },
    { rows, inputs: I, outputs: d },
  ];
  const head: Product = { rows: B, inputs: d, outputs: config.vocab_size };
  const L = config.num_hidden_layers;
  const step = [...Array.from({ length: L }, () => layer(B)).flat(), head];
  const lastLayer: Product[] = [
    { rows: B * T, inputs: d, outputs: kv },
    { rows: B, inputs: d, outputs: q },
    ...layer(B).slice(1),
  ];
  const prefill = [...Array.from({ length: L - 1 }, () => layer(B * T)).flat(), ...lastLayer, head];
  return { step, prefill };
}

/** A session running `products` side by side (each its own input rows), the weights baked in. */
async function productsSession(products: readonly Product[], seed: number): Promise<() => Promise<unknown>> {
  let state = seed >>> 0;
  const random = (n: number) =>
    Float32Array.from({ length: n }, () => {
      state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
      return (state / 2 ** 32 - 0.5) * 0.1;
    });
  const graph = new Graph("weight-products");
  const feeds: Record<string, ort.Tensor> = {};
  const fed = (name: string, data: Float32Array, shape: number[]): Value => {
    feeds[name] = tensor("float32", data, shape);
    return graph.input(name, "float32", shape);
  };
  products.forEach((p, i) => {
    const x = fed(`x${i}`, random(p.rows * p.inputs), [p.rows, p.inputs]);
    const w = graph.constant(random(p.outputs * p.inputs), "float32", [p.outputs, p.inputs]);
    graph.output(op.linear(x, w), `y${i}`);
  });
  // The step session's options (decode-runner.ts): arena on, default threads.
  const session = await GraphSession.create(graph, { memoryArena: true });
  return () => session.run(feeds);
}

/**
 * A call's weight products alone: `run()` does one prefill's products and `newTokens − 1` steps'.
 */
export async function weightProductsCall(
  config: QwenConfig,
  batch: number,
  promptTokens: number,
  newTokens: number,
): Promise<() => Promise<void>> {
  const { step, prefill } = weightProducts(config, batch, promptTokens);
  const runPrefill = await productsSession(prefill, 1);
  const runStep = await productsSession(step, 2);
  return async () => {
    await runPrefill();
    for (let n = 1; n < newTokens; n++) await runStep();
  };
}
