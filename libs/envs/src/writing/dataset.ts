/**
 * Writing tasks from local JSONL (optionally gzipped) or Parquet files. Parquet is read with
 * `hyparquet` (pure JS; snappy and uncompressed pages built in, other codecs would need
 * `hyparquet-compressors`). Columns can be renamed with `fields`, e.g. `{ post: "prompt" }` for
 * a TL;DR dump whose text column is called `prompt`. Rows without an id get one from a hash of
 * their text.
 */
import { join } from "node:path";
import type { Split, Task } from "@troupe/core";
import { parquetReadObjects } from "hyparquet";
import { z } from "zod";
import {
  DATA_DIR,
  type DataSource,
  parseJsonl,
  readSourceBytes,
  readSourceText,
  readSourceTextSync,
  validateRows,
} from "../coding/load.ts";
import { problemHash, splitByHash } from "../coding/split.ts";

export type WritingKind = "tldr" | "arxiv";

/** TLDR: summarise a post. arXiv: expand an abstract into an introduction. */
export interface WritingProblem {
  readonly kind: WritingKind;
  readonly id: string;
  readonly title: string;
  /** The post (TLDR) or the abstract (arXiv). */
  readonly text: string;
}

/** The longest source text (a post or an abstract) a writing task may hold, in characters. */
export const WRITING_MAX_SOURCE_CHARS = 32_768;

const TldrRowSchema = z.object({
  id: z.string().min(1).optional(),
  title: z.string().optional(),
  post: z.string().min(1, "must be a non-empty post").max(WRITING_MAX_SOURCE_CHARS),
});
const ArxivRowSchema = z.object({
  id: z.string().min(1).optional(),
  title: z.string().optional(),
  abstract: z.string().min(1, "must be a non-empty abstract").max(WRITING_MAX_SOURCE_CHARS),
});

/**
 * The shipped splits: TLDR, 500 Reddit posts with their authors' TL;DRs (372 train / 128 test,
 * CC BY 4.0); arXiv, 1,686 titles and abstracts (1,366 / 320, CC0). SOURCE.md next to each.
 */
export const WRITING_PATHS: Record<WritingKind, Record<"train" | "test", string>> = {
  tldr: { train: join(DATA_DIR, "tldr", "train.jsonl.gz"), test: join(DATA_DIR, "tldr", "test.jsonl.gz") },
  arxiv: { train: join(DATA_DIR, "arxiv", "train.jsonl.gz"), test: join(DATA_DIR, "arxiv", "test.jsonl.gz") },
};

export interface WritingLoadOptions {
  /** Our field name → the file's column name. */
  readonly fields?: Partial<Record<"id" | "title" | "post" | "abstract", string>>;
}

/** Raw records of a JSONL / JSONL.gz / Parquet source (Parquet chosen by the `.parquet` suffix). */
export async function readRecords(source: DataSource): Promise<unknown[]> {
  const name = source instanceof URL ? source.pathname : source.split("?")[0]!;
  if (name.endsWith(".parquet")) {
    const bytes = await readSourceBytes(source);
    const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    return (await parquetReadObjects({ file: buffer })) as unknown[];
  }
  return parseJsonl(await readSourceText(source), String(source));
}

export async function loadWriting(
  kind: WritingKind,
  source: DataSource = WRITING_PATHS[kind].test,
  options: WritingLoadOptions = {},
): Promise<WritingProblem[]> {
  return writingRows(kind, await readRecords(source), String(source), options);
}

const shipped = new Map<string, WritingProblem[]>();

/** A shipped split, read synchronously once per process (for the registry). */
export function shippedWriting(kind: WritingKind, split: "train" | "test"): WritingProblem[] {
  const path = WRITING_PATHS[kind][split];
  let rows = shipped.get(path);
  if (!rows) {
    rows = writingRows(kind, parseJsonl(readSourceTextSync(path), path), path);
    shipped.set(path, rows);
  }
  return rows;
}

/** Validated problems from raw records (columns renamed by `options.fields`). */
export function writingRows(
  kind: WritingKind,
  records: readonly unknown[],
  where: string,
  options: WritingLoadOptions = {},
): WritingProblem[] {
  const renamed = records.map((r) => {
    if (!r || typeof r !== "object") return r;
    const row = r as Record<string, unknown>;
    const out: Record<string, unknown> = { ...row };
    for (const [ours, theirs] of Object.entries(options.fields ?? {})) out[ours] = row[theirs as string];
    // Parquet nulls become absent optional fields.
    for (const k of Object.keys(out)) if (out[k] === null) delete out[k];
    return out;
  });
  if (kind === "tldr") {
    return validateRows(renamed, TldrRowSchema, where, "id").map((r) => ({
      kind,
      id: r.id ?? `tldr/${problemHash(r.post).slice(0, 12)}`,
      title: r.title ?? "",
      text: r.post,
    }));
  }
  return validateRows(renamed, ArxivRowSchema, where, "id").map((r) => ({
    kind,
    id: r.id ?? `arxiv/${problemHash(r.abstract).slice(0, 12)}`,
    title: r.title ?? "",
    text: r.abstract,
  }));
}

/** Train/test tasks, disjoint by a hash of the text. */
export function writingTasks(
  problems: readonly WritingProblem[],
  options: { readonly testFraction?: number; readonly salt?: string } = {},
): Record<Extract<Split, "train" | "test">, Task<WritingProblem>[]> {
  const { train, test } = splitByHash(
    problems,
    (p) => p.text,
    options.testFraction ?? 0.3,
    options.salt ?? "writing",
  );
  const toTask =
    (split: Split) =>
    (p: WritingProblem): Task<WritingProblem> => ({ id: p.id, split, payload: p });
  return { train: train.map(toTask("train")), test: test.map(toTask("test")) };
}
