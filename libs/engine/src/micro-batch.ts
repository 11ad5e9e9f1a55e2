/**
 * Micro-batches under a budget (verl's dynamic batch size, `ppo_max_token_len_per_gpu`): a batch
 * of sequences is cut into consecutive micro-batches, each padded only to its own longest
 * sequence, such that every micro-batch
 *   - holds at most `maxSequences` sequences, and
 *   - holds at most `maxTokens` padded tokens (count × longest), and
 *   - passes `fits(count, longest)` (an engine's memory estimate of one run of that shape).
 * The learner accumulates gradients over the micro-batches with each token's weight taken over the
 * whole batch, so the update equals the unsplit one (to float rounding).
 *
 * The order is kept, not sorted by length: the same batch always splits the same way, a batch
 * that fits within the count alone splits exactly as a count-only split does (so runs that never
 * meet the budget give bit-identical results), and callers read results back in batch order.
 */

export interface MicroBatchLimits {
  /** Most sequences per micro-batch. */
  readonly maxSequences: number;
  /** Most padded tokens (sequences × the longest one) per micro-batch; default unbounded. */
  readonly maxTokens?: number | undefined;
  /** Whether a micro-batch of `count` sequences padded to `longest` tokens fits (e.g. in memory). */
  readonly fits?: ((count: number, longest: number) => boolean) | undefined;
}

/** A micro-batch: the batch's sequences [start, end). */
export interface MicroBatch {
  readonly start: number;
  readonly end: number;
  /** The longest sequence in it: what every row is padded to. */
  readonly longest: number;
}

/** A sequence that cannot fit a micro-batch even alone. */
export class MicroBatchTooLargeError extends Error {
  constructor(
    readonly index: number,
    readonly length: number,
    message: string,
  ) {
    super(message);
    this.name = "MicroBatchTooLargeError";
  }
}

export function planMicroBatches(lengths: readonly number[], limits: MicroBatchLimits): MicroBatch[] {
  const { maxSequences, maxTokens = Number.POSITIVE_INFINITY, fits } = limits;
  if (!Number.isInteger(maxSequences) || maxSequences < 1)
    throw new Error(`micro-batches: maxSequences must be an integer ≥ 1, got ${maxSequences}`);
  if (!(maxTokens >= 1)) throw new Error(`micro-batches: maxTokens must be ≥ 1, got ${maxTokens}`);
  const ok = (count: number, longest: number) =>
    count <= maxSequences && count * longest <= maxTokens && (fits === undefined || fits(count, longest));
  const out: MicroBatch[] = [];
  let start = 0;
  while (start < lengths.length) {
    let longest = lengths[start]!;
    if (!ok(1, longest)) {
      throw new MicroBatchTooLargeError(start, longest, count1Message(start, longest, maxTokens));
    }
    let end = start + 1;
    while (end < lengths.length) {
      const next = Math.max(longest, lengths[end]!);
      if (!ok(end - start + 1, next)) break;
      longest = next;
      end++;
    }
    out.push({ start, end, longest });
    start = end;
  }
  return out;
}

function count1Message(index: number, length: number, maxTokens: number): string {
  return length > maxTokens
    ? `sequence ${index} has ${length} tokens, more than the ${maxTokens} a micro-batch may hold`
    : `sequence ${index} (${length} tokens) does not fit a micro-batch on its own`;
}
