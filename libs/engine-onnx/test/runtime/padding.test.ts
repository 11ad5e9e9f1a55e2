import { describe, expect, it } from "vitest";
import { padBatch } from "../../src/runtime/padding.ts";

describe("padBatch", () => {
  it("right padding (scoring, training): tokens first, positions count from 0", () => {
    const padded = padBatch([[5, 6, 7], [8]], "right", 9);
    expect([padded.batch, padded.time]).toEqual([2, 3]);
    expect(Array.from(padded.ids, Number)).toEqual([5, 6, 7, 8, 9, 9]);
    expect(Array.from(padded.valid)).toEqual([1, 1, 1, 1, 0, 0]);
    expect(Array.from(padded.positions)).toEqual([0, 1, 2, 0, 0, 0]);
  });

  it("left padding (generation): a padded row's first real token is at position 0 too", () => {
    const padded = padBatch([[5, 6, 7], [8]], "left");
    expect(Array.from(padded.ids, Number)).toEqual([5, 6, 7, 0, 0, 8]);
    expect(Array.from(padded.valid)).toEqual([1, 1, 1, 0, 0, 1]);
    expect(Array.from(padded.positions)).toEqual([0, 1, 2, 0, 0, 0]);
  });

  it("a batch of empty sequences is one all-padding column", () => {
    const padded = padBatch([[], []], "left", 3);
    expect([padded.batch, padded.time]).toEqual([2, 1]);
    expect(Array.from(padded.ids, Number)).toEqual([3, 3]);
    expect(Array.from(padded.valid)).toEqual([0, 0]);
  });
});
