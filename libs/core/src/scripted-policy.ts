/**
 * A scripted policy: rules instead of weights, for tests and demos. A rule maps an observation to
 * weighted candidate texts; the policy samples one with the request's seed, so it is a real
 * (if simple) distribution over sequences. Tokens are UTF-8 bytes. The sequence log-probability
 * log p(text) is put on the first token and 0 on the others, so the per-token log-probs still sum
 * to the log-probability of the completion, which is all the estimators use.
 */
import type { Observation } from "./messages.ts";
import type { Completion, GenerationRequest, Policy, SamplingParams } from "./policy.ts";
import { Rng } from "./rng.ts";

export interface ScriptedChoice {
  readonly text: string;
  readonly weight: number;
}

export type ScriptedRule = (observation: Observation) => readonly ScriptedChoice[];

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export class ScriptedPolicy implements Policy {
  constructor(
    readonly id: string,
    private readonly rule: ScriptedRule,
    readonly version = 0,
  ) {}

  async generate(requests: readonly GenerationRequest[], sampling: SamplingParams): Promise<Completion[]> {
    return requests.map((request) => this.complete(request, sampling));
  }

  private complete(request: GenerationRequest, sampling: SamplingParams): Completion {
    const choices = this.rule(request.observation);
    if (choices.length === 0) throw new Error(`scripted policy "${this.id}": rule returned no choices`);
    const probs = temperedProbabilities(
      choices.map((c) => c.weight),
      sampling.temperature,
    );
    const index = sampling.temperature === 0 ? argmax(probs) : new Rng(request.seed).weightedIndex(probs);
    let text = choices[index]!.text;
    let finishReason: Completion["finishReason"] = "stop";
    for (const stop of sampling.stop) {
      const at = text.indexOf(stop);
      if (at >= 0) text = text.slice(0, at);
    }
    let tokenIds = Array.from(encoder.encode(text));
    if (tokenIds.length > sampling.maxTokens) {
      tokenIds = tokenIds.slice(0, sampling.maxTokens);
      text = decoder.decode(new Uint8Array(tokenIds));
      finishReason = "length";
    }
    const logprobs = tokenIds.map((_, i) => (i === 0 ? Math.log(probs[index]!) : 0));
    const promptText = request.observation.messages.map((m) => `${m.role}: ${m.content}\n`).join("");
    return { text, tokenIds, logprobs, finishReason, promptTokenIds: Array.from(encoder.encode(promptText)) };
  }
}

/** p_i ∝ w_i^(1/T); T = 0 puts all mass on the first largest weight. */
export function temperedProbabilities(weights: readonly number[], temperature: number): number[] {
  if (weights.some((w) => !(w >= 0)))
    throw new Error(`scripted policy: weights must be >= 0, got ${weights}`);
  if (temperature === 0) {
    const best = argmax(weights);
    return weights.map((_, i) => (i === best ? 1 : 0));
  }
  const powered = weights.map((w) => w ** (1 / temperature));
  const total = powered.reduce((a, b) => a + b, 0);
  if (total <= 0) throw new Error("scripted policy: all weights are zero");
  return powered.map((p) => p / total);
}

function argmax(xs: readonly number[]): number {
  let best = 0;
  for (let i = 1; i < xs.length; i++) if (xs[i]! > xs[best]!) best = i;
  return best;
}
