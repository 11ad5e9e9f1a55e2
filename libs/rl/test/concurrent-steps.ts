/** Test-only: an environment whose steps take time, counting how many run at once. */
import type { Environment } from "@troupe/core";

/**
 * `env` with every step held back one timer tick, and the most steps ever in flight together:
 * strategies that await each step before the next show 1, those that start a batch at once show
 * the batch's size.
 */
export function overlapMeter<S, P>(
  env: Environment<S, P>,
): { env: Environment<S, P>; maxInFlight(): number } {
  let inFlight = 0;
  let most = 0;
  return {
    env: {
      ...env,
      async step(state, actions) {
        inFlight++;
        most = Math.max(most, inFlight);
        try {
          await new Promise((resolve) => setTimeout(resolve, 1));
          return await env.step(state, actions);
        } finally {
          inFlight--;
        }
      },
    },
    maxInFlight: () => most,
  };
}
