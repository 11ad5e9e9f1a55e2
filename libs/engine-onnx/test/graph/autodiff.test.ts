import { describe, expect, it } from "vitest";
import { gradients } from "../../src/graph/autodiff.ts";
import { Graph } from "../../src/graph/builder.ts";
import * as op from "../../src/graph/ops.ts";
import { runGraph } from "../fixtures.ts";

describe("reverse-mode gradients", () => {
  it("L = Σ x²·w + Σ x: ∂L/∂x = 2xw + 1, ∂L/∂w = x² (x used three times, gradients summed)", async () => {
    const graph = new Graph("grad");
    const x = graph.input("x", "float64", [3]);
    const w = graph.input("w", "float64", [3]);
    const loss = op.add(op.sumAll(op.mul(op.mul(x, x), w)), op.sumAll(x));
    const [gx, gw] = gradients(loss, [x, w]);
    graph.output(loss, "loss");
    graph.output(gx!, "gx");
    graph.output(gw!, "gw");
    const out = await runGraph(graph, {
      x: { data: Float64Array.of(1, -2, 0.5), dims: [3] },
      w: { data: Float64Array.of(3, 0.5, -4), dims: [3] },
    });
    expect(Array.from(out.loss! as Float64Array)).toEqual([3 + 2 - 1 + (1 - 2 + 0.5)]);
    expect(Array.from(out.gx! as Float64Array)).toEqual([7, -1, -3]);
    expect(Array.from(out.gw! as Float64Array)).toEqual([1, 4, 0.25]);
  });

  it("a non-scalar output takes the seed given as ∂L/∂y", async () => {
    const graph = new Graph("seeded");
    const x = graph.input("x", "float64", [2]);
    const seed = graph.input("seed", "float64", [2]);
    const [gx] = gradients(op.mul(x, x), [x], seed);
    graph.output(gx!, "gx");
    const out = await runGraph(graph, {
      x: { data: Float64Array.of(3, -1), dims: [2] },
      seed: { data: Float64Array.of(10, 1), dims: [2] },
    });
    expect(Array.from(out.gx! as Float64Array)).toEqual([60, -2]);
  });

  it("emits its backward nodes off the tape: a gradient is not itself differentiated", () => {
    const graph = new Graph("tape");
    const x = graph.input("x", "float64", [2]);
    const loss = op.sumAll(op.mul(x, x));
    const taped = graph.tape.length;
    gradients(loss, [x]);
    expect(graph.tape.length).toBe(taped);
    expect(graph.nodes.length).toBeGreaterThan(taped);
  });

  it("refuses what it cannot differentiate, naming the value", () => {
    const graph = new Graph("bad");
    const x = graph.input("x", "float64", [2]);
    const y = graph.input("y", "float64", [2]);
    expect(() => gradients(op.mul(x, x), [x])).toThrow(
      /gradients: loss mul_\d+ must be a scalar \(shape \[2\]\) or a seed given/,
    );
    expect(() => gradients(op.sumAll(y), [x])).toThrow(/loss .* does not depend on any of the wanted values/);
    const loss = op.sumAll(x);
    expect(() => gradients(loss, [x, y])).toThrow("gradients: no gradient reaches y");
    const [flagged] = graph.op("Sign", [x], [{ dtype: "float64", shape: [2] }]);
    expect(() => gradients(op.sumAll(flagged!), [x])).toThrow(/op Sign \(sign_\d+\) has no gradient rule/);
  });
});
