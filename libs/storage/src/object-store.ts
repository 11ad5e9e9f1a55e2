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
  /**
   * The "folders" directly below `prefix` ("" or ending in "/"): every distinct
   * `prefix + segment + "/"` that some key starts with, sorted — S3's ListObjectsV2 with
   * Delimiter "/" (CommonPrefixes). Costs one entry per folder instead of one per object below
   * it. Optional: `listFolders(store, prefix)` falls back to a full `list` for stores without it.
   */
  listFolders?(prefix: string): Promise<string[]>;
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

/** The object's bytes, or undefined when there is none (one request, where head + get is two). */
export async function getIfPresent(store: ObjectStore, key: string): Promise<Uint8Array | undefined> {
  try {
    return await store.get(key);
  } catch (error) {
    if (error instanceof ObjectNotFoundError) return undefined;
    throw error;
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

/** Checks a folder prefix for `listFolders`: "" (the root) or a valid key ending in "/". */
export function checkFolderPrefix(prefix: string): string {
  if (prefix === "") return prefix;
  if (!prefix.endsWith("/")) throw new Error(`folder prefix "${prefix}" must be "" or end with "/"`);
  checkKey(prefix.slice(0, -1));
  return prefix;
}

/**
 * The folders directly below `prefix` (see `ObjectStore.listFolders`), through the store's own
 * delimiter listing when it has one, else derived from a full listing.
 */
export async function listFolders(store: ObjectStore, prefix: string): Promise<string[]> {
  checkFolderPrefix(prefix);
  if (store.listFolders) return store.listFolders(prefix);
  const folders = new Set<string>();
  for (const { key } of await store.list(prefix)) {
    const slash = key.indexOf("/", prefix.length);
    if (slash > prefix.length) folders.add(key.slice(0, slash + 1));
  }
  return [...folders].sort();
}
