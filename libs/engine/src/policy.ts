import type { Completion, GenerationRequest, Policy, PolicyId, SamplingParams } from "@troupe/core";
import type { Engine } from "./types.ts";

/** A core `Policy` backed by one policy of an engine. */
export function enginePolicy(engine: Engine, id: PolicyId, version = 0): Policy {
  return {
    id,
    version,
    generate(requests: readonly GenerationRequest[], sampling: SamplingParams): Promise<Completion[]> {
      return engine.generate(
        requests.map((r) => ({ policyId: id, observation: r.observation, seed: r.seed })),
        sampling,
      );
    },
  };
}
