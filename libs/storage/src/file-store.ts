/**
 * ObjectStore over a local folder. Each key is a file under the root.
 *
 * - put: the bytes go to a temporary file (fsynced), which is then renamed over the key. rename(2)
 *   is atomic within a file system, so a reader sees the old file or the new one, never half of it.
 * - putIfAbsent: the complete temporary file is hard-linked to the key. link(2) fails with EEXIST
 *   when the name is taken, atomically, so of two writers exactly one wins — and, unlike opening
 *   with O_EXCL ("wx") and then writing, nobody can ever read a created-but-not-yet-filled object.
 *
 * Temporary files live in `<root>/.troupe-tmp/` (same file system as the keys, so rename/link
 * work) and are never listed; keys may not start with that segment.
 */
import { randomBytes } from "node:crypto";
import type { Dirent } from "node:fs";
import { link, mkdir, open, readdir, readFile, rename, stat, unlink } from "node:fs/promises";
import { dirname, join, relative, sep } from "node:path";
import { pathToFileURL } from "node:url";
import {
  checkFolderPrefix,
  checkKey,
  type ObjectInfo,
  ObjectNotFoundError,
  type ObjectStore,
} from "./object-store.ts";

const TMP_DIR = ".troupe-tmp";

export class FileStore implements ObjectStore {
  readonly uri: string;

  constructor(readonly root: string) {
    this.uri = pathToFileURL(root).href;
  }

  private path(key: string): string {
    checkKey(key);
    if (key === TMP_DIR || key.startsWith(`${TMP_DIR}/`)) throw new Error(`object key "${key}" is reserved`);
    return join(this.root, ...key.split("/"));
  }

  async get(key: string): Promise<Uint8Array> {
    try {
      return new Uint8Array(await readFile(this.path(key)));
    } catch (error) {
      if (isCode(error, "ENOENT") || isCode(error, "EISDIR")) throw new ObjectNotFoundError(key, this.uri);
      throw error;
    }
  }

  private tmpDirReady: Promise<unknown> | undefined;

  /** Writes the bytes to a fresh, fsynced temporary file and returns its path. */
  private async writeTemp(body: Uint8Array): Promise<string> {
    const dir = join(this.root, TMP_DIR);
    // Created once per store object (and again if it was removed meanwhile, see put/putIfAbsent).
    this.tmpDirReady ??= mkdir(dir, { recursive: true });
    await this.tmpDirReady;
    const tmp = join(dir, `${Date.now()}-${randomBytes(8).toString("hex")}`);
    const handle = await open(tmp, "wx");
    try {
      await handle.writeFile(body);
      await handle.sync();
    } finally {
      await handle.close();
    }
    return tmp;
  }

  /**
   * The key's folder and the temporary file are made concurrently: every await costs a turn of
   * the event loop, and a turn can take long when the main thread is busy (e.g. a synchronous
   * ONNX run), so writes that overlap computation should take as few turns as they can.
   */
  private async prepare(target: string, body: Uint8Array): Promise<string> {
    const [, tmp] = await Promise.all([
      mkdir(dirname(target), { recursive: true }),
      this.writeTempRetry(body),
    ]);
    return tmp;
  }

  private async writeTempRetry(body: Uint8Array): Promise<string> {
    try {
      return await this.writeTemp(body);
    } catch (error) {
      if (!isCode(error, "ENOENT")) throw error;
      this.tmpDirReady = undefined; // the temp folder was removed under us: make it again
      return this.writeTemp(body);
    }
  }

  async put(key: string, body: Uint8Array): Promise<void> {
    const target = this.path(key);
    const tmp = await this.prepare(target, body);
    try {
      await rename(tmp, target);
    } catch (error) {
      await unlink(tmp).catch(() => {});
      throw error;
    }
  }

  async putIfAbsent(key: string, body: Uint8Array): Promise<boolean> {
    const target = this.path(key);
    const tmp = await this.prepare(target, body);
    try {
      await link(tmp, target);
      return true;
    } catch (error) {
      if (isCode(error, "EEXIST")) return false;
      throw error;
    } finally {
      await unlink(tmp).catch(() => {});
    }
  }

  async list(prefix: string): Promise<ObjectInfo[]> {
    // Walk only the deepest folder the prefix names, then filter by the full prefix.
    const folderPart = prefix.includes("/") ? prefix.slice(0, prefix.lastIndexOf("/")) : "";
    const folder = folderPart ? this.path(folderPart) : this.root;
    let entries: string[];
    try {
      entries = await readdir(folder, { recursive: true });
    } catch (error) {
      if (isCode(error, "ENOENT") || isCode(error, "ENOTDIR")) return [];
      throw error;
    }
    const keys = entries
      .map((entry) => relative(this.root, join(folder, entry)).split(sep).join("/"))
      .filter((key) => key.startsWith(prefix) && key !== TMP_DIR && !key.startsWith(`${TMP_DIR}/`));
    // All stats at once (one event-loop turn, not one per entry).
    const infos = await Promise.all(keys.map((key) => stat(join(this.root, key)).catch(() => undefined)));
    const out: ObjectInfo[] = [];
    keys.forEach((key, i) => {
      const info = infos[i]; // undefined: deleted meanwhile
      if (info?.isFile()) out.push({ key, size: info.size });
    });
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  /**
   * Sub-folders of the prefix's folder that hold at least one file somewhere below them (deleting
   * objects leaves empty folders behind, which S3 would not list).
   */
  async listFolders(prefix: string): Promise<string[]> {
    checkFolderPrefix(prefix);
    const folder = prefix === "" ? this.root : this.path(prefix.slice(0, -1));
    let entries: Dirent[];
    try {
      entries = await readdir(folder, { withFileTypes: true });
    } catch (error) {
      if (isCode(error, "ENOENT") || isCode(error, "ENOTDIR")) return [];
      throw error;
    }
    const out: string[] = [];
    for (const entry of entries) {
      if (!entry.isDirectory() || (prefix === "" && entry.name === TMP_DIR)) continue;
      if (await holdsFile(join(folder, entry.name))) out.push(`${prefix}${entry.name}/`);
    }
    return out.sort();
  }

  async delete(key: string): Promise<void> {
    try {
      await unlink(this.path(key));
    } catch (error) {
      if (!isCode(error, "ENOENT")) throw error;
    }
  }

  async head(key: string): Promise<ObjectInfo | undefined> {
    try {
      const info = await stat(this.path(key));
      return info.isFile() ? { key, size: info.size } : undefined;
    } catch (error) {
      if (isCode(error, "ENOENT")) return undefined;
      throw error;
    }
  }
}

/** Whether a folder has a file anywhere below it (stops at the first one). */
async function holdsFile(folder: string): Promise<boolean> {
  const entries = await readdir(folder, { withFileTypes: true }).catch(() => [] as Dirent[]);
  for (const entry of entries) if (entry.isFile()) return true;
  for (const entry of entries)
    if (entry.isDirectory() && (await holdsFile(join(folder, entry.name)))) return true;
  return false;
}

function isCode(error: unknown, code: string): boolean {
  return (error as { code?: unknown } | null)?.code === code;
}
