/**
 * Retries with capped exponential backoff and "full jitter" (Brooker, AWS Architecture Blog 2015):
 *
 *   delay_n = U(0, min(maxDelay, baseDelay · 2^(n−1)))      before retry n = 1, 2, …
 *
 * Full jitter spreads the retries of many clients hit by the same fault (a throttled bucket, a
 * restarting gateway) over the whole window instead of having them retry in lock-step.
 */

export interface RetryOptions {
  /** Attempts in all, the first included; 1 disables retrying. */
  readonly maxAttempts: number;
  /** Cap of the first backoff window, in ms; the window doubles every retry. */
  readonly baseDelayMs: number;
  /** Largest backoff window, in ms. */
  readonly maxDelayMs: number;
  /** Uniform [0, 1) source for the jitter; Math.random unless a test seeds one. */
  readonly random?: () => number;
}

export const defaultRetryOptions: RetryOptions = { maxAttempts: 6, baseDelayMs: 50, maxDelayMs: 2000 };

/** Backoff before retry `retry` (1-based): uniform in [0, min(maxDelay, base · 2^(retry−1))). */
export function backoffDelayMs(retry: number, options: RetryOptions, u: number): number {
  const window = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** (retry - 1));
  return u * window;
}

export class RetriesExhaustedError extends Error {
  constructor(
    readonly operation: string,
    readonly attempts: number,
    override readonly cause: unknown,
  ) {
    super(`${operation}: failed after ${attempts} attempt(s): ${errorMessage(cause)}`, { cause });
    this.name = "RetriesExhaustedError";
  }
}

/**
 * Runs `op` until it succeeds, the error is not retryable (thrown as is), or the attempts run out
 * (RetriesExhaustedError with the last error as cause). `op` gets the 1-based attempt number.
 */
export async function withRetry<T>(
  operation: string,
  op: (attempt: number) => Promise<T>,
  isRetryable: (error: unknown) => boolean,
  options: RetryOptions = defaultRetryOptions,
): Promise<T> {
  const random = options.random ?? Math.random;
  for (let attempt = 1; ; attempt++) {
    try {
      return await op(attempt);
    } catch (error) {
      if (!isRetryable(error)) throw error;
      if (attempt >= options.maxAttempts) throw new RetriesExhaustedError(operation, attempt, error);
      const delay = backoffDelayMs(attempt, options, random());
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}

export function errorMessage(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return `${error.name}${typeof code === "string" ? ` ${code}` : ""}: ${error.message}`;
  }
  return String(error);
}
