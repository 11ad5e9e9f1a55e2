import { describe, expect, it } from "vitest";
import { Graph, type Value } from "../../src/graph/builder.ts";
import * as op from "../../src/graph/ops.ts";
import { attention, cachedAttention, singleTokenAttention } from "../../src/model/attention.ts";
import { MASKED_BIAS } from "../../src/model/host-inputs.ts";
import { runGraph } from "../fixtures.ts";
import { uniformStream } from "../gradcheck.ts";

const random = (n: number, rand: () => number) => Float64Array.from({ length: n }, () => 2 * rand() - 1);
const size = (dims: readonly number[]) => dims.reduce((a, b) => a * b, 1);

describe("attention", () => {
  it("softmax(q kᵀ + bias) v on a hand-computed case, with and without a masked key", async () => {
    const graph = new Graph("attention");
    const dims = { q: [1, 1, 1, 2], k: [1, 1, 2, 2], bias: [1, 1, 1, 2] };
    const q = graph.input("q", "float64", dims.q);
    const k = graph.input("k", "float64", dims.k);
    const v = graph.input("v", "float64", dims.k);
    graph.output(attention(q, k, v, graph.input("bias", "float64", dims.bias)), "out");
    const feeds = (bias: number[]) => ({
      q: { data: Float64Array.of(1, 0), dims: dims.q },
      k: { data: Float64Array.of(1, 0, 0, 1), dims: dims.k },
      v: { data: Float64Array.of(1, 2, 3, 4), dims: dims.k },
      bias: { data: Float64Array.from(bias), dims: dims.bias },
    });
    // Scores [1, 0]: weights e/(e + 1) and 1/(e + 1).
    const p = Math.E / (Math.E + 1);
    const open = await runGraph(graph, feeds([0, 0]));
    expect(open.out![0]).toBeCloseTo(p * 1 + (1 - p) * 3, 12);
    expect(open.out![1]).toBeCloseTo(p * 2 + (1 - p) * 4, 12);
    const masked = await runGraph(graph, feeds([0, MASKED_BIAS]));
    expect(Array.from(masked.out as Float64Array)).toEqual([1, 2]);
  });

  it("over a cache and the new keys without joining them = over the joined keys", async () => {
    const rand = uniformStream(3);
    const [B, KV, GT, C, T, D] = [2, 2, 3, 5, 3, 4];
    const dims = { q: [B, KV, GT, D], cache: [B, KV, C, D], new: [B, KV, T, D], bias: [B, 1, GT, C + T] };
    const graph = new Graph("cached");
    const q = graph.input("q", "float64", dims.q);
    const cache = {
      k: graph.input("ck", "float64", dims.cache),
      v: graph.input("cv", "float64", dims.cache),
    };
    const k = graph.input("k", "float64", dims.new);
    const v = graph.input("v", "float64", dims.new);
    const bias = graph.input("bias", "float64", dims.bias);
    graph.output(cachedAttention(q, k, v, cache, bias), "cached");
    graph.output(attention(q, op.concat([cache.k, k], 2), op.concat([cache.v, v], 2), bias), "joined");
    const biasData = Float64Array.from({ length: size(dims.bias) }, () => (rand() < 0.3 ? MASKED_BIAS : 0));
    const feed = (d: number[]) => ({ data: random(size(d), rand), dims: d });
    const out = await runGraph(graph, {
      q: feed(dims.q),
      ck: feed(dims.cache),
      cv: feed(dims.cache),
      k: feed(dims.new),
      v: feed(dims.new),
      bias: { data: biasData, dims: dims.bias },
    });
    out.cached!.forEach((x, i) => expect(x).toBeCloseTo(out.joined![i] as number, 12));
  });

  it("one token a row over the cache = attention over the cache joined with that token", async () => {
    const rand = uniformStream(4);
    const [B, KV, G, C, D] = [2, 2, 2, 4, 3];
    const graph = new Graph("step");
    const dims = { q: [B, 1, KV * G, D], k: [B, 1, KV, D], cache: [B, KV, C, D], bias: [B, 1, 1, C + 1] };
    const q = graph.input("q", "float64", dims.q);
    const k = graph.input("k", "float64", dims.k);
    const v = graph.input("v", "float64", dims.k);
    const cache = {
      k: graph.input("ck", "float64", dims.cache),
      v: graph.input("cv", "float64", dims.cache),
    };
    const bias = graph.input("bias", "float64", dims.bias);
    // q [B, KV, G, D] (head h = kv·G + g) and the token's k, v [B, KV, 1, D], as the step shapes them.
    const heads = (x: Value, n: number) => op.reshape(x, graph.ints([B, KV, n, D]), [B, KV, n, D]);
    const step = singleTokenAttention(heads(q, G), heads(k, 1), heads(v, 1), cache, bias, {
      H: KV * G,
      KV,
      G,
      D,
    });
    graph.output(step.merged, "step");
    // The same with general shapes, the token's key and value after the cache's.
    const joinedK = op.concat([cache.k, heads(k, 1)], 2);
    const joinedV = op.concat([cache.v, heads(v, 1)], 2);
    graph.output(attention(heads(q, G), joinedK, joinedV, bias), "joined");
    const feed = (d: number[]) => ({ data: random(size(d), rand), dims: d });
    const biasData = Float64Array.from({ length: size(dims.bias) }, (_, i) =>
      i % (C + 1) === 1 ? MASKED_BIAS : 0,
    );
    const out = await runGraph(graph, {
      q: feed(dims.q),
      k: feed(dims.k),
      v: feed(dims.k),
      ck: feed(dims.cache),
      cv: feed(dims.cache),
      bias: { data: biasData, dims: dims.bias },
    });
    expect(out.step!.length).toBe(B * KV * G * D);
    out.step!.forEach((x, i) => expect(x).toBeCloseTo(out.joined![i] as number, 12));
  });
});
