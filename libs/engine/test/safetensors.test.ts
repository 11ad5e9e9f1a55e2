import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  f16ToF32,
  f32BitsToBf16,
  f32ToF16,
  readSafetensors,
  readSafetensorsWeights,
  writeSafetensors,
} from "../src/safetensors.ts";

/** A file from a header string and raw data bytes, assembled byte by byte. */
function file(header: string, data: number[]): Uint8Array {
  const h = new TextEncoder().encode(header);
  const out = new Uint8Array(8 + h.length + data.length);
  out[0] = h.length & 0xff;
  out[1] = (h.length >> 8) & 0xff; // the other 6 length bytes stay 0
  out.set(h, 8);
  out.set(data, 8 + h.length);
  return out;
}

describe("readSafetensors", () => {
  it("reads every dtype from hand-made bytes", () => {
    const header = JSON.stringify({
      __metadata__: { format: "pt" },
      f32: { dtype: "F32", shape: [2], data_offsets: [0, 8] },
      bf16: { dtype: "BF16", shape: [1], data_offsets: [8, 10] },
      f16: { dtype: "F16", shape: [2, 2], data_offsets: [10, 18] },
      f64: { dtype: "F64", shape: [1], data_offsets: [18, 26] },
      i32: { dtype: "I32", shape: [1], data_offsets: [26, 30] },
      i64: { dtype: "I64", shape: [1], data_offsets: [30, 38] },
      empty: { dtype: "F32", shape: [0, 3], data_offsets: [38, 38] },
    });
    const data = [
      // F32 1.0 = 0x3F800000, −2.0 = 0xC0000000 (little-endian)
      0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0,
      // BF16 1.5 = 0x3FC0
      0xc0, 0x3f,
      // F16 1.0 = 0x3C00, −0.5 = 0xB800, 65504 = 0x7BFF (max), 2^-24 = 0x0001 (smallest subnormal)
      0x00, 0x3c, 0x00, 0xb8, 0xff, 0x7b, 0x01, 0x00,
      // F64 0.1 = 0x3FB999999999999A
      0x9a, 0x99, 0x99, 0x99, 0x99, 0x99, 0xb9, 0x3f,
      // I32 −1
      0xff, 0xff, 0xff, 0xff,
      // I64 2^40 + 5
      0x05, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
    ];
    const { tensors, metadata } = readSafetensors(file(header, data));
    expect(metadata).toEqual({ format: "pt" });
    expect([...tensors.keys()]).toEqual(["f32", "bf16", "f16", "f64", "i32", "i64", "empty"]);
    expect(Array.from(tensors.get("f32")!.data as Float32Array)).toEqual([1, -2]);
    expect(tensors.get("bf16")!.dtype).toBe("BF16");
    expect(Array.from(tensors.get("bf16")!.data as Float32Array)).toEqual([1.5]);
    expect(tensors.get("f16")!.shape).toEqual([2, 2]);
    expect(Array.from(tensors.get("f16")!.data as Float32Array)).toEqual([1, -0.5, 65504, 2 ** -24]);
    expect(tensors.get("f64")!.data).toEqual(Float64Array.of(0.1));
    expect(tensors.get("i32")!.data).toEqual(Int32Array.of(-1));
    expect(tensors.get("i64")!.data).toEqual(BigInt64Array.of(2n ** 40n + 5n));
    expect(tensors.get("empty")!.data.length).toBe(0);
  });

  const one = (entry: object, data: number[]) => file(JSON.stringify({ w: entry }), data);

  it("names the tensor whose byte span does not match dtype × shape", () => {
    expect(() =>
      readSafetensors(one({ dtype: "F32", shape: [2], data_offsets: [0, 4] }, [0, 0, 0, 0])),
    ).toThrow('tensor "w": F32 [2] needs 8 bytes, data_offsets span 4');
  });

  it("rejects an unknown dtype, a bad shape, bad offsets", () => {
    expect(() => readSafetensors(one({ dtype: "Q4", shape: [1], data_offsets: [0, 1] }, [0]))).toThrow(
      'tensor "w": unsupported dtype "Q4"',
    );
    expect(() =>
      readSafetensors(one({ dtype: "F32", shape: [-1], data_offsets: [0, 4] }, [0, 0, 0, 0])),
    ).toThrow('tensor "w": shape must be');
    expect(() =>
      readSafetensors(one({ dtype: "F32", shape: [1], data_offsets: [4, 0] }, [0, 0, 0, 0])),
    ).toThrow('tensor "w": data_offsets must be');
  });

  it("rejects data past the end and trailing bytes", () => {
    expect(() => readSafetensors(one({ dtype: "F32", shape: [1], data_offsets: [0, 4] }, [0, 0]))).toThrow(
      'tensor "w": data_offsets [0,4] run past the data (2 bytes)',
    );
    expect(() =>
      readSafetensors(one({ dtype: "F32", shape: [1], data_offsets: [0, 4] }, [0, 0, 0, 0, 9])),
    ).toThrow("1 bytes after the last tensor");
  });

  it.each([
    {
      between: "a gap",
      spans: { a: { shape: [1], data_offsets: [0, 4] }, b: { shape: [1], data_offsets: [8, 12] } },
      message: 'tensor "b": data_offsets start at 8, expected 4',
    },
    {
      between: "an overlap",
      spans: { a: { shape: [2], data_offsets: [0, 8] }, b: { shape: [1], data_offsets: [4, 8] } },
      message: 'tensor "b": data_offsets start at 4, expected 8',
    },
  ])("rejects $between between two F32 tensors", ({ spans, message }) => {
    const entries = Object.fromEntries(
      Object.entries(spans).map(([name, span]) => [name, { dtype: "F32", ...span }]),
    );
    const bytes = Math.max(...Object.values(spans).map((span) => span.data_offsets[1]!));
    expect(() => readSafetensors(file(JSON.stringify(entries), new Array(bytes).fill(0)))).toThrow(message);
  });

  it("rejects a truncated file, an oversized header length and a non-JSON header", () => {
    expect(() => readSafetensors(new Uint8Array(5))).toThrow("shorter than the 8-byte header length");
    const big = new Uint8Array(16);
    big[0] = 0xff;
    expect(() => readSafetensors(big)).toThrow("header length 255 exceeds the file");
    expect(() => readSafetensors(file("{not json", []))).toThrow("header is not valid UTF-8 JSON");
    expect(() => readSafetensors(file("[1]", []))).toThrow("header is not a JSON object");
    expect(() => readSafetensors(file('{"__metadata__":{"a":1}}', []))).toThrow(
      "__metadata__.a must be a string",
    );
  });
});

describe("writeSafetensors", () => {
  it("writes the exact bytes of a one-tensor file, header padded to 8 bytes", () => {
    const bytes = writeSafetensors(new Map([["x", { shape: [1], data: Float32Array.of(1) }]]));
    const header = '{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}';
    // 54 header bytes; 8 + 54 = 62, so 2 spaces of padding make the data start at byte 64.
    expect(header.length).toBe(54);
    const expected = file(`${header}  `, [0x00, 0x00, 0x80, 0x3f]);
    expect(Array.from(bytes)).toEqual(Array.from(expected));
    expect(bytes.length).toBe(68);
  });

  it("round-trips F32 exactly with metadata and order kept", () => {
    const tensors = new Map([
      ["b", { shape: [2, 3], data: Float32Array.from([1, 2, 3, 4, 5, 6.5]) }],
      ["a", { shape: [1], data: Float32Array.of(-0) }],
    ]);
    const bytes = writeSafetensors(tensors, { metadata: { step: "3" } });
    const back = readSafetensorsWeights(bytes);
    expect(back.metadata).toEqual({ step: "3" });
    expect([...back.weights.keys()]).toEqual(["b", "a"]);
    expect(back.weights.get("b")).toEqual({ shape: [2, 3], data: Float32Array.from([1, 2, 3, 4, 5, 6.5]) });
  });

  it("writes BF16 with round-to-nearest-even", () => {
    // 1 + 2^-8 lies halfway between bf16 1.0 (0x3F80) and 1.0078125 (0x3F81): ties go to even 0x3F80.
    // 1 + 3·2^-8 lies halfway between 0x3F81 and 0x3F82: ties go to even 0x3F82 = 1.015625.
    const data = Float32Array.of(1 + 2 ** -8, 1 + 3 * 2 ** -8, 1 + 2 ** -8 + 2 ** -20, -3);
    const bytes = writeSafetensors(new Map([["w", { shape: [4], data }]]), { floatDtype: "BF16" });
    const back = readSafetensors(bytes).tensors.get("w")!;
    expect(back.dtype).toBe("BF16");
    expect(Array.from(back.data as Float32Array)).toEqual([1, 1.015625, 1.0078125, -3]);
  });

  it("keeps F64, I32 and I64 arrays in their dtype", () => {
    const tensors = new Map<string, { shape: number[]; data: Float64Array | Int32Array | BigInt64Array }>([
      ["d", { shape: [1], data: Float64Array.of(Math.PI) }],
      ["i", { shape: [2], data: Int32Array.of(-7, 2 ** 31 - 1) }],
      ["l", { shape: [1], data: BigInt64Array.of(-(2n ** 62n)) }],
    ]);
    const back = readSafetensors(writeSafetensors(tensors)).tensors;
    expect(back.get("d")).toEqual({ dtype: "F64", shape: [1], data: Float64Array.of(Math.PI) });
    expect(back.get("i")).toEqual({ dtype: "I32", shape: [2], data: Int32Array.of(-7, 2 ** 31 - 1) });
    expect(back.get("l")).toEqual({ dtype: "I64", shape: [1], data: BigInt64Array.of(-(2n ** 62n)) });
    expect(() => readSafetensorsWeights(writeSafetensors(tensors))).toThrow(
      'tensor "i": expected a float tensor, got I32',
    );
  });

  it("refuses a shape that does not match the data", () => {
    expect(() => writeSafetensors(new Map([["w", { shape: [3], data: new Float32Array(2) }]]))).toThrow(
      'tensor "w": shape [3] needs 3 values, got 2',
    );
  });

  it("round-trips random float32 tensors", () => {
    fc.assert(
      fc.property(fc.array(fc.float({ noNaN: true }), { maxLength: 40 }), (values) => {
        const data = Float32Array.from(values);
        const back = readSafetensorsWeights(
          writeSafetensors(new Map([["t", { shape: [data.length], data }]])),
        );
        expect(back.weights.get("t")!.data).toEqual(data);
      }),
      { numRuns: 50 },
    );
  });
});

describe("half-precision conversions", () => {
  it("f32ToF16 inverts f16ToF32 on every non-NaN half", () => {
    for (let h = 0; h < 0x10000; h++) {
      const isNan = (h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0;
      if (!isNan && f32ToF16(f16ToF32(h)) !== h)
        throw new Error(`half 0x${h.toString(16)} does not round-trip`);
    }
  });

  it("f32ToF16 rounds to nearest even and overflows to infinity", () => {
    expect(f32ToF16(1 + 2 ** -11)).toBe(0x3c00); // halfway between 1 and 1 + 2^-10: even mantissa 0
    expect(f32ToF16(1 + 3 * 2 ** -11)).toBe(0x3c02); // halfway between mantissas 1 and 2: even 2
    expect(f32ToF16(65520)).toBe(0x7c00); // halfway between 65504 and 65536: rounds up to inf
    expect(f32ToF16(-1e9)).toBe(0xfc00);
    expect(f32ToF16(2 ** -25)).toBe(0); // half the smallest subnormal: ties to even 0
    expect(f32ToF16(Number.NaN)).toBe(0x7e00);
  });

  it("bf16 keeps NaN a NaN and rounds the top half", () => {
    expect(f32BitsToBf16(0x7fc00001)).toBe(0x7fc0);
    expect(f32BitsToBf16(0x7f800001) & 0x7f80).toBe(0x7f80); // still a NaN, not infinity
    expect(f32BitsToBf16(0x7f800001) & 0x007f).not.toBe(0);
    expect(f32BitsToBf16(0x3f808000)).toBe(0x3f80); // tie → even
    expect(f32BitsToBf16(0x3f818000)).toBe(0x3f82); // tie → even
  });
});
