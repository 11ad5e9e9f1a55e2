/**
 * The one storage interface every backend implements: a flat map from keys ("a/b/c.json") to
 * immutable byte blobs. Deliberately small — what S3, R2, Ceph and a local folder all do the same
 * way — so the run layout and commit protocol above it (run-store.ts) are written once.
 *
 * Keys use "/" as separator, never start with "/", and never contain "." or ".." segments.
 */

export interface ObjectInfo {
  readonly key: string;
  readonly size: number;
}

export interface ObjectStore {
  /** Human-readable location, e.g. `file:///tmp/runs` or `s3://bucket/prefix`. */
  readonly uri: string;
  /** The object's bytes; throws `ObjectNotFoundError` when there is none. */
  get(key: string): Promise<Uint8Array>;
  /** Creates or atomically replaces the object: a reader sees the old bytes or the new, never a mix. */
  put(key: string, body: Uint8Array): Promise<void>;
  /**
   * Conditional create: writes the object only when the key is free. Returns true when this call
   * created it, false when an object already existed (which is left untouched). Of any number of
   * concurrent callers on one key, exactly one gets true.
   */
  putIfAbsent(key: string, body: Uint8Array): Promise<boolean>;
  /** Objects whose key starts with `prefix`, sorted by key. */
  list(prefix: string): Promise<ObjectInfo[]>;
  /** Removes the object; removing a missing object is not an error. */
  delete(key: string): Promise<void>;
  /** Size of the object, or undefined when there is none. */
  head(key: string): Promise<ObjectInfo | undefined>;
}

export class ObjectNotFoundError extends Error {
  constructor(
    readonly key: string,
    readonly store: string,
  ) {
    super(`${store}: no object at "${key}"`);
    this.name = "ObjectNotFoundError";
  }
}

/** Rejects keys that could escape a folder or mean different things on different backends. */
export function checkKey(key: string): string {
  if (key.length === 0) throw new Error("object key is empty");
  if (key.startsWith("/")) throw new Error(`object key "${key}" starts with "/"`);
  if (key.includes("\\") || key.includes("\0")) throw new Error(`object key "${key}" has "\\" or NUL`);
  for (const segment of key.split("/")) {
    if (segment === "" || segment === "." || segment === "..") {
      throw new Error(`object key "${key}" has an empty, "." or ".." segment`);
    }
  }
  return key;
}

/** Joins key parts with "/", ignoring empty parts (e.g. an empty store prefix). */
export function joinKey(...parts: string[]): string {
  return parts.filter((p) => p.length > 0).join("/");
}
