/**
 * Rollout shards: a batch of samples as one object, one row per sample — Samples (a step's shards,
 * advantages estimated) or RolloutSamples (a rollout worker's shards, no advantage: the column is
 * optional and left empty). Two encodings:
 *
 *  - `parquet` (the default, see README for the measurements): columnar, one column per field —
 *    provenance flattened into `provenance.*` columns (repetitive strings dictionary-encode to a
 *    few bits a row), token ids as LIST<INT32>, log-probs as LIST<DOUBLE>, small nested values
 *    (chat messages, sampling params, branch) as JSON columns. GZIP pages. The file carries the
 *    Sample schema version in its key-value metadata (`troupe.sample.schemaVersion`).
 *  - `jsonl.gz`: one canonical JSON object a line, gzipped (fflate, so it runs on Workers too).
 *
 * The Parquet columns are derived from the samples' zod schema (`sampleColumns`), never written out
 * by hand: a field added to the Sample gets its column, and a field of a kind no column can hold
 * fails at load time, naming it.
 *
 * Numbers: every number is written as DOUBLE or INT32 — a JS number round-trips exactly; integer-ness
 * and ranges are enforced when reading, by the reader's zod schema (`parseSample` or
 * `parseRolloutSample` from @troupe/core).
 * Decoding errors name the shard, the row and the field.
 */
import { type RolloutSample, RolloutSampleSchema, SAMPLE_SCHEMA_VERSION, SampleSchema } from "@troupe/core";
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

/** What a shard row holds: a RolloutSample, and its advantage once the advantage stage set one. */
const ShardRowSchema = RolloutSampleSchema.extend({
  advantage: SampleSchema.shape.advantage.optional(),
});

/**
 * Parquet page compression. GZIP (fflate) makes shards ~35% smaller than SNAPPY for token ids at
 * about the same read time (README); the reader handles both.
 */
export type ParquetCodec = "GZIP" | "SNAPPY";
export const DEFAULT_PARQUET_CODEC: ParquetCodec = "GZIP";

export function encodeShard(
  samples: readonly RolloutSample[],
  format: ShardFormat = DEFAULT_SHARD_FORMAT,
  parquetCodec: ParquetCodec = DEFAULT_PARQUET_CODEC,
): Uint8Array {
  return format === "parquet" ? encodeParquet(samples, parquetCodec) : encodeJsonlGz(samples);
}

/**
 * Decodes and validates every row with `parse` (`parseSample` for a step's Samples, advantage
 * required; `parseRolloutSample` for a rollout worker's shard); `where` (the shard's name)
 * prefixes any error.
 */
export async function decodeShard<T extends RolloutSample>(
  bytes: Uint8Array,
  format: ShardFormat,
  where: string,
  parse: (row: unknown, where: string) => T,
): Promise<T[]> {
  const rows = format === "parquet" ? await decodeParquet(bytes, where) : decodeJsonlGz(bytes, where);
  return rows.map((row, i) => parse(row, `${where}: row ${i}`));
}

// ---------------------------------------------------------------- jsonl.gz

function encodeJsonlGz(samples: readonly RolloutSample[]): Uint8Array {
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

type ScalarType = "STRING" | "DOUBLE" | "INT32" | "BOOLEAN" | "JSON";

/** One Parquet column: a scalar (REQUIRED, or OPTIONAL for an optional field) or a LIST of numbers. */
export type Column =
  | { readonly name: string; readonly kind: "scalar"; readonly type: ScalarType; readonly optional: boolean }
  | { readonly name: string; readonly kind: "list"; readonly element: "INT32" | "DOUBLE" };

/** The zod internals the derivation reads (zod 4's `_zod.def`). */
interface ZodDef {
  readonly type: string;
  readonly shape?: Record<string, { _zod: { def: ZodDef } }>;
  readonly element?: { _zod: { def: ZodDef }; isInt?: boolean };
  readonly innerType?: { _zod: { def: ZodDef } };
}
type Schema = { _zod: { def: ZodDef }; isInt?: boolean };

/** A value's scalar column type: strings and enums as text, numbers as DOUBLE, anything nested as JSON. */
function scalarType(schema: Schema, path: string): ScalarType {
  const { type } = schema._zod.def;
  if (type === "string" || type === "enum") return "STRING";
  if (type === "number") return "DOUBLE";
  if (type === "boolean") return "BOOLEAN";
  if (type === "literal") return "INT32"; // schemaVersion
  if (type === "array" || type === "object" || type === "record") return "JSON";
  throw new Error(`shard format: Sample field "${path}" (zod ${type}) has no Parquet column type`);
}

/**
 * The Parquet columns of a Sample schema, in file order: the scalars in schema order — a top-level
 * object's fields flattened to `<object>.<field>` (provenance, reward), anything nested deeper as
 * JSON — then the top-level number lists (token ids INT32, log-probs DOUBLE), then the optional
 * fields. Every field of the schema has exactly one column.
 */
export function sampleColumns(schema: Schema = ShardRowSchema as unknown as Schema): Column[] {
  const scalars: Column[] = [];
  const lists: Column[] = [];
  const optionals: Column[] = [];
  for (const [name, field] of Object.entries(schema._zod.def.shape ?? {})) {
    const def = field._zod.def;
    if (def.type === "optional") {
      optionals.push({ name, kind: "scalar", type: scalarType(def.innerType!, name), optional: true });
    } else if (def.type === "object") {
      for (const [inner, innerField] of Object.entries(def.shape ?? {})) {
        const path = `${name}.${inner}`;
        if (innerField._zod.def.type === "optional")
          throw new Error(
            `shard format: Sample field "${path}" is optional inside ${name}; no column can hold it`,
          );
        scalars.push({ name: path, kind: "scalar", type: scalarType(innerField, path), optional: false });
      }
    } else if (def.type === "array" && def.element?._zod.def.type === "number") {
      lists.push({ name, kind: "list", element: def.element.isInt ? "INT32" : "DOUBLE" });
    } else {
      scalars.push({ name, kind: "scalar", type: scalarType(field, name), optional: false });
    }
  }
  return [...scalars, ...lists, ...optionals];
}

const COLUMNS = sampleColumns();

/** A column's value in a Sample (`provenance.runId` → sample.provenance.runId; a missing optional → null). */
function columnValue(sample: RolloutSample, column: Column): unknown {
  const dot = column.name.indexOf(".");
  const record = sample as unknown as Record<string, Record<string, unknown>>;
  const value =
    dot < 0 ? record[column.name] : record[column.name.slice(0, dot)]![column.name.slice(dot + 1)];
  return value ?? null;
}

const PHYSICAL: Record<ScalarType, object> = {
  STRING: { type: "BYTE_ARRAY", converted_type: "UTF8" },
  JSON: { type: "BYTE_ARRAY", converted_type: "JSON" },
  DOUBLE: { type: "DOUBLE" },
  INT32: { type: "INT32" },
  BOOLEAN: { type: "BOOLEAN" },
};

function parquetSchema() {
  const schema: Record<string, unknown>[] = [{ name: "root", num_children: COLUMNS.length }];
  for (const c of COLUMNS) {
    if (c.kind === "scalar") {
      schema.push({
        name: c.name,
        repetition_type: c.optional ? "OPTIONAL" : "REQUIRED",
        ...PHYSICAL[c.type],
      });
    } else {
      // The standard 3-level LIST: <name> (LIST) → list (REPEATED) → element.
      schema.push({ name: c.name, repetition_type: "REQUIRED", converted_type: "LIST", num_children: 1 });
      schema.push({ name: "list", repetition_type: "REPEATED", num_children: 1 });
      schema.push({ name: "element", repetition_type: "REQUIRED", ...PHYSICAL[c.element] });
    }
  }
  return schema;
}

function encodeParquet(samples: readonly RolloutSample[], codec: ParquetCodec): Uint8Array {
  for (const c of COLUMNS) {
    if (c.kind !== "list" || c.element !== "INT32") continue;
    samples.forEach((s, row) => {
      const values = columnValue(s, c) as number[];
      const bad = values.findIndex((v) => v > INT32_MAX);
      if (bad >= 0) throw new Error(`row ${row}: ${c.name}[${bad}] = ${values[bad]} does not fit INT32`);
    });
  }
  const columnData = COLUMNS.map((c) => ({ name: c.name, data: samples.map((s) => columnValue(s, c)) }));
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

const OPTIONAL_COLUMNS = new Set(COLUMNS.filter((c) => c.kind === "scalar" && c.optional).map((c) => c.name));

/** `{"provenance.runId": x, …}` → `{provenance: {runId: x}, …}`; a null optional (`success`) is left out. */
function unflattenRow(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(row)) {
    if (OPTIONAL_COLUMNS.has(name) && (value === null || value === undefined)) continue;
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
