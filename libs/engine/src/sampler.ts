/**
 * Next-token sampling from one row of logits, the same way in every engine.
 *
 * With logits z and temperature T > 0 (the order of HF's and vLLM's logits warpers):
 *   1. p = softmax(z / T)
 *   2. top-k (k > 0): keep the k most probable tokens (ties broken by the lower token id)
 *   3. top-p (p < 1): of those, in order of decreasing probability renormalised over the kept set,
 *      keep the shortest prefix whose mass reaches p (always at least one token)
 *   4. renormalise over the kept set K: q_i = p_i / Σ_{j∈K} p_j, draw i ~ q with one uniform
 * The returned logprob is log q_i, the log-probability under the distribution actually sampled
 * from (what PPO's importance ratio needs as the "old" policy). T = 0 is greedy (argmax, the lowest
 * id on ties) with logprob 0: the sampling distribution is a point mass.
 */
import type { Rng } from "@troupe/core";

export interface TokenSamplingParams {
  /** ≥ 0; 0 = greedy. */
  readonly temperature: number;
  /** 0 disables top-k. */
  readonly topK: number;
  /** In (0, 1]; 1 disables top-p. */
  readonly topP: number;
}

export interface SampledToken {
  readonly tokenId: number;
  /** log q(tokenId) under the sampling distribution actually used (0 for greedy). */
  readonly logprob: number;
}

type Logits = ArrayLike<number>;

/** log softmax(x), computed stably in float64: x_i − max − log Σ exp(x_j − max). */
export function logSoftmax(logits: Logits): Float64Array {
  const n = logits.length;
  if (n === 0) throw new Error("logSoftmax: empty logits");
  let max = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < n; i++) if (logits[i]! > max) max = logits[i]!;
  if (!Number.isFinite(max)) throw new Error(`logSoftmax: the largest logit is ${max}`);
  let sum = 0;
  for (let i = 0; i < n; i++) sum += Math.exp(logits[i]! - max);
  const logZ = max + Math.log(sum);
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = logits[i]! - logZ;
  return out;
}

/** Index of the largest value; the lowest index wins ties. NaN is an error. */
export function argmax(values: Logits): number {
  let best = 0;
  for (let i = 0; i < values.length; i++) {
    if (Number.isNaN(values[i]!)) throw new Error(`argmax: NaN at index ${i}`);
    if (values[i]! > values[best]!) best = i;
  }
  return best;
}

/** The kept tokens and their renormalised probabilities, most probable first. */
export interface SamplingDistribution {
  readonly tokenIds: Int32Array;
  readonly probs: Float64Array;
}

export function checkSamplingParams(params: TokenSamplingParams): void {
  if (!(params.temperature >= 0) || !Number.isFinite(params.temperature)) {
    throw new Error(`sampling: temperature must be a finite number ≥ 0, got ${params.temperature}`);
  }
  if (!Number.isInteger(params.topK) || params.topK < 0) {
    throw new Error(`sampling: topK must be an integer ≥ 0, got ${params.topK}`);
  }
  if (!(params.topP > 0 && params.topP <= 1))
    throw new Error(`sampling: topP must be in (0, 1], got ${params.topP}`);
}

/** The distribution `sampleToken` draws from (steps 1–4 above); T = 0 gives the point mass on the argmax. */
export function samplingDistribution(logits: Logits, params: TokenSamplingParams): SamplingDistribution {
  checkSamplingParams(params);
  const n = logits.length;
  if (params.temperature === 0) {
    return { tokenIds: Int32Array.of(argmax(logits)), probs: Float64Array.of(1) };
  }
  const scaled = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    if (Number.isNaN(logits[i]!)) throw new Error(`sampling: logit ${i} is NaN`);
    scaled[i] = logits[i]! / params.temperature;
  }
  const logp = logSoftmax(scaled);
  const useTopK = params.topK > 0 && params.topK < n;
  const useTopP = params.topP < 1;
  if (!useTopK && !useTopP) {
    // Full distribution: no sort needed; ids in natural order.
    const ids = new Int32Array(n);
    const probs = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      ids[i] = i;
      probs[i] = Math.exp(logp[i]!);
    }
    return { tokenIds: ids, probs };
  }
  // Most probable first, lower id first on ties (deterministic across engines).
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => logp[b]! - logp[a]! || a - b);
  let kept = useTopK ? params.topK : n;
  let mass = 0;
  for (let r = 0; r < kept; r++) mass += Math.exp(logp[order[r]!]!);
  if (useTopP) {
    // Renormalised over the top-k set, keep tokens until the cumulative mass reaches topP.
    let cumulative = 0;
    let cut = kept;
    for (let r = 0; r < kept; r++) {
      cumulative += Math.exp(logp[order[r]!]!) / mass;
      if (cumulative >= params.topP) {
        cut = r + 1;
        break;
      }
    }
    kept = cut;
    mass = 0;
    for (let r = 0; r < kept; r++) mass += Math.exp(logp[order[r]!]!);
  }
  const ids = new Int32Array(kept);
  const probs = new Float64Array(kept);
  for (let r = 0; r < kept; r++) {
    ids[r] = order[r]!;
    probs[r] = Math.exp(logp[order[r]!]!) / mass;
  }
  return { tokenIds: ids, probs };
}

/** Draws one token with one `rng.float()` (none when greedy). */
export function sampleToken(logits: Logits, params: TokenSamplingParams, rng: Rng): SampledToken {
  if (params.temperature > 0 && !(params.topK > 0 && params.topK < logits.length) && params.topP === 1) {
    checkSamplingParams(params);
    return sampleFull(logits, params.temperature, rng);
  }
  const dist = samplingDistribution(logits, params);
  if (params.temperature === 0) return { tokenId: dist.tokenIds[0]!, logprob: 0 };
  return drawFrom(dist, rng.float());
}

/**
 * Inverse-CDF draw from a distribution with one uniform u ∈ [0, 1): the first kept token whose
 * cumulative probability passes u, with log q as logprob.
 */
export function drawFrom(dist: SamplingDistribution, u: number): SampledToken {
  let chosen = dist.probs.length - 1;
  for (let r = 0; r < dist.probs.length; r++) {
    u -= dist.probs[r]!;
    if (u < 0) {
      chosen = r;
      break;
    }
  }
  // Rounding leftovers (u ≥ Σq by ~1e-16) fall to the last kept token with non-zero probability.
  while (chosen > 0 && dist.probs[chosen] === 0) chosen -= 1;
  return { tokenId: dist.tokenIds[chosen]!, logprob: Math.log(dist.probs[chosen]!) };
}

/**
 * `sampleToken` from the full distribution (no top-k, no top-p), without materialising it: the
 * same float64 operations in the same order — z_i / T, its max, log Z = max + log Σ exp(z_i/T − max),
 * then q_i = exp(z_i/T − log Z) subtracted from u in id order — so the same token and logprob, but
 * the draw stops at the chosen id (half the exps on average) and nothing is allocated: this runs
 * once per generated token of every rollout and served turn.
 */
function sampleFull(logits: Logits, temperature: number, rng: Rng): SampledToken {
  const n = logits.length;
  if (n === 0) throw new Error("logSoftmax: empty logits");
  let max = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < n; i++) {
    const z = logits[i]!;
    if (Number.isNaN(z)) throw new Error(`sampling: logit ${i} is NaN`);
    if (z / temperature > max) max = z / temperature;
  }
  if (!Number.isFinite(max)) throw new Error(`logSoftmax: the largest logit is ${max}`);
  let sum = 0;
  for (let i = 0; i < n; i++) sum += Math.exp(logits[i]! / temperature - max);
  const logZ = max + Math.log(sum);
  let u = rng.float();
  let chosen = -1;
  let q = 0;
  for (let i = 0; i < n; i++) {
    q = Math.exp(logits[i]! / temperature - logZ);
    u -= q;
    if (u < 0) {
      chosen = i;
      break;
    }
  }
  if (chosen < 0) {
    // Rounding leftovers (u ≥ Σq by ~1e-16) fall to the last id with non-zero probability.
    chosen = n - 1;
    q = Math.exp(logits[chosen]! / temperature - logZ);
    while (chosen > 0 && q === 0) q = Math.exp(logits[--chosen]! / temperature - logZ);
  }
  return { tokenId: chosen, logprob: Math.log(q) };
}

/** Entropy −Σ p log p of softmax(logits) in nats (the raw model distribution, before warping). */
export function entropy(logits: Logits): number {
  const logp = logSoftmax(logits);
  let h = 0;
  for (let i = 0; i < logp.length; i++) {
    const p = Math.exp(logp[i]!);
    if (p > 0) h -= p * logp[i]!;
  }
  return h;
}
