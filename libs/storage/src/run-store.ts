/**
 * A run's storage: config, per-step sample shards, checkpoints and metrics, on any ObjectStore,
 * with the commit protocol of README "Commit protocol":
 *
 *  1. a writer picks a random attempt id and writes its data objects under keys that contain it
 *     (`steps/<step>/shards/<shardId>.<attempt>.<ext>`), so no two writers ever share a key;
 *  2. it then writes the step's `manifest.json` — key, size and sha256 of every data object — with
 *     putIfAbsent. The step is committed at that instant, by exactly one writer;
 *  3. readers only look at steps with a manifest and verify every object against it.
 *
 * Data objects of a losing or crashed attempt are orphans: never read, removable by
 * `sweepOrphans`.
 */
import { parseSample, type RolloutSample, type Sample } from "@troupe/core";
import {
  checkFileName,
  checkId,
  checkpointFolder,
  checkpointsPrefix,
  configKey,
  MANIFEST,
  metricsJsonlKey,
  metricsKey,
  metricsPrefix,
  runRoot,
  STEP_DIGITS,
  stepFolder,
  stepsPrefix,
} from "./layout.ts";
import {
  encodeManifest,
  IntegrityError,
  type Manifest,
  type ManifestEntry,
  manifestEntry,
  newAttemptId,
  newManifest,
  parseManifest,
  readVerified,
} from "./manifest.ts";
import { ObjectNotFoundError, type ObjectStore } from "./object-store.ts";
import { DEFAULT_SHARD_FORMAT, decodeShard, encodeShard, type ShardFormat } from "./shard-format.ts";

export interface RunStoreOptions {
  /** Encoding of new shards; readers take the format from each shard's extension. */
  readonly shardFormat?: ShardFormat;
}

export interface StepCommit {
  /** True when this call committed the step; false when another writer already had. */
  readonly committed: boolean;
  readonly manifest: Manifest;
}

export interface StepData {
  readonly step: number;
  readonly manifest: Manifest;
  /** Shard id → its Samples, in manifest order. */
  readonly shards: ReadonlyMap<string, Sample[]>;
}

/**
 * A commit another writer had already made: two processes are writing one run (the same run id
 * started twice). The stored run is the other's; the process that lost stops (`mustCommit`).
 */
export class RunConflictError extends Error {
  override readonly name = "RunConflictError";
}

/**
 * The commit, or a RunConflictError naming `what` (e.g. "step 3") when another writer committed it
 * first: a writer that went on after losing would mix its state with the stored one's.
 */
export function mustCommit(commit: StepCommit, runId: string, what: string): StepCommit {
  if (!commit.committed) {
    throw new RunConflictError(
      `run ${runId}: ${what} was committed by another process writing this run (the same run id started twice); ` +
        "this one stops and the run goes on in the other",
    );
  }
  return commit;
}

/** Data written, manifest not yet: `commit()` writes it (putIfAbsent), committing the thing. */
export interface StagedCommit {
  commit(): Promise<StepCommit>;
}

/** What `RunStore.verify` read: manifests by kind, and the objects (and their bytes) it checked. */
export interface VerifyReport {
  readonly steps: number;
  readonly checkpoints: number;
  readonly rollouts: number;
  readonly objects: number;
  readonly bytes: number;
}

/**
 * Distinct attempt ids among the data keys of one folder: a step's shards
 * (`<folder>/shards/<shardId>.<attempt>.<ext>`) or a checkpoint's files (`<folder>/<attempt>/<file>`).
 */
function attemptsIn(folder: string, keys: readonly string[]): Set<string> {
  const attempts = new Set<string>();
  for (const key of keys) {
    const rest = key.slice(folder.length + 1);
    if (rest === MANIFEST) continue;
    const shard = /^shards\/.*\.([0-9a-f]+)\.(parquet|jsonl\.gz)$/.exec(rest);
    attempts.add(shard ? shard[1]! : rest.split("/")[0]!);
  }
  return attempts;
}

export type MetricValue = number | string | boolean | null;
export interface MetricsRow {
  readonly step: number;
  readonly source: string;
  readonly metrics: Readonly<Record<string, MetricValue>>;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const json = (value: unknown) => encoder.encode(`${JSON.stringify(value)}\n`);

export function shardExtension(format: ShardFormat): string {
  return format === "parquet" ? "parquet" : "jsonl.gz";
}
function formatOfKey(key: string): ShardFormat {
  if (key.endsWith(".parquet")) return "parquet";
  if (key.endsWith(".jsonl.gz")) return "jsonl.gz";
  throw new IntegrityError(key, "unknown shard extension");
}

/** Encodes samples (a step's, or a rollout worker's) as a shard: its bytes + manifest entry, ready to put. */
export async function prepareShard(
  samples: readonly RolloutSample[],
  relativeKey: string,
  format: ShardFormat,
): Promise<{ bytes: Uint8Array; entry: ManifestEntry }> {
  const bytes = encodeShard(samples, format);
  return { bytes, entry: await manifestEntry(relativeKey, bytes) };
}

export async function readShardEntry<T extends RolloutSample>(
  store: ObjectStore,
  folder: string,
  entry: ManifestEntry,
  parse: (row: unknown, where: string) => T,
): Promise<T[]> {
  const bytes = await readVerified(store, folder, entry);
  return decodeShard(bytes, formatOfKey(entry.key), `${folder}/${entry.key}`, parse);
}

/** Writes the manifest with putIfAbsent; returns whether we won, and the manifest that is now there. */
export async function commitManifest(
  store: ObjectStore,
  folder: string,
  manifest: Manifest,
): Promise<StepCommit> {
  const key = `${folder}/${MANIFEST}`;
  if (await store.putIfAbsent(key, encodeManifest(manifest))) return { committed: true, manifest };
  return { committed: false, manifest: parseManifest(await store.get(key), key) };
}

export class RunStore {
  readonly shardFormat: ShardFormat;

  constructor(
    readonly store: ObjectStore,
    readonly runId: string,
    options: RunStoreOptions = {},
  ) {
    checkId("runId", runId);
    this.shardFormat = options.shardFormat ?? DEFAULT_SHARD_FORMAT;
  }

  // ------------------------------------------------------------ config

  /** Writes the run's config once; writing a different config to an existing run is an error. */
  async writeConfig(config: unknown): Promise<void> {
    const bytes = encoder.encode(`${JSON.stringify(config, null, 2)}\n`);
    if (await this.store.putIfAbsent(configKey(this.runId), bytes)) return;
    const existing = await this.store.get(configKey(this.runId));
    if (decoder.decode(existing) !== decoder.decode(bytes)) {
      throw new Error(`run ${this.runId} already exists with a different config (${configKey(this.runId)})`);
    }
  }

  /** Replaces the run's config: a resume that extends the run (more steps) records its new length. */
  async replaceConfig(config: unknown): Promise<void> {
    await this.store.put(configKey(this.runId), encoder.encode(`${JSON.stringify(config, null, 2)}\n`));
  }

  async readConfig(): Promise<unknown> {
    return JSON.parse(decoder.decode(await this.store.get(configKey(this.runId))));
  }

  // ------------------------------------------------------------ steps

  /**
   * Writes a step's shards (shard id → Samples) and commits the step. Exactly one of any number
   * of concurrent callers for the same step gets `committed: true`; the others get the winner's
   * manifest back. `meta` lands in the manifest (e.g. the rollout shards this step consumed).
   */
  async commitStep(
    step: number,
    shards: ReadonlyMap<string, readonly Sample[]> | Readonly<Record<string, readonly Sample[]>>,
    meta: Record<string, unknown> = {},
  ): Promise<StepCommit> {
    return (await this.stageStep(step, shards, meta)).commit();
  }

  /**
   * The first half of `commitStep`: writes the step's shards (invisible until committed) and
   * returns `commit()`, which writes the manifest. Lets a caller write several things' data
   * concurrently and still put the manifests in the order it wants (the step's last).
   */
  async stageStep(
    step: number,
    shards: ReadonlyMap<string, readonly Sample[]> | Readonly<Record<string, readonly Sample[]>>,
    meta: Record<string, unknown> = {},
  ): Promise<StagedCommit> {
    const folder = stepFolder(this.runId, step);
    if (await this.store.head(`${folder}/${MANIFEST}`)) {
      // Already committed: don't write orphans for nothing.
      const manifest = await this.readStepManifest(step);
      return { commit: async () => ({ committed: false, manifest }) };
    }
    const attempt = newAttemptId();
    const pairs = shards instanceof Map ? [...shards] : Object.entries(shards);
    const entries = await Promise.all(
      pairs.map(async ([shardId, samples]) => {
        checkId("shardId", shardId);
        const relativeKey = `shards/${shardId}.${attempt}.${shardExtension(this.shardFormat)}`;
        const { bytes, entry } = await prepareShard(samples, relativeKey, this.shardFormat);
        await this.store.put(`${folder}/${relativeKey}`, bytes);
        return entry;
      }),
    );
    const manifest = newManifest("step", attempt, entries, { ...meta, step, runId: this.runId });
    return { commit: () => commitManifest(this.store, folder, manifest) };
  }

  /** Steps with a manifest, ascending. */
  async committedSteps(): Promise<number[]> {
    return this.stepsWithManifest(stepsPrefix(this.runId));
  }

  /** The steps `<prefix><step>/manifest.json` lists, ascending: the committed ones of that folder. */
  private async stepsWithManifest(prefix: string): Promise<number[]> {
    const steps: number[] = [];
    for (const { key } of await this.store.list(prefix)) {
      const rest = key.slice(prefix.length);
      if (rest.length === STEP_DIGITS + 1 + MANIFEST.length && rest.endsWith(`/${MANIFEST}`)) {
        steps.push(Number(rest.slice(0, STEP_DIGITS)));
      }
    }
    return steps;
  }

  /** The highest committed step, or undefined when none is. Uncommitted steps are ignored. */
  async latestCommittedStep(): Promise<number | undefined> {
    return (await this.committedSteps()).at(-1);
  }

  async readStepManifest(step: number): Promise<Manifest> {
    const key = `${stepFolder(this.runId, step)}/${MANIFEST}`;
    try {
      return parseManifest(await this.store.get(key), key);
    } catch (error) {
      if (error instanceof ObjectNotFoundError)
        throw new Error(`run ${this.runId}: step ${step} is not committed`);
      throw error;
    }
  }

  /** Reads a committed step, verifying size and sha256 of every shard; errors name the object. */
  async readStep(step: number): Promise<StepData> {
    const manifest = await this.readStepManifest(step);
    const folder = stepFolder(this.runId, step);
    const shards = new Map<string, Sample[]>();
    for (const entry of manifest.objects) {
      const shardId = entry.key.slice("shards/".length, entry.key.lastIndexOf(`.${manifest.attempt}.`));
      shards.set(shardId, await readShardEntry(this.store, folder, entry, parseSample));
    }
    return { step, manifest, shards };
  }

  /**
   * Reads every object the run's manifests vouch for and checks its size and sha256 against them:
   * each committed step's shards, each committed checkpoint's files (both at steps ≤ `upToStep`
   * when given) and each committed rollout shard. A mismatch or a missing object is an
   * IntegrityError naming the object's key. Resume, eval and publish call it before they trust a
   * run: they themselves read only checkpoints, so a damaged shard would otherwise go unnoticed.
   */
  async verify(options: { upToStep?: number } = {}): Promise<VerifyReport> {
    const upTo = options.upToStep ?? Number.POSITIVE_INFINITY;
    const root = `${runRoot(this.runId)}/`;
    const report = { steps: 0, checkpoints: 0, rollouts: 0, objects: 0, bytes: 0 };
    for (const { key } of await this.store.list(root)) {
      if (!key.endsWith(`/${MANIFEST}`)) continue;
      const parts = key.slice(root.length).split("/");
      const digits = (text: string | undefined) =>
        text !== undefined && text.length === STEP_DIGITS && /^\d+$/.test(text) ? Number(text) : undefined;
      let kind: "steps" | "checkpoints" | "rollouts" | undefined;
      if (parts.length === 3 && parts[0] === "steps" && digits(parts[1]) !== undefined) {
        if (digits(parts[1])! > upTo) continue;
        kind = "steps";
      } else if (parts.length === 4 && parts[0] === "checkpoints" && digits(parts[2]) !== undefined) {
        if (digits(parts[2])! > upTo) continue;
        kind = "checkpoints";
      } else if (parts.length === 4 && parts[0] === "rollouts" && digits(parts[1]) !== undefined) {
        kind = "rollouts";
      }
      if (kind === undefined) continue;
      const folder = key.slice(0, -(MANIFEST.length + 1));
      const manifest = parseManifest(await this.store.get(key), key);
      for (const entry of manifest.objects) {
        try {
          report.bytes += (await readVerified(this.store, folder, entry)).byteLength;
        } catch (error) {
          if (error instanceof ObjectNotFoundError) {
            throw new IntegrityError(`${folder}/${entry.key}`, `missing, but ${key} lists it`);
          }
          throw error;
        }
        report.objects++;
      }
      report[kind]++;
    }
    return report;
  }

  /**
   * Deletes what attempts that never committed left behind, for a writer that resumes the run as
   * its only writer (the trainer in mode all or learner; rollout workers write elsewhere):
   *  - in committed steps and checkpoints, data objects their manifest does not list (a losing or
   *    killed attempt's; `sweepOrphans`);
   *  - every step folder without a manifest, and everything of the steps after the newest
   *    committed one: their checkpoints (manifest first, so a checkpoint is never half there) and
   *    their metrics. A resume redoes those steps from scratch.
   * Returns the deleted keys.
   */
  async sweepUncommitted(): Promise<string[]> {
    const committed = await this.committedSteps();
    const latest = committed.at(-1) ?? -1;
    const isCommitted = new Set(committed);
    const removed: string[] = [];
    const remove = async (keys: readonly string[]) => {
      for (const key of keys) await this.store.delete(key);
      removed.push(...keys);
    };
    // Steps: group the listing by step folder.
    const stepsRoot = stepsPrefix(this.runId);
    const stepKeys = new Map<number, string[]>();
    for (const { key } of await this.store.list(stepsRoot)) {
      const step = Number(key.slice(stepsRoot.length, stepsRoot.length + STEP_DIGITS));
      if (Number.isInteger(step)) stepKeys.set(step, [...(stepKeys.get(step) ?? []), key]);
    }
    for (const [step, keys] of stepKeys) {
      if (!isCommitted.has(step)) await remove(keys);
      else if (attemptsIn(stepFolder(this.runId, step), keys).size > 1)
        removed.push(...(await this.sweepOrphans(step)));
    }
    // Checkpoints: <policy>/<step>/<attempt>/<file> and <policy>/<step>/manifest.json.
    const checkpointsRoot = `${runRoot(this.runId)}/checkpoints/`;
    const folders = new Map<string, string[]>();
    for (const { key } of await this.store.list(checkpointsRoot)) {
      const [policyId, stepText] = key.slice(checkpointsRoot.length).split("/");
      if (policyId === undefined || stepText?.length !== STEP_DIGITS) continue;
      const folder = `${checkpointsRoot}${policyId}/${stepText}`;
      folders.set(folder, [...(folders.get(folder) ?? []), key]);
    }
    for (const [folder, keys] of folders) {
      const manifestKey = `${folder}/${MANIFEST}`;
      const step = Number(folder.slice(-STEP_DIGITS));
      if (step > latest || !keys.includes(manifestKey)) {
        // After the newest committed step, or never committed: all of it, the manifest first.
        await remove(keys.filter((k) => k === manifestKey));
        await remove(keys.filter((k) => k !== manifestKey));
      } else if (attemptsIn(folder, keys).size > 1) {
        const manifest = parseManifest(await this.store.get(manifestKey), manifestKey);
        const keep = new Set([manifestKey, ...manifest.objects.map((o) => `${folder}/${o.key}`)]);
        await remove(keys.filter((k) => !keep.has(k)));
      }
    }
    // Metrics of steps after the newest committed one (their rows are rewritten when redone).
    const metricsRoot = metricsPrefix(this.runId);
    await remove(
      (await this.store.list(metricsRoot))
        .map(({ key }) => key)
        .filter((key) => Number(key.slice(metricsRoot.length, metricsRoot.length + STEP_DIGITS)) > latest),
    );
    return removed;
  }

  /** Deletes data objects of a step that its manifest does not list (losing/crashed attempts). */
  async sweepOrphans(step: number): Promise<string[]> {
    const folder = stepFolder(this.runId, step);
    const manifest = await this.readStepManifest(step);
    const keep = new Set([MANIFEST, ...manifest.objects.map((o) => o.key)]);
    const removed: string[] = [];
    for (const { key } of await this.store.list(`${folder}/`)) {
      if (!keep.has(key.slice(folder.length + 1))) {
        await this.store.delete(key);
        removed.push(key);
      }
    }
    return removed;
  }

  // ------------------------------------------------------------ checkpoints

  /**
   * Writes a policy's checkpoint files (whatever the engine's `save` returned) and commits them
   * with a manifest, like a step. Returns whether this call committed.
   */
  async writeCheckpoint(
    policyId: string,
    step: number,
    files: Readonly<Record<string, Uint8Array>>,
  ): Promise<StepCommit> {
    return (await this.stageCheckpoint(policyId, step, files)).commit();
  }

  /** The first half of `writeCheckpoint`: the files (written concurrently), then `commit()` writes the manifest. */
  async stageCheckpoint(
    policyId: string,
    step: number,
    files: Readonly<Record<string, Uint8Array>>,
  ): Promise<StagedCommit> {
    const folder = checkpointFolder(this.runId, policyId, step);
    const attempt = newAttemptId();
    const entries = await Promise.all(
      Object.keys(files)
        .sort()
        .map(async (name) => {
          const relativeKey = `${attempt}/${checkFileName(name)}`;
          const bytes = files[name]!;
          const [entry] = await Promise.all([
            manifestEntry(relativeKey, bytes),
            this.store.put(`${folder}/${relativeKey}`, bytes),
          ]);
          return entry;
        }),
    );
    const manifest = newManifest("checkpoint", attempt, entries, { runId: this.runId, policyId, step });
    return { commit: () => commitManifest(this.store, folder, manifest) };
  }

  /** Steps with a committed checkpoint of this policy, ascending. */
  async checkpointSteps(policyId: string): Promise<number[]> {
    return this.stepsWithManifest(checkpointsPrefix(this.runId, policyId));
  }

  /**
   * Checkpoint retention. Once step `newest` is committed, the checkpoints a resume can still
   * need are those of `newest` itself; older ones are kept only every `keepEvery` steps —
   * those with (step + 1) % keepEvery === 0, i.e. after keepEvery, 2·keepEvery, … steps — and
   * the rest are deleted, together with the leftovers of crashed attempts (checkpoint folders
   * without a manifest) of steps before `newest`.
   *
   * Safe at any crash point: it refuses to run unless step `newest` is committed, leaves alone
   * every policy that has no committed checkpoint at `newest`, and deletes a checkpoint's
   * manifest before its files, so an interrupted prune leaves an uncommitted (invisible) folder,
   * never a committed checkpoint with missing files. Returns the deleted keys.
   */
  async pruneCheckpoints(newest: number, options: { keepEvery: number }): Promise<string[]> {
    const { keepEvery } = options;
    if (!Number.isInteger(keepEvery) || keepEvery < 1) {
      throw new Error(`pruneCheckpoints: keepEvery must be an integer ≥ 1, got ${keepEvery}`);
    }
    if (!(await this.store.head(`${stepFolder(this.runId, newest)}/${MANIFEST}`))) {
      throw new Error(`run ${this.runId}: pruneCheckpoints(${newest}): step ${newest} is not committed`);
    }
    const prefix = `${runRoot(this.runId)}/checkpoints/`;
    // policyId → step → keys of that checkpoint folder.
    const folders = new Map<string, Map<number, string[]>>();
    for (const { key } of await this.store.list(prefix)) {
      const [policyId, stepText] = key.slice(prefix.length).split("/");
      if (policyId === undefined || stepText?.length !== STEP_DIGITS) continue;
      const byStep = folders.get(policyId) ?? new Map<number, string[]>();
      folders.set(policyId, byStep);
      const step = Number(stepText);
      byStep.set(step, [...(byStep.get(step) ?? []), key]);
    }
    const removed: string[] = [];
    for (const [policyId, byStep] of folders) {
      const manifestOf = (step: number) => `${checkpointFolder(this.runId, policyId, step)}/${MANIFEST}`;
      if (!byStep.get(newest)?.includes(manifestOf(newest))) continue;
      for (const [step, keys] of byStep) {
        const committed = keys.includes(manifestOf(step));
        if (step >= newest || (committed && (step + 1) % keepEvery === 0)) continue;
        // The manifest goes first: from then on the checkpoint is uncommitted, whatever happens.
        if (committed) await this.store.delete(manifestOf(step));
        const files = keys.filter((k) => k !== manifestOf(step));
        await Promise.all(files.map((key) => this.store.delete(key)));
        removed.push(...(committed ? [manifestOf(step)] : []), ...files);
      }
    }
    return removed;
  }

  /** A committed checkpoint's files, each verified against the manifest (errors name the file). */
  async readCheckpoint(policyId: string, step: number): Promise<Record<string, Uint8Array>> {
    const folder = checkpointFolder(this.runId, policyId, step);
    const key = `${folder}/${MANIFEST}`;
    let manifest: Manifest;
    try {
      manifest = parseManifest(await this.store.get(key), key);
    } catch (error) {
      if (error instanceof ObjectNotFoundError) {
        throw new Error(`run ${this.runId}: no committed checkpoint of ${policyId} at step ${step}`);
      }
      throw error;
    }
    const files: Record<string, Uint8Array> = {};
    for (const entry of manifest.objects) {
      files[entry.key.slice(manifest.attempt.length + 1)] = await readVerified(this.store, folder, entry);
    }
    return files;
  }

  // ------------------------------------------------------------ metrics

  /**
   * Records one step's metrics from one source ("learner", "eval", …). Object stores cannot
   * append, so each (step, source) is its own small object; writing it again replaces it (a
   * resumed step overwrites the metrics of its crashed attempt). `readMetrics` merges them.
   */
  async writeMetrics(step: number, metrics: Record<string, MetricValue>, source = "learner"): Promise<void> {
    for (const [name, value] of Object.entries(metrics)) {
      if (typeof value === "number" && !Number.isFinite(value)) {
        throw new Error(`metrics of step ${step}: ${name} is ${value}; JSON cannot carry it`);
      }
    }
    await this.store.put(metricsKey(this.runId, step, source), json({ step, source, metrics }));
  }

  /** All metric rows ordered by (step, source); with `committedOnly`, only rows of committed steps. */
  async readMetrics(options: { committedOnly?: boolean } = {}): Promise<MetricsRow[]> {
    const committed = options.committedOnly ? new Set(await this.committedSteps()) : undefined;
    const rows: MetricsRow[] = [];
    for (const { key } of await this.store.list(metricsPrefix(this.runId))) {
      const step = Number(
        key.slice(metricsPrefix(this.runId).length, metricsPrefix(this.runId).length + STEP_DIGITS),
      );
      if (committed && !committed.has(step)) continue;
      let row: MetricsRow;
      try {
        row = JSON.parse(decoder.decode(await this.store.get(key))) as MetricsRow;
      } catch (error) {
        if (error instanceof ObjectNotFoundError) continue;
        throw new IntegrityError(key, "metrics object is not valid JSON");
      }
      rows.push(row);
    }
    return rows;
  }

  /** Materialises the merged metrics as `runs/<runId>/metrics.jsonl` (one row a line) and returns it. */
  async writeMetricsJsonl(options: { committedOnly?: boolean } = {}): Promise<string> {
    const text = (await this.readMetrics(options)).map((row) => `${JSON.stringify(row)}\n`).join("");
    await this.store.put(metricsJsonlKey(this.runId), encoder.encode(text));
    return text;
  }
}
