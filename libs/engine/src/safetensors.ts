/**
 * safetensors, read and written over bytes (no filesystem: this runs in Workers too).
 *
 * Format (https://github.com/huggingface/safetensors):
 *   [8 bytes]  N = header length, unsigned 64-bit little-endian
 *   [N bytes]  JSON header, UTF-8: { "<name>": {"dtype": "F32", "shape": [2,3],
 *              "data_offsets": [begin, end]}, ..., "__metadata__": {"k": "v"} }  (padded with spaces)
 *   [...]      raw little-endian tensor data; offsets are relative to the start of this section
 *
 * Written here rather than taken from npm: the registry has no maintained, dependency-free package
 * that reads *and* writes from a Uint8Array with bf16/f16 conversion, and the format is ~100 lines.
 *
 * Reading converts F16/BF16/F32 to Float32Array; F64 stays Float64Array, I32 Int32Array, I64
 * BigInt64Array (use `safetensorsToWeights` for a float32 `Weights` map).
 */
import { numel, shapeText, type Tensor, type Weights } from "./tensor.ts";

export type SafetensorsDType = "F32" | "F16" | "BF16" | "F64" | "I32" | "I64";

const DTYPE_BYTES: Record<SafetensorsDType, number> = { F32: 4, F16: 2, BF16: 2, F64: 8, I32: 4, I64: 8 };

export type SafetensorsData = Float32Array | Float64Array | Int32Array | BigInt64Array;

export interface SafetensorsEntry {
  /** The dtype stored in the file (F16/BF16 data is returned widened to Float32Array). */
  readonly dtype: SafetensorsDType;
  readonly shape: readonly number[];
  readonly data: SafetensorsData;
}

export interface SafetensorsFile {
  readonly tensors: Map<string, SafetensorsEntry>;
  readonly metadata: Record<string, string>;
}

/** Largest header we accept (the reference implementation uses 100 MB too). */
const MAX_HEADER_BYTES = 100_000_000;

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

export class SafetensorsError extends Error {
  constructor(message: string) {
    super(`safetensors: ${message}`);
    this.name = "SafetensorsError";
  }
}

export function readSafetensors(bytes: Uint8Array): SafetensorsFile {
  if (bytes.length < 8)
    throw new SafetensorsError(`file is ${bytes.length} bytes, shorter than the 8-byte header length`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = view.getBigUint64(0, true);
  if (headerLength > BigInt(Math.min(MAX_HEADER_BYTES, bytes.length - 8))) {
    throw new SafetensorsError(
      `header length ${headerLength} exceeds the file (${bytes.length} bytes) or the 100 MB limit`,
    );
  }
  const n = Number(headerLength);
  let header: unknown;
  try {
    header = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes.subarray(8, 8 + n)));
  } catch (e) {
    throw new SafetensorsError(`header is not valid UTF-8 JSON: ${(e as Error).message}`);
  }
  if (header === null || typeof header !== "object" || Array.isArray(header)) {
    throw new SafetensorsError("header is not a JSON object");
  }
  const dataStart = 8 + n;
  const dataLength = bytes.length - dataStart;

  let metadata: Record<string, string> = {};
  const spans: { name: string; begin: number; end: number }[] = [];
  const tensors = new Map<string, SafetensorsEntry>();
  for (const [name, info] of Object.entries(header as Record<string, unknown>)) {
    if (name === "__metadata__") {
      metadata = parseMetadata(info);
      continue;
    }
    const { dtype, shape, begin, end } = parseTensorInfo(name, info);
    const expectedBytes = numel(shape) * DTYPE_BYTES[dtype];
    if (end - begin !== expectedBytes) {
      throw new SafetensorsError(
        `tensor "${name}": ${dtype} ${shapeText(shape)} needs ${expectedBytes} bytes, data_offsets span ${end - begin}`,
      );
    }
    if (end > dataLength) {
      throw new SafetensorsError(
        `tensor "${name}": data_offsets [${begin},${end}] run past the data (${dataLength} bytes)`,
      );
    }
    spans.push({ name, begin, end });
    tensors.set(name, {
      dtype,
      shape,
      data: decodeData(dtype, bytes.subarray(dataStart + begin, dataStart + end)),
    });
  }
  // Offsets must tile the data section exactly: no gaps, no overlaps, nothing left over.
  spans.sort((a, b) => a.begin - b.begin || a.end - b.end);
  let cursor = 0;
  for (const span of spans) {
    if (span.begin !== cursor) {
      throw new SafetensorsError(
        `tensor "${span.name}": data_offsets start at ${span.begin}, expected ${cursor} (offsets must be contiguous)`,
      );
    }
    cursor = span.end;
  }
  if (cursor !== dataLength) {
    throw new SafetensorsError(
      `${dataLength - cursor} bytes after the last tensor are not covered by the header`,
    );
  }
  return { tensors, metadata };
}

function parseMetadata(info: unknown): Record<string, string> {
  if (info === null || typeof info !== "object" || Array.isArray(info)) {
    throw new SafetensorsError("__metadata__ must be an object of strings");
  }
  for (const [k, v] of Object.entries(info)) {
    if (typeof v !== "string")
      throw new SafetensorsError(`__metadata__.${k} must be a string, got ${typeof v}`);
  }
  return { ...(info as Record<string, string>) };
}

function parseTensorInfo(
  name: string,
  info: unknown,
): { dtype: SafetensorsDType; shape: number[]; begin: number; end: number } {
  if (info === null || typeof info !== "object")
    throw new SafetensorsError(`tensor "${name}": entry is not an object`);
  const { dtype, shape, data_offsets: offsets } = info as Record<string, unknown>;
  if (typeof dtype !== "string" || !(dtype in DTYPE_BYTES)) {
    throw new SafetensorsError(
      `tensor "${name}": unsupported dtype ${JSON.stringify(dtype)} (supported: ${Object.keys(DTYPE_BYTES).join(", ")})`,
    );
  }
  if (!Array.isArray(shape) || shape.some((d) => !Number.isSafeInteger(d) || d < 0)) {
    throw new SafetensorsError(
      `tensor "${name}": shape must be a list of non-negative integers, got ${JSON.stringify(shape)}`,
    );
  }
  if (
    !Array.isArray(offsets) ||
    offsets.length !== 2 ||
    offsets.some((o) => !Number.isSafeInteger(o) || o < 0) ||
    offsets[0] > offsets[1]
  ) {
    throw new SafetensorsError(
      `tensor "${name}": data_offsets must be [begin, end] with 0 ≤ begin ≤ end, got ${JSON.stringify(offsets)}`,
    );
  }
  return { dtype: dtype as SafetensorsDType, shape: shape as number[], begin: offsets[0], end: offsets[1] };
}

/** Copies bytes to an aligned buffer and views them as the dtype (byte-swapping on big-endian hosts). */
function decodeData(dtype: SafetensorsDType, raw: Uint8Array): SafetensorsData {
  const width = DTYPE_BYTES[dtype];
  const copy = raw.slice(); // new, 0-aligned ArrayBuffer
  if (!LITTLE_ENDIAN) swapBytes(copy, width);
  switch (dtype) {
    case "F32":
      return new Float32Array(copy.buffer);
    case "F64":
      return new Float64Array(copy.buffer);
    case "I32":
      return new Int32Array(copy.buffer);
    case "I64":
      return new BigInt64Array(copy.buffer);
    case "BF16": {
      // bf16 is the top half of a float32: shift the 16 bits up.
      const halves = new Uint16Array(copy.buffer);
      const bits = new Uint32Array(halves.length);
      for (let i = 0; i < halves.length; i++) bits[i] = halves[i]! << 16;
      return new Float32Array(bits.buffer);
    }
    case "F16": {
      const halves = new Uint16Array(copy.buffer);
      const out = new Float32Array(halves.length);
      for (let i = 0; i < halves.length; i++) out[i] = f16ToF32(halves[i]!);
      return out;
    }
  }
}

function swapBytes(bytes: Uint8Array, width: number): void {
  for (let i = 0; i < bytes.length; i += width) bytes.subarray(i, i + width).reverse();
}

/** IEEE half → float: sign, 5-bit exponent (bias 15), 10-bit mantissa; subnormals, inf and NaN included. */
export function f16ToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const mantissa = h & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24; // subnormal: m · 2^-14 / 1024
  if (exponent === 0x1f) return mantissa === 0 ? sign * Number.POSITIVE_INFINITY : Number.NaN;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

/** float → IEEE half, rounding to nearest even; overflow → ±inf. */
export function f32ToF16(value: number): number {
  const f = Math.fround(value);
  if (Number.isNaN(f)) return 0x7e00;
  const sign = f < 0 || Object.is(f, -0) ? 0x8000 : 0;
  const a = Math.abs(f);
  if (a === Number.POSITIVE_INFINITY) return sign | 0x7c00;
  if (a < 2 ** -24 / 2) return sign; // rounds to zero (the exact half-way case rounds to even: 0)
  if (a < 2 ** -14) {
    // Subnormal: units of 2^-24.
    return sign | roundHalfEven(a / 2 ** -24);
  }
  let exponent = Math.floor(Math.log2(a));
  if (2 ** exponent > a) exponent -= 1; // guard log2 rounding
  if (2 ** (exponent + 1) <= a) exponent += 1;
  let mantissa = roundHalfEven((a / 2 ** exponent - 1) * 1024);
  if (mantissa === 1024) {
    mantissa = 0;
    exponent += 1;
  }
  if (exponent > 15) return sign | 0x7c00;
  return sign | ((exponent + 15) << 10) | mantissa;
}

function roundHalfEven(x: number): number {
  const floor = Math.floor(x);
  const diff = x - floor;
  if (diff > 0.5) return floor + 1;
  if (diff < 0.5) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}

/** float32 bits → bf16 bits, round to nearest even (as torch's `.to(torch.bfloat16)`); NaN stays NaN. */
export function f32BitsToBf16(bits: number): number {
  if ((bits & 0x7f800000) === 0x7f800000 && (bits & 0x007fffff) !== 0)
    return ((bits >>> 16) | 0x0040) & 0xffff;
  const roundingBias = 0x7fff + ((bits >>> 16) & 1);
  return ((bits + roundingBias) >>> 16) & 0xffff;
}

/** A tensor to write: float32 data is written as F32 (or BF16/F16 when asked); other arrays keep their type. */
export interface WritableTensor {
  readonly shape: readonly number[];
  readonly data: SafetensorsData;
}

export interface WriteSafetensorsOptions {
  readonly metadata?: Record<string, string>;
  /** Dtype for Float32Array tensors. Default F32 (exact). */
  readonly floatDtype?: "F32" | "BF16" | "F16";
}

/** Serialises tensors (in the map's order) to safetensors bytes. */
export function writeSafetensors(
  tensors: ReadonlyMap<string, WritableTensor>,
  options: WriteSafetensorsOptions = {},
): Uint8Array {
  const floatDtype = options.floatDtype ?? "F32";
  const header: Record<string, unknown> = {};
  if (options.metadata !== undefined && Object.keys(options.metadata).length > 0) {
    header.__metadata__ = parseMetadata(options.metadata);
  }
  const chunks: Uint8Array[] = [];
  let offset = 0;
  for (const [name, t] of tensors) {
    if (name === "__metadata__")
      throw new SafetensorsError(`"__metadata__" is reserved and cannot name a tensor`);
    if (t.data.length !== numel(t.shape)) {
      throw new SafetensorsError(
        `tensor "${name}": shape ${shapeText(t.shape)} needs ${numel(t.shape)} values, got ${t.data.length}`,
      );
    }
    const { dtype, bytes } = encodeData(t.data, floatDtype);
    header[name] = { dtype, shape: [...t.shape], data_offsets: [offset, offset + bytes.length] };
    chunks.push(bytes);
    offset += bytes.length;
  }
  let json = JSON.stringify(header);
  // Pad the header with spaces so the data section starts 8-byte aligned (as the reference writer does).
  const headerBytesUnpadded = new TextEncoder().encode(json).length;
  json += " ".repeat((8 - ((8 + headerBytesUnpadded) % 8)) % 8);
  const headerBytes = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + headerBytes.length + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(headerBytes.length), true);
  out.set(headerBytes, 8);
  let at = 8 + headerBytes.length;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}

function encodeData(
  data: SafetensorsData,
  floatDtype: "F32" | "BF16" | "F16",
): { dtype: SafetensorsDType; bytes: Uint8Array } {
  let dtype: SafetensorsDType;
  let bytes: Uint8Array;
  if (data instanceof Float32Array) {
    if (floatDtype === "F32") {
      dtype = "F32";
      bytes = new Uint8Array(data.slice().buffer);
    } else {
      const bits = new Uint32Array(data.buffer, data.byteOffset, data.length);
      const halves = new Uint16Array(data.length);
      if (floatDtype === "BF16") for (let i = 0; i < data.length; i++) halves[i] = f32BitsToBf16(bits[i]!);
      else for (let i = 0; i < data.length; i++) halves[i] = f32ToF16(data[i]!);
      dtype = floatDtype;
      bytes = new Uint8Array(halves.buffer);
    }
  } else if (data instanceof Float64Array) {
    dtype = "F64";
    bytes = new Uint8Array(data.slice().buffer);
  } else if (data instanceof Int32Array) {
    dtype = "I32";
    bytes = new Uint8Array(data.slice().buffer);
  } else {
    dtype = "I64";
    bytes = new Uint8Array(data.slice().buffer);
  }
  if (!LITTLE_ENDIAN) swapBytes(bytes, DTYPE_BYTES[dtype]);
  return { dtype, bytes };
}

/** The float tensors of a file as float32 `Weights`; integer tensors are an error naming the tensor. */
export function safetensorsToWeights(file: SafetensorsFile): Weights {
  const weights: Weights = new Map();
  for (const [name, entry] of file.tensors) weights.set(name, entryToTensor(name, entry));
  return weights;
}

function entryToTensor(name: string, entry: SafetensorsEntry): Tensor {
  if (entry.data instanceof Float32Array) return { shape: entry.shape, data: entry.data };
  if (entry.data instanceof Float64Array) return { shape: entry.shape, data: Float32Array.from(entry.data) };
  throw new SafetensorsError(`tensor "${name}": expected a float tensor, got ${entry.dtype}`);
}

/** Reads a safetensors file of float weights. */
export function readSafetensorsWeights(bytes: Uint8Array): {
  weights: Weights;
  metadata: Record<string, string>;
} {
  const file = readSafetensors(bytes);
  return { weights: safetensorsToWeights(file), metadata: file.metadata };
}
