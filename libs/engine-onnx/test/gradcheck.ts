/**
 * Central finite-difference gradient checks on float64 graphs: the analytic gradient from
 * `gradients` must match (f(x + h) − f(x − h)) / 2h for every element of every input.
 */
import { gradients } from "../src/graph/autodiff.ts";
import { Graph, type Value } from "../src/graph/builder.ts";
import { mul, sumAll } from "../src/graph/ops.ts";
import { GraphSession, tensor } from "../src/runtime/session.ts";

export interface InputSpec {
  readonly shape: readonly number[];
  /** Values are drawn from [lo, hi). */
  readonly lo?: number;
  readonly hi?: number;
  readonly values?: readonly number[];
}

/** A deterministic pseudo-random stream for test inputs (so failures reproduce). */
export function uniformStream(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

export interface GradCheckResult {
  readonly maxRelError: number;
  readonly analytic: Float64Array[];
  readonly numeric: Float64Array[];
}

export async function gradCheck(
  specs: readonly InputSpec[],
  f: (...xs: Value[]) => Value,
  options: {
    seed?: number;
    h?: number;
    extraInputs?: (g: Graph) => Record<string, import("onnxruntime-node").Tensor>;
  } = {},
): Promise<GradCheckResult> {
  const rand = uniformStream(options.seed ?? 1);
  const g = new Graph("gradcheck");
  const xs = specs.map((s, i) => g.input(`x${i}`, "float64", s.shape));
  const extraFeeds = options.extraInputs?.(g) ?? {};
  const y = f(...xs);
  if (!y.shape.every((d) => typeof d === "number"))
    throw new Error(`gradCheck: output shape [${y.shape}] not static`);
  const ySize = (y.shape as number[]).reduce((a, b) => a * b, 1);
  // A random projection makes every output element matter to the scalar loss.
  const projection = g.constant(
    Array.from({ length: ySize }, () => rand() * 2 - 1),
    "float64",
    y.shape as number[],
  );
  const loss = sumAll(mul(y, projection));
  const grads = gradients(loss, xs);
  g.output(loss, "loss");
  grads.forEach((gr, i) => g.output(gr, `grad_x${i}`));
  const session = await GraphSession.create(g);
  const values = specs.map((s) => {
    const n = s.shape.reduce((a, b) => a * b, 1);
    if (s.values) return Float64Array.from(s.values);
    const lo = s.lo ?? -1;
    const hi = s.hi ?? 1;
    return Float64Array.from({ length: n }, () => lo + (hi - lo) * rand());
  });
  const run = async () => {
    const feeds: Record<string, import("onnxruntime-node").Tensor> = { ...extraFeeds };
    specs.forEach((s, i) => {
      feeds[`x${i}`] = tensor("float64", values[i]!, s.shape);
    });
    return session.run(feeds);
  };
  const base = await run();
  const analytic = specs.map((_, i) => Float64Array.from(base[`grad_x${i}`]!.data as Float64Array));
  const h = options.h ?? 1e-5;
  const numeric: Float64Array[] = [];
  let maxRelError = 0;
  for (let i = 0; i < specs.length; i++) {
    const x = values[i]!;
    const num = new Float64Array(x.length);
    for (let j = 0; j < x.length; j++) {
      const x0 = x[j]!;
      x[j] = x0 + h;
      const plus = ((await run()).loss!.data as Float64Array)[0]!;
      x[j] = x0 - h;
      const minus = ((await run()).loss!.data as Float64Array)[0]!;
      x[j] = x0;
      num[j] = (plus - minus) / (2 * h);
      const err = Math.abs(num[j]! - analytic[i]![j]!) / Math.max(1, Math.abs(num[j]!));
      maxRelError = Math.max(maxRelError, err);
    }
    numeric.push(num);
  }
  await session.release();
  return { maxRelError, analytic, numeric };
}
