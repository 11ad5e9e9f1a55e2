/**
 * The team registry: published teams as immutable, numbered versions in an ObjectStore, plus
 * movable aliases. Layout in layout.ts; each part a module of its own: versions.ts (which versions
 * exist, one version's manifest), aliases.ts (aliases and refs), publish.ts (the commit protocol
 * that publishes a version), team-files.ts (artifacts read back, verified). `createTeamRegistry`
 * binds them to one store, and to the check of a resolved team's environment.
 *
 * "@troupe/storage" is the runtime-neutral core (no node: module), so this module runs unchanged
 * on Workers.
 */
import type { ObjectStore } from "@troupe/storage";
import {
  type AliasHistoryEntry,
  aliasHistory,
  aliasNames,
  readAlias,
  resolveRef,
  rollbackAlias,
  setAlias,
} from "./aliases.ts";
import { MANIFEST_FILE, parseVersionKey, TEAMS_PREFIX } from "./layout.ts";
import type { TeamManifest } from "./manifest.ts";
import { type PublishInput, publishTeam } from "./publish.ts";
import { readPolicyFiles, readTeamFile } from "./team-files.ts";
import { readManifest, versionsOf } from "./versions.ts";

export interface TeamSummary {
  readonly name: string;
  /** Published versions, ascending. */
  readonly versions: number[];
  /** Stored aliases (not the implicit `latest`) → version. */
  readonly aliases: Record<string, number>;
  readonly latest: TeamManifest;
}

export interface ListOptions {
  /** Called with a team whose manifest or aliases cannot be read; without it, list throws. */
  readonly onUnreadable?: (name: string, error: Error) => void;
}

export interface TeamRegistry {
  readonly store: ObjectStore;
  publish(input: PublishInput): Promise<TeamManifest>;
  /**
   * Every team with a readable newest manifest, by name. A team whose manifest or aliases cannot
   * be read (corrupt, truncated, wrong schema) is left out and passed to `onUnreadable`, so one
   * bad object does not hide every other team.
   */
  list(options?: ListOptions): Promise<TeamSummary[]>;
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

/** One team's summary: its versions, stored aliases and newest manifest. */
async function summarize(store: ObjectStore, name: string): Promise<TeamSummary> {
  const { published } = await versionsOf(store, name);
  const aliases: Record<string, number> = {};
  for (const alias of await aliasNames(store, name)) {
    const doc = await readAlias(store, name, alias);
    if (doc !== undefined) aliases[alias] = doc.version;
  }
  return { name, versions: published, aliases, latest: await readManifest(store, name, published.at(-1)!) };
}

/** Every published team, by name (see `TeamRegistry.list`). */
export async function listTeams(store: ObjectStore, options: ListOptions = {}): Promise<TeamSummary[]> {
  const names = new Set<string>();
  for (const { key } of await store.list(TEAMS_PREFIX)) {
    const parsed = parseVersionKey(key);
    if (parsed?.file === MANIFEST_FILE) names.add(parsed.name);
  }
  const out: TeamSummary[] = [];
  for (const name of [...names].sort()) {
    try {
      out.push(await summarize(store, name));
    } catch (error) {
      if (!options.onUnreadable) throw error;
      options.onUnreadable(name, error as Error);
    }
  }
  return out;
}

/** The manifest a ref names, its environment prepared when the registry is told how. */
export async function resolveTeam(
  store: ObjectStore,
  name: string,
  ref: string,
  options: TeamRegistryOptions = {},
): Promise<TeamManifest> {
  const manifest = await readManifest(store, name, await resolveRef(store, name, ref));
  if (options.prepareEnvironment === undefined) return manifest;
  const label = `team ${manifest.name} v${manifest.version}`;
  return { ...manifest, environment: await options.prepareEnvironment(manifest.environment, label) };
}

/** The registry's operations bound to one store. */
export function createTeamRegistry(store: ObjectStore, options: TeamRegistryOptions = {}): TeamRegistry {
  return {
    store,
    publish: (input) => publishTeam(store, input),
    list: (listOptions) => listTeams(store, listOptions),
    resolve: (name, ref = "latest") => resolveTeam(store, name, ref, options),
    setAlias: (name, alias, version) => setAlias(store, name, alias, version),
    rollbackAlias: (name, alias) => rollbackAlias(store, name, alias),
    aliasHistory: (name, alias) => aliasHistory(store, name, alias),
    readFile: (manifest, policyId, file) => readTeamFile(store, manifest, policyId, file),
    readPolicyFiles: (manifest, policyId) => readPolicyFiles(store, manifest, policyId),
  };
}
