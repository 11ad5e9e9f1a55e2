import { applyRope as referenceRope } from "@troupe/engine/reference";
import { describe, expect, it } from "vitest";
import { Graph } from "../../src/graph/builder.ts";
import { ropeTables } from "../../src/model/host-inputs.ts";
import { applyRope, applyRopeByMatMul } from "../../src/model/rope.ts";
import { runGraph } from "../fixtures.ts";

describe("RoPE", () => {
  it("rotate_half by Split/Neg/Concat and by the ±1 permutation MatMul both give HF's rotation", async () => {
    // Two positions of one head of size 4 (the reference test's x = [1, 2, 3, 4]) and of size 6.
    for (const D of [4, 6]) {
      const x = Float64Array.from({ length: 2 * D }, (_, i) => (i % D) + 1 + 0.5 * Math.floor(i / D));
      const positions = Int32Array.of(1, 7);
      const rope = ropeTables(positions, D, 1e4, "float64");
      const graph = new Graph("rope");
      const xs = graph.input("x", "float64", [1, 2, 1, D]);
      const cos = graph.input("cos", "float64", [1, 2, 1, D]);
      const sin = graph.input("sin", "float64", [1, 2, 1, D]);
      graph.output(applyRope(xs, cos, sin, D), "split");
      graph.output(applyRopeByMatMul(xs, cos, sin, D), "matmul");
      const dims = [1, 2, 1, D];
      const out = await runGraph(graph, {
        x: { data: x, dims },
        cos: { data: rope.cos, dims },
        sin: { data: rope.sin, dims },
      });
      for (let t = 0; t < 2; t++) {
        const expected = referenceRope(x.subarray(t * D, (t + 1) * D), positions[t]!, 1e4);
        for (let j = 0; j < D; j++) {
          expect(out.split![t * D + j]).toBeCloseTo(expected[j]!, 12);
          expect(out.matmul![t * D + j]).toBeCloseTo(expected[j]!, 12);
        }
      }
    }
  });

  it("the position-1 rotation of [1, 2, 3, 4] (θ = 10⁴) matches the known values", async () => {
    const rope = ropeTables(Int32Array.of(1), 4, 1e4, "float64");
    const graph = new Graph("rope");
    const dims = [1, 1, 1, 4];
    const x = graph.input("x", "float64", dims);
    graph.output(
      applyRope(x, graph.input("cos", "float64", dims), graph.input("sin", "float64", dims), 4),
      "y",
    );
    const out = await runGraph(graph, {
      x: { data: Float64Array.of(1, 2, 3, 4), dims },
      cos: { data: rope.cos, dims },
      sin: { data: rope.sin, dims },
    });
    const expected = [-1.98411064856, 1.9599006675, 2.46237790241, 4.01979966833];
    expected.forEach((v, j) => expect(out.y![j]).toBeCloseTo(v, 10));
  });
});
