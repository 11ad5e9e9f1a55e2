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

function decodePayload(d: PayloadDescriptor, body: Uint8Array): PayloadValue {
  const end = d.offset + d.length;
  if (end > body.length) {
    throw new ProtocolError(`payload "${d.name}" runs past the body (${end} > ${body.length} bytes)`);
  }
  const copy = body.slice(d.offset, end); // aligned, owned buffer
  if (d.dtype === "int32") return new Int32Array(copy.buffer);
  if (d.dtype === "float32") return new Float32Array(copy.buffer);
  return copy;
}

/**
 * Incremental frame reader: feed it chunks from a pipe or socket; it returns every complete frame.
 * A bad magic or header throws a ProtocolError (the stream cannot be resynchronised after that).
 */
export class FrameReader {
  private buffer = new Uint8Array(0);

  push(chunk: Uint8Array): Frame[] {
    const merged = new Uint8Array(this.buffer.length + chunk.length);
    merged.set(this.buffer, 0);
    merged.set(chunk, this.buffer.length);
    this.buffer = merged;
    const frames: Frame[] = [];
    for (;;) {
      if (this.buffer.length < PREFIX_BYTES) break;
      const view = new DataView(this.buffer.buffer, this.buffer.byteOffset, this.buffer.byteLength);
      const magic = new TextDecoder().decode(this.buffer.subarray(0, 4));
      if (magic !== MAGIC) {
        const text = new TextDecoder().decode(this.buffer.subarray(0, Math.min(80, this.buffer.length)));
        throw new ProtocolError(
          `bad frame magic ${JSON.stringify(magic)}, expected "${MAGIC}" — something else wrote to the worker's stdout: ${JSON.stringify(text)}`,
        );
      }
      const headerLength = view.getUint32(4, true);
      if (headerLength > MAX_HEADER_BYTES)
        throw new ProtocolError(`header of ${headerLength} bytes exceeds ${MAX_HEADER_BYTES}`);
      const bodyLength = Number(view.getBigUint64(8, true));
      const total = PREFIX_BYTES + headerLength + bodyLength;
      if (this.buffer.length < total) break;
      const headerBytes = this.buffer.subarray(PREFIX_BYTES, PREFIX_BYTES + headerLength);
      let json: unknown;
      try {
        json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(headerBytes));
      } catch (e) {
        throw new ProtocolError(`header is not UTF-8 JSON: ${(e as Error).message}`);
      }
      const header = parseHeader(json);
      const body = this.buffer.subarray(PREFIX_BYTES + headerLength, total);
      const payloads = new Map<string, PayloadValue>();
      for (const d of header.payloads) payloads.set(d.name, decodePayload(d, body));
      frames.push({
        kind: header.kind,
        id: header.id,
        op: header.op,
        body: (header.kind === "request" ? header.args : header.result) ?? {},
        payloads,
        error: header.error,
      });
      this.buffer = this.buffer.slice(total);
    }
    return frames;
  }

  /** Bytes received that do not yet form a whole frame. */
  get pending(): number {
    return this.buffer.length;
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

export const FilesResultSchema = z.object({ files: z.array(z.string()) });

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
