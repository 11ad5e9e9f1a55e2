/**
 * ObjectStore over any S3-compatible server: AWS S3, Cloudflare R2, MinIO, Ceph's RADOS gateway.
 *
 * - Custom endpoints use path-style addressing (`http://host/bucket/key`), which those servers all
 *   accept without wildcard DNS.
 * - putIfAbsent is PutObject with `If-None-Match: *`; the server answers 412 when the key exists.
 * - Retries are ours, not the SDK's (the client gets maxAttempts 1): full-jitter backoff (retry.ts)
 *   on 5xx, 429, throttling codes (SlowDown…), timeouts and dropped connections; never on other
 *   4xx. Owning the loop lets putIfAbsent resolve the one ambiguous case the SDK cannot: a create
 *   that reached the server but whose answer was lost, so the retry sees 412 for our own object.
 *   Then we read the object back: the same bytes mean our earlier attempt won.
 * - Bodies are checked against Content-Length, so a connection cut mid-body is a retried error
 *   and never a short object handed to the caller.
 * - The SDK's default CRC32 request checksums (aws-chunked trailers) are turned off: Ceph, R2 and
 *   older MinIO reject or mangle them; integrity is the manifests' sha256 (run-store.ts).
 */
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  type ListObjectsV2CommandOutput,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { z } from "zod";
import {
  checkFolderPrefix,
  checkKey,
  joinKey,
  type ObjectInfo,
  ObjectNotFoundError,
  type ObjectStore,
} from "./object-store.ts";
import { errorMessage, type RetryOptions, withRetry } from "./retry.ts";
import { firstLine, type StoreCheckOptions, StoreError } from "./store-check.ts";

export const S3StoreOptionsSchema = z.object({
  bucket: z.string().regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, "not a valid S3 bucket name"),
  /** Key prefix inside the bucket, without leading or trailing "/"; "" for the bucket root. */
  prefix: z.string().default(""),
  /** e.g. http://127.0.0.1:7481 (Ceph), https://<account>.r2.cloudflarestorage.com; AWS when absent. */
  endpoint: z.string().url().optional(),
  region: z
    .string()
    .min(1)
    .default(process.env.AWS_REGION ?? "us-east-1"),
  /** Path-style URLs; defaults to true when an endpoint is given. */
  forcePathStyle: z.boolean().optional(),
  /** Static keys; when absent the SDK's default chain (AWS_ACCESS_KEY_ID/…, profiles) applies. */
  credentials: z
    .object({
      accessKeyId: z.string().min(1),
      secretAccessKey: z.string().min(1),
      sessionToken: z.string().optional(),
    })
    .optional(),
  /** Attempts per operation, the first included. */
  maxAttempts: z.number().int().min(1).default(6),
  /** First backoff window (ms); doubles every retry up to maxDelayMs. */
  baseDelayMs: z.number().min(0).default(50),
  maxDelayMs: z.number().min(0).default(2000),
  /** A request with no response progress for this long is abandoned and retried. */
  requestTimeoutMs: z.number().int().min(1).default(30_000),
  connectionTimeoutMs: z.number().int().min(1).default(5_000),
  /** Bodies at least this big are uploaded in parts (lib-storage); S3's minimum part is 5 MiB. */
  multipartThresholdBytes: z
    .number()
    .int()
    .min(5 * 2 ** 20)
    .default(16 * 2 ** 20),
  partSizeBytes: z
    .number()
    .int()
    .min(5 * 2 ** 20)
    .default(8 * 2 ** 20),
  /** Create the bucket on first use when it does not exist (handy for local servers and tests). */
  createBucket: z.boolean().default(false),
});
export type S3StoreOptions = z.input<typeof S3StoreOptionsSchema>;
type ResolvedOptions = z.output<typeof S3StoreOptionsSchema>;

/** S3 error codes that mean "slow down / try later" whatever the status. */
const THROTTLING_CODES = new Set([
  "SlowDown",
  "Throttling",
  "ThrottlingException",
  "TooManyRequestsException",
  "RequestThrottled",
  "RequestTimeout",
  "RequestTimeoutException",
  "ServiceUnavailable",
  "InternalError",
]);
/** Socket-level failures: the request may or may not have reached the server. */
const NETWORK_CODES = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "EPIPE",
  "ETIMEDOUT",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ECONNABORTED",
  "ERR_STREAM_PREMATURE_CLOSE",
  "UND_ERR_SOCKET",
]);
const NETWORK_MESSAGE = /socket hang up|ECONNRESET|aborted|premature close|terminated|other side closed/i;

export class TruncatedResponseError extends Error {
  constructor(key: string, expected: number, got: number) {
    super(`GET ${key}: body has ${got} bytes, Content-Length said ${expected}`);
    this.name = "TruncatedResponseError";
  }
}

/** Which failures are worth another attempt (see the header comment). */
export function isRetryableS3Error(error: unknown): boolean {
  if (error instanceof TruncatedResponseError) return true;
  const e = error as {
    name?: string;
    code?: string;
    message?: string;
    $metadata?: { httpStatusCode?: number };
    $retryable?: unknown;
  } | null;
  if (!e || typeof e !== "object") return false;
  if (e.name && THROTTLING_CODES.has(e.name)) return true;
  const status = e.$metadata?.httpStatusCode;
  if (typeof status === "number" && status >= 300) return status >= 500 || status === 429 || status === 408;
  // No error status: the response never arrived whole (timeout, reset, truncated XML of a 200).
  if (e.name === "TimeoutError" || e.name === "RequestTimeout") return true;
  if (e.code && NETWORK_CODES.has(e.code)) return true;
  if (typeof status === "number" && status < 300) return true; // 2xx whose body failed to parse
  return NETWORK_MESSAGE.test(e.message ?? "");
}

function statusOf(error: unknown): number | undefined {
  return (error as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;
}

export class S3Store implements ObjectStore {
  readonly uri: string;
  readonly client: S3Client;
  private readonly options: ResolvedOptions;
  private readonly retry: RetryOptions;
  private bucketReady: Promise<void> | undefined;

  constructor(options: S3StoreOptions) {
    const parsed = S3StoreOptionsSchema.safeParse(options);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new Error(`S3Store options: ${issue.path.join(".") || "(root)"}: ${issue.message}`);
    }
    this.options = { ...parsed.data, prefix: parsed.data.prefix.replace(/^\/+|\/+$/g, "") };
    const o = this.options;
    this.uri = `s3://${o.bucket}${o.prefix ? `/${o.prefix}` : ""}`;
    this.retry = { maxAttempts: o.maxAttempts, baseDelayMs: o.baseDelayMs, maxDelayMs: o.maxDelayMs };
    this.client = new S3Client({
      region: o.region,
      ...(o.endpoint ? { endpoint: o.endpoint } : {}),
      forcePathStyle: o.forcePathStyle ?? o.endpoint !== undefined,
      ...(o.credentials ? { credentials: o.credentials } : {}),
      maxAttempts: 1,
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
      requestHandler: {
        requestTimeout: o.requestTimeoutMs,
        connectionTimeout: o.connectionTimeoutMs,
        // Without this the SDK only logs a warning when requestTimeout passes and keeps waiting.
        throwOnRequestTimeout: true,
      },
    });
  }

  private fullKey(key: string): string {
    return joinKey(this.options.prefix, checkKey(key));
  }

  private run<T>(
    operation: string,
    op: (attempt: number) => Promise<T>,
    retryable: (error: unknown) => boolean = isRetryableS3Error,
  ): Promise<T> {
    return withRetry(`${this.uri}: ${operation}`, op, retryable, this.retry);
  }

  /** Creates the bucket once when `createBucket` is set. */
  private ensureBucket(): Promise<void> {
    if (!this.options.createBucket) return Promise.resolve();
    this.bucketReady ??= this.run("create bucket", async () => {
      const Bucket = this.options.bucket;
      try {
        await this.client.send(new HeadBucketCommand({ Bucket }));
      } catch (error) {
        if (statusOf(error) !== 404) throw error;
        try {
          await this.client.send(new CreateBucketCommand({ Bucket }));
        } catch (createError) {
          const name = (createError as { name?: string }).name;
          if (name !== "BucketAlreadyOwnedByYou" && statusOf(createError) !== 409) throw createError;
        }
      }
    }).catch((error) => {
      this.bucketReady = undefined;
      throw error;
    });
    return this.bucketReady;
  }

  /**
   * The store can hold runs: credentials are found (the SDK's chain: AWS_ACCESS_KEY_ID…, profiles),
   * and — with `write` (default) — a probe object is written and deleted, else one is looked up,
   * which proves the endpoint, the bucket and the keys. Throws StoreError naming the store.
   */
  async check(options: StoreCheckOptions = {}): Promise<void> {
    try {
      const credentials = await this.client.config.credentials();
      if (!credentials?.accessKeyId) throw new Error("no access key");
    } catch {
      throw new StoreError(
        this.uri,
        "no S3 credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)",
      );
    }
    const probe = `.troupe-probe/${Date.now()}-${Math.random().toString(36).slice(2, 10)}`;
    try {
      if (options.write ?? true) {
        await this.put(probe, new TextEncoder().encode("troupe store check\n"));
        await this.delete(probe);
      } else {
        await this.head(probe);
      }
    } catch (error) {
      const status = statusOf(error instanceof Error && error.cause ? error.cause : error);
      const why =
        status === 403
          ? "access denied (403): the credentials may not write to this bucket and prefix"
          : status === 404
            ? "no such bucket (404)"
            : firstLine(errorMessage(error));
      throw new StoreError(this.uri, why);
    }
  }

  async get(key: string): Promise<Uint8Array> {
    await this.ensureBucket();
    const Key = this.fullKey(key);
    return this.run(`GET ${key}`, async () => {
      try {
        const response = await this.client.send(new GetObjectCommand({ Bucket: this.options.bucket, Key }));
        const body = await response.Body!.transformToByteArray();
        if (response.ContentLength !== undefined && body.byteLength !== response.ContentLength) {
          throw new TruncatedResponseError(key, response.ContentLength, body.byteLength);
        }
        return body;
      } catch (error) {
        const name = (error as { name?: string }).name;
        if (name === "NoSuchKey" || statusOf(error) === 404) throw new ObjectNotFoundError(key, this.uri);
        throw error;
      }
    });
  }

  async put(key: string, body: Uint8Array): Promise<void> {
    await this.ensureBucket();
    const Key = this.fullKey(key);
    const Bucket = this.options.bucket;
    await this.run(`PUT ${key}`, async () => {
      if (body.byteLength < this.options.multipartThresholdBytes) {
        await this.client.send(new PutObjectCommand({ Bucket, Key, Body: body }));
        return;
      }
      // Large bodies: parts uploaded in parallel; a failed upload is aborted (leavePartsOnError false).
      const upload = new Upload({
        client: this.client,
        params: { Bucket, Key, Body: body },
        partSize: this.options.partSizeBytes,
        queueSize: 4,
        leavePartsOnError: false,
      });
      await upload.done();
    });
  }

  async putIfAbsent(key: string, body: Uint8Array): Promise<boolean> {
    await this.ensureBucket();
    const Key = this.fullKey(key);
    // 409 ConditionalRequestConflict (AWS): a concurrent conditional write on the key is in flight.
    const retryable = (error: unknown) => isRetryableS3Error(error) || statusOf(error) === 409;
    let ambiguous = false; // an earlier attempt failed in a way that may have created the object
    return this.run(
      `PUT-IF-ABSENT ${key}`,
      async () => {
        try {
          await this.client.send(
            new PutObjectCommand({ Bucket: this.options.bucket, Key, Body: body, IfNoneMatch: "*" }),
          );
          return true;
        } catch (error) {
          const status = statusOf(error);
          if (status === 412 || (error as { name?: string }).name === "PreconditionFailed") {
            if (!ambiguous) return false;
            const existing = await this.get(key);
            return bytesEqual(existing, body);
          }
          if (retryable(error)) ambiguous = true;
          throw error;
        }
      },
      retryable,
    );
  }

  /**
   * The pages of ListObjectsV2 below `prefix` (a key of this store, so below the store's own prefix
   * in the bucket), following the continuation token; with `delimiter` "/", one CommonPrefix a folder.
   */
  private async *listPages(
    operation: string,
    prefix: string,
    delimiter?: "/",
  ): AsyncGenerator<ListObjectsV2CommandOutput> {
    await this.ensureBucket();
    const Prefix = this.options.prefix ? `${this.options.prefix}/${prefix}` : prefix;
    let ContinuationToken: string | undefined;
    do {
      const page = await this.run(`${operation} ${prefix}`, () =>
        this.client.send(
          new ListObjectsV2Command({
            Bucket: this.options.bucket,
            Prefix,
            ...(delimiter === undefined ? {} : { Delimiter: delimiter }),
            ContinuationToken,
          }),
        ),
      );
      yield page;
      ContinuationToken = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (ContinuationToken);
  }

  /** A bucket key that a list returned, as a key of this store (without the store's prefix). */
  private storeKey(bucketKey: string): string {
    return this.options.prefix ? bucketKey.slice(this.options.prefix.length + 1) : bucketKey;
  }

  async list(prefix: string): Promise<ObjectInfo[]> {
    const out: ObjectInfo[] = [];
    for await (const page of this.listPages("LIST", prefix)) {
      for (const item of page.Contents ?? []) {
        if (item.Key !== undefined) out.push({ key: this.storeKey(item.Key), size: item.Size ?? 0 });
      }
    }
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  /** ListObjectsV2 with Delimiter "/": the server returns one CommonPrefix per folder. */
  async listFolders(prefix: string): Promise<string[]> {
    checkFolderPrefix(prefix);
    const out: string[] = [];
    for await (const page of this.listPages("LIST-FOLDERS", prefix, "/")) {
      for (const common of page.CommonPrefixes ?? []) {
        if (common.Prefix !== undefined) out.push(this.storeKey(common.Prefix));
      }
    }
    return out.sort();
  }

  async delete(key: string): Promise<void> {
    await this.ensureBucket();
    const Key = this.fullKey(key);
    await this.run(`DELETE ${key}`, async () => {
      try {
        await this.client.send(new DeleteObjectCommand({ Bucket: this.options.bucket, Key }));
      } catch (error) {
        if (statusOf(error) !== 404) throw error;
      }
    });
  }

  async head(key: string): Promise<ObjectInfo | undefined> {
    await this.ensureBucket();
    const Key = this.fullKey(key);
    return this.run(`HEAD ${key}`, async () => {
      try {
        const r = await this.client.send(new HeadObjectCommand({ Bucket: this.options.bucket, Key }));
        return { key, size: r.ContentLength ?? 0 };
      } catch (error) {
        if (statusOf(error) === 404 || (error as { name?: string }).name === "NotFound") return undefined;
        throw error;
      }
    });
  }

  close(): void {
    this.client.destroy();
  }
}

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
}
