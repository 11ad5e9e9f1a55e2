/** The registered `writing` environment: the answer it renders. */
import { describe, expect, test } from "vitest";
import { createEnvironment, renderAnswer, type WritingAnswer } from "../../src/index.ts";

describe("the writing answer", () => {
  test("writing: the texts and each reward tier", async () => {
    const writing = createEnvironment("writing", {});
    const [task] = writing.generateTasks("test", 1, 0);
    const state = await writing.env.reset(task!, 0);
    const result = await writing.env.step(state, { concise: "too short", detailed: "also short" });
    expect(renderAnswer("writing", result.state, [])).toEqual({
      kind: "writing",
      texts: { concise: "too short", detailed: "also short" },
      tiers: { structure: 0, coordination: 0, vocabulary: 0, style: 0, total: 0, stoppedAt: "structure" },
    } satisfies WritingAnswer);
  });
});
