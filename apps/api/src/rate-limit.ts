/**
 * Per-key token bucket. Each key has a bucket of `capacity` tokens (= its rate per minute, so a
 * quiet client may burst up to one minute's worth) that refills continuously at
 * `ratePerMinute / 60_000` tokens per millisecond. A request takes one token; with none left it
 * is refused with the time until the next token as Retry-After:
 *
 *     tokens(t) = min(capacity, tokens(t0) + (t − t0) · rate)
 *     retryAfterMs = (1 − tokens) / rate
 *
 * Written here (not hono-rate-limiter) because the rate is per key from the key file, the state
 * is a few numbers per key, and it must run unchanged on Node and Workers. On Workers each isolate
 * has its own buckets, so the limit there is per isolate (documented in docs/serving.md).
 */
import type { MiddlewareHandler } from "hono";
import { ApiError } from "./errors.ts";

export interface RateDecision {
  readonly allowed: boolean;
  /** Whole tokens left after this request. */
  readonly remaining: number;
  /** When refused: seconds until a token is available (≥ 1, for the Retry-After header). */
  readonly retryAfterSeconds: number;
}

interface Bucket {
  tokens: number;
  updatedMs: number;
}

/**
 * Where the buckets live: in this process (`TokenBuckets`), or, for a server of several processes,
 * in the cluster's primary (`primaryRateLimiter` in cluster.ts), so that a key's limit holds across
 * all of them.
 */
export interface RateLimiter {
  take(key: string, ratePerMinute: number): RateDecision | Promise<RateDecision>;
}

export class TokenBuckets implements RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  /** Refusals so far, per key (the "429 counter"). */
  readonly refused = new Map<string, number>();

  constructor(private readonly now: () => number = () => Date.now()) {}

  take(key: string, ratePerMinute: number): RateDecision {
    const capacity = Math.max(1, ratePerMinute);
    const ratePerMs = ratePerMinute / 60_000;
    const now = this.now();
    const bucket = this.buckets.get(key) ?? { tokens: capacity, updatedMs: now };
    bucket.tokens = Math.min(capacity, bucket.tokens + (now - bucket.updatedMs) * ratePerMs);
    bucket.updatedMs = now;
    this.buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { allowed: true, remaining: Math.floor(bucket.tokens), retryAfterSeconds: 0 };
    }
    this.refused.set(key, (this.refused.get(key) ?? 0) + 1);
    const waitMs = (1 - bucket.tokens) / ratePerMs;
    return { allowed: false, remaining: 0, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) };
  }

  totalRefused(): number {
    let total = 0;
    for (const n of this.refused.values()) total += n;
    return total;
  }
}

export interface RateLimitOptions {
  readonly buckets: RateLimiter;
  /** Requests per minute of a caller without its own `ratePerMinute`. */
  readonly ratePerMinute: number;
  /** Called on every refusal (counters). */
  readonly onRefused?: () => void;
}

/**
 * Middleware, after `authenticate`: one token of the caller's bucket per request, the
 * RateLimit-Limit/-Remaining headers on every answer, a 429 with Retry-After when it is empty.
 */
export function rateLimit(options: RateLimitOptions): MiddlewareHandler {
  return async (c, next) => {
    const caller = c.get("caller");
    const rate = caller.ratePerMinute ?? options.ratePerMinute;
    const decision = await options.buckets.take(caller.id, rate);
    c.header("RateLimit-Limit", String(rate));
    c.header("RateLimit-Remaining", String(decision.remaining));
    if (!decision.allowed) {
      options.onRefused?.();
      throw new ApiError(
        429,
        "rate_limited",
        `over ${rate} requests per minute for key "${caller.id}"; retry in ${decision.retryAfterSeconds} s`,
        undefined,
        {
          "retry-after": String(decision.retryAfterSeconds),
          "ratelimit-limit": String(rate),
          "ratelimit-remaining": "0",
        },
      );
    }
    await next();
  };
}
