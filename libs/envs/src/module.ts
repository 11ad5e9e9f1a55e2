/**
 * Loading an environment's files on Node: a module of one's own (`environment.module`, a
 * TypeScript or JavaScript file exporting an `EnvironmentEntry`) and the files an entry's options
 * name (the data-file environment's tasks and reward module). Each file is read, hashed (sha256
 * of its bytes) and recorded as `{path, sha256}`; a path first given in a recipe is relative to
 * the recipe's folder and is recorded relative to the workspace root (absolute outside it), and a
 * recorded one (a run's config, a team's manifest) is read again from there and refused, in one
 * line, when its content changed. TypeScript is loaded through tsx's API (`tsImport`), so no
 * loader flag is needed. Node only: a Worker build registers its modules itself (docs/your-own-task.md).
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { isAbsolute, relative, resolve, sep } from "node:path";
import { pathToFileURL } from "node:url";
import { gunzipSync } from "node:zlib";
import { parquetReadObjects } from "hyparquet";
import { parseJsonl } from "./coding/load.ts";
import {
  EnvironmentOptionsError,
  type FileContent,
  type FileRef,
  FileRefSchema,
  registerFile,
} from "./files.ts";
import { environmentFiles, registerEnvironmentModule } from "./registry.ts";

/** A recipe's, a run config's or a manifest's environment section, before its files are loaded. */
export interface EnvironmentSpec {
  readonly name?: string | undefined;
  readonly module?: string | FileRef | undefined;
  readonly options?: Readonly<Record<string, unknown>> | undefined;
}

export interface PrepareOptions {
  /** Where paths first given (strings) are relative to: the recipe's folder. */
  readonly base: string;
  /** The workspace root: recorded relative paths are relative to it. */
  readonly root: string;
  /** What the files were recorded by, for the changed-file message ("run r1", "team t v2"). */
  readonly recordedBy?: string;
}

/** The section with every file recorded as `{path, sha256}`, its module's entry registered under `name`. */
export interface PreparedEnvironment {
  readonly name: string;
  readonly module?: FileRef;
  readonly options: Record<string, unknown>;
}

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** A path as recorded: relative to the root with forward slashes when inside it, else absolute. */
function recordedPath(absolute: string, root: string): string {
  const rel = relative(root, absolute);
  return rel !== "" && !rel.startsWith("..") && !isAbsolute(rel) ? rel.split(sep).join("/") : absolute;
}

/** Imports a module file: TypeScript through tsx's API, JavaScript as it is. */
async function importFile(absolute: string): Promise<unknown> {
  const url = pathToFileURL(absolute).href;
  if (/\.[cm]?ts$/.test(absolute)) {
    const { tsImport } = await import("tsx/esm/api");
    return tsImport(url, import.meta.url);
  }
  return import(url);
}

/** A data file's rows: JSONL (optionally .gz) or Parquet (by the name's suffix). */
async function readRows(absolute: string, bytes: Uint8Array, where: string): Promise<unknown[]> {
  if (absolute.endsWith(".parquet")) {
    const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    return (await parquetReadObjects({ file: buffer })) as unknown[];
  }
  const text = new TextDecoder().decode(absolute.endsWith(".gz") ? gunzipSync(bytes) : bytes);
  return parseJsonl(text, where);
}

const loaded = new Map<string, FileContent>();

/** Reads one file option, checks or records its hash, and keeps what it held for the entry's build. */
async function loadFile(
  value: unknown,
  kind: "data" | "module",
  key: string,
  options: PrepareOptions,
): Promise<FileRef> {
  let absolute: string;
  let recorded: FileRef | undefined;
  if (typeof value === "string") {
    absolute = resolve(options.base, value);
  } else {
    const parsed = FileRefSchema.safeParse(value);
    if (!parsed.success)
      throw new EnvironmentOptionsError(key, "expected a path, or {path, sha256} as a run records it");
    recorded = parsed.data;
    absolute = resolve(options.root, recorded.path);
  }
  let bytes: Uint8Array;
  try {
    bytes = await readFile(absolute);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new EnvironmentOptionsError(key, `cannot read ${absolute} (${code})`);
  }
  const hash = sha256(bytes);
  if (recorded !== undefined && recorded.sha256 !== hash) {
    throw new EnvironmentOptionsError(
      key,
      `${recorded.path} changed since ${options.recordedBy !== undefined ? `${options.recordedBy} recorded it` : "it was recorded"} (sha256 ${recorded.sha256.slice(0, 12)}… then, ${hash.slice(0, 12)}… now): restore it, or train and publish again with the new file`,
    );
  }
  const ref = recorded ?? { path: recordedPath(absolute, options.root), sha256: hash };
  let content = loaded.get(hash);
  if (content === undefined) {
    try {
      content =
        kind === "module"
          ? { exports: await importFile(absolute) }
          : { rows: await readRows(absolute, bytes, ref.path) };
    } catch (error) {
      if (error instanceof EnvironmentOptionsError) throw error;
      const first = ((error as Error).message ?? String(error)).split("\n")[0];
      throw new EnvironmentOptionsError(key, `${ref.path}: ${first}`);
    }
    loaded.set(hash, content);
  }
  registerFile(ref, content);
  return ref;
}

/**
 * Loads an environment section's files and registers its module's entry: the section to record
 * (a run's config, a team's manifest) and build from. One EnvironmentOptionsError line for a
 * missing or changed file, a module that exports no entry, or a file option of the wrong shape.
 */
export async function prepareEnvironment(
  spec: EnvironmentSpec,
  options: PrepareOptions,
): Promise<PreparedEnvironment> {
  let name = spec.name;
  let module: FileRef | undefined;
  if (spec.module !== undefined) {
    if (typeof spec.module === "string" && name !== undefined) {
      throw new EnvironmentOptionsError(
        "environment",
        "give environment.name (a built-in) or environment.module (your own file), not both",
      );
    }
    module = await loadFile(spec.module, "module", "environment.module", options);
    const registered = registerEnvironmentModule(loaded.get(module.sha256)!.exports, module);
    if (name !== undefined && name !== registered) {
      throw new EnvironmentOptionsError(
        "environment.name",
        `${module.path} now names its environment "${registered}", recorded as "${name}"`,
      );
    }
    name = registered;
  }
  if (name === undefined) {
    throw new EnvironmentOptionsError(
      "environment",
      "give environment.name (a built-in) or environment.module (a file exporting an environment entry)",
    );
  }
  const files = environmentFiles(name);
  const out: Record<string, unknown> = { ...(spec.options ?? {}) };
  for (const [key, kind] of Object.entries(files)) {
    if (out[key] === undefined) continue;
    out[key] = await loadFile(out[key], kind, `environment.options.${key}`, options);
  }
  return { name, ...(module !== undefined ? { module } : {}), options: out };
}

/**
 * A team registry's `prepareEnvironment` on Node: a published team's environment files loaded
 * from the workspace root and checked against the manifest's hashes. A file that is missing or
 * changed refuses the team (`refuse` makes the error the server answers with, e.g. 501).
 */
export function manifestEnvironmentLoader<E extends EnvironmentSpec & { readonly name: string }>(
  root: string,
  refuse: (message: string) => Error,
): (environment: E, label: string) => Promise<E> {
  return async (environment, label) => {
    if (environment.module === undefined && !hasFileOptions(environment.name)) return environment;
    try {
      const prepared = await prepareEnvironment(environment, { base: root, root, recordedBy: label });
      return { ...environment, ...prepared };
    } catch (error) {
      if (!(error instanceof EnvironmentOptionsError)) throw error;
      throw refuse(`${label}: ${error.message}`);
    }
  };
}

function hasFileOptions(name: string): boolean {
  try {
    return Object.keys(environmentFiles(name)).length > 0;
  } catch {
    return false; // an unknown name: loadTeam says so
  }
}
