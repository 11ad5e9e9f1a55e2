import { describe, expect, it } from "vitest";
import { Graph } from "../../src/graph/builder.ts";
import * as op from "../../src/graph/ops.ts";
import { GraphSession, int64Tensor, ort, tensor } from "../../src/runtime/session.ts";

/** y = a + b over a symbolic batch, float32. */
function addGraph(): Graph {
  const graph = new Graph("add");
  const a = graph.input("a", "float32", ["B", 2]);
  const b = graph.input("b", "float32", ["B", 2]);
  graph.output(op.add(a, b), "y");
  return graph;
}

describe("GraphSession", () => {
  it("runs a built graph on ORT, with the graph's input and output names", async () => {
    const session = await GraphSession.create(addGraph());
    expect([session.inputNames, session.outputNames]).toEqual([["a", "b"], ["y"]]);
    const out = await session.run({
      a: tensor("float32", Float32Array.of(1, 2, 3, 4), [2, 2]),
      b: tensor("float32", Float32Array.of(10, 20, 30, 40), [2, 2]),
    });
    expect(out.y!.dims).toEqual([2, 2]);
    expect(Array.from(out.y!.data as Float32Array)).toEqual([11, 22, 33, 44]);
    await session.release();
  });

  it("writes an output into the caller's pre-allocated tensor", async () => {
    const session = await GraphSession.create(addGraph(), { memoryArena: true, intraOpThreads: 1 });
    const into = tensor("float32", new Float32Array(2), [1, 2]);
    const feeds = {
      a: tensor("float32", Float32Array.of(1, 2), [1, 2]),
      b: tensor("float32", Float32Array.of(3, 4), [1, 2]),
    };
    const out = await session.run(feeds, { y: into });
    expect(out.y).toBe(into);
    expect(Array.from(into.data as Float32Array)).toEqual([4, 6]);
    // onnxruntime-node itself answers with a copy of that output in a buffer of its own (which
    // run() drops): a pre-allocated output saves ORT's allocation, not the binding's copy.
    const raw = await session.session.run(feeds, { y: into });
    expect((raw.y!.data as Float32Array).buffer).not.toBe((into.data as Float32Array).buffer);
    expect(Array.from(raw.y!.data as Float32Array)).toEqual([4, 6]);
    await session.release();
  });

  it("names an input that was not fed", async () => {
    const session = await GraphSession.create(addGraph());
    await expect(session.run({ a: tensor("float32", Float32Array.of(1, 2), [1, 2]) })).rejects.toThrow(
      "session: input b was not fed",
    );
    await session.release();
  });
});

describe("tensors", () => {
  it("wrap typed arrays without copying, with the dtype named", () => {
    const data = Float64Array.of(1, 2, 3);
    const t = tensor("float64", data, [3]);
    expect([t.type, t.dims, t.data === data]).toEqual(["float64", [3], true]);
    expect(tensor("bool", Uint8Array.of(1, 0), [2]).type).toBe("bool");
    expect(t).toBeInstanceOf(ort.Tensor);
  });

  it("refuse a size that does not match the dims", () => {
    expect(() => tensor("float32", new Float32Array(5), [2, 3])).toThrow("tensor: 5 values for dims [2,3]");
  });

  it("int64Tensor converts numbers to bigints", () => {
    const t = int64Tensor([3, -1, 7], [3]);
    expect([t.type, Array.from(t.data as BigInt64Array)]).toEqual(["int64", [3n, -1n, 7n]]);
  });
});
