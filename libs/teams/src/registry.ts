/**
 * The team registry: published teams as immutable, numbered versions in an ObjectStore, plus
 * movable aliases. Layout in layout.ts.
 *
 * Publishing follows @troupe/storage's commit protocol (manifest.ts), with the team manifest as
 * the manifest:
 *  1. claim the version: `claim.json` with putIfAbsent — of two publishers only one gets a version
 *     number, the other moves on to the next one (or, when it asked for that exact version, is
 *     refused). The claim plays the part of a run's attempt id: no two publishers share a key;
 *  2. write the artifacts (each policy's files) under the version's folder;
 *  3. write `manifest.json` LAST with putIfAbsent. The version is visible from that instant, never
 *     before, and is never rewritten. A publisher that dies in step 2 leaves a claimed version
 *     without a manifest: readers never see it, and later versions skip its number.
 * Readers verify every artifact's size and sha256 against the manifest (storage's verifyBytes);
 * a mismatch or a missing artifact is storage's IntegrityError naming the object.
 *
 * `latest` is implicit: the highest version with a manifest. Other aliases (`stable`, …) are small
 * JSON objects with their history; `rollbackAlias` steps back one entry. Alias writes are
 * last-writer-wins (an ObjectStore has no compare-and-swap on replace).
 *
 * "@troupe/storage" is the runtime-neutral core (no node: module), so this module runs unchanged
 * on Workers.
 */
import {
  decodeJson,
  getIfPresent,
  IntegrityError,
  type ObjectInfo,
  type ObjectStore,
  sha256Hex,
  verifyBytes,
} from "@troupe/storage";
import { z } from "zod";
import {
  aliasesPrefix,
  aliasKey,
  artifactKey,
  claimKey,
  MANIFEST_FILE,
  manifestKey,
  parseVersionKey,
  TEAMS_PREFIX,
  versionsPrefix,
} from "./layout.ts";
import {
  decodeTeamManifest,
  type EvalSummary,
  encodeTeamManifest,
  type OnnxGraphInfo,
  parseTeamManifest,
  type ServedSampling,
  TEAM_MANIFEST_SCHEMA_VERSION,
  type TeamManifest,
  TeamNameSchema,
} from "./manifest.ts";

export interface PublishPolicyInput {
  /** The policy's files: config.json, model.safetensors, tokenizer files, model.onnx (optional). */
  readonly files: Readonly<Record<string, Uint8Array>>;
  readonly model: string;
  readonly parameters: number;
  readonly sampling: ServedSampling;
  readonly onnx?: OnnxGraphInfo | undefined;
}

export interface PublishInput {
  readonly name: string;
  readonly environment: TeamManifest["environment"];
  readonly team: TeamManifest["team"];
  readonly roles: TeamManifest["roles"];
  readonly policies: Readonly<Record<string, PublishPolicyInput>>;
  readonly eval?: EvalSummary | undefined;
  readonly source: TeamManifest["source"];
  /** Take exactly this version; refused with `PublishConflictError` when it is taken. Default: the next free one. */
  readonly version?: number | undefined;
  /** Point this alias at the new version once it is published. */
  readonly alias?: string | undefined;
}

export interface TeamSummary {
  readonly name: string;
  /** Published versions, ascending. */
  readonly versions: number[];
  /** Stored aliases (not the implicit `latest`) → version. */
  readonly aliases: Record<string, number>;
  readonly latest: TeamManifest;
}

export interface AliasHistoryEntry {
  readonly version: number;
  readonly at: string;
}

export interface TeamRegistry {
  readonly store: ObjectStore;
  publish(input: PublishInput): Promise<TeamManifest>;
  /**
   * Every team with a readable newest manifest, by name. A team whose manifest or aliases cannot
   * be read (corrupt, truncated, wrong schema) is left out and passed to `onUnreadable`, so one
   * bad object does not hide every other team.
   */
  list(options?: { readonly onUnreadable?: (name: string, error: Error) => void }): Promise<TeamSummary[]>;
  /** ref: "latest" (default, highest version), any alias, "v3" or "3". Unknown → TeamNotFoundError naming it. */
  resolve(name: string, ref?: string): Promise<TeamManifest>;
  setAlias(name: string, alias: string, version: number): Promise<void>;
  /** Moves the alias back to its previous version and returns that version. */
  rollbackAlias(name: string, alias: string): Promise<number>;
  /** An alias's versions, oldest first; the last entry is the current one. */
  aliasHistory(name: string, alias: string): Promise<AliasHistoryEntry[]>;
  /** One artifact's bytes, verified against the manifest (size and sha256). */
  readFile(manifest: TeamManifest, policyId: string, file: string): Promise<Uint8Array>;
  /** Every file of one policy, each verified. */
  readPolicyFiles(manifest: TeamManifest, policyId: string): Promise<Record<string, Uint8Array>>;
}

export class TeamNotFoundError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TeamNotFoundError";
  }
}

/** Two publishers wanted the same version; the one that asked for it explicitly is refused. */
export class PublishConflictError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PublishConflictError";
  }
}

const AliasNameSchema = z
  .string()
  .regex(
    /^[a-z][a-z0-9._-]{0,63}$/,
    "an alias is 1–64 characters of a-z, 0-9, '.', '_', '-', starting with a letter",
  )
  .refine((a) => a !== "latest", '"latest" is implicit (the highest version) and cannot be set')
  .refine((a) => !/^v\d+$/.test(a), "an alias cannot look like a version (v3)");

const AliasDocSchema = z.strictObject({
  schemaVersion: z.literal(1),
  alias: z.string(),
  version: z.number().int().min(1),
  history: z.array(z.strictObject({ version: z.number().int().min(1), at: z.string() })).min(1),
});
type AliasDoc = z.infer<typeof AliasDocSchema>;

/** Attempts at claiming the next free version before giving up (each loss means another publisher won one). */
const MAX_CLAIM_ATTEMPTS = 32;

const utf8 = new TextEncoder();
const json = (value: unknown) => utf8.encode(`${JSON.stringify(value, null, 2)}\n`);

function checkName(name: string): string {
  const parsed = TeamNameSchema.safeParse(name);
  if (!parsed.success) throw new TeamNotFoundError(`team "${name}": ${parsed.error.issues[0]!.message}`);
  return name;
}

function checkAlias(alias: string): string {
  const parsed = AliasNameSchema.safeParse(alias);
  if (!parsed.success) throw new Error(`alias "${alias}": ${parsed.error.issues[0]!.message}`);
  return alias;
}

export interface TeamRegistryOptions {
  /**
   * Loads the files a resolved team's environment reads (its own module, a data file's tasks and
   * reward) and checks their recorded hashes, before the team is served: Node's is
   * `prepareEnvironment` of `@troupe/envs/module`. It throws UnsupportedTeamError when it cannot.
   */
  readonly prepareEnvironment?: (
    environment: TeamManifest["environment"],
    label: string,
  ) => Promise<TeamManifest["environment"]>;
}

export function createTeamRegistry(store: ObjectStore, options: TeamRegistryOptions = {}): TeamRegistry {
  /** Versions with a manifest, and every taken (claimed or published) version number. */
  async function versionsOf(name: string): Promise<{ published: number[]; highestTaken: number }> {
    const published: number[] = [];
    let highestTaken = 0;
    for (const { key } of await store.list(versionsPrefix(name))) {
      const parsed = parseVersionKey(key);
      if (parsed === undefined || parsed.name !== name) continue;
      highestTaken = Math.max(highestTaken, parsed.version);
      if (parsed.file === MANIFEST_FILE) published.push(parsed.version);
    }
    return { published: published.sort((a, b) => a - b), highestTaken };
  }

  async function readManifest(name: string, version: number): Promise<TeamManifest> {
    const key = manifestKey(name, version);
    const bytes = await getIfPresent(store, key);
    if (bytes === undefined) throw new TeamNotFoundError(`team "${name}" has no version ${version}`);
    const manifest = decodeTeamManifest(bytes, key);
    if (manifest.name !== name || manifest.version !== version) {
      throw new IntegrityError(
        key,
        `the manifest says ${manifest.name} v${manifest.version}, its key says ${name} v${version}`,
      );
    }
    return manifest;
  }

  async function readAlias(name: string, alias: string): Promise<AliasDoc | undefined> {
    const key = aliasKey(name, alias);
    const bytes = await getIfPresent(store, key);
    return bytes && decodeJson(bytes, key, "alias", AliasDocSchema);
  }

  async function aliasNames(name: string): Promise<string[]> {
    const prefix = aliasesPrefix(name);
    return (await store.list(prefix))
      .map((o: ObjectInfo) => o.key.slice(prefix.length))
      .filter((rest) => rest.endsWith(".json") && !rest.includes("/"))
      .map((rest) => rest.slice(0, -".json".length));
  }

  async function resolveVersion(name: string, ref: string): Promise<number> {
    const { published } = await versionsOf(checkName(name));
    if (published.length === 0) throw new TeamNotFoundError(`team "${name}" not found`);
    if (ref === "latest") return published.at(-1)!;
    const numeric = /^v?(\d+)$/.exec(ref);
    if (numeric) {
      const version = Number(numeric[1]);
      if (!published.includes(version)) {
        throw new TeamNotFoundError(
          `team "${name}" has no version ${version} (versions: ${published.join(", ")})`,
        );
      }
      return version;
    }
    const doc = AliasNameSchema.safeParse(ref).success ? await readAlias(name, ref) : undefined;
    if (doc === undefined) {
      const known = await aliasNames(name);
      throw new TeamNotFoundError(
        `team "${name}" has no alias "${ref}" (aliases: latest${known.map((a) => `, ${a}`).join("")})`,
      );
    }
    return doc.version;
  }

  async function writeAlias(name: string, alias: string, version: number, history: AliasHistoryEntry[]) {
    const doc: AliasDoc = { schemaVersion: 1, alias, version, history };
    await store.put(aliasKey(name, alias), json(doc));
  }

  async function setAlias(name: string, alias: string, version: number): Promise<void> {
    checkAlias(alias);
    await readManifest(checkName(name), version); // the version must exist
    const doc = await readAlias(name, alias);
    if (doc?.version === version) return;
    await writeAlias(name, alias, version, [
      ...(doc?.history ?? []),
      { version, at: new Date().toISOString() },
    ]);
  }

  async function readFile(manifest: TeamManifest, policyId: string, file: string): Promise<Uint8Array> {
    const policy = manifest.policies[policyId];
    if (policy === undefined) {
      throw new TeamNotFoundError(
        `team "${manifest.name}" v${manifest.version} has no policy "${policyId}" (policies: ${Object.keys(manifest.policies).join(", ")})`,
      );
    }
    const entry = policy.files[file];
    if (entry === undefined) {
      throw new TeamNotFoundError(
        `team "${manifest.name}" v${manifest.version}, policy "${policyId}" has no file "${file}" (files: ${Object.keys(policy.files).sort().join(", ")})`,
      );
    }
    const key = artifactKey(manifest.name, manifest.version, policyId, file);
    const bytes = await getIfPresent(store, key);
    if (bytes === undefined) throw new IntegrityError(key, "missing (the manifest lists it)");
    return verifyBytes(key, bytes, { size: entry.bytes, sha256: entry.sha256 });
  }

  return {
    store,

    async publish(input: PublishInput): Promise<TeamManifest> {
      checkName(input.name);
      if (input.alias !== undefined) checkAlias(input.alias);
      const policies: TeamManifest["policies"] = {};
      for (const [policyId, p] of Object.entries(input.policies)) {
        const files: Record<string, { sha256: string; bytes: number }> = {};
        for (const [file, bytes] of Object.entries(p.files)) {
          files[file] = { sha256: await sha256Hex(bytes), bytes: bytes.byteLength };
        }
        policies[policyId] = {
          files,
          model: p.model,
          parameters: p.parameters,
          sampling: p.sampling,
          ...(p.onnx !== undefined ? { onnx: p.onnx } : {}),
        };
      }
      const draft = (version: number): TeamManifest =>
        parseTeamManifest(
          {
            schemaVersion: TEAM_MANIFEST_SCHEMA_VERSION,
            name: input.name,
            version,
            createdAt: new Date().toISOString(),
            environment: input.environment,
            team: input.team,
            roles: input.roles,
            policies,
            ...(input.eval !== undefined ? { eval: input.eval } : {}),
            source: input.source,
          },
          `publish ${input.name}`,
        );
      draft(input.version ?? 1); // refuse an invalid manifest before writing anything

      let version: number | undefined;
      for (let attempt = 0; attempt < MAX_CLAIM_ATTEMPTS && version === undefined; attempt++) {
        const candidate = input.version ?? (await versionsOf(input.name)).highestTaken + 1;
        const claim = json({ name: input.name, version: candidate, claimedAt: new Date().toISOString() });
        if (await store.putIfAbsent(claimKey(input.name, candidate), claim)) version = candidate;
        else if (input.version !== undefined) {
          throw new PublishConflictError(`team "${input.name}" v${candidate} is already taken`);
        }
      }
      if (version === undefined) {
        throw new PublishConflictError(
          `team "${input.name}": lost the race for a version ${MAX_CLAIM_ATTEMPTS} times; try again`,
        );
      }
      for (const [policyId, p] of Object.entries(input.policies)) {
        for (const [file, bytes] of Object.entries(p.files)) {
          await store.put(artifactKey(input.name, version, policyId, file), bytes);
        }
      }
      const manifest = draft(version);
      if (!(await store.putIfAbsent(manifestKey(input.name, version), encodeTeamManifest(manifest)))) {
        throw new PublishConflictError(`team "${input.name}" v${version}: a manifest already exists`);
      }
      if (input.alias !== undefined) await setAlias(input.name, input.alias, version);
      return manifest;
    },

    async list(options = {}): Promise<TeamSummary[]> {
      const names = new Set<string>();
      for (const { key } of await store.list(TEAMS_PREFIX)) {
        const parsed = parseVersionKey(key);
        if (parsed?.file === MANIFEST_FILE) names.add(parsed.name);
      }
      const out: TeamSummary[] = [];
      for (const name of [...names].sort()) {
        try {
          const { published } = await versionsOf(name);
          const aliases: Record<string, number> = {};
          for (const alias of await aliasNames(name)) {
            const doc = await readAlias(name, alias);
            if (doc !== undefined) aliases[alias] = doc.version;
          }
          out.push({
            name,
            versions: published,
            aliases,
            latest: await readManifest(name, published.at(-1)!),
          });
        } catch (error) {
          if (!options.onUnreadable) throw error;
          options.onUnreadable(name, error as Error);
        }
      }
      return out;
    },

    async resolve(name: string, ref = "latest"): Promise<TeamManifest> {
      const manifest = await readManifest(name, await resolveVersion(name, ref));
      if (options.prepareEnvironment === undefined) return manifest;
      const label = `team ${manifest.name} v${manifest.version}`;
      return { ...manifest, environment: await options.prepareEnvironment(manifest.environment, label) };
    },

    setAlias,

    async rollbackAlias(name: string, alias: string): Promise<number> {
      checkAlias(alias);
      const doc = await readAlias(checkName(name), alias);
      if (doc === undefined) throw new TeamNotFoundError(`team "${name}" has no alias "${alias}"`);
      if (doc.history.length < 2) {
        throw new Error(`alias "${alias}" of team "${name}" has no earlier version to roll back to`);
      }
      const history = doc.history.slice(0, -1);
      const previous = history.at(-1)!.version;
      await writeAlias(name, alias, previous, history);
      return previous;
    },

    async aliasHistory(name: string, alias: string): Promise<AliasHistoryEntry[]> {
      const doc = await readAlias(checkName(name), checkAlias(alias));
      if (doc === undefined) throw new TeamNotFoundError(`team "${name}" has no alias "${alias}"`);
      return doc.history;
    },

    readFile,

    async readPolicyFiles(manifest: TeamManifest, policyId: string): Promise<Record<string, Uint8Array>> {
      // An unknown policy: readFile throws naming the known ones.
      if (manifest.policies[policyId] === undefined) await readFile(manifest, policyId, "config.json");
      const files: Record<string, Uint8Array> = {};
      for (const file of Object.keys(manifest.policies[policyId]!.files).sort()) {
        files[file] = await readFile(manifest, policyId, file);
      }
      return files;
    },
  };
}
