/** Usage accounting: requests, attempts and tokens, per policy, from the servers' `usage` fields. */
import type { PolicyId } from "@troupe/core";

export interface UsageCounters {
  /** Logical requests finished (generate: one per completion; logprobs: one per sequence). */
  readonly requests: number;
  /** Of those, how many failed for good. */
  readonly failures: number;
  /** HTTP attempts, retries included (attempts − requests = retries). */
  readonly attempts: number;
  /** As the server counted them (`usage.prompt_tokens`). */
  readonly promptTokens: number;
  readonly completionTokens: number;
}

export interface EngineUsage {
  readonly total: UsageCounters;
  readonly byPolicy: Readonly<Record<PolicyId, UsageCounters>>;
}

const zero = (): { -readonly [K in keyof UsageCounters]: number } => ({
  requests: 0,
  failures: 0,
  attempts: 0,
  promptTokens: 0,
  completionTokens: 0,
});

export class UsageMeter {
  private readonly counters = new Map<PolicyId, ReturnType<typeof zero>>();

  record(
    policyId: PolicyId,
    outcome: { ok: boolean; attempts: number; promptTokens?: number; completionTokens?: number },
  ): void {
    let c = this.counters.get(policyId);
    if (c === undefined) this.counters.set(policyId, (c = zero()));
    c.requests += 1;
    if (!outcome.ok) c.failures += 1;
    c.attempts += outcome.attempts;
    c.promptTokens += outcome.promptTokens ?? 0;
    c.completionTokens += outcome.completionTokens ?? 0;
  }

  snapshot(): EngineUsage {
    const total = zero();
    const byPolicy: Record<PolicyId, UsageCounters> = {};
    for (const [id, c] of this.counters) {
      byPolicy[id] = { ...c };
      for (const key of Object.keys(total) as (keyof UsageCounters)[]) total[key] += c[key];
    }
    return { total, byPolicy };
  }
}
