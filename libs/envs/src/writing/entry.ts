/**
 * `writing` in the registry (MAGRPO / CoMLRL writing): two writers in parallel, one step, scored
 * with CoMLRL's tiered proxy reward. `task: tldr`: a concise and a detailed summary of a Reddit
 * post (500 posts); `task: arxiv`: the background and the methods parts of an introduction,
 * expanded from a paper's abstract (1,686 abstracts). Nothing runs code.
 */
import { z } from "zod";
import type { WritingAnswer } from "../answer.ts";
import { checkedEnvironment, datasetTasks, defineEnvironment, textTeam } from "../entry.ts";
import { shippedWriting, WRITING_MAX_SOURCE_CHARS, type WritingProblem } from "./dataset.ts";
import { type WritingState, writingEnv } from "./writing-env.ts";

export const WritingOptionsSchema = z
  .object({
    task: z.enum(["tldr", "arxiv"]).default("tldr"),
  })
  .strict();

export const WritingProblemSchema = z.object({
  kind: z.enum(["tldr", "arxiv"]),
  id: z.string().min(1).max(200).default("text"),
  title: z.string().max(2000).default(""),
  text: z.string().min(1).max(WRITING_MAX_SOURCE_CHARS),
});

function renderWriting(state: unknown): WritingAnswer {
  const s = state as WritingState;
  const r = s.reward;
  return {
    kind: "writing",
    texts: s.texts ?? {},
    tiers: r
      ? {
          structure: r.structure,
          coordination: r.coordination,
          vocabulary: r.vocabulary,
          style: r.style,
          total: r.total,
          ...(r.stoppedAt !== undefined ? { stoppedAt: r.stoppedAt } : {}),
        }
      : null,
  };
}

export const writingEntry = defineEnvironment({
  description:
    "two writers: TLDR (concise + detailed summaries) or arXiv (background + methods from an abstract)",
  options: WritingOptionsSchema,
  needsSandbox: () => false,
  build(options) {
    const kind = options.task;
    const env = writingEnv(kind);
    return {
      env: checkedEnvironment("writing", env, WritingProblemSchema as z.ZodType<WritingProblem>),
      generateTasks: datasetTasks(
        `writing-${kind}`,
        () => ({ train: shippedWriting(kind, "train"), test: shippedWriting(kind, "test") }),
        (p: WritingProblem) => p.id,
      ),
      team: (specialisation) => textTeam(`writing-${kind}`, env.agents, specialisation, "parallel", 1),
    };
  },
  render: (state) => renderWriting(state),
});
