import { describe, expect, it } from "vitest";
import { Graph, type Value } from "../../src/graph/builder.ts";
import * as op from "../../src/graph/ops.ts";
import { mlp, swiGlu } from "../../src/model/mlp.ts";
import type { LayerWeights } from "../../src/model/weights.ts";
import { runGraph } from "../fixtures.ts";

const silu = (a: number) => a / (1 + Math.exp(-a));

describe("MLP", () => {
  it("SwiGLU is SiLU(a) · b elementwise", async () => {
    const graph = new Graph("swiglu");
    const a = graph.input("a", "float64", [1, 4]);
    const b = graph.input("b", "float64", [1, 4]);
    graph.output(swiGlu(a, b), "y");
    const as = [-2, -0.5, 0, 3];
    const bs = [1.5, -1, 7, 0.25];
    const out = await runGraph(graph, {
      a: { data: Float64Array.from(as), dims: [1, 4] },
      b: { data: Float64Array.from(bs), dims: [1, 4] },
    });
    as.forEach((x, i) => expect(out.y![i]).toBeCloseTo(silu(x) * bs[i]!, 14));
  });

  it("x + W_down SwiGLU(W_gate h, W_up h), h = RMSNorm(x), on one row by hand", async () => {
    // d = 2, I = 1: gate = [1, 0], up = [0, 1], down = [[2], [−1]], norm weight [1, 1].
    const graph = new Graph("mlp");
    const x = graph.input("x", "float64", [1, 2]);
    const gate = graph.constant([1, 0], "float64", [1, 2]);
    const up = graph.constant([0, 1], "float64", [1, 2]);
    const layer = {
      postNorm: graph.constant([1, 1], "float64", [2]),
      gateUp: (h: Value): [Value, Value] => [op.linear(h, gate), op.linear(h, up)],
      down: graph.constant([2, -1], "float64", [2, 1]),
    } as LayerWeights;
    graph.output(mlp(x, layer, 0), "y");
    const out = await runGraph(graph, { x: { data: Float64Array.of(3, 4), dims: [1, 2] } });
    const rms = Math.sqrt((9 + 16) / 2);
    const [h0, h1] = [3 / rms, 4 / rms];
    const s = silu(h0) * h1;
    expect(out.y![0]).toBeCloseTo(3 + 2 * s, 12);
    expect(out.y![1]).toBeCloseTo(4 - s, 12);
  });
});
