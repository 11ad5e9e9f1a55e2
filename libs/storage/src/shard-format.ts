/**
 * Rollout shards: a batch of Samples as one object, one row per Sample. Two encodings:
 *
 *  - `parquet` (the default, see README for the measurements): columnar, one column per field —
 *    provenance flattened into `provenance.*` columns (repetitive strings dictionary-encode to a
 *    few bits a row), token ids as LIST<INT32>, log-probs as LIST<DOUBLE>, small nested values
 *    (chat messages, sampling params, branch) as JSON columns. GZIP pages. The file carries the
 *    Sample schema version in its key-value metadata (`troupe.sample.schemaVersion`).
 *  - `jsonl.gz`: one canonical JSON object a line, gzipped (fflate, so it runs on Workers too).
 *
 * Numbers: every number is written as DOUBLE or INT32 — a JS number round-trips exactly; integer-ness
 * and ranges are enforced when reading, by the Sample zod schema (`parseSample` from @troupe/core).
 * Decoding errors name the shard, the row and the field.
 */
import { parseSample, SAMPLE_SCHEMA_VERSION, type Sample } from "@troupe/core";
import { gunzipSync, gzipSync, strFromU8, strToU8 } from "fflate";
import { parquetMetadata, parquetReadObjects } from "hyparquet";
import { parquetWriteBuffer } from "hyparquet-writer";

export type ShardFormat = "parquet" | "jsonl.gz";
export const SHARD_FORMATS: readonly ShardFormat[] = ["parquet", "jsonl.gz"];
export const DEFAULT_SHARD_FORMAT: ShardFormat = "parquet";
export const SCHEMA_VERSION_KEY = "troupe.sample.schemaVersion";

/** Rows per Parquet row group: a shard is read whole, so one big group keeps the footer small. */
const PARQUET_ROW_GROUP_SIZE = 100_000;
/** gzip level: 6 is zlib's default speed/size balance. */
const GZIP_LEVEL = 6;

const INT32_MAX = 2 ** 31 - 1;

/**
 * Parquet page compression. GZIP (fflate) makes shards ~35% smaller than SNAPPY for token ids at
 * about the same read time (README); the reader handles both.
 */
export type ParquetCodec = "GZIP" | "SNAPPY";
export const DEFAULT_PARQUET_CODEC: ParquetCodec = "GZIP";

export function encodeShard(
  samples: readonly Sample[],
  format: ShardFormat = DEFAULT_SHARD_FORMAT,
  parquetCodec: ParquetCodec = DEFAULT_PARQUET_CODEC,
): Uint8Array {
  return format === "parquet" ? encodeParquet(samples, parquetCodec) : encodeJsonlGz(samples);
}

/** Decodes and validates every row; `where` (the shard's name) prefixes any error. */
export async function decodeShard(bytes: Uint8Array, format: ShardFormat, where: string): Promise<Sample[]> {
  const rows = format === "parquet" ? await decodeParquet(bytes, where) : decodeJsonlGz(bytes, where);
  return rows.map((row, i) => parseSample(row, `${where}: row ${i}`));
}

// ---------------------------------------------------------------- jsonl.gz

function encodeJsonlGz(samples: readonly Sample[]): Uint8Array {
  const text = samples.map((s) => `${JSON.stringify(s)}\n`).join("");
  return gzipSync(strToU8(text), { level: GZIP_LEVEL, mtime: 0 }); // mtime 0: same samples, same bytes
}

function decodeJsonlGz(bytes: Uint8Array, where: string): unknown[] {
  let text: string;
  try {
    text = strFromU8(gunzipSync(bytes));
  } catch (error) {
    throw new Error(`${where}: not a readable gzip stream (${(error as Error).message})`);
  }
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  return lines.map((line, i) => {
    try {
      return JSON.parse(line);
    } catch {
      throw new Error(`${where}: row ${i}: not valid JSON`);
    }
  });
}

// ---------------------------------------------------------------- parquet

type Column = {
  name: string;
  type: "STRING" | "DOUBLE" | "INT32" | "BOOLEAN" | "JSON";
  get: (s: Sample) => unknown;
};

/** Scalar columns, in file order. Lists are added separately (they need a nested schema). */
const SCALAR_COLUMNS: Column[] = [
  { name: "schemaVersion", type: "INT32", get: (s) => s.schemaVersion },
  { name: "provenance.runId", type: "STRING", get: (s) => s.provenance.runId },
  { name: "provenance.step", type: "DOUBLE", get: (s) => s.provenance.step },
  { name: "provenance.strategy", type: "STRING", get: (s) => s.provenance.strategy },
  { name: "provenance.environment", type: "STRING", get: (s) => s.provenance.environment },
  { name: "provenance.taskId", type: "STRING", get: (s) => s.provenance.taskId },
  { name: "provenance.split", type: "STRING", get: (s) => s.provenance.split },
  { name: "provenance.episode", type: "DOUBLE", get: (s) => s.provenance.episode },
  { name: "provenance.turn", type: "DOUBLE", get: (s) => s.provenance.turn },
  { name: "provenance.agent", type: "STRING", get: (s) => s.provenance.agent },
  { name: "provenance.branch", type: "JSON", get: (s) => s.provenance.branch },
  { name: "provenance.candidate", type: "DOUBLE", get: (s) => s.provenance.candidate },
  { name: "provenance.policyId", type: "STRING", get: (s) => s.provenance.policyId },
  { name: "provenance.policyVersion", type: "DOUBLE", get: (s) => s.provenance.policyVersion },
  { name: "provenance.sampling", type: "JSON", get: (s) => s.provenance.sampling },
  { name: "provenance.seed", type: "DOUBLE", get: (s) => s.provenance.seed },
  { name: "observation", type: "JSON", get: (s) => s.observation },
  { name: "completionText", type: "STRING", get: (s) => s.completionText },
  { name: "finishReason", type: "STRING", get: (s) => s.finishReason },
  { name: "reward.team", type: "DOUBLE", get: (s) => s.reward.team },
  { name: "reward.local", type: "DOUBLE", get: (s) => s.reward.local },
  { name: "reward.total", type: "DOUBLE", get: (s) => s.reward.total },
  { name: "return", type: "DOUBLE", get: (s) => s.return },
  { name: "advantage", type: "DOUBLE", get: (s) => s.advantage },
  { name: "groupKey", type: "STRING", get: (s) => s.groupKey },
];

const LIST_COLUMNS = [
  { name: "promptTokenIds", element: "INT32", get: (s: Sample) => s.promptTokenIds },
  { name: "completionTokenIds", element: "INT32", get: (s: Sample) => s.completionTokenIds },
  { name: "samplingLogprobs", element: "DOUBLE", get: (s: Sample) => s.samplingLogprobs },
] as const;

const PHYSICAL: Record<Column["type"], object> = {
  STRING: { type: "BYTE_ARRAY", converted_type: "UTF8" },
  JSON: { type: "BYTE_ARRAY", converted_type: "JSON" },
  DOUBLE: { type: "DOUBLE" },
  INT32: { type: "INT32" },
  BOOLEAN: { type: "BOOLEAN" },
};

function parquetSchema() {
  const schema: Record<string, unknown>[] = [
    { name: "root", num_children: SCALAR_COLUMNS.length + LIST_COLUMNS.length + 1 },
  ];
  for (const c of SCALAR_COLUMNS)
    schema.push({ name: c.name, repetition_type: "REQUIRED", ...PHYSICAL[c.type] });
  for (const c of LIST_COLUMNS) {
    // The standard 3-level LIST: <name> (LIST) → list (REPEATED) → element.
    schema.push({ name: c.name, repetition_type: "REQUIRED", converted_type: "LIST", num_children: 1 });
    schema.push({ name: "list", repetition_type: "REPEATED", num_children: 1 });
    schema.push({ name: "element", repetition_type: "REQUIRED", ...PHYSICAL[c.element] });
  }
  schema.push({ name: "success", repetition_type: "OPTIONAL", type: "BOOLEAN" });
  return schema;
}

function encodeParquet(samples: readonly Sample[], codec: ParquetCodec): Uint8Array {
  samples.forEach((s, row) => {
    for (const c of LIST_COLUMNS) {
      if (c.element !== "INT32") continue;
      const bad = c.get(s).findIndex((v) => v > INT32_MAX);
      if (bad >= 0) throw new Error(`row ${row}: ${c.name}[${bad}] = ${c.get(s)[bad]} does not fit INT32`);
    }
  });
  const columnData = [
    ...SCALAR_COLUMNS.map((c) => ({ name: c.name, data: samples.map(c.get) })),
    ...LIST_COLUMNS.map((c) => ({ name: c.name, data: samples.map(c.get) })),
    { name: "success", data: samples.map((s) => s.success ?? null) },
  ];
  const buffer = parquetWriteBuffer({
    // biome-ignore lint/suspicious/noExplicitAny: hyparquet-writer's DecodedArray/SchemaElement types are loose JS
    columnData: columnData as any,
    // biome-ignore lint/suspicious/noExplicitAny: see above
    schema: parquetSchema() as any,
    rowGroupSize: PARQUET_ROW_GROUP_SIZE,
    codec,
    compressors: { GZIP: (input: Uint8Array) => gzipSync(input, { level: GZIP_LEVEL, mtime: 0 }) },
    statistics: false, // shards are read whole; min/max statistics would only add bytes
    kvMetadata: [{ key: SCHEMA_VERSION_KEY, value: String(SAMPLE_SCHEMA_VERSION) }],
    createdBy: "@troupe/storage",
  });
  return new Uint8Array(buffer);
}

async function decodeParquet(bytes: Uint8Array, where: string): Promise<unknown[]> {
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  let rows: Record<string, unknown>[];
  try {
    const metadata = parquetMetadata(file);
    const version = metadata.key_value_metadata?.find((kv) => kv.key === SCHEMA_VERSION_KEY)?.value;
    if (version !== String(SAMPLE_SCHEMA_VERSION)) {
      throw new Error(
        `sample schema version ${version ?? "(missing)"}, this reader knows ${SAMPLE_SCHEMA_VERSION}`,
      );
    }
    rows = await parquetReadObjects({
      file,
      metadata,
      compressors: { GZIP: (input: Uint8Array) => gunzipSync(input) },
    });
  } catch (error) {
    throw new Error(`${where}: not a readable Troupe Parquet shard: ${(error as Error).message}`);
  }
  return rows.map(unflattenRow);
}

/** `{"provenance.runId": x, …}` → `{provenance: {runId: x}, …}`; a null `success` is left out. */
function unflattenRow(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(row)) {
    if (name === "success" && (value === null || value === undefined)) continue;
    const dot = name.indexOf(".");
    if (dot < 0) {
      out[name] = value;
    } else {
      const group = name.slice(0, dot);
      const inner = (out[group] ??= {}) as Record<string, unknown>;
      inner[name.slice(dot + 1)] = value;
    }
  }
  return out;
}
