import { describe, expect, it } from "vitest";
import { MASKED_BIAS } from "../../src/model/host-inputs.ts";
import {
  appendColumns,
  appendRaggedColumns,
  cachedAttentionBias,
  copyCacheRow,
  copyRows,
  fixedCache,
  raggedCache,
} from "../../src/runtime/kv-cache.ts";

/** 2 layers, 1 KV head of size 2, vocab 3, float64. */
const dims = { layers: 2, kvHeads: 1, headDim: 2, vocab: 3, dtype: "float64" } as const;

describe("KV caches", () => {
  it("bias: written real cache columns and causal real new tokens are visible, the rest masked", () => {
    // Row 0: cache columns [pad, a, b] of capacity 4 (P = 3); two new tokens, both real.
    // Row 1: cache [a, b, c]; new tokens [pad, d] (a padded new column stays masked).
    const cache = { batch: 2, capacity: 4, length: 3, valid: Uint8Array.of(0, 1, 1, 0, 1, 1, 1, 0) };
    const bias = cachedAttentionBias(cache, Uint8Array.of(1, 1, 0, 1), 2, "float64");
    const M = MASKED_BIAS;
    // [B, T, C + T] = [2, 2, 6]: 4 cache columns then 2 new ones.
    expect(Array.from(bias)).toEqual([
      ...[M, 0, 0, M, 0, M],
      ...[M, 0, 0, M, 0, 0],
      ...[0, 0, 0, M, M, M],
      ...[0, 0, 0, M, M, 0],
    ]);
  });

  it("a fixed cache is allocated empty; new columns land at its length, valid flags with them", () => {
    const cache = fixedCache(dims, 2, 4);
    expect([cache.batch, cache.capacity, cache.length]).toEqual([2, 4, 0]);
    expect(cache.keys.map((k) => k.length)).toEqual([16, 16]);
    expect(cache.logits.length).toBe(6);
    // T = 2 new columns per row, per layer [B, KV, T, D] = [2, 1, 2, 2]: values tag layer, row, column.
    const news = (kind: number) =>
      [0, 1].map((layer) => Float64Array.from({ length: 8 }, (_, i) => 100 * kind + 10 * layer + i));
    appendColumns(cache, { keys: news(1), values: news(2) }, Uint8Array.of(1, 1, 0, 1), 2);
    expect(cache.length).toBe(2);
    appendColumns(cache, { keys: news(3), values: news(4) }, Uint8Array.of(1, 0, 1, 1), 2);
    expect(cache.length).toBe(4);
    // Row 0 of layer 1's keys: columns 0–1 from the first write, 2–3 from the second.
    expect(Array.from(cache.keys[1]!.subarray(0, 8))).toEqual([110, 111, 112, 113, 310, 311, 312, 313]);
    expect(Array.from(cache.values[0]!.subarray(8, 16))).toEqual([204, 205, 206, 207, 404, 405, 406, 407]);
    expect(Array.from(cache.valid)).toEqual([1, 1, 1, 0, 0, 1, 1, 1]);
  });

  it("a ragged cache takes one column per row, each at its own length", () => {
    const cache = raggedCache(dims, 3, 3);
    cache.lengths.set([0, 2, 1]);
    const news = [0, 1].map((layer) => Float64Array.from({ length: 4 }, (_, i) => 10 * layer + i + 1));
    appendRaggedColumns(cache, { keys: news, values: news }, 2, 2);
    expect(Array.from(cache.lengths)).toEqual([1, 3, 1]);
    // Row 0 at column 0, row 1 at column 2; row 2 untouched.
    expect(Array.from(cache.keys[0]!)).toEqual([1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 3, 4, 0, 0, 0, 0, 0, 0]);
    expect(Array.from(cache.valid)).toEqual([1, 0, 0, 0, 0, 1, 0, 0, 0]);
  });

  it("rows are copied whole: one row over another, and prefilled rows into the first columns", () => {
    const cache = fixedCache(dims, 2, 3);
    cache.keys[0]!.set([1, 2, 3, 4, 5, 6]);
    cache.valid.set([1, 1, 0]);
    copyCacheRow(cache, 0, 1);
    expect(Array.from(cache.keys[0]!.subarray(6))).toEqual([1, 2, 3, 4, 5, 6]);
    expect(Array.from(cache.valid)).toEqual([1, 1, 0, 1, 1, 0]);
    // A prefill of 2 columns for 1 row, into row 1.
    const source = {
      keys: [Float64Array.of(7, 8, 9, 10), new Float64Array(4)],
      values: [new Float64Array(4), new Float64Array(4)],
    };
    copyRows(cache, source, { columns: 2, kvHeads: 1, headDim: 2 }, { from: 0, to: 1, count: 1 });
    expect(Array.from(cache.keys[0]!.subarray(6))).toEqual([7, 8, 9, 10, 5, 6]);
  });
});
