/**
 * TensorBoard event files (`--set logging.tensorboard=true`): every committed step's numeric
 * metrics as scalars, so `tensorboard --logdir .troupe/runs/<id>/tensorboard` (or the whole
 * `.troupe/runs`) shows the run next to its metrics.jsonl.
 *
 * The format, written here without TensorFlow:
 *   - the file is a TFRecord stream: per record `uint64 length` (little-endian), `uint32
 *     masked_crc32c(length bytes)`, the data, `uint32 masked_crc32c(data)`, where
 *     masked(c) = ((c >>> 15) | (c << 17)) + 0xa282ead8 (mod 2³²) and crc32c is CRC-32C (Castagnoli);
 *   - each record is a serialized `tensorboard.Event` protobuf: `wall_time` (1, double), `step`
 *     (2, int64), then either `file_version` (3, string; the first record: "brain.Event:2") or
 *     `summary` (5) holding `Summary.Value`s (1) with `tag` (1, string) and `simple_value` (2, float);
 *   - the file name contains "tfevents": events.out.tfevents.<unix seconds>.<host>.
 * TensorBoard reads every events file in a folder, so a resumed run adds a file of its own.
 */

const CRC32C_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC-32C (Castagnoli), as TFRecord uses it. */
export function crc32c(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const b of bytes) crc = CRC32C_TABLE[(crc ^ b) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** TFRecord's masked CRC. */
export function maskedCrc32c(bytes: Uint8Array): number {
  const c = crc32c(bytes);
  return (((c >>> 15) | (c << 17)) + 0xa282ead8) >>> 0;
}

/** A TFRecord: length, its masked CRC, the data, its masked CRC. */
export function tfRecord(data: Uint8Array): Uint8Array {
  const out = new Uint8Array(8 + 4 + data.length + 4);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, BigInt(data.length), true);
  view.setUint32(8, maskedCrc32c(out.subarray(0, 8)), true);
  out.set(data, 12);
  view.setUint32(12 + data.length, maskedCrc32c(data), true);
  return out;
}

/** The byte arrays one after the other. */
function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** A minimal protobuf encoder: the wire types the Event message needs. */
class Proto {
  private readonly parts: Uint8Array[] = [];

  private varint(value: bigint): void {
    const bytes: number[] = [];
    let v = BigInt.asUintN(64, value);
    do {
      let byte = Number(v & 0x7fn);
      v >>= 7n;
      if (v > 0n) byte |= 0x80;
      bytes.push(byte);
    } while (v > 0n);
    this.parts.push(Uint8Array.from(bytes));
  }

  private key(field: number, wireType: number): void {
    this.varint(BigInt((field << 3) | wireType));
  }

  /** A fixed-width field (wire type 1: 64-bit, 5: 32-bit), its `size` bytes written by `set`. */
  private fixed(field: number, wireType: 1 | 5, size: 8 | 4, set: (view: DataView) => void): this {
    this.key(field, wireType);
    const b = new Uint8Array(size);
    set(new DataView(b.buffer));
    this.parts.push(b);
    return this;
  }

  double(field: number, value: number): this {
    return this.fixed(field, 1, 8, (view) => view.setFloat64(0, value, true));
  }

  float(field: number, value: number): this {
    return this.fixed(field, 5, 4, (view) => view.setFloat32(0, value, true));
  }

  int64(field: number, value: number): this {
    this.key(field, 0);
    this.varint(BigInt(Math.trunc(value)));
    return this;
  }

  bytes(field: number, value: Uint8Array): this {
    this.key(field, 2);
    this.varint(BigInt(value.length));
    this.parts.push(value);
    return this;
  }

  string(field: number, value: string): this {
    return this.bytes(field, new TextEncoder().encode(value));
  }

  finish(): Uint8Array {
    return concatBytes(this.parts);
  }
}

export const EVENT_FILE_VERSION = "brain.Event:2";

/** The serialized Event with the file version (the first record of every events file). */
export function fileVersionEvent(wallTime: number): Uint8Array {
  return new Proto().double(1, wallTime).int64(2, 0).string(3, EVENT_FILE_VERSION).finish();
}

/** The serialized Event with one scalar summary value per entry (non-finite values are left out). */
export function scalarsEvent(
  wallTime: number,
  step: number,
  scalars: Readonly<Record<string, number>>,
): Uint8Array {
  const summary = new Proto();
  for (const [tag, value] of Object.entries(scalars)) {
    if (!Number.isFinite(value)) continue;
    summary.bytes(1, new Proto().string(1, tag).float(2, value).finish());
  }
  return new Proto().double(1, wallTime).int64(2, step).bytes(5, summary.finish()).finish();
}

/** The name TensorBoard looks for: events.out.tfevents.<unix seconds>.<host>. */
export function eventFileName(wallTime: number, host = "troupe"): string {
  return `events.out.tfevents.${Math.floor(wallTime)}.${host.replace(/[^A-Za-z0-9._-]/g, "-")}`;
}

/**
 * An events file built in memory: `add` appends a step's scalars, `bytes` is the whole file so far
 * (the trainer rewrites the object after each committed step; object stores have no append).
 */
export class EventFileWriter {
  private readonly records: Uint8Array[] = [];
  readonly name: string;

  constructor(wallTime = Date.now() / 1000, host?: string) {
    this.name = eventFileName(wallTime, host);
    this.records.push(tfRecord(fileVersionEvent(wallTime)));
  }

  add(step: number, scalars: Readonly<Record<string, unknown>>, wallTime = Date.now() / 1000): void {
    const numeric: Record<string, number> = {};
    for (const [tag, value] of Object.entries(scalars)) {
      if (typeof value === "number" && Number.isFinite(value)) numeric[tag] = value;
      else if (typeof value === "boolean") numeric[tag] = value ? 1 : 0;
    }
    this.records.push(tfRecord(scalarsEvent(wallTime, step, numeric)));
  }

  bytes(): Uint8Array {
    return concatBytes(this.records);
  }
}
