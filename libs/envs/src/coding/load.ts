/**
 * Reading dataset files: JSONL, gzipped JSONL, from a local path or an http(s) URL, and
 * validating every row with a zod schema so a bad row is reported by file, line and field.
 * Shared by the coding, math and writing environments.
 */
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import type { z } from "zod";

/** `libs/envs/data`, where the shipped datasets live. */
export const DATA_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "data");

/** A local path or an http(s) URL. */
export type DataSource = string | URL;

function isUrl(source: DataSource): boolean {
  return source instanceof URL || /^https?:\/\//.test(source);
}

/** Raw bytes of a source; a URL is fetched (a non-2xx status is an error). */
export async function readSourceBytes(source: DataSource): Promise<Uint8Array> {
  if (isUrl(source)) {
    const response = await fetch(source);
    if (!response.ok) throw new Error(`fetching ${String(source)}: HTTP ${response.status}`);
    return new Uint8Array(await response.arrayBuffer());
  }
  return new Uint8Array(await readFile(source));
}

/** Text of a source, gunzipped when it is gzip data (detected by the magic bytes, not the name). */
export async function readSourceText(source: DataSource): Promise<string> {
  const bytes = await readSourceBytes(source);
  const gzipped = bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;
  return new TextDecoder().decode(gzipped ? gunzipSync(bytes) : bytes);
}

/** Text of a local file, gunzipped when it is gzip data. */
export function readSourceTextSync(path: string): string {
  const bytes = readFileSync(path);
  const gzipped = bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;
  return new TextDecoder().decode(gzipped ? gunzipSync(bytes) : bytes);
}

/** Parses JSONL text: one JSON value per non-blank line. Errors name the line. */
export function parseJsonl(text: string, where: string): unknown[] {
  const rows: unknown[] = [];
  text.split("\n").forEach((line, i) => {
    if (line.trim() === "") return;
    try {
      rows.push(JSON.parse(line));
    } catch (e) {
      throw new Error(`${where}: line ${i + 1} is not valid JSON (${(e as Error).message})`);
    }
  });
  return rows;
}

/** Validates rows with a schema; the error names the row (1-based), its id if any, and the field. */
export function validateRows<S extends z.ZodType>(
  rows: readonly unknown[],
  schema: S,
  where: string,
  idField?: string,
): z.infer<S>[] {
  return rows.map((row, i) => {
    const parsed = schema.safeParse(row);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const id =
        idField && row && typeof row === "object" && idField in row
          ? ` (${idField} ${JSON.stringify((row as Record<string, unknown>)[idField])})`
          : "";
      throw new Error(
        `${where}: row ${i + 1}${id}: field ${issue.path.join(".") || "(root)"}: ${issue.message}`,
      );
    }
    return parsed.data;
  });
}

/** Reads and validates a JSONL / JSONL.gz dataset. */
export async function loadJsonl<S extends z.ZodType>(
  source: DataSource,
  schema: S,
  idField?: string,
): Promise<z.infer<S>[]> {
  const where = String(source);
  return validateRows(parseJsonl(await readSourceText(source), where), schema, where, idField);
}

const syncCache = new Map<string, unknown[]>();

/**
 * Reads and validates a shipped JSONL / JSONL.gz file synchronously, once per process (later calls
 * get the same rows). The registry's `generateTasks` is synchronous, like the games' generators, so
 * dataset environments read their (small, local) files this way.
 */
export function loadJsonlSync<S extends z.ZodType>(path: string, schema: S, idField?: string): z.infer<S>[] {
  const cached = syncCache.get(path);
  if (cached) return cached as z.infer<S>[];
  const rows = validateRows(parseJsonl(readSourceTextSync(path), path), schema, path, idField);
  syncCache.set(path, rows);
  return rows;
}
