/**
 * Invariants over random team shapes: whatever the strategy, the number of agents, the turn order,
 * the number of turns, the group size and the batch of tasks, a group never mixes tasks, turns or
 * agents; group sizes are what the strategy promises; mean-baseline advantages sum to zero.
 */
import type { Team } from "@troupe/core";
import { ScriptedPolicy, sumToTargetEnv } from "@troupe/core/testing";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { defaultAtgrpoConfig, rolloutAtgrpo } from "../src/atgrpo.ts";
import { groupSamples } from "../src/grouping.ts";
import { defaultGrpoConfig, rolloutGrpo } from "../src/grpo.ts";
import { defaultMagrpoConfig, rolloutMagrpo } from "../src/magrpo.ts";
import type { RolloutResult } from "../src/rollout.ts";
import { context, estimated } from "./helpers.ts";

const shape = fc.record({
  strategy: fc.constantFrom("grpo" as const, "magrpo" as const, "atgrpo" as const),
  agents: fc.integer({ min: 1, max: 3 }),
  shared: fc.boolean(),
  turnOrder: fc.constantFrom("sequential" as const, "parallel" as const),
  maxTurns: fc.integer({ min: 1, max: 3 }),
  groupSize: fc.integer({ min: 2, max: 3 }),
  jointMode: fc.constantFrom("aligned" as const, "cross" as const),
  targets: fc.uniqueArray(fc.integer({ min: 1, max: 30 }), { minLength: 1, maxLength: 3 }),
  seed: fc.integer({ min: 0, max: 1000 }),
});

describe("grouping invariants over random team shapes", () => {
  it("groups never mix tasks, turns or agents; sizes and zero-sum advantages hold", async () => {
    await fc.assert(
      fc.asyncProperty(shape, async (s) => {
        const agents = Array.from({ length: s.agents }, (_, i) => `agent${i}`);
        const env = sumToTargetEnv(agents);
        const digits = (id: string) =>
          new ScriptedPolicy(id, () => ["1", "2", "3", "?"].map((text) => ({ text, weight: 1 })));
        const policies = Object.fromEntries((s.shared ? ["shared"] : agents).map((id) => [id, digits(id)]));
        // MAGRPO takes joint actions, so its teams act in parallel; cross mode grows as G^{N·T}: keep it small.
        const turnOrder = s.strategy === "magrpo" ? "parallel" : s.turnOrder;
        const maxTurns =
          s.strategy === "magrpo" && s.jointMode === "cross"
            ? Math.min(s.maxTurns, 2 - (s.agents > 2 ? 1 : 0))
            : s.maxTurns;
        const team: Team = {
          name: "random",
          turnOrder,
          maxTurns,
          roles: agents.map((id) => ({ id, policy: s.shared ? "shared" : id })),
        };
        const ctx = context(env, policies, team, { seed: s.seed });
        const tasks = s.targets.map((target) => ({
          id: `t${target}`,
          split: "train" as const,
          payload: { target },
        }));
        const mean = { baseline: "mean" as const, normalizeStd: false, eps: 0 };
        let out: RolloutResult;
        if (s.strategy === "grpo") {
          out = await rolloutGrpo(ctx, tasks, {
            ...defaultGrpoConfig,
            groupSize: s.groupSize,
          });
        } else if (s.strategy === "magrpo") {
          out = await rolloutMagrpo(ctx, tasks, {
            ...defaultMagrpoConfig,
            groupSize: s.groupSize,
            jointMode: s.jointMode,
          });
        } else {
          out = await rolloutAtgrpo(ctx, tasks, {
            ...defaultAtgrpoConfig,
            candidates: s.groupSize,
          });
        }
        const scored = estimated(out, mean);
        expect(scored.samples.length).toBeGreaterThan(0);
        for (const [key, members] of groupSamples(scored.samples)) {
          const first = members[0]!.provenance;
          for (const m of members) {
            expect(m.provenance.taskId).toBe(first.taskId);
            expect(m.provenance.turn).toBe(first.turn);
            expect(m.provenance.agent).toBe(first.agent);
            expect(key).toContain(`/${first.taskId}/turn=${first.turn}/agent=${first.agent}`);
            if (s.strategy !== "grpo") expect(m.provenance.branch).toEqual(first.branch);
          }
          if (s.strategy === "grpo") expect(members.length).toBeLessThanOrEqual(s.groupSize);
          else expect(members.length).toBe(s.groupSize);
          const sum = members.reduce((a, m) => a + m.advantage, 0);
          expect(Math.abs(sum)).toBeLessThan(1e-9);
        }
        // Every sample's policy is the one its role maps to.
        for (const sample of scored.samples) {
          expect(sample.provenance.policyId).toBe(s.shared ? "shared" : sample.provenance.agent);
        }
      }),
      { numRuns: 60 },
    );
  });
});
