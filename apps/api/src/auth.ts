/**
 * Bearer-key authentication. Keys are never stored: the server knows only sha256(key) in hex,
 * from a JSON file (TROUPE_API_KEYS_FILE: [{id, sha256, ratePerMinute?}]) or an environment
 * variable (TROUPE_API_KEY_HASHES: the same JSON, or comma-separated hex digests).
 *
 * A request's key is hashed (Web Crypto, so the same code runs on Node and Workers) and looked up
 * in a Map by digest; a key that matched once is then found without hashing (`keyAuth`). Comparing
 * digests rather than keys means a timing difference could at most reveal a prefix of sha256(key),
 * which says nothing usable about any valid key.
 */
import type { MiddlewareHandler } from "hono";
import { z } from "zod";
import { ApiError } from "./errors.ts";

export const ApiKeySchema = z.strictObject({
  /** Names the key in logs and rate-limit buckets (never the key itself). */
  id: z.string().min(1).max(128),
  sha256: z
    .string()
    .regex(/^[0-9a-f]{64}$/, "must be the sha256 of the key as 64 lowercase hex digits")
    .describe("sha256 of the key"),
  /** Overrides the server's default rate limit for this key. */
  ratePerMinute: z.number().positive().optional(),
});
export type ApiKey = z.infer<typeof ApiKeySchema>;
export const ApiKeysSchema = z.array(ApiKeySchema);

/** Who made a request: the key's id (or "anonymous" when auth is off) and its rate. */
export interface Caller {
  readonly id: string;
  readonly ratePerMinute?: number;
}

declare module "hono" {
  interface ContextVariableMap {
    /** Set by `authenticate`. */
    caller: Caller;
  }
}

export interface Authenticator {
  /** The caller of a request with this Authorization header; throws a 401 ApiError otherwise. */
  authenticate(authorization: string | undefined): Promise<Caller>;
}

/** Auth switched off (local development on a loopback address): every caller is "anonymous". */
export const noAuth: Authenticator = { authenticate: async () => ({ id: "anonymous" }) };

/** Middleware: the request's caller (`c.get("caller")`), or a 401 from the authenticator. */
export function authenticate(auth: Authenticator): MiddlewareHandler {
  return async (c, next) => {
    c.set("caller", await auth.authenticate(c.req.header("authorization")));
    await next();
  };
}

export async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Keys must be non-trivial: at most this long (longer headers are refused before hashing). */
const MAX_KEY_LENGTH = 512;

/** Known keys whose caller is remembered (beyond it the least recently used one is hashed again). */
export const KNOWN_KEY_CACHE_SIZE = 1024;

/**
 * Authenticates against the key digests. A key seen before is not hashed again: its caller is
 * remembered per key (in this process's memory only, where the key already passed through), for
 * at most `KNOWN_KEY_CACHE_SIZE` known keys. Unknown keys are never remembered, so a flood of
 * made-up keys cannot push the real ones out.
 */
export function keyAuth(keys: readonly ApiKey[]): Authenticator {
  const byDigest = new Map(keys.map((k) => [k.sha256, k]));
  const known = new Map<string, Caller>();
  return {
    async authenticate(authorization) {
      if (!authorization) throw new ApiError(401, "unauthorized", "missing Authorization: Bearer <key>");
      const match = /^Bearer[ ]+(\S+)\s*$/i.exec(authorization);
      if (!match || match[1]!.length > MAX_KEY_LENGTH) {
        throw new ApiError(401, "unauthorized", "the Authorization header must be 'Bearer <key>'");
      }
      const presented = match[1]!;
      const remembered = known.get(presented);
      if (remembered !== undefined) {
        known.delete(presented); // re-inserted: Map order is the LRU order
        known.set(presented, remembered);
        return remembered;
      }
      const key = byDigest.get(await sha256Hex(presented));
      if (!key) throw new ApiError(401, "unauthorized", "unknown API key");
      const caller: Caller = {
        id: key.id,
        ...(key.ratePerMinute !== undefined ? { ratePerMinute: key.ratePerMinute } : {}),
      };
      if (known.size >= KNOWN_KEY_CACHE_SIZE) known.delete(known.keys().next().value!);
      known.set(presented, caller);
      return caller;
    },
  };
}

/**
 * Parses a keys document: a JSON array of {id, sha256, ratePerMinute?}, or (for environment
 * variables) comma-separated hex digests, whose ids are "key-" + the digest's first 8 digits.
 * `where` names the source in errors.
 */
export function parseApiKeys(text: string, where: string): ApiKey[] {
  const trimmed = text.trim();
  if (trimmed === "") return [];
  let value: unknown;
  if (trimmed.startsWith("[")) {
    try {
      value = JSON.parse(trimmed);
    } catch (error) {
      throw new Error(`${where}: not valid JSON: ${(error as Error).message}`);
    }
  } else {
    value = trimmed
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s !== "")
      .map((digest) => ({ id: `key-${digest.slice(0, 8)}`, sha256: digest }));
  }
  const parsed = ApiKeysSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const at = issue.path.length ? issue.path.join(".") : "(root)";
    throw new Error(`${where}: ${at}: ${issue.message}`);
  }
  const ids = new Set<string>();
  for (const key of parsed.data) {
    if (ids.has(key.id)) throw new Error(`${where}: duplicate key id "${key.id}"`);
    ids.add(key.id);
  }
  return parsed.data;
}
