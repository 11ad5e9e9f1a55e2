/**
 * A per-policy readers/writer gate. Requests of a policy are readers; an adapter reload is the
 * writer: it waits for the policy's requests in flight to finish, holds new ones back while it
 * unloads/loads the adapter, then lets them through. Without it a request could reach the server
 * between an unload and the load (a 404), or be served half by the old weights' KV-cache and half
 * by the new ones. Writers have priority (new readers queue behind a waiting writer) so a steady
 * stream of rollouts cannot starve a reload. Other policies are unaffected.
 */
import type { PolicyId } from "@troupe/core";

interface GateState {
  active: number;
  /** Settles when the current writer is done; undefined when none holds or waits. */
  writer: Promise<void> | undefined;
  /** Called when `active` drops to 0 while a writer waits. */
  drained: (() => void) | undefined;
}

export class PolicyGate {
  private readonly states = new Map<PolicyId, GateState>();

  private state(id: PolicyId): GateState {
    let s = this.states.get(id);
    if (s === undefined) {
      s = { active: 0, writer: undefined, drained: undefined };
      this.states.set(id, s);
    }
    return s;
  }

  /** Runs a request of policy `id` once no reload of it is pending. */
  async shared<T>(id: PolicyId, fn: () => Promise<T>): Promise<T> {
    const s = this.state(id);
    while (s.writer !== undefined) await s.writer;
    s.active += 1;
    try {
      return await fn();
    } finally {
      s.active -= 1;
      if (s.active === 0) s.drained?.();
    }
  }

  /** Runs `fn` alone for policy `id`: after its requests in flight, before any new one. */
  async exclusive<T>(id: PolicyId, fn: () => Promise<T>): Promise<T> {
    const s = this.state(id);
    while (s.writer !== undefined) await s.writer;
    let release!: () => void;
    s.writer = new Promise<void>((resolve) => {
      release = resolve;
    });
    try {
      if (s.active > 0) {
        await new Promise<void>((resolve) => {
          s.drained = resolve;
        });
        s.drained = undefined;
      }
      return await fn();
    } finally {
      s.writer = undefined;
      release();
    }
  }
}
