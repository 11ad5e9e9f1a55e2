/**
 * Sequences of different lengths as one padded [B, T] batch: the token ids, which positions hold a
 * real token, and each token's RoPE position (its count of real tokens before it, so a left-padded
 * row starts at position 0 like an unpadded one). The runner turns these into the graphs' inputs
 * (model/host-inputs.ts: RoPE tables, attention bias).
 */
export interface PaddedBatch {
  readonly batch: number;
  readonly time: number;
  /** [B, T] token ids, pad positions hold `padId`. */
  readonly ids: BigInt64Array;
  /** [B, T] 1 for a real token, 0 for padding. */
  readonly valid: Uint8Array;
  /** [B, T] RoPE position of each token (count of real tokens before it). */
  readonly positions: Int32Array;
}

/** Pads sequences to a common length, padding on the right (scoring, training) or left (generation). */
export function padBatch(
  sequences: readonly (readonly number[])[],
  side: "left" | "right",
  padId = 0,
): PaddedBatch {
  const batch = sequences.length;
  const time = Math.max(1, ...sequences.map((s) => s.length));
  const ids = new BigInt64Array(batch * time).fill(BigInt(padId));
  const valid = new Uint8Array(batch * time);
  const positions = new Int32Array(batch * time);
  sequences.forEach((seq, b) => {
    const offset = side === "left" ? time - seq.length : 0;
    seq.forEach((tok, t) => {
      ids[b * time + offset + t] = BigInt(tok);
      valid[b * time + offset + t] = 1;
      positions[b * time + offset + t] = t;
    });
  });
  return { batch, time, ids, valid, positions };
}
