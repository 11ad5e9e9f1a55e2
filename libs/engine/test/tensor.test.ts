import { describe, expect, it } from "vitest";
import { cloneWeights, numel, shapeText, type Weights } from "../src/tensor.ts";

describe("tensors", () => {
  it("numel is the product of the dimensions; a scalar has one element", () => {
    expect(numel([2, 3, 4])).toBe(24);
    expect(numel([7])).toBe(7);
    expect(numel([])).toBe(1);
    expect(numel([3, 0])).toBe(0);
  });

  it("shapeText writes a shape as [a,b]", () => {
    expect(shapeText([2, 3])).toBe("[2,3]");
    expect(shapeText([])).toBe("[]");
  });

  it("cloneWeights copies every buffer and keeps the insertion order", () => {
    const weights: Weights = new Map([
      ["b", { shape: [2], data: new Float32Array([1, 2]) }],
      ["a", { shape: [1, 1], data: new Float32Array([3]) }],
    ]);
    const copy = cloneWeights(weights);
    expect([...copy.keys()]).toEqual(["b", "a"]);
    expect(copy.get("b")).toEqual({ shape: [2], data: new Float32Array([1, 2]) });
    weights.get("b")!.data[0] = 9;
    (weights.get("a")!.shape as number[])[0] = 5;
    expect(copy.get("b")!.data[0]).toBe(1);
    expect(copy.get("a")!.shape).toEqual([1, 1]);
  });
});
