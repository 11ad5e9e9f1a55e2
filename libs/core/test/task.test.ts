import { describe, expect, it } from "vitest";
import { SplitSchema } from "../src/task.ts";

describe("task splits", () => {
  it("are train, validation and test, nothing else", () => {
    expect(SplitSchema.options).toEqual(["train", "validation", "test"]);
    for (const split of ["train", "validation", "test"]) expect(SplitSchema.parse(split)).toBe(split);
    expect(SplitSchema.safeParse("dev").success).toBe(false);
  });
});
