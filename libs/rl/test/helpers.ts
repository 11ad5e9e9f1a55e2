/** Test-only policies and contexts. */
import {
  type Completion,
  type Environment,
  type GenerationRequest,
  type Policy,
  type RolloutContext,
  type Sample,
  type SamplingParams,
  samplingParams,
  type Task,
  type Team,
} from "@troupe/core";
import { type EstimationConfig, estimateAdvantages } from "../src/estimators.ts";
import type { RolloutResult } from "../src/rollout.ts";

/**
 * Answers the i-th request of every block of `answers.length` consecutive requests with answers[i].
 * The strategies ask for a node's G candidates of one agent as one consecutive block, so candidate g
 * always says answers[g]: trees become hand-computable.
 */
export class ListPolicy implements Policy {
  constructor(
    readonly id: string,
    private readonly answers: readonly string[],
    readonly version = 0,
  ) {}
  async generate(requests: readonly GenerationRequest[], _sampling: SamplingParams): Promise<Completion[]> {
    return requests.map((_, i) => {
      const text = this.answers[i % this.answers.length]!;
      const tokenIds = Array.from(new TextEncoder().encode(text));
      return {
        text,
        tokenIds,
        logprobs: tokenIds.map(() => -0.5),
        promptTokenIds: [1, 2, 3],
        finishReason: "stop",
      };
    });
  }
}

/** Agents a and b on list policies of their own: candidate g of a says a[g], of b says b[g]. */
export function listPolicies(a: readonly string[], b: readonly string[]): Record<string, Policy> {
  return { a: new ListPolicy("a", a), b: new ListPolicy("b", b) };
}

export function context<S, P>(
  env: Environment<S, P>,
  policies: Record<string, Policy>,
  team: Team,
  overrides: Partial<RolloutContext<S, P>> = {},
): RolloutContext<S, P> {
  return {
    runId: "test-run",
    step: 0,
    seed: 1234,
    env,
    team,
    policies,
    sampling: samplingParams({ maxTokens: 8 }),
    ...overrides,
  };
}

/** A sum-to-target task (`sumToTargetEnv`): the agents' numbers must add up to `target`. */
export function sumTask(target: number, id = `t${target}`): Task<{ target: number }> {
  return { id, split: "train", payload: { target } };
}

/** Advantages as the plain difference from the group mean, A = R − mean(R): hand-computable. */
export const meanBaseline = { baseline: "mean" as const, normalizeStd: false, eps: 0 };

/** Roles a and b on `policies` (default: role a → policy a, role b → policy b). */
export function twoAgentTeam(
  turnOrder: "parallel" | "sequential",
  maxTurns: number,
  policies: { readonly a: string; readonly b: string } = { a: "a", b: "b" },
): Team {
  return {
    name: "pair",
    turnOrder,
    maxTurns,
    roles: [
      { id: "a", policy: policies.a },
      { id: "b", policy: policies.b },
    ],
  };
}

export type EstimatedRollout = Omit<RolloutResult, "samples"> & { samples: Sample[] };

/** A rollout's samples after the trainer's advantage stage (filters, then the estimator). */
export function estimated(out: RolloutResult | EstimatedRollout, config: EstimationConfig): EstimatedRollout {
  return { ...out, samples: estimateAdvantages(out.samples, config).samples };
}
