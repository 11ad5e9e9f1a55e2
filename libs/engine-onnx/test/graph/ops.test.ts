import { describe, expect, it } from "vitest";
import type { Value } from "../../src/graph/builder.ts";
import * as op from "../../src/graph/ops.ts";
import { int64Tensor } from "../../src/runtime/session.ts";
import { gradCheck, type InputSpec } from "../gradcheck.ts";

/** Tolerance of the float64 checks: central differences with h = 1e-5 are exact to ~1e-9. */
const TOLERANCE = 1e-6;

interface Case {
  readonly name: string;
  readonly inputs: readonly InputSpec[];
  readonly f: (...xs: Value[]) => Value;
}

const s = (shape: number[], lo = -1, hi = 1): InputSpec => ({ shape, lo, hi });

const cases: Case[] = [
  { name: "Add with broadcasting", inputs: [s([2, 3]), s([3])], f: (a, b) => op.add(a!, b!) },
  { name: "Sub with broadcasting", inputs: [s([2, 1, 3]), s([4, 1])], f: (a, b) => op.sub(a!, b!) },
  { name: "Mul with broadcasting", inputs: [s([2, 3, 1]), s([1, 4])], f: (a, b) => op.mul(a!, b!) },
  { name: "Div with broadcasting", inputs: [s([2, 3]), s([2, 1], 0.5, 2)], f: (a, b) => op.div(a!, b!) },
  { name: "MatMul 2-D", inputs: [s([3, 4]), s([4, 2])], f: (a, b) => op.matmul(a!, b!) },
  { name: "MatMul batched, broadcast B", inputs: [s([2, 3, 4]), s([4, 5])], f: (a, b) => op.matmul(a!, b!) },
  {
    name: "MatMul 4-D, both broadcast",
    inputs: [s([2, 1, 3, 4]), s([1, 2, 4, 2])],
    f: (a, b) => op.matmul(a!, b!),
  },
  {
    name: "Linear (Gemm, transB) with bias",
    inputs: [s([3, 4]), s([5, 4]), s([5])],
    f: (x, w, b) => op.linear(x!, w!, b!),
  },
  { name: "Linear without bias", inputs: [s([2, 3]), s([4, 3])], f: (x, w) => op.linear(x!, w!) },
  {
    name: "Linear over the leading rows of the weight (Slice, gradient padded with zeros)",
    inputs: [s([2, 3]), s([5, 3])],
    f: (x, w) => op.linear(x!, op.leadingRows(w!, 3)),
  },
  {
    name: "Reshape",
    inputs: [s([2, 6])],
    f: (x) => op.reshape(x!, x!.graph.ints([3, 2, 2]), [3, 2, 2]),
  },
  { name: "Transpose", inputs: [s([2, 3, 4])], f: (x) => op.transpose(x!, [2, 0, 1]) },
  { name: "Concat", inputs: [s([2, 3]), s([2, 2])], f: (a, b) => op.concat([a!, b!], 1) },
  {
    name: "Split (one part unused)",
    inputs: [s([2, 5])],
    f: (x) => {
      const [a, , c] = op.split(x!, [2, 1, 2], 1);
      return op.mul(a!, c!);
    },
  },
  { name: "ReduceSum keepdims", inputs: [s([2, 3, 4])], f: (x) => op.reduceSum(x!, [1], true) },
  { name: "ReduceSum no keepdims", inputs: [s([2, 3, 4])], f: (x) => op.reduceSum(x!, [0, 2], false) },
  { name: "ReduceMean", inputs: [s([2, 3, 4])], f: (x) => op.reduceMean(x!, [-1], true) },
  { name: "Pow", inputs: [s([2, 3], 0.5, 2)], f: (x) => op.pow(x!, -0.5) },
  { name: "Sqrt", inputs: [s([2, 3], 0.5, 2)], f: (x) => op.sqrt(x!) },
  { name: "Reciprocal", inputs: [s([2, 3], 0.5, 2)], f: (x) => op.reciprocal(x!) },
  { name: "Exp", inputs: [s([2, 3])], f: (x) => op.exp(x!) },
  { name: "Log", inputs: [s([2, 3], 0.5, 2)], f: (x) => op.log(x!) },
  { name: "Neg", inputs: [s([4])], f: (x) => op.neg(x!) },
  { name: "Softmax", inputs: [s([2, 5], -2, 2)], f: (x) => op.softmax(x!, -1) },
  { name: "LogSoftmax", inputs: [s([3, 4], -2, 2)], f: (x) => op.logSoftmax(x!, -1) },
  { name: "Sigmoid", inputs: [s([2, 3], -3, 3)], f: (x) => op.sigmoid(x!) },
  { name: "SiLU", inputs: [s([2, 3], -3, 3)], f: (x) => op.silu(x!) },
  {
    name: "Where",
    inputs: [s([2, 3]), s([3])],
    f: (a, b) => op.where(op.greater(a!, a!.graph.scalar(0, "float64")), a!, b!),
  },
  {
    name: "Clip",
    inputs: [{ shape: [6], values: [-2, -0.7, -0.1, 0.3, 0.6, 1.9] }],
    f: (x) => op.clip(x!, x!.graph.scalar(-0.5, "float64"), x!.graph.scalar(0.5, "float64")),
  },
  {
    name: "Max",
    inputs: [
      { shape: [4], values: [0.1, 0.9, -0.3, 0.5] },
      { shape: [4], values: [0.4, 0.2, -0.6, 0.8] },
    ],
    f: (a, b) => op.max(a!, b!),
  },
  {
    name: "Min with broadcasting",
    inputs: [
      { shape: [2, 2], values: [0.1, 0.9, -0.3, 0.5] },
      { shape: [2], values: [0.4, 0.2] },
    ],
    f: (a, b) => op.min(a!, b!),
  },
  { name: "Cast float64 → float64 (identity cast)", inputs: [s([3])], f: (x) => op.cast(x!, "float64") },
  {
    name: "a used twice (gradient accumulation)",
    inputs: [s([2, 3])],
    f: (x) => op.mul(op.exp(x!), op.add(x!, x!)),
  },
];

describe("per-op gradients match central finite differences (float64)", () => {
  for (const c of cases) {
    it(c.name, async () => {
      const result = await gradCheck(c.inputs, c.f);
      result.analytic.forEach((a, i) => {
        expect(a.length).toBe(result.numeric[i]!.length);
      });
      expect(result.maxRelError).toBeLessThan(TOLERANCE);
    });
  }

  it("Embedding (Gather; gradient by one-hot Gemm, repeated ids)", async () => {
    const ids = [0, 3, 3, 1, 4, 0];
    const result = await gradCheck(
      [s([5, 3])],
      (w) => op.embedding(w!, w!.graph.input("ids", "int64", [2, 3])),
      {
        extraInputs: () => ({ ids: int64Tensor(ids, [2, 3]) }),
      },
    );
    expect(result.maxRelError).toBeLessThan(TOLERANCE);
    // Row 2 of the table is never looked up: its gradient is exactly zero.
    expect(Array.from(result.analytic[0]!.slice(6, 9))).toEqual([0, 0, 0]);
  });
});
