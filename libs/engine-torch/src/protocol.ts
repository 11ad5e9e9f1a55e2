/**
 * The controller ↔ worker message protocol (the Python side is
 * apps/engine-torch/troupe_worker/protocol.py; the two change together, and PROTOCOL_VERSION with
 * them). A frame, integers little-endian:
 *
 *   offset 0   4 bytes  magic "TRPW"
 *          4   u32      H = header length
 *          8   u64      N = body length
 *         16   H bytes  header: UTF-8 JSON, checked by FrameHeaderSchema
 *       16+H   N bytes  body: the payloads back to back
 *
 * Large arrays travel as payloads — little-endian int32 / float32 buffers or raw bytes, described in
 * the header by name, dtype, shape, offset and length — never as JSON number arrays.
 */
import { z } from "zod";

export const PROTOCOL_VERSION = 1;
export const MAGIC = "TRPW";
const PREFIX_BYTES = 16;
export const MAX_HEADER_BYTES = 16 * 1024 * 1024;

export const PayloadDTypeSchema = z.enum(["int32", "float32", "bytes"]);
export type PayloadDType = z.infer<typeof PayloadDTypeSchema>;
const ELEMENT_BYTES: Record<PayloadDType, number> = { int32: 4, float32: 4, bytes: 1 };

const nonNegativeInt = z.number().int().min(0);

export const PayloadDescriptorSchema = z
  .object({
    name: z.string().min(1),
    dtype: PayloadDTypeSchema,
    shape: z.array(nonNegativeInt),
    offset: nonNegativeInt,
    length: nonNegativeInt,
  })
  .refine((p) => p.shape.reduce((a, b) => a * b, 1) * ELEMENT_BYTES[p.dtype] === p.length, {
    message: "length does not match dtype × shape",
    path: ["length"],
  });
export type PayloadDescriptor = z.infer<typeof PayloadDescriptorSchema>;

export const WorkerErrorSchema = z.object({ type: z.string(), message: z.string(), traceback: z.string() });

export const FrameHeaderSchema = z.object({
  v: z.literal(PROTOCOL_VERSION, {
    error: (issue) =>
      `protocol version mismatch: the frame says v=${JSON.stringify(issue.input)}, this controller speaks v=${PROTOCOL_VERSION} (update apps/engine-torch and @troupe/engine-torch together)`,
  }),
  id: nonNegativeInt,
  kind: z.enum(["request", "response", "error"]),
  op: z.string().min(1),
  args: z.record(z.string(), z.unknown()).optional(),
  result: z.record(z.string(), z.unknown()).optional(),
  error: WorkerErrorSchema.optional(),
  payloads: z.array(PayloadDescriptorSchema).default([]),
});
export type FrameHeader = z.infer<typeof FrameHeaderSchema>;

export type PayloadValue = Int32Array | Float32Array | Uint8Array;

export interface Frame {
  readonly kind: "request" | "response" | "error";
  readonly id: number;
  readonly op: string;
  /** args of a request, result of a response. */
  readonly body: Record<string, unknown>;
  readonly payloads: ReadonlyMap<string, PayloadValue>;
  readonly error?: z.infer<typeof WorkerErrorSchema> | undefined;
}

export class ProtocolError extends Error {
  constructor(message: string) {
    super(`engine-torch protocol: ${message}`);
    this.name = "ProtocolError";
  }
}

const utf8 = new TextEncoder();

function dtypeOf(value: PayloadValue): PayloadDType {
  if (value instanceof Int32Array) return "int32";
  if (value instanceof Float32Array) return "float32";
  return "bytes";
}

/** A frame as bytes. Payload arrays are written little-endian (the host order of every platform Node runs on). */
export function encodeFrame(frame: Frame): Uint8Array {
  const descriptors: PayloadDescriptor[] = [];
  const chunks: Uint8Array[] = [];
  let offset = 0;
  for (const [name, value] of frame.payloads) {
    const bytes = new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
    descriptors.push({ name, dtype: dtypeOf(value), shape: [value.length], offset, length: bytes.length });
    chunks.push(bytes);
    offset += bytes.length;
  }
  const header: Record<string, unknown> = {
    v: PROTOCOL_VERSION,
    id: frame.id,
    kind: frame.kind,
    op: frame.op,
    payloads: descriptors,
  };
  if (frame.kind === "request") header.args = frame.body;
  else if (frame.kind === "response") header.result = frame.body;
  else header.error = frame.error;
  const head = utf8.encode(JSON.stringify(header));
  const out = new Uint8Array(PREFIX_BYTES + head.length + offset);
  const view = new DataView(out.buffer);
  out.set(utf8.encode(MAGIC), 0);
  view.setUint32(4, head.length, true);
  view.setBigUint64(8, BigInt(offset), true);
  out.set(head, PREFIX_BYTES);
  let at = PREFIX_BYTES + head.length;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}

/** Parses and validates a header object; the error names the first wrong field. */
export function parseHeader(json: unknown): FrameHeader {
  const parsed = FrameHeaderSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ProtocolError(`header.${issue.path.join(".") || "(root)"}: ${issue.message}`);
  }
  const h = parsed.data;
  if (h.kind === "error" && h.error === undefined)
    throw new ProtocolError("header.error: missing on an error frame");
  return h;
}

/**
 * Incremental frame reader: feed it chunks from a pipe or socket; it returns every complete frame.
 * A bad magic or header throws a ProtocolError (the stream cannot be resynchronised after that).
 *
 * Linear in the bytes received: chunks are queued as they arrive (no re-copy of what is already
 * held), and a complete frame's payloads are each copied once, straight from the queued chunks into
 * their own buffer. There is no whole-frame buffer, so a frame may be larger than the 4 GiB a single
 * Node buffer can hold; each payload must fit in one.
 */
const EMPTY = new Uint8Array(0);

export class FrameReader {
  private chunks: Uint8Array[] = [];
  /** Index of the first unconsumed chunk (consumed ones are dropped in batches: shift() is O(n)). */
  private first = 0;
  /** Bytes of chunks[first] already consumed. */
  private head = 0;
  private queued = 0;
  private copied = 0;

  push(chunk: Uint8Array): Frame[] {
    if (chunk.length > 0) {
      this.chunks.push(chunk);
      this.queued += chunk.length;
    }
    const frames: Frame[] = [];
    for (;;) {
      if (this.queued < PREFIX_BYTES) break;
      const prefix = this.peek(PREFIX_BYTES);
      const magic = new TextDecoder().decode(prefix.subarray(0, 4));
      if (magic !== MAGIC) {
        const text = new TextDecoder().decode(this.peek(Math.min(80, this.queued)));
        throw new ProtocolError(
          `bad frame magic ${JSON.stringify(magic)}, expected "${MAGIC}" — something else wrote to the worker's stdout: ${JSON.stringify(text)}`,
        );
      }
      const view = new DataView(prefix.buffer, prefix.byteOffset, prefix.byteLength);
      const headerLength = view.getUint32(4, true);
      if (headerLength > MAX_HEADER_BYTES)
        throw new ProtocolError(`header of ${headerLength} bytes exceeds ${MAX_HEADER_BYTES}`);
      const bodyLength = Number(view.getBigUint64(8, true));
      if (this.queued < PREFIX_BYTES + headerLength + bodyLength) break;
      this.skip(PREFIX_BYTES);
      const headerBytes = this.take(headerLength);
      let json: unknown;
      try {
        json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(headerBytes));
      } catch (e) {
        throw new ProtocolError(`header is not UTF-8 JSON: ${(e as Error).message}`);
      }
      const header = parseHeader(json);
      frames.push({
        kind: header.kind,
        id: header.id,
        op: header.op,
        body: (header.kind === "request" ? header.args : header.result) ?? {},
        payloads: this.takeBody(header.payloads, bodyLength),
        error: header.error,
      });
    }
    return frames;
  }

  /**
   * Bytes copied out of the received chunks so far. Reading is linear: each received byte is copied
   * once, plus at most one peek of the 16-byte frame prefix per push (the large-frame test checks
   * this bound instead of timing the reader).
   */
  get copiedBytes(): number {
    return this.copied;
  }

  /** Bytes received that do not yet form a whole frame. */
  get pending(): number {
    return this.queued;
  }

  /** The body's payloads, each copied once into its own (aligned) buffer, in offset order. */
  private takeBody(descriptors: readonly PayloadDescriptor[], bodyLength: number): Map<string, PayloadValue> {
    for (const d of descriptors) {
      if (d.offset + d.length > bodyLength) {
        throw new ProtocolError(
          `payload "${d.name}" runs past the body (${d.offset + d.length} > ${bodyLength} bytes)`,
        );
      }
    }
    const byOffset = [...descriptors].sort((a, b) => a.offset - b.offset);
    const values = new Map<string, PayloadValue>();
    let at = 0;
    for (const d of byOffset) {
      if (d.offset < at) throw new ProtocolError(`payload "${d.name}" overlaps the payload before it`);
      this.skip(d.offset - at);
      const bytes = this.take(d.length);
      at = d.offset + d.length;
      values.set(
        d.name,
        d.dtype === "int32"
          ? new Int32Array(bytes.buffer, 0, d.length / 4)
          : d.dtype === "float32"
            ? new Float32Array(bytes.buffer, 0, d.length / 4)
            : bytes,
      );
    }
    this.skip(bodyLength - at);
    // Descriptor order, as the sender listed them.
    return new Map(descriptors.map((d) => [d.name, values.get(d.name)!]));
  }

  /** A copy of the next n queued bytes, left queued. */
  private peek(n: number): Uint8Array {
    const out = new Uint8Array(n);
    let got = 0;
    let offset = this.head;
    for (let i = this.first; i < this.chunks.length && got < n; i++) {
      const c = this.chunks[i]!;
      const part = c.subarray(offset, offset + (n - got));
      out.set(part, got);
      this.copied += part.length;
      got += part.length;
      offset = 0;
    }
    return out;
  }

  /** The next n bytes in a new buffer of their own, removed from the queue. */
  private take(n: number): Uint8Array {
    const out = new Uint8Array(n);
    let got = 0;
    while (got < n) {
      const c = this.chunks[this.first]!;
      const part = c.subarray(this.head, this.head + (n - got));
      out.set(part, got);
      this.copied += part.length;
      got += part.length;
      this.advance(part.length);
    }
    return out;
  }

  private skip(n: number): void {
    let left = n;
    while (left > 0) {
      const step = Math.min(left, this.chunks[this.first]!.length - this.head);
      this.advance(step);
      left -= step;
    }
  }

  private advance(n: number): void {
    this.head += n;
    this.queued -= n;
    if (this.head === this.chunks[this.first]!.length) {
      this.chunks[this.first] = EMPTY; // let the consumed chunk be collected
      this.first++;
      this.head = 0;
      if (this.first > 1024 && this.first * 2 > this.chunks.length) {
        this.chunks = this.chunks.slice(this.first);
        this.first = 0;
      }
    }
  }
}

// ---- result schemas of the ops (what the worker answers) ----------------------------------------

/** JSON has no NaN/Infinity: the worker sends non-finite metrics as strings. */
const metric = z.union([
  z.number(),
  z.enum(["NaN", "Infinity", "-Infinity"]).transform((s) => Number(s === "NaN" ? Number.NaN : s)),
]);

export const HelloResultSchema = z.looseObject({
  protocol: z.literal(PROTOCOL_VERSION),
  worker: z.string(),
  torch: z.string(),
  device: z.string(),
  worldSize: z.number().int().positive(),
  backends: z.record(z.string(), z.boolean()),
});
export type WorkerInfo = z.infer<typeof HelloResultSchema>;

export const PolicyInfoSchema = z.object({
  id: z.string(),
  parameters: nonNegativeInt,
  vocabSize: z.number().int().positive(),
  optimizerStep: nonNegativeInt,
});

export const LoadModelResultSchema = z.object({
  name: z.string(),
  backend: z.enum(["transformers", "troupe"]),
  config: z.record(z.string(), z.unknown()),
  parameters: nonNegativeInt,
  eosTokenIds: z.array(nonNegativeInt).optional(),
});

export const GenerateResultSchema = z.object({ finishReasons: z.array(z.enum(["stop", "length"])) });

export const TrainMetricsSchema = z.object({
  loss: metric,
  pgLoss: metric,
  kl: metric,
  entropy: metric,
  clipFraction: metric,
  approxKl: metric,
  gradNorm: metric,
  lr: z.number(),
  tokens: nonNegativeInt,
  optimizerStep: nonNegativeInt,
});

export const FilesResultSchema = z.object({ files: z.array(z.string()), dir: z.string().optional() });

/** Parses a result with its schema; the error names the op and the field. */
export function parseResult<S extends z.ZodType>(op: string, schema: S, value: unknown): z.infer<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ProtocolError(`${op} result: ${issue.path.join(".") || "(root)"}: ${issue.message}`);
  }
  return parsed.data;
}

/** The named payload of a frame, checked for its dtype. */
export function payload<T extends PayloadValue>(
  frame: Frame,
  name: string,
  type: new (...args: never[]) => T,
): T {
  const value = frame.payloads.get(name);
  if (value === undefined) throw new ProtocolError(`${frame.op} reply: payload "${name}" is missing`);
  if (!(value instanceof type))
    throw new ProtocolError(`${frame.op} reply: payload "${name}" has the wrong dtype`);
  return value as T;
}
