import { describe, expect, it } from "vitest";
import { Graph } from "../../src/graph/builder.ts";
import * as op from "../../src/graph/ops.ts";
import { shapeVector } from "../../src/model/dims.ts";
import { runGraph } from "../fixtures.ts";

describe("shapeVector", () => {
  it("joins fixed sizes and run-time dims into one int64 shape", async () => {
    const graph = new Graph("shape");
    const x = graph.input("x", "float64", ["B", "T"]);
    const shape = shapeVector(graph, [[x, 0], 5, [x, 1]]);
    graph.output(shape, "shape");
    graph.output(
      op.reshape(
        x,
        shapeVector(graph, [
          [x, 1],
          [x, 0],
        ]),
        ["T", "B"],
      ),
      "flipped",
    );
    const out = await runGraph(graph, { x: { data: new Float64Array(6), dims: [2, 3] } });
    expect(Array.from(out.shape as BigInt64Array)).toEqual([2n, 5n, 3n]);
    expect(out.flipped!.length).toBe(6);
  });
});
