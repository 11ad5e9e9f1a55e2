/**
 * Synthetic Samples for tests and the shard-format benchmark: seeded, shaped like real rollouts
 * (a few task ids and agents, repetitive provenance, prompts of tens to hundreds of tokens, some
 * with `success`, some without).
 */
import { defaultSampling, Rng, type Sample } from "@troupe/core";

const AGENTS = ["planner", "coder", "reviewer"];
const WORDS = ["def", "return", "x", "+", "1", "if", "else", "for", "in", "range", "(", ")", ":", "print"];

export function syntheticSamples(count: number, seed = 1, runId = "run-test", step = 0): Sample[] {
  const rng = new Rng(seed);
  const out: Sample[] = [];
  for (let i = 0; i < count; i++) {
    const promptLength = 20 + rng.int(200);
    const completionLength = 1 + rng.int(120);
    const taskId = `task-${rng.int(64)}`;
    const agent = AGENTS[i % AGENTS.length]!;
    const team = rng.float();
    const local = rng.float() - 0.5;
    const sample: Sample = {
      schemaVersion: 1,
      provenance: {
        runId,
        step,
        strategy: "magrpo",
        environment: "code-duo",
        taskId,
        split: "train",
        episode: rng.int(8),
        turn: rng.int(3),
        agent,
        branch: Array.from({ length: rng.int(3) }, () => rng.int(4)),
        candidate: rng.int(4),
        policyId: agent,
        policyVersion: step,
        sampling: { ...defaultSampling, temperature: 0.7, stop: ["\n\n"] },
        seed: rng.int(2 ** 31),
      },
      observation: [
        { role: "system", content: `You are the ${agent}.` },
        {
          role: "user",
          content: `Solve ${taskId}: ${Array.from({ length: 12 }, () => rng.pick(WORDS)).join(" ")}`,
        },
      ],
      completionText: Array.from({ length: completionLength }, () => rng.pick(WORDS)).join(" "),
      promptTokenIds: Array.from({ length: promptLength }, () => rng.int(32_000)),
      completionTokenIds: Array.from({ length: completionLength }, () => rng.int(32_000)),
      samplingLogprobs: Array.from({ length: completionLength }, () => -rng.float() * 5),
      finishReason: rng.float() < 0.9 ? "stop" : "length",
      reward: { team, local, total: team + 0.5 * local },
      return: team + 0.5 * local,
      advantage: rng.float() * 2 - 1,
      groupKey: `${taskId}/${agent}`,
    };
    if (i % 2 === 0) sample.success = team > 0.5;
    out.push(sample);
  }
  return out;
}
