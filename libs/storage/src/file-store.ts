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
import {
  link,
  mkdir,
  open,
  readdir,
  readFile,
  realpath,
  rename,
  stat,
  statfs,
  unlink,
} from "node:fs/promises";
import { basename, dirname, join, relative, sep } from "node:path";
import { pathToFileURL } from "node:url";
import {
  checkFolderPrefix,
  checkKey,
  type ObjectInfo,
  ObjectNotFoundError,
  type ObjectStore,
} from "./object-store.ts";
import { type StoreCheckOptions, StoreError } from "./store-check.ts";

const TMP_DIR = ".troupe-tmp";

/** statfs types of kernel file systems, where no run can live (and where mkdir can misbehave). */
const KERNEL_FILE_SYSTEMS: ReadonlyMap<number, string> = new Map([
  [0x9fa0, "proc"],
  [0x62656572, "sysfs"],
  [0x27e0eb, "cgroup"],
  [0x63677270, "cgroup2"],
  [0x64626720, "debugfs"],
  [0x74726163, "tracefs"],
  [0x73636673, "securityfs"],
  [0xcafe4a11, "bpf"],
]);
const KERNEL_PATHS = ["/proc", "/sys"];

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

  /**
   * The folder can hold runs: it is not on a kernel file system (/proc, /sys…), it is a folder and
   * no part of its path is a file, and — with `write` (default) — it exists or is made now, one
   * level at a time (never Node's recursive mkdir, which does not settle under /proc), and a probe
   * file can be written in it and removed. Throws StoreError naming the store and the reason.
   */
  async check(options: StoreCheckOptions = {}): Promise<void> {
    const write = options.write ?? true;
    const fail = (detail: string) => new StoreError(this.uri, detail);
    // The deepest part of the path that exists, and the folders below it still to make.
    let existing = this.root;
    const missing: string[] = [];
    for (;;) {
      try {
        const info = await stat(existing);
        if (!info.isDirectory()) {
          throw fail(
            existing === this.root ? "is a file, not a folder" : `${existing} is a file, not a folder`,
          );
        }
        break;
      } catch (error) {
        if (error instanceof StoreError) throw error;
        if (!isCode(error, "ENOENT") && !isCode(error, "ENOTDIR")) throw fail(describeFsError(error));
        if (dirname(existing) === existing) throw fail("no part of the path exists");
        missing.unshift(basename(existing));
        existing = dirname(existing);
      }
    }
    const real = await realpath(existing).catch(() => existing);
    const kernelPath = KERNEL_PATHS.find((p) => real === p || real.startsWith(`${p}/`));
    const type = KERNEL_FILE_SYSTEMS.get(Number((await statfs(existing).catch(() => undefined))?.type));
    if (kernelPath !== undefined || type !== undefined) {
      throw fail(
        `${real} is on ${type ?? kernelPath!.slice(1)}, a kernel file system: runs cannot be stored there`,
      );
    }
    if (!write) {
      if (missing.length > 0) throw fail("the folder does not exist");
      return;
    }
    let folder = existing;
    for (const part of missing) {
      folder = join(folder, part);
      try {
        await mkdir(folder);
      } catch (error) {
        if (!isCode(error, "EEXIST"))
          throw fail(`cannot make the folder ${folder}: ${describeFsError(error)}`);
      }
    }
    try {
      await unlink(await this.writeTempRetry(new TextEncoder().encode("troupe store check\n")));
    } catch (error) {
      throw fail(`cannot write into the folder: ${describeFsError(error)}`);
    }
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
    const entries = await noFolderAsEmpty(readdir(folder, { recursive: true }));
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
    const entries = await noFolderAsEmpty(readdir(folder, { withFileTypes: true }));
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

/** A folder's listing, or none where the folder is missing or a file (ENOENT, ENOTDIR): no objects. */
async function noFolderAsEmpty<T>(listing: Promise<T[]>): Promise<T[]> {
  try {
    return await listing;
  } catch (error) {
    if (isCode(error, "ENOENT") || isCode(error, "ENOTDIR")) return [];
    throw error;
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

/** "EACCES (permission denied)"-style text of a file-system error, without its paths. */
function describeFsError(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  const reasons: Record<string, string> = {
    EACCES: "permission denied",
    EPERM: "operation not permitted",
    EROFS: "read-only file system",
    ENOSPC: "no space left on the device",
    ENOTDIR: "a part of the path is a file",
    EEXIST: "a file is in the way",
  };
  if (typeof code === "string") return reasons[code] ? `${reasons[code]} (${code})` : code;
  return (error as Error)?.message ?? String(error);
}

function isCode(error: unknown, code: string): boolean {
  return (error as { code?: unknown } | null)?.code === code;
}
