/**
 * Rollout shards between rollout workers and learners (asynchronous RL), on the same store:
 *
 *   runs/<runId>/rollouts/<policyVersion>/<workerId>-<seq>/<attempt>.<ext>    the Samples
 *   runs/<runId>/rollouts/<policyVersion>/<workerId>-<seq>/manifest.json      commit (putIfAbsent)
 *   runs/<runId>/rollouts/<policyVersion>/<workerId>-<seq>/claims/<consumer>.json
 *   runs/<runId>/work/<unit>/<generation>.json                                 leases (leaseWork)
 *
 * Workers: `commitShard` writes the data under a fresh attempt id, then the manifest with
 * putIfAbsent. A worker's stream (its `workerId`) numbers its shards by `seq`; whoever re-commits a
 * (version, stream, seq) that did commit gets `committed: false` and nothing committed changes.
 *
 * Learners: a stream whose seqs are the units of one learner step (the trainer's asynchronous
 * mode: stream "step-<s>", seq = task index) is read with `streamShards`, each unit's committed
 * copies freshest first, and `claimFreshest` claims one copy per unit with a putIfAbsent marker
 * `{consumer, learnerStep}` — of two learners of one consumer group, exactly one gets a shard.
 * Crash/resume, nothing lost and nothing duplicated:
 *  - a shard counts as consumed when the learner step that claimed it is committed (record the
 *    claimed shards in that step's manifest meta, `RolloutQueue.shardName`);
 *  - a learner resumes at step s = latestCommittedStep + 1, and `claimFreshest` at step s takes
 *    first the copies it had already claimed for s (its crashed attempt's claims), so an
 *    interrupted step retrains on the same shards, and no shard is claimed by two committed steps.
 * A unit's surplus copies (a takeover sampled with a newer version) are claimed with
 * `expired: true`, so the drop is recorded, not silent.
 */
import { parseRolloutSample, type RolloutSample } from "@troupe/core";
import { checkId, MANIFEST, pad, rolloutFolder, rolloutsPrefix, STEP_DIGITS, workFolder } from "./layout.ts";
import { IntegrityError, type Manifest, newAttemptId, newManifest, parseManifest } from "./manifest.ts";
import { getIfPresent, type ObjectStore } from "./object-store.ts";
import { commitManifest, prepareShard, readShardEntry, shardExtension } from "./run-store.ts";
import { DEFAULT_SHARD_FORMAT, type ShardFormat } from "./shard-format.ts";

export interface RolloutShardRef {
  readonly policyVersion: number;
  readonly workerId: string;
  readonly seq: number;
  /** Folder of the shard (its manifest, data and claims). */
  readonly folder: string;
}

export interface ClaimMarker {
  readonly consumer: string;
  readonly learnerStep: number;
  readonly expired: boolean;
}

export interface WorkLease {
  readonly workerId: string;
  /** Wall-clock ms (Date.now()) until which the lease holds. */
  readonly expiresAt: number;
}

export type ClaimResult = "claimed" | "mine" | "taken";

const FOLDER = new RegExp(
  `^(\\d{${STEP_DIGITS}})/([A-Za-z0-9_][A-Za-z0-9_.-]*)-(\\d{${STEP_DIGITS}})/${MANIFEST}$`,
);
const encoder = new TextEncoder();

export class RolloutQueue {
  readonly shardFormat: ShardFormat;

  constructor(
    readonly store: ObjectStore,
    readonly runId: string,
    options: { shardFormat?: ShardFormat } = {},
  ) {
    this.shardFormat = options.shardFormat ?? DEFAULT_SHARD_FORMAT;
  }

  ref(policyVersion: number, workerId: string, seq: number): RolloutShardRef {
    return { policyVersion, workerId, seq, folder: rolloutFolder(this.runId, policyVersion, workerId, seq) };
  }

  /** Worker side: writes and commits one shard. `committed: false` when that (version, worker, seq) already was. */
  async commitShard(input: {
    policyVersion: number;
    workerId: string;
    seq: number;
    samples: readonly RolloutSample[];
    /** Extra manifest meta, e.g. which worker process produced the shard. */
    meta?: Record<string, unknown>;
  }): Promise<{ committed: boolean; ref: RolloutShardRef; manifest: Manifest }> {
    const ref = this.ref(input.policyVersion, input.workerId, input.seq);
    input.samples.forEach((s, i) => {
      if (s.provenance.policyVersion !== input.policyVersion) {
        throw new Error(
          `rollout shard ${ref.folder}: row ${i}: provenance.policyVersion ${s.provenance.policyVersion} ≠ ${input.policyVersion}`,
        );
      }
    });
    const attempt = newAttemptId();
    const relativeKey = `${attempt}.${shardExtension(this.shardFormat)}`;
    const { bytes, entry } = await prepareShard(input.samples, relativeKey, this.shardFormat);
    await this.store.put(`${ref.folder}/${relativeKey}`, bytes);
    const result = await commitManifest(
      this.store,
      ref.folder,
      newManifest("rollout", attempt, [entry], {
        ...input.meta,
        runId: this.runId,
        policyVersion: input.policyVersion,
        workerId: input.workerId,
        seq: input.seq,
      }),
    );
    return { ...result, ref };
  }

  /** Committed shards with policyVersion ≥ minPolicyVersion, ordered by (version, worker, seq). */
  async listCommitted(options: { minPolicyVersion?: number } = {}): Promise<RolloutShardRef[]> {
    const min = options.minPolicyVersion ?? 0;
    const prefix = rolloutsPrefix(this.runId);
    const refs: RolloutShardRef[] = [];
    for (const { key } of await this.store.list(prefix)) {
      const m = FOLDER.exec(key.slice(prefix.length));
      if (!m) continue;
      const version = Number(m[1]);
      if (version >= min) refs.push(this.ref(version, m[2]!, Number(m[3])));
    }
    return refs;
  }

  /**
   * Committed shards of one stream (a `workerId`) with policyVersion ≥ minPolicyVersion, by seq in
   * ascending order; each seq's copies freshest first (the order is fixed by the store's contents, not by timing).
   */
  async streamShards(
    stream: string,
    options: { minPolicyVersion?: number } = {},
  ): Promise<Map<number, RolloutShardRef[]>> {
    checkId("workerId", stream);
    const bySeq = new Map<number, RolloutShardRef[]>();
    for (const ref of await this.listCommitted(options)) {
      if (ref.workerId === stream) bySeq.set(ref.seq, [...(bySeq.get(ref.seq) ?? []), ref]);
    }
    for (const copies of bySeq.values()) copies.sort((a, b) => b.policyVersion - a.policyVersion);
    return new Map([...bySeq].sort(([a], [b]) => a - b));
  }

  async readShardManifest(ref: RolloutShardRef): Promise<Manifest> {
    const key = `${ref.folder}/${MANIFEST}`;
    return parseManifest(await this.store.get(key), key);
  }

  /** Reads a committed shard, verified against its manifest. */
  async readShard(ref: RolloutShardRef): Promise<RolloutSample[]> {
    const key = `${ref.folder}/${MANIFEST}`;
    const manifest = await this.readShardManifest(ref);
    const entry = manifest.objects[0];
    if (!entry) throw new IntegrityError(key, "rollout manifest lists no object");
    return readShardEntry(this.store, ref.folder, entry, parseRolloutSample);
  }

  private claimKey(ref: RolloutShardRef, consumer: string): string {
    return `${ref.folder}/claims/${checkId("consumer", consumer)}.json`;
  }

  async readClaim(ref: RolloutShardRef, consumer: string): Promise<ClaimMarker | undefined> {
    const bytes = await getIfPresent(this.store, this.claimKey(ref, consumer));
    return bytes && (JSON.parse(new TextDecoder().decode(bytes)) as ClaimMarker);
  }

  /**
   * Claims a shard for `consumer` at `learnerStep`: "claimed" (now ours), "mine" (already ours for
   * this same step, e.g. before a crash) or "taken" (someone else's, or ours for another step).
   */
  async claim(
    ref: RolloutShardRef,
    consumer: string,
    learnerStep: number,
    expired = false,
  ): Promise<ClaimResult> {
    const marker: ClaimMarker = { consumer, learnerStep, expired };
    if (
      await this.store.putIfAbsent(
        this.claimKey(ref, consumer),
        encoder.encode(`${JSON.stringify(marker)}\n`),
      )
    ) {
      return "claimed";
    }
    const existing = await this.readClaim(ref, consumer);
    return existing?.learnerStep === learnerStep && !existing.expired ? "mine" : "taken";
  }

  /**
   * Learner side: one shard per unit for `learnerStep`, in unit order, from each unit's copies
   * (`streamShards`, freshest first). A unit's shard is the copy this consumer already claimed for
   * this step, if any (a crashed attempt's: the step retrains on the same shards), else the
   * freshest copy it can claim; its other copies get an `expired` claim. Throws when every copy of
   * a unit is claimed for another step.
   */
  async claimFreshest(
    units: ReadonlyMap<number, readonly RolloutShardRef[]>,
    consumer: string,
    learnerStep: number,
  ): Promise<RolloutShardRef[]> {
    const chosen: RolloutShardRef[] = [];
    for (const unit of [...units.keys()].sort((a, b) => a - b)) {
      const copies = units.get(unit)!;
      let pick: RolloutShardRef | undefined;
      for (const ref of copies) {
        const claim = await this.readClaim(ref, consumer);
        if (claim?.learnerStep === learnerStep && !claim.expired) pick ??= ref;
      }
      for (const ref of copies) {
        if (pick) break;
        if ((await this.claim(ref, consumer, learnerStep)) !== "taken") pick = ref;
      }
      if (!pick) {
        throw new Error(
          `${consumer}: every copy of unit ${unit} (${copies.map(RolloutQueue.shardName).join(", ")}) is claimed for another step than ${learnerStep}`,
        );
      }
      for (const ref of copies) if (ref !== pick) await this.claim(ref, consumer, learnerStep, true);
      chosen.push(pick);
    }
    return chosen;
  }

  /**
   * Work assignment between rollout workers: a lease on a unit of work (e.g. "task 3 of step 7"),
   * so two workers don't sample the same thing. Leases are generations of putIfAbsent markers,
   *
   *   runs/<runId>/work/<unit>/<generation>.json = {workerId, expiresAt}
   *
   * The newest generation holds the lease until `expiresAt` (wall-clock ms); after that, anyone may
   * take over by creating generation + 1, and of several takers exactly one wins. A worker that
   * was killed therefore blocks its unit for at most `leaseMs`. Clocks of different machines must
   * agree to well within `leaseMs`. A lease only avoids duplicate work: the result's own commit
   * (a shard manifest at a key fixed by the unit) decides which copy counts.
   * Returns "leased" (ours now), "mine" (already ours and unexpired) or "busy".
   */
  async leaseWork(
    unit: string,
    workerId: string,
    leaseMs: number,
    now: number = Date.now(),
  ): Promise<"leased" | "mine" | "busy"> {
    const { folder, newest, lease: current } = await this.newestLease(unit);
    if (current && current.expiresAt > now) return current.workerId === workerId ? "mine" : "busy";
    const lease: WorkLease = { workerId: checkId("workerId", workerId), expiresAt: now + leaseMs };
    const key = `${folder}${pad(newest === undefined ? 0 : newest + 1)}.json`;
    return (await this.store.putIfAbsent(key, encoder.encode(`${JSON.stringify(lease)}\n`)))
      ? "leased"
      : "busy";
  }

  /**
   * Extends `workerId`'s lease on `unit` to `now + leaseMs`, for work that outlasts one lease (a
   * long rollout on a big model). The extension is a new generation written with putIfAbsent, so
   * it races exactly like a takeover: "lost" when the lease has expired and another worker took
   * the unit (or is taking it) — the holder may still finish and commit; the learner keeps one copy.
   */
  async renewLease(
    unit: string,
    workerId: string,
    leaseMs: number,
    now: number = Date.now(),
  ): Promise<"renewed" | "lost"> {
    const { folder, newest, lease: current } = await this.newestLease(unit);
    if (newest === undefined || current?.workerId !== workerId) return "lost";
    const lease: WorkLease = { workerId, expiresAt: now + leaseMs };
    return (await this.store.putIfAbsent(
      `${folder}${pad(newest + 1)}.json`,
      encoder.encode(`${JSON.stringify(lease)}\n`),
    ))
      ? "renewed"
      : "lost";
  }

  /** The newest lease generation of a unit (leases are numbered files; the highest one holds). */
  private async newestLease(
    unit: string,
  ): Promise<{ folder: string; newest: number | undefined; lease: WorkLease | undefined }> {
    const folder = `${workFolder(this.runId)}${checkId("work unit", unit)}/`;
    const newest = (await this.store.list(folder))
      .map(({ key }) => /^(\d{8})\.json$/.exec(key.slice(folder.length))?.[1])
      .filter((g): g is string => g !== undefined)
      .map(Number)
      .sort((a, b) => a - b)
      .at(-1);
    if (newest === undefined) return { folder, newest, lease: undefined };
    const bytes = await this.store.get(`${folder}${pad(newest)}.json`);
    return { folder, newest, lease: JSON.parse(new TextDecoder().decode(bytes)) as WorkLease };
  }

  /** Key-safe name of a shard, for recording in a learner step's manifest meta. */
  static shardName(ref: RolloutShardRef): string {
    return `${pad(ref.policyVersion)}/${ref.workerId}-${pad(ref.seq)}`;
  }
}
