/**
 * The server's one cache of published teams, resolved and loaded once and shared by all requests.
 *
 * - resolve: name@ref → manifest, remembered for `resolveTtlMs` (default 5 s): a store round trip
 *   (a listing for "latest") is saved on every request, and a moved alias is seen within the TTL.
 * - acquire: (name, version) → LoadedTeam (policies built by the backend), at most `capacity` teams
 *   kept, least recently used dropped first. Versions are immutable, so a loaded team never goes
 *   stale. Concurrent first requests share one load; a failed load is forgotten (retried next
 *   time). A request holds its team until it releases it: a dropped team is unloaded from the
 *   backend (its engines closed) once the last request using it has released it.
 *
 * This is the only cache of loaded teams: the backend keeps what `policies()` loaded until this
 * cache unloads it, so memory is bounded here, by `capacity`.
 */
import type { CodeRunner } from "@troupe/sandbox";
import {
  abortable,
  type InferenceBackend,
  type LoadedTeam,
  loadTeam,
  type TeamManifest,
  type TeamRegistry,
} from "@troupe/teams";

export const DEFAULT_TEAM_CACHE_SIZE = 8;
export const DEFAULT_RESOLVE_TTL_MS = 5_000;

export interface TeamCacheOptions {
  /** Loaded teams kept (0: each is unloaded when its request ends). */
  readonly capacity?: number;
  readonly resolveTtlMs?: number;
  readonly now?: () => number;
  /** The sandbox handed to loadTeam for code-executing environments. */
  readonly runner?: CodeRunner;
}

/** A loaded team held by one request; `release` (once) when the request is done with it. */
export interface TeamLease {
  readonly team: LoadedTeam;
  release(): void;
}

interface LoadedEntry {
  readonly manifest: TeamManifest;
  readonly team: Promise<LoadedTeam>;
  /** Requests holding the team: a dropped entry is unloaded when the last one releases it. */
  users: number;
  dropped: boolean;
}

export class TeamCache {
  private readonly loaded = new Map<string, LoadedEntry>();
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

  /**
   * The loaded team of this version (loaded now unless kept), held until the lease is released.
   * Aborted by `signal` while it loads: nothing is held (the load itself goes on, for the next request).
   */
  async acquire(manifest: TeamManifest, signal?: AbortSignal): Promise<TeamLease> {
    const entry = this.entryOf(manifest);
    entry.users++;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      entry.users--;
      if (entry.dropped && entry.users === 0) void this.unload(entry);
    };
    try {
      const team = await (signal ? abortable(entry.team, signal) : entry.team);
      return { team, release };
    } catch (error) {
      release();
      throw error;
    }
  }

  /** Versions kept now, least recently used first, as `name@version`. */
  keys(): string[] {
    return [...this.loaded.keys()];
  }

  /** The entry of the version, refreshed in the LRU order, or loaded; beyond capacity the oldest go. */
  private entryOf(manifest: TeamManifest): LoadedEntry {
    const key = `${manifest.name}@${manifest.version}`;
    let entry = this.loaded.get(key);
    if (entry) {
      this.loaded.delete(key); // re-insert: Map order is the LRU order
    } else {
      const team = loadTeam(this.registry, manifest, this.backend, { runner: this.runner });
      entry = { manifest, team, users: 0, dropped: false };
      const loading = entry;
      team.catch(() => {
        if (this.loaded.get(key) === loading) this.loaded.delete(key); // retried next time
      });
    }
    this.loaded.set(key, entry);
    while (this.loaded.size > this.capacity) {
      const [oldestKey, oldest] = this.loaded.entries().next().value!;
      this.loaded.delete(oldestKey);
      oldest.dropped = true;
      // The new entry itself may go (capacity 0): it is unloaded when its request releases it.
      if (oldest.users === 0 && oldest !== entry) void this.unload(oldest);
    }
    return entry;
  }

  private async unload(entry: LoadedEntry): Promise<void> {
    const loaded = await entry.team.then(
      () => true,
      () => false, // a failed load holds nothing (loadTeam let go of what it had)
    );
    if (loaded) await this.backend.unload?.(entry.manifest);
  }
}
