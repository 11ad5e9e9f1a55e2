import { describe, expect, it } from "vitest";
import { Graph } from "../../src/graph/builder.ts";
import { rmsNorm } from "../../src/model/rms-norm.ts";
import { runGraph } from "../fixtures.ts";
import { gradCheck } from "../gradcheck.ts";

describe("RMSNorm", () => {
  it("y = x / √(mean(x²) + ε) · w, row by row", async () => {
    const graph = new Graph("rms");
    const x = graph.input("x", "float64", [2, 2]);
    const w = graph.input("w", "float64", [2]);
    graph.output(rmsNorm(x, w, 1e-6), "y");
    const out = await runGraph(graph, {
      x: { data: Float64Array.of(3, 4, 1, -1), dims: [2, 2] },
      w: { data: Float64Array.of(2, 0.5), dims: [2] },
    });
    const s0 = Math.sqrt(12.5 + 1e-6);
    const s1 = Math.sqrt(1 + 1e-6);
    const expected = [(3 / s0) * 2, (4 / s0) * 0.5, (1 / s1) * 2, (-1 / s1) * 0.5];
    expected.forEach((v, i) => expect(out.y![i]).toBeCloseTo(v, 12));
  });

  it("its closed-form gradient (x and w) matches central finite differences", async () => {
    const result = await gradCheck(
      [
        { shape: [3, 4], lo: -2, hi: 2 },
        { shape: [4], lo: 0.5, hi: 1.5 },
      ],
      (x, w) => rmsNorm(x!, w!, 1e-5),
    );
    expect(result.maxRelError).toBeLessThan(1e-6);
  });

  it("is one entry on the gradient tape, not six primitives", () => {
    const graph = new Graph("rms");
    rmsNorm(graph.input("x", "float64", [1, 2]), graph.input("w", "float64", [2]), 1e-6);
    expect(graph.tape.map((e) => e.opType)).toEqual(["RMSNorm"]);
    expect(graph.nodes.map((n) => n.opType)).toEqual(["Pow", "ReduceMean", "Add", "Sqrt", "Div", "Mul"]);
  });
});
