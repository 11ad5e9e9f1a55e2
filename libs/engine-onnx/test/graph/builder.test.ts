import onnxProto from "onnx-proto";
import { describe, expect, it } from "vitest";
import {
  broadcastShapes,
  Graph,
  IR_VERSION,
  isFloat,
  OPSET,
  shapeToString,
} from "../../src/graph/builder.ts";
import * as op from "../../src/graph/ops.ts";
import { runGraph } from "../fixtures.ts";

const { onnx } = onnxProto;

describe("graph builder", () => {
  it("names values uniquely and refuses a duplicate name", () => {
    const graph = new Graph("g");
    expect([graph.fresh("a"), graph.fresh("a"), graph.fresh("b")]).toEqual(["a_0", "a_1", "b_2"]);
    graph.input("x", "float32", [2]);
    expect(() => graph.input("x", "float32", [2])).toThrow("graph g: duplicate value name x");
    expect(() => graph.output(graph.inputs[0]!, "a_0")).toThrow("graph g: duplicate value name a_0");
  });

  it("refuses a constant of the wrong size and an input from another graph", () => {
    const graph = new Graph("g");
    expect(() => graph.constant([1, 2, 3], "float32", [2, 2])).toThrow("constant: 3 values for shape [2,2]");
    const other = new Graph("h").input("z", "float32", [1]);
    expect(() => graph.op("Neg", [other], [{ dtype: "float32", shape: [1] }])).toThrow(
      "Neg: input z is from another graph",
    );
  });

  it("records ops on the tape, except inside untaped; a composite is one entry", () => {
    const graph = new Graph("g");
    const x = graph.input("x", "float64", [2]);
    const y = op.exp(x);
    graph.untaped(() => op.neg(y));
    const [z] = graph.composite(
      "Twice",
      [y],
      () => ({ outputs: [op.add(y, y)], saved: {} }),
      ([g]) => [g === undefined ? undefined : op.add(g, g)],
    );
    expect(
      graph.tape.map((e) => [e.opType, e.inputs.map((v) => v.name), e.outputs.map((v) => v.name)]),
    ).toEqual([
      ["Exp", ["x"], [y.name]],
      ["Twice", [y.name], [z!.name]],
    ]);
    expect(graph.nodes.map((n) => n.opType)).toEqual(["Exp", "Neg", "Add"]);
    expect(graph.valueInfo.get(y.name)).toEqual(y);
  });

  it("an omitted optional output is left unnamed, and the graph runs without it", async () => {
    // SkipSimplifiedLayerNormalization: outputs normed, (mean, inv_std_var: omitted), input + skip.
    const graph = new Graph("g");
    const x = graph.input("x", "float32", [1, 2]);
    const skip = graph.input("skip", "float32", [1, 2]);
    const w = graph.input("w", "float32", [2]);
    const stat = { dtype: "float32", shape: [], omitted: true } as const;
    const [normed, mean, , sum] = graph.op(
      "SkipSimplifiedLayerNormalization",
      [x, skip, w],
      [{ dtype: "float32", shape: [1, 2] }, stat, stat, { dtype: "float32", shape: [1, 2] }],
      { epsilon: { float: 0 } },
      undefined,
      "com.microsoft",
    );
    expect(mean!.name).toBe("");
    expect(graph.nodes.at(-1)!.outputs).toEqual([normed!.name, "", "", sum!.name]);
    expect(graph.valueInfo.has("")).toBe(false);
    graph.output(normed!, "normed");
    graph.output(sum!, "sum");
    const out = await runGraph(graph, {
      x: { data: Float32Array.of(1, 2), dims: [1, 2] },
      skip: { data: Float32Array.of(2, 2), dims: [1, 2] },
      w: { data: Float32Array.of(1, 2), dims: [2] },
    });
    expect([...out.sum!]).toEqual([3, 4]);
    // rms(3, 4) = √12.5: (3, 4) / √12.5 · (1, 2)
    expect([...(out.normed as Float32Array)].map((v) => v.toFixed(5))).toEqual(
      [3 / Math.sqrt(12.5), 8 / Math.sqrt(12.5)].map((v) => v.toFixed(5)),
    );
  });

  it("serialises to an ONNX model: opset, inputs with symbolic dims, initializers, renamed outputs", () => {
    const graph = new Graph("g");
    const x = graph.input("x", "float32", ["B", 2]);
    const w = graph.constant(Float32Array.of(1, 2), "float32", [2]);
    graph.output(op.mul(x, w), "y");
    graph.output(x, "x_copy");
    // biome-ignore lint/suspicious/noExplicitAny: the decoded proto is read field by field
    const model: any = onnx.ModelProto.toObject(onnx.ModelProto.decode(graph.toBytes()), { longs: Number });
    expect(model.irVersion).toBe(IR_VERSION);
    expect(model.opsetImport).toEqual([
      { domain: "", version: OPSET },
      { domain: "com.microsoft", version: 1 },
    ]);
    expect(model.graph.input[0].type.tensorType.shape.dim).toEqual([{ dimParam: "B" }, { dimValue: 2 }]);
    const raw: Uint8Array = model.graph.initializer[0].rawData;
    expect(Array.from(new Float32Array(Uint8Array.from(raw).buffer))).toEqual([1, 2]);
    // the Mul writes "y" itself (its renaming Identity folded away); an input's copy keeps its Identity
    expect(
      model.graph.node.map((n: { opType: string; output: string[] }) => [n.opType, n.output[0]]),
    ).toEqual([
      ["Mul", "y"],
      ["Identity", "x_copy"],
    ]);
  });

  it("the serialised graph runs: scalar, ints and float64 constants included", async () => {
    const graph = new Graph("g");
    const x = graph.input("x", "float64", [2, 2]);
    const scaled = op.mul(x, graph.scalar(0.5, "float64"));
    graph.output(op.reshape(scaled, graph.ints([4]), [4]), "y");
    const out = await runGraph(graph, { x: { data: Float64Array.of(2, 4, 6, 8), dims: [2, 2] } });
    expect(Array.from(out.y! as Float64Array)).toEqual([1, 2, 3, 4]);
  });
});

describe("shapes", () => {
  it("broadcast like numpy; symbolic dims against 1 and themselves", () => {
    expect(broadcastShapes([2, 1, 3], [4, 1])).toEqual([2, 4, 3]);
    expect(broadcastShapes(["B", 1], [1, 5])).toEqual(["B", 5]);
    expect(broadcastShapes(["B", "T"], ["B", "T"])).toEqual(["B", "T"]);
    expect(broadcastShapes(["T"], [3])).toEqual([3]);
    expect(() => broadcastShapes([2, 3], [4, 3], "Add")).toThrow(
      "Add: shapes [2, 3] and [4, 3] do not broadcast",
    );
  });

  it("shapeToString and isFloat", () => {
    expect(shapeToString(["B", 4])).toBe("[B, 4]");
    expect(["float32", "float64", "int64", "bool"].map((d) => isFloat(d as never))).toEqual([
      true,
      true,
      false,
      false,
    ]);
  });
});
