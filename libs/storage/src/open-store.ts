/**
 * `openStore(uri)`: the storage URI of a run folder, parsed and validated.
 *
 *   file://./.troupe             a folder, relative to the working directory (runs in runs/<id>/,
 *                                published teams in teams/<name>/)
 *   file:///var/lib/troupe       an absolute folder
 *   s3://bucket/some/prefix      a bucket and key prefix on S3 or any S3-compatible server
 *                                (endpoint, region, keys from the options or the environment:
 *                                AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID…)
 */
import { isAbsolute, resolve } from "node:path";
import { z } from "zod";
import { FileStore } from "./file-store.ts";
import type { ObjectStore } from "./object-store.ts";
import { S3Store, type S3StoreOptions } from "./s3-store.ts";
import { StoreError } from "./store-check.ts";

/** The default store: runs land in `.troupe/runs/<id>/`, teams in `.troupe/teams/<name>/`. */
export const DEFAULT_STORE_URI = "file://./.troupe";

const FileUriSchema = z
  .string()
  .regex(/^file:\/\/.+/, "a file URI needs a folder: file://./relative or file:///absolute")
  .transform((uri) => decodeURIComponent(uri.slice("file://".length)));

const S3UriSchema = z
  .string()
  .regex(/^s3:\/\/[^/]+(\/.*)?$/, "an S3 URI is s3://<bucket>[/<prefix>]")
  .transform((uri) => {
    const rest = uri.slice("s3://".length);
    const slash = rest.indexOf("/");
    const bucket = slash < 0 ? rest : rest.slice(0, slash);
    const prefix = slash < 0 ? "" : rest.slice(slash + 1).replace(/^\/+|\/+$/g, "");
    return { bucket, prefix };
  })
  .pipe(
    z.object({
      bucket: z.string().regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, "not a valid S3 bucket name"),
      prefix: z
        .string()
        .refine((p) => p === "" || !p.split("/").some((s) => s === "" || s === "." || s === ".."), {
          message: "the key prefix has an empty, '.' or '..' segment",
        }),
    }),
  );

export interface OpenStoreOptions {
  /** S3 connection settings (endpoint, region, credentials, retries…); bucket and prefix come from the URI. */
  readonly s3?: Omit<S3StoreOptions, "bucket" | "prefix">;
  /** Base folder of relative file:// URIs; the working directory by default. */
  readonly cwd?: string;
}

export function openStore(uri: string = DEFAULT_STORE_URI, options: OpenStoreOptions = {}): ObjectStore {
  if (uri.startsWith("file:")) {
    const parsed = FileUriSchema.safeParse(uri);
    if (!parsed.success) throw new StoreError(uri, parsed.error.issues[0]!.message);
    const path = parsed.data;
    return new FileStore(isAbsolute(path) ? path : resolve(options.cwd ?? process.cwd(), path));
  }
  if (uri.startsWith("s3:")) {
    const parsed = S3UriSchema.safeParse(uri);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new StoreError(uri, `${issue.path.length ? `${issue.path.join(".")}: ` : ""}${issue.message}`);
    }
    // The AWS CLI/SDK's own variable names for a custom endpoint (Ceph, MinIO, R2), so the same
    // s3:// URI works from the command line; keys come from the SDK's chain (AWS_ACCESS_KEY_ID…).
    const endpoint = process.env.AWS_ENDPOINT_URL_S3 || process.env.AWS_ENDPOINT_URL || undefined;
    try {
      return new S3Store({ ...(endpoint ? { endpoint } : {}), ...options.s3, ...parsed.data });
    } catch (error) {
      throw new StoreError(uri, (error as Error).message);
    }
  }
  throw new StoreError(uri, "unsupported scheme; expected file://<folder> or s3://<bucket>/<prefix>");
}
