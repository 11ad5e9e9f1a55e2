import { describe, expect, it } from "vitest";
import { checkpointSummary, describeModel, servingFiles } from "../src/artifacts.ts";
import { tinyCheckpoint, tinyConfig } from "./fixtures.ts";

describe("what of a checkpoint is published", () => {
  it("every file but the training state", () => {
    const one = new Uint8Array([1]);
    const files = {
      "config.json": one,
      "model.safetensors": one,
      "optimizer.safetensors": one,
      "trainer_state.json": one,
    };
    expect(Object.keys(servingFiles(files)).sort()).toEqual(["config.json", "model.safetensors"]);
  });

  it("the model described and its parameters counted from the checkpoint itself", async () => {
    const summary = checkpointSummary(servingFiles(await tinyCheckpoint("planner", 1)));
    expect(summary.model).toBe(describeModel(tinyConfig));
    expect(summary.model).toMatch(/^qwen3 hidden 32 × 1 layers, 2 heads \(1 kv\), vocab \d+$/);
    expect(summary.parameters).toBeGreaterThan(0);
    expect(() => checkpointSummary({})).toThrow();
  });
});
