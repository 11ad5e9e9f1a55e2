/**
 * ObjectStore (libs/storage) over a Cloudflare R2 bucket binding, for the Workers build: teams are
 * read — and may be published — straight from the bucket the Worker is bound to, with no S3 keys.
 *
 * - putIfAbsent is `put` with `onlyIf: { etagDoesNotMatch: "*" }` (HTTP `If-None-Match: *`): R2
 *   evaluates the condition atomically and answers `null` when the key already holds an object, so
 *   of any number of concurrent creators exactly one gets an R2Object back. That is what makes a
 *   team version's manifest immutable (libs/teams writes manifests with putIfAbsent).
 * - list pages through R2's 1000-key pages with the cursor; R2 lists keys in lexicographic order,
 *   which is the order the ObjectStore contract promises.
 * - An optional key prefix puts the store in a folder of the bucket, like S3Store's prefix.
 *
 * The binding is typed structurally below (just the methods used) rather than through
 * @cloudflare/workers-types, whose declarations are ambient globals that clash with the DOM and
 * Node types this workspace compiles against. The real `R2Bucket` satisfies this interface.
 */
import { checkKey, joinKey, type ObjectInfo, ObjectNotFoundError, type ObjectStore } from "@troupe/storage";

/** The metadata R2 returns for an object (a subset of `R2Object`). */
export interface R2ObjectMeta {
  readonly key: string;
  readonly size: number;
}

/** An object with its body (a subset of `R2ObjectBody`). */
export interface R2ObjectWithBody extends R2ObjectMeta {
  arrayBuffer(): Promise<ArrayBuffer>;
}

/** The part of the R2 bucket binding (`R2Bucket`) this store uses. */
export interface R2BucketBinding {
  get(key: string): Promise<R2ObjectWithBody | null>;
  head(key: string): Promise<R2ObjectMeta | null>;
  put(
    key: string,
    value: ArrayBuffer | ArrayBufferView,
    options?: { onlyIf?: { etagDoesNotMatch?: string } },
  ): Promise<R2ObjectMeta | null>;
  delete(keys: string | string[]): Promise<void>;
  list(options?: {
    prefix?: string;
    cursor?: string;
    limit?: number;
  }): Promise<{ objects: R2ObjectMeta[]; truncated: boolean; cursor?: string }>;
}

export interface R2StoreOptions {
  /** Key prefix inside the bucket, without leading or trailing "/"; "" (default) for the bucket root. */
  readonly prefix?: string;
  /** Shown in errors and `uri`, e.g. the binding's bucket name. Default "bucket". */
  readonly bucketName?: string;
  /** Keys per list request; R2's maximum (and default) is 1000. */
  readonly listPageSize?: number;
}

export class R2Store implements ObjectStore {
  readonly uri: string;
  private readonly prefix: string;
  private readonly listPageSize: number;

  constructor(
    private readonly bucket: R2BucketBinding,
    options: R2StoreOptions = {},
  ) {
    const prefix = options.prefix ?? "";
    if (prefix !== "") checkKey(prefix);
    this.prefix = prefix;
    this.listPageSize = options.listPageSize ?? 1000;
    if (!Number.isInteger(this.listPageSize) || this.listPageSize < 1 || this.listPageSize > 1000) {
      throw new Error(`R2Store listPageSize: ${this.listPageSize} is not an integer in [1, 1000]`);
    }
    this.uri = `r2://${joinKey(options.bucketName ?? "bucket", prefix)}`;
  }

  /** The bucket key of a store key (validated). */
  private key(key: string): string {
    return joinKey(this.prefix, checkKey(key));
  }

  async get(key: string): Promise<Uint8Array> {
    const object = await this.bucket.get(this.key(key));
    if (object === null) throw new ObjectNotFoundError(key, this.uri);
    return new Uint8Array(await object.arrayBuffer());
  }

  async put(key: string, body: Uint8Array): Promise<void> {
    // R2 replaces an object atomically: readers see the old bytes or the new ones.
    await this.bucket.put(this.key(key), plainBytes(body));
  }

  async putIfAbsent(key: string, body: Uint8Array): Promise<boolean> {
    const created = await this.bucket.put(this.key(key), plainBytes(body), {
      onlyIf: { etagDoesNotMatch: "*" },
    });
    return created !== null;
  }

  async list(prefix: string): Promise<ObjectInfo[]> {
    // The store prefix is a folder: list "<prefix>/<what was asked>" and strip "<prefix>/" again.
    const full = this.prefix === "" ? prefix : `${this.prefix}/${prefix}`;
    const strip = this.prefix === "" ? 0 : this.prefix.length + 1;
    const found: ObjectInfo[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.bucket.list({
        prefix: full,
        limit: this.listPageSize,
        ...(cursor === undefined ? {} : { cursor }),
      });
      for (const object of page.objects) found.push({ key: object.key.slice(strip), size: object.size });
      cursor = page.truncated ? page.cursor : undefined;
    } while (cursor !== undefined);
    return found;
  }

  async delete(key: string): Promise<void> {
    // R2 deletes of a missing key succeed, as the contract asks.
    await this.bucket.delete(this.key(key));
  }

  async head(key: string): Promise<ObjectInfo | undefined> {
    const object = await this.bucket.head(this.key(key));
    return object === null ? undefined : { key, size: object.size };
  }
}

/**
 * The same bytes as a plain Uint8Array (a view, no copy). A Node Buffer (what protobufjs and many
 * Node APIs return) is refused by wrangler's proxy of the binding (`getPlatformProxy`, which
 * publishes into a local bucket from Node): it serialises typed arrays by constructor name.
 */
function plainBytes(body: Uint8Array): Uint8Array {
  return body.constructor === Uint8Array
    ? body
    : new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
}
