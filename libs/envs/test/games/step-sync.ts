/** The game environments' steps outside the `tool` protocol are synchronous: the tests read them so. */
import type { Environment, StepResult } from "@troupe/core";

/** `env.step` of a synchronous protocol; an error if the step returned a promise. */
export function stepSync<S>(
  env: Pick<Environment<S>, "name" | "step">,
  state: S,
  actions: Record<string, string>,
): StepResult<S> {
  const result = env.step(state, actions);
  if (result instanceof Promise) throw new Error(`${env.name}: this protocol's steps are synchronous`);
  return result;
}
