/**
 * ORT's CPU arena for the sessions whose shapes change from run to run (training, scoring,
 * prefill), bounded together by a byte budget.
 *
 * Why an arena: without one, each run mallocs its large tensors and frees them again, and the
 * pages come back from the kernel fresh every run. The reference training step (16 × 128 tokens)
 * took 67,000 page faults a run without it and about 100 with it, 1.2–1.6× the time. Why a
 * bound: an arena never gives memory back while its session lives (the run option that would
 * shrink it is not reachable from onnxruntime-node), so each session keeps what its largest run
 * took, and three sessions per policy (more with a KL reference engine) would each grow to the
 * budget of one run.
 *
 * The bound. A run's estimated peak `runBytes` (runtime/memory.ts, with ORT's overhead) is what
 * the memory plan gives it; an arena grows in regions of doubling size, so it may hold up to
 * `ARENA_GROWTH` times that. Every bounded session counts `heldBytes` = ARENA_GROWTH × its
 * largest run since its arena was created. A run under a budget of `limitBytes`:
 *
 *   - whose arena fits (ARENA_GROWTH · runBytes ≤ limitBytes) runs in the session's arena, after
 *     the ledger has released other idle arenas, least recently used first, until
 *     Σ heldBytes of the others + heldBytes ≤ limitBytes;
 *   - a larger one runs in a second session of the same graph without an arena (fresh memory,
 *     given back at the end, as every run was before arenas), after the ledger has released
 *     arenas (its own too) until Σ heldBytes + runBytes ≤ limitBytes.
 *
 * So the arenas and any run together stay within what one run may take, which is what the memory
 * plan gives a run. A released arena's session is created again on its next run (≈ 0.15 s for
 * the reference training graph): a bounded arena costs time only when the runs' shapes make the
 * arenas crowd each other out. The results do not change: a run computes the same numbers
 * whether its tensors come from the arena or from malloc.
 *
 * The ledger is one per process (`arenaLedger`): memory is per process, and two engines (a policy
 * and its KL reference) share it.
 */
import type { Graph } from "../graph/builder.ts";
import { GraphSession, type SessionOptions } from "./session.ts";

/** What an arena may hold over the largest run it served (its regions double as it grows). */
export const ARENA_GROWTH = 2;

export class BoundedSession {
  private arena: Promise<GraphSession> | undefined;
  private plain: Promise<GraphSession> | undefined;
  /** Estimated bytes the session's arena holds: ARENA_GROWTH × its largest run since created. */
  heldBytes = 0;
  /** Runs in progress in the arena (an arena with one is never released). */
  inFlight = 0;
  /** The ledger's clock at the last run (least recently used is released first). */
  lastUse = 0;
  /** How many times the arena session was created (tests check when a release happened). */
  created = 0;
  /** Runs that were too large for an arena and ran without one. */
  plainRuns = 0;

  constructor(
    readonly label: string,
    private readonly build: () => Graph,
    private readonly options: Omit<SessionOptions, "memoryArena"> = {},
    private readonly ledger: ArenaLedger = arenaLedger,
  ) {}

  /**
   * Runs `fn` on the session's arena session, or on its session without an arena when the run is
   * too large for one, after the ledger has made room (see the module comment).
   */
  async run<T>(runBytes: number, limitBytes: number, fn: (session: GraphSession) => Promise<T>): Promise<T> {
    if (ARENA_GROWTH * runBytes > limitBytes) {
      await this.ledger.reserveTransient(this, runBytes, limitBytes);
      this.plainRuns++;
      this.plain ??= this.create(false);
      return await fn(await this.plain);
    }
    this.inFlight++;
    try {
      await this.ledger.reserve(this, ARENA_GROWTH * runBytes, limitBytes);
      if (this.arena === undefined) {
        this.created++;
        this.arena = this.create(true);
      }
      return await fn(await this.arena);
    } finally {
      this.inFlight--;
    }
  }

  private create(memoryArena: boolean): Promise<GraphSession> {
    const session = GraphSession.create(this.build(), { ...this.options, memoryArena });
    // A failed creation is retried on the next run instead of being kept.
    session.catch(() => {
      if (memoryArena && this.arena === session) this.arena = undefined;
      if (!memoryArena && this.plain === session) this.plain = undefined;
    });
    return session;
  }

  /** Whether the arena session (and its memory) exists now. */
  get live(): boolean {
    return this.arena !== undefined;
  }

  /** Releases the arena session and its memory; its next run creates it again. */
  async releaseArena(): Promise<void> {
    const session = this.arena;
    this.arena = undefined;
    this.heldBytes = 0;
    this.ledger.forget(this);
    if (session !== undefined) await (await session.catch(() => undefined))?.release();
  }

  /** Releases both sessions. */
  async release(): Promise<void> {
    await this.releaseArena();
    const plain = this.plain;
    this.plain = undefined;
    if (plain !== undefined) await (await plain.catch(() => undefined))?.release();
  }
}

export class ArenaLedger {
  private readonly sessions = new Set<BoundedSession>();
  private clock = 0;

  /** Estimated bytes every arena holds, together. */
  get heldBytes(): number {
    let sum = 0;
    for (const s of this.sessions) sum += s.heldBytes;
    return sum;
  }

  /**
   * Before a run in `session`'s arena, which will then hold `heldBytes`: releases other idle
   * arenas, least recently used first, until all of them fit `limitBytes`. Arenas with a run in
   * flight are never released; if they alone crowd the limit, the run goes ahead (runs of one
   * engine never overlap: only separate engines running at once can do that, and the memory plan
   * does not cover them anyway).
   */
  async reserve(session: BoundedSession, heldBytes: number, limitBytes: number): Promise<void> {
    session.lastUse = ++this.clock;
    this.sessions.add(session);
    session.heldBytes = Math.max(session.heldBytes, heldBytes);
    await this.releaseUntil(limitBytes, session);
  }

  /** Before a run of `runBytes` without an arena: releases idle arenas until they and the run fit. */
  async reserveTransient(session: BoundedSession, runBytes: number, limitBytes: number): Promise<void> {
    session.lastUse = ++this.clock;
    await this.releaseUntil(limitBytes - runBytes);
  }

  private async releaseUntil(limitBytes: number, keep?: BoundedSession): Promise<void> {
    let held = this.heldBytes;
    while (held > limitBytes) {
      let victim: BoundedSession | undefined;
      for (const s of this.sessions) {
        if (s === keep || s.inFlight > 0 || s.heldBytes === 0) continue;
        if (victim === undefined || s.lastUse < victim.lastUse) victim = s;
      }
      if (victim === undefined) return;
      held -= victim.heldBytes;
      await victim.releaseArena();
    }
  }

  forget(session: BoundedSession): void {
    this.sessions.delete(session);
  }
}

/** The process's ledger (memory is per process). */
export const arenaLedger = new ArenaLedger();
