/**
 * Group keys and group filters.
 *
 * A group key names what a sample is compared against. It is built from the sample's own
 * provenance — never from a batch index — so two different tasks can never land in one group
 * (one reference system computed the key from the wrong index and mixed problems).
 */
import type { RolloutSample } from "@troupe/core";
import { z } from "zod";

export interface GroupKeyParts {
  readonly environment: string;
  readonly taskId: string;
  readonly turn: number;
  readonly agent: string;
  /** Tree strategies: the node the siblings were sampled at, as its branch path. */
  readonly node?: readonly number[];
}

export function groupKey(parts: GroupKeyParts): string {
  const base = `${parts.environment}/${parts.taskId}/turn=${parts.turn}/agent=${parts.agent}`;
  return parts.node === undefined ? base : `${base}/node=${parts.node.join(".") || "root"}`;
}

/** Samples by group key, groups and members in first-seen order. */
export function groupSamples<T extends RolloutSample>(samples: readonly T[]): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const s of samples) {
    const group = groups.get(s.groupKey);
    if (group) group.push(s);
    else groups.set(s.groupKey, [s]);
  }
  return groups;
}

/** A strategy's `filters` section: which groups the controller drops before estimating advantages. */
export const GroupFilterSchema = z.strictObject({
  /** Drop groups whose rewards are all equal (their advantages are all 0: no signal, only noise). */
  dropZeroVariance: z.boolean().default(false),
  /** Drop this fraction of groups with the lowest mean reward (0 keeps all). */
  dropLowestMeanFraction: z.number().min(0).lt(1).default(0),
});
export type GroupFilterConfig = z.output<typeof GroupFilterSchema>;

export interface FilterReport {
  readonly kept: number;
  readonly droppedZeroVariance: number;
  readonly droppedLowMean: number;
}

/** Applies the group filters to samples (grouped by their groupKey, using `reward.total`). */
export function filterGroups<T extends RolloutSample>(
  samples: readonly T[],
  config: GroupFilterConfig,
): { samples: T[]; report: FilterReport } {
  if (config.dropLowestMeanFraction < 0 || config.dropLowestMeanFraction >= 1) {
    throw new Error(`dropLowestMeanFraction must be in [0, 1), got ${config.dropLowestMeanFraction}`);
  }
  let groups = [...groupSamples(samples).entries()];
  let droppedZeroVariance = 0;
  if (config.dropZeroVariance) {
    const before = groups.length;
    groups = groups.filter(([, members]) => members.some((m) => m.reward.total !== members[0]!.reward.total));
    droppedZeroVariance = before - groups.length;
  }
  const dropCount = Math.floor(groups.length * config.dropLowestMeanFraction);
  let droppedLowMean = 0;
  if (dropCount > 0) {
    const meanOf = (members: T[]) => members.reduce((s, m) => s + m.reward.total, 0) / members.length;
    // Stable order: by mean, ties by key, so the filter is deterministic.
    const ranked = groups
      .map(([key, members]) => ({ key, m: meanOf(members) }))
      .sort((a, b) => a.m - b.m || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const dropped = new Set(ranked.slice(0, dropCount).map((g) => g.key));
    groups = groups.filter(([key]) => !dropped.has(key));
    droppedLowMean = dropCount;
  }
  const kept = new Set(groups.map(([key]) => key));
  return {
    samples: samples.filter((s) => kept.has(s.groupKey)),
    report: { kept: kept.size, droppedZeroVariance, droppedLowMean },
  };
}
