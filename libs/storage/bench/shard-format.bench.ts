/**
 * Shard format measurement: size, encode and decode (+ schema validation) time of 10k synthetic
 * Samples, Parquet vs JSONL.gz. `npm run bench -w libs/storage`. The numbers are in the README.
 */
import { parseSample } from "@troupe/core";
import { decodeShard, encodeShard, SHARD_FORMATS } from "../src/shard-format.ts";
import { syntheticSamples } from "../test/samples.ts";

const SAMPLES = Number(process.env.SAMPLES ?? 10_000);
const REPEATS = 3;
const samples = syntheticSamples(SAMPLES, 7);
const jsonBytes = Buffer.byteLength(samples.map((s) => JSON.stringify(s)).join("\n"));
console.log(`${SAMPLES} samples, ${(jsonBytes / 2 ** 20).toFixed(1)} MiB as plain JSONL`);
const variants = [
  ...SHARD_FORMATS.map((format) => ({ label: format, format, codec: undefined })),
  { label: "parquet (snappy)", format: "parquet" as const, codec: "SNAPPY" as const },
];
for (const { label, format, codec } of variants) {
  let encodeMs = Infinity;
  let decodeMs = Infinity;
  let bytes: Uint8Array = new Uint8Array();
  for (let r = 0; r < REPEATS; r++) {
    let t = performance.now();
    bytes = encodeShard(samples, format, codec);
    encodeMs = Math.min(encodeMs, performance.now() - t);
    t = performance.now();
    const back = await decodeShard(bytes, format, "bench", parseSample);
    decodeMs = Math.min(decodeMs, performance.now() - t);
    if (back.length !== SAMPLES) throw new Error("lost rows");
  }
  console.log(
    `${label.padEnd(16)} ${(bytes.byteLength / 2 ** 20).toFixed(2)} MiB  write ${encodeMs.toFixed(0)} ms  read+validate ${decodeMs.toFixed(0)} ms`,
  );
}
