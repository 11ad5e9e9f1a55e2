/**
 * Published teams, resolved and loaded once and shared by all requests.
 *
 * - resolve: name@ref → manifest, remembered for `resolveTtlMs` (default 5 s): a store round trip
 *   (a listing for "latest") is saved on every request, and a moved alias is seen within the TTL.
 * - load: (name, version) → LoadedTeam (policies built by the backend), at most `capacity` teams
 *   kept, least recently used dropped first. Versions are immutable, so a loaded team never goes
 *   stale. Concurrent first requests share one load; a failed load is forgotten (retried next time).
 */
import type { CodeRunner } from "@troupe/sandbox";
import {
  type InferenceBackend,
  type LoadedTeam,
  loadTeam,
  type TeamManifest,
  type TeamRegistry,
} from "@troupe/teams";

export const DEFAULT_TEAM_CACHE_SIZE = 8;
export const DEFAULT_RESOLVE_TTL_MS = 5_000;

export interface TeamCacheOptions {
  readonly capacity?: number;
  readonly resolveTtlMs?: number;
  readonly now?: () => number;
  /** The sandbox handed to loadTeam for code-executing environments. */
  readonly runner?: CodeRunner;
}

export class TeamCache {
  private readonly loaded = new Map<string, Promise<LoadedTeam>>();
  private readonly resolved = new Map<string, { manifest: Promise<TeamManifest>; atMs: number }>();
  private readonly capacity: number;
  private readonly resolveTtlMs: number;
  private readonly now: () => number;
  private readonly runner: CodeRunner | undefined;

  constructor(
    private readonly registry: TeamRegistry,
    private readonly backend: InferenceBackend,
    options: TeamCacheOptions = {},
  ) {
    this.capacity = options.capacity ?? DEFAULT_TEAM_CACHE_SIZE;
    this.resolveTtlMs = options.resolveTtlMs ?? DEFAULT_RESOLVE_TTL_MS;
    this.now = options.now ?? (() => Date.now());
    this.runner = options.runner;
  }

  resolve(name: string, ref = "latest"): Promise<TeamManifest> {
    const key = `${name}@${ref}`;
    const hit = this.resolved.get(key);
    if (hit && this.now() - hit.atMs < this.resolveTtlMs) return hit.manifest;
    const manifest = this.registry.resolve(name, ref);
    this.resolved.set(key, { manifest, atMs: this.now() });
    manifest.catch(() => this.resolved.delete(key)); // unknown teams are looked up again
    if (this.resolved.size > 1024) this.resolved.delete(this.resolved.keys().next().value!);
    return manifest;
  }

  load(manifest: TeamManifest): Promise<LoadedTeam> {
    const key = `${manifest.name}@${manifest.version}`;
    let team = this.loaded.get(key);
    if (team) {
      this.loaded.delete(key); // re-insert: Map order is the LRU order
    } else {
      team = loadTeam(this.registry, manifest, this.backend, { runner: this.runner });
      team.catch(() => this.loaded.delete(key));
    }
    this.loaded.set(key, team);
    while (this.loaded.size > this.capacity) this.loaded.delete(this.loaded.keys().next().value!);
    return team;
  }
}
