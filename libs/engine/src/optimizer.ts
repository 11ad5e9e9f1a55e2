/**
 * AdamW over named float32 parameters, exactly as `torch.optim.AdamW` (decoupled weight decay,
 * Loshchilov & Hutter 2019), plus the learning-rate schedule and global gradient-norm clipping.
 *
 * One step t (1-based) for a parameter p with gradient g, learning rate η, decay λ:
 *   p ← p − η·λ·p                              (decoupled decay; only for decayed tensors)
 *   m ← β₁·m + (1 − β₁)·g
 *   v ← β₂·v + (1 − β₂)·g²
 *   m̂ = m / (1 − β₁ᵗ),   v̂ = v / (1 − β₂ᵗ)
 *   p ← p − η · m̂ / (√v̂ + ε)
 *
 * Decay rule (nanoGPT's, and the usual HF Trainer one): a tensor is decayed iff it has ≥ 2
 * dimensions — embeddings and linear weights are; RMSNorm weights and biases (1-D) are not.
 * Moments are kept in float32, the arithmetic of one element in float64.
 */

import { readSafetensors, writeSafetensors } from "./safetensors.ts";
import { shapeText, type Weights } from "./tensor.ts";
import { defaultOptimizerConfig, type OptimizerConfig } from "./types.ts";

export type Gradients = ReadonlyMap<string, Float32Array>;

/** The default decay rule: decay matrices, not vectors (norm weights, biases). */
export function decayedByDefault(_name: string, shape: readonly number[]): boolean {
  return shape.length >= 2;
}

/**
 * Learning rate of the optimizer step with 0-based index `step` (the first update is step 0):
 *   warm-up   (step < W):   η · (step + 1) / W
 *   after, with progress π = min(1, (step − W) / max(1, S − W)) and floor r = minLrRatio:
 *     constant            η
 *     linear              η · (r + (1 − r) · (1 − π))
 *     cosine              η · (r + (1 − r) · ½ (1 + cos(π·progress)))
 * (Unlike HF's schedulers, the first warm-up step is not wasted at lr 0.)
 */
export function learningRate(step: number, config: OptimizerConfig = defaultOptimizerConfig): number {
  if (!Number.isInteger(step) || step < 0)
    throw new Error(`learningRate: step must be an integer ≥ 0, got ${step}`);
  const peak = config.lr;
  const W = config.warmupSteps;
  if (step < W) return (peak * (step + 1)) / W;
  if (config.schedule === "constant") return peak;
  const progress = Math.min(1, (step - W) / Math.max(1, config.totalSteps - W));
  const r = config.minLrRatio;
  const shape = config.schedule === "linear" ? 1 - progress : 0.5 * (1 + Math.cos(Math.PI * progress));
  return peak * (r + (1 - r) * shape);
}

/**
 * Scales gradients in place so their global L2 norm is at most maxNorm, as
 * `torch.nn.utils.clip_grad_norm_`: coef = maxNorm / (‖g‖ + 1e-6), applied when coef < 1.
 * Returns the norm before clipping. maxNorm ≤ 0 only measures.
 */
export function clipGradNorm(grads: Gradients | Iterable<Float32Array>, maxNorm: number): number {
  const arrays = grads instanceof Map ? [...grads.values()] : [...(grads as Iterable<Float32Array>)];
  let sumSquares = 0;
  for (const g of arrays) for (let i = 0; i < g.length; i++) sumSquares += g[i]! * g[i]!;
  const norm = Math.sqrt(sumSquares);
  if (!Number.isFinite(norm)) return norm; // caller decides; scaling by NaN would poison everything
  if (maxNorm > 0) {
    const coef = maxNorm / (norm + 1e-6);
    if (coef < 1) for (const g of arrays) for (let i = 0; i < g.length; i++) g[i] = g[i]! * coef;
  }
  return norm;
}

export interface AdamWState {
  /** Updates taken so far. */
  readonly step: number;
  readonly expAvg: ReadonlyMap<string, Float32Array>;
  readonly expAvgSq: ReadonlyMap<string, Float32Array>;
}

export interface AdamWStepResult {
  readonly lr: number;
  /** Global gradient norm before clipping. */
  readonly gradNorm: number;
  /** Updates taken so far, this one included. */
  readonly step: number;
}

export class AdamW {
  private stepCount = 0;
  private readonly expAvg = new Map<string, Float32Array>();
  private readonly expAvgSq = new Map<string, Float32Array>();
  private readonly decayed = new Set<string>();

  /**
   * @param params updated in place by `step` (as torch parameters are)
   * @param decay which tensors get weight decay; default: those with ≥ 2 dimensions
   */
  constructor(
    readonly params: Weights,
    readonly config: OptimizerConfig = defaultOptimizerConfig,
    decay: (name: string, shape: readonly number[]) => boolean = decayedByDefault,
  ) {
    for (const [name, t] of params) {
      this.expAvg.set(name, new Float32Array(t.data.length));
      this.expAvgSq.set(name, new Float32Array(t.data.length));
      if (decay(name, t.shape)) this.decayed.add(name);
    }
  }

  /** Updates taken so far. */
  get steps(): number {
    return this.stepCount;
  }

  isDecayed(name: string): boolean {
    return this.decayed.has(name);
  }

  /**
   * One update: lr from the schedule, clip the gradients (in place) to maxGradNorm, then AdamW.
   * Every parameter needs a gradient of its size. A non-finite gradient norm skips the update
   * (nothing changes, the step count included) and is reported in `gradNorm`.
   */
  step(grads: Gradients, lr = learningRate(this.stepCount, this.config)): AdamWStepResult {
    for (const [name, t] of this.params) {
      const g = grads.get(name);
      if (g === undefined) throw new Error(`AdamW: no gradient for "${name}"`);
      if (g.length !== t.data.length) {
        throw new Error(
          `AdamW: gradient of "${name}" has ${g.length} values, the parameter ${t.data.length}`,
        );
      }
    }
    for (const name of grads.keys()) {
      if (!this.params.has(name)) throw new Error(`AdamW: gradient for unknown parameter "${name}"`);
    }
    // Clipping is folded into the update loop (one pass over the gradients instead of two): the
    // clipped gradient is rounded to float32 and written back, exactly as clipGradNorm would.
    const gradNorm = clipGradNorm(grads, 0);
    if (!Number.isFinite(gradNorm)) return { lr, gradNorm, step: this.stepCount };
    const maxNorm = this.config.maxGradNorm;
    const clipCoef = maxNorm > 0 ? maxNorm / (gradNorm + 1e-6) : 1;
    const clip = clipCoef < 1;

    const t = ++this.stepCount;
    const { beta1, beta2, eps, weightDecay } = this.config;
    const keep1 = 1 - beta1;
    const keep2 = 1 - beta2;
    const bias1 = 1 - beta1 ** t;
    const bias2Sqrt = Math.sqrt(1 - beta2 ** t);
    const stepSize = lr / bias1;
    for (const [name, param] of this.params) {
      const p = param.data;
      const g = grads.get(name)!;
      const m = this.expAvg.get(name)!;
      const v = this.expAvgSq.get(name)!;
      const decayFactor = this.decayed.has(name) ? 1 - lr * weightDecay : 1;
      for (let i = 0; i < p.length; i++) {
        let gi = g[i]!;
        if (clip) {
          gi = Math.fround(gi * clipCoef);
          g[i] = gi;
        }
        const mi = beta1 * m[i]! + keep1 * gi;
        const vi = beta2 * v[i]! + keep2 * gi * gi;
        m[i] = mi;
        v[i] = vi;
        // torch: p·(1 − ηλ) − (η / bias1) · m / (√v / √bias2 + ε)
        p[i] = p[i]! * decayFactor - (stepSize * mi) / (Math.sqrt(vi) / bias2Sqrt + eps);
      }
    }
    return { lr, gradNorm, step: t };
  }

  state(): AdamWState {
    return { step: this.stepCount, expAvg: this.expAvg, expAvgSq: this.expAvgSq };
  }

  /** Replaces the moments and step count (copies), checking names and sizes against the parameters. */
  loadState(state: AdamWState): void {
    if (!Number.isInteger(state.step) || state.step < 0)
      throw new Error(`AdamW state: bad step ${state.step}`);
    for (const [which, moments] of [
      ["exp_avg", state.expAvg],
      ["exp_avg_sq", state.expAvgSq],
    ] as const) {
      for (const name of moments.keys()) {
        if (!this.params.has(name)) throw new Error(`AdamW state: ${name}.${which} has no parameter`);
      }
      for (const [name, t] of this.params) {
        const src = moments.get(name);
        if (src === undefined) throw new Error(`AdamW state: ${name}.${which} is missing`);
        if (src.length !== t.data.length) {
          throw new Error(
            `AdamW state: ${name}.${which} has ${src.length} values, the parameter ${shapeText(t.shape)}`,
          );
        }
      }
    }
    for (const name of this.params.keys()) {
      this.expAvg.get(name)!.set(state.expAvg.get(name)!);
      this.expAvgSq.get(name)!.set(state.expAvgSq.get(name)!);
    }
    this.stepCount = state.step;
  }
}

/**
 * Optimizer state as safetensors: `<name>.exp_avg` and `<name>.exp_avg_sq` with the parameter's
 * shape, float32; metadata `{format: "troupe-adamw", step: "<n>"}`.
 */
export function encodeOptimizerState(state: AdamWState, params: Weights): Uint8Array {
  const tensors = new Map<string, { shape: readonly number[]; data: Float32Array }>();
  for (const [name, t] of params) {
    const m = state.expAvg.get(name);
    const v = state.expAvgSq.get(name);
    if (m === undefined || v === undefined) throw new Error(`optimizer state: no moments for "${name}"`);
    tensors.set(`${name}.exp_avg`, { shape: t.shape, data: m });
    tensors.set(`${name}.exp_avg_sq`, { shape: t.shape, data: v });
  }
  return writeSafetensors(tensors, { metadata: { format: "troupe-adamw", step: String(state.step) } });
}

/** Reads `encodeOptimizerState` bytes, checking every moment against the parameters' names and shapes. */
export function decodeOptimizerState(
  bytes: Uint8Array,
  params: Weights,
  file = "optimizer.safetensors",
): AdamWState {
  const { tensors, metadata } = readSafetensors(bytes);
  if (metadata.format !== "troupe-adamw") {
    throw new Error(
      `${file}: __metadata__.format must be "troupe-adamw", got ${JSON.stringify(metadata.format)}`,
    );
  }
  const step = Number(metadata.step);
  if (metadata.step === undefined || !Number.isInteger(step) || step < 0) {
    throw new Error(
      `${file}: __metadata__.step must be an integer ≥ 0, got ${JSON.stringify(metadata.step)}`,
    );
  }
  const expAvg = new Map<string, Float32Array>();
  const expAvgSq = new Map<string, Float32Array>();
  const expected = new Set<string>();
  for (const [name, t] of params) {
    for (const [suffix, into] of [
      ["exp_avg", expAvg],
      ["exp_avg_sq", expAvgSq],
    ] as const) {
      const key = `${name}.${suffix}`;
      expected.add(key);
      const entry = tensors.get(key);
      if (entry === undefined) throw new Error(`${file}: ${key}: missing`);
      if (!(entry.data instanceof Float32Array))
        throw new Error(`${file}: ${key}: expected F32, got ${entry.dtype}`);
      if (entry.shape.length !== t.shape.length || entry.shape.some((d, i) => d !== t.shape[i])) {
        throw new Error(`${file}: ${key}: expected ${shapeText(t.shape)}, got ${shapeText(entry.shape)}`);
      }
      into.set(name, entry.data);
    }
  }
  for (const key of tensors.keys()) {
    if (!expected.has(key)) throw new Error(`${file}: ${key}: unexpected tensor (no such parameter)`);
  }
  return { step, expAvg, expAvgSq };
}
