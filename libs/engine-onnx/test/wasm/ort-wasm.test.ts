/**
 * `@troupe/engine-onnx/wasm` on Node: onnxruntime-web's wasm build behind onnxruntime-node's API.
 * In a Worker bundle wrangler compiles the imported .wasm file into a `WebAssembly.Module`; here
 * the test does the same from the package's file, so the module under test runs as it does in
 * workerd (the marker bytes, the patched `WebAssembly.instantiate`, one thread). The embedded
 * Worker itself, in workerd, is apps/api/test/worker/embedded.test.ts.
 */
import { describe, expect, it, vi } from "vitest";
import { Graph } from "../../src/graph/builder.ts";
import * as op from "../../src/graph/ops.ts";
import { GraphSession, tensor } from "../../src/runtime/session.ts";
import { InferenceSession, Tensor, wasmMemoryBytes } from "../../src/wasm/ort-wasm.ts";

vi.mock("onnxruntime-web/ort-wasm-simd-threaded.wasm", async () => {
  const { readFileSync } = await import("node:fs");
  const { createRequire } = await import("node:module");
  const path = createRequire(import.meta.url).resolve("onnxruntime-web/ort-wasm-simd-threaded.wasm");
  return { default: new WebAssembly.Module(readFileSync(path)) };
});

/** softmax(x · W) over a symbolic batch, float32: a MatMul and a Softmax, as the model graphs use them. */
function softmaxGraph(): Graph {
  const graph = new Graph("softmax");
  const x = graph.input("x", "float32", ["B", 3]);
  const w = graph.constant(Float32Array.of(1, 0, -1, 2, 0.5, 0, -1, 1, 3), "float32", [3, 3]);
  graph.output(op.softmax(op.matmul(x, w), -1), "y");
  return graph;
}

const X = Float32Array.of(0.5, -1, 2, 1, 1, 1);

describe("onnxruntime-web behind onnxruntime-node's API", () => {
  it("runs a built graph as onnxruntime-node does, and reports its wasm memory once started", async () => {
    expect(wasmMemoryBytes()).toBeUndefined();
    // thread and spinning settings are native-only: accepted and dropped
    const session = await InferenceSession.create(softmaxGraph().toBytes(), {
      intraOpNumThreads: 2,
      interOpNumThreads: 1,
      extra: { session: { intra_op: { allow_spinning: "0" } } },
    });
    expect([session.inputNames, session.outputNames]).toEqual([["x"], ["y"]]);
    const out = await session.run({ x: new Tensor("float32", X.slice(), [2, 3]) });
    const native = await GraphSession.create(softmaxGraph());
    const expected = await native.run({ x: tensor("float32", X.slice(), [2, 3]) });
    expect(out.y!.dims).toEqual([2, 3]);
    Array.from(expected.y!.data as Float32Array).forEach((v, i) =>
      expect((out.y!.data as Float32Array)[i]).toBeCloseTo(v, 6),
    );
    await native.release();
    await session.release();
    expect(wasmMemoryBytes()).toBeGreaterThan(1 << 20);
  });

  it("writes an output into the caller's pre-allocated tensor, as onnxruntime-node does", async () => {
    const session = await InferenceSession.create(softmaxGraph().toBytes());
    const into = new Tensor("float32", new Float32Array(6), [2, 3]);
    const out = await session.run({ x: new Tensor("float32", X.slice(), [2, 3]) }, { y: into });
    expect(out.y).toBe(into);
    const rows = into.data as Float32Array;
    expect(rows[0]! + rows[1]! + rows[2]!).toBeCloseTo(1, 6);
    expect(rows[3]! + rows[4]! + rows[5]!).toBeCloseTo(1, 6);
    // a null fetch is an output without a buffer: returned as usual
    const plain = await session.run({ x: new Tensor("float32", X.slice(), [2, 3]) }, { y: null });
    expect(Array.from(plain.y!.data as Float32Array)).toEqual(Array.from(rows));
    await session.release();
  });

  it("refuses a buffer of the wrong size or an output the graph lacks, naming it", async () => {
    const session = await InferenceSession.create(softmaxGraph().toBytes());
    const feeds = () => ({ x: new Tensor("float32", X.slice(), [2, 3]) });
    await expect(
      session.run(feeds(), { y: new Tensor("float32", new Float32Array(3), [1, 3]) }),
    ).rejects.toThrow("onnxruntime-web: output y has 6 values, its buffer 3");
    await expect(
      session.run(feeds(), { z: new Tensor("float32", new Float32Array(6), [2, 3]) }),
    ).rejects.toThrow("onnxruntime-web: no output z");
    await session.release();
  });
});
