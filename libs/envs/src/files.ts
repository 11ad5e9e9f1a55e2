/**
 * Files an environment reads besides its own code (a module of one's own, a data file of tasks, a
 * reward module), named by path and content hash, and what they held once loaded. Loading is
 * Node's business (`@troupe/envs/module`, prepareEnvironment); building an environment only reads
 * what was loaded, synchronously, so the registry itself runs anywhere (Workers included).
 */
import { z } from "zod";

/** A bad environment name or option: one line naming the key. */
export class EnvironmentOptionsError extends Error {
  override readonly name = "EnvironmentOptionsError";
  /** The key, e.g. `environment.options.rows`. */
  constructor(
    readonly key: string,
    message: string,
  ) {
    super(`${key}: ${message}`);
  }
}

/** A file an environment reads (its module, a data file, a reward module): where, and its content's sha256. */
export const FileRefSchema = z.strictObject({
  path: z.string().min(1),
  sha256: z.string().regex(/^[0-9a-f]{64}$/, "must be 64 lowercase hex digits"),
});
export type FileRef = z.infer<typeof FileRefSchema>;

/** What a file an option names held: a data file's rows, or a module's exports. */
export interface FileContent {
  readonly rows?: readonly unknown[];
  readonly exports?: unknown;
}

/** Files an environment's options name, read once per content hash. */
const FILES = new Map<string, FileContent>();

/** Keeps what a file held (by its hash), for an entry's `build` to read synchronously. */
export function registerFile(ref: FileRef, content: FileContent): void {
  FILES.set(ref.sha256, content);
}

/** What a file named by an option held; the file must have been loaded (prepareEnvironment). */
export function registeredFile(ref: FileRef | string, key: string): FileContent {
  const content = typeof ref === "string" ? undefined : FILES.get(ref.sha256);
  if (content === undefined) {
    throw new EnvironmentOptionsError(
      key,
      `${typeof ref === "string" ? ref : ref.path} was not loaded (the trainer, eval:run and api:serve load an environment's files before building it)`,
    );
  }
  return content;
}

/**
 * What a module exports as `name` or as its default: an ES module's, or a CommonJS one's seen
 * through Node's interop (`default` is then `module.exports`). The first candidate `fits`
 * accepts; else the first one there is (for the error message), else undefined.
 */
export function exported(exports: unknown, name: string, fits: (value: unknown) => boolean): unknown {
  const at = (value: unknown, key: string) =>
    typeof value === "object" && value !== null ? (value as Record<string, unknown>)[key] : undefined;
  const defaults = at(exports, "default");
  const candidates = [at(exports, name), defaults, at(defaults, name), at(defaults, "default")].filter(
    (c) => c !== undefined && c !== null,
  );
  return candidates.find(fits) ?? candidates[0];
}
