/**
 * The strategy registry: every rollout strategy once, with its name, its config schema (defaults
 * included) and its rollout. A recipe's `strategy` section is `StrategyConfigSchema`; the trainer
 * runs whichever strategy the section names through `runStrategy` and estimates advantages
 * afterwards with the section's `advantage` and `filters` (estimators.ts). A new strategy is a
 * file in this folder and one entry below: no other package knows strategy names.
 */
import type { RolloutContext, Task } from "@troupe/core";
import { z } from "zod";
import { AtgrpoConfigSchema, rolloutAtgrpo } from "./atgrpo.ts";
import { GrpoConfigSchema, rolloutGrpo } from "./grpo.ts";
import { MagrpoConfigSchema, rolloutMagrpo } from "./magrpo.ts";
import type { RolloutResult } from "./rollout.ts";

/** An entry of the registry. */
export interface Strategy<Name extends string, Config> {
  readonly name: Name;
  /** The config without `name`, defaults included. */
  readonly config: z.ZodType<Config>;
  /** Older spellings of config keys still accepted in recipes and stored run configs: old → new. */
  readonly renamed?: Readonly<Record<string, string>>;
  /** Names the strategy had before, still accepted as `name` in recipes and stored run configs. */
  readonly formerNames?: readonly string[];
  readonly rollout: (
    ctx: RolloutContext,
    tasks: readonly Task<unknown>[],
    config: Config,
  ) => Promise<RolloutResult>;
}

export const grpoStrategy = {
  name: "grpo",
  // Recipes and run configs written before the strategy had its algorithm's name.
  formerNames: ["parallel"],
  config: GrpoConfigSchema,
  rollout: rolloutGrpo,
} as const satisfies Strategy<"grpo", z.output<typeof GrpoConfigSchema>>;

export const magrpoStrategy = {
  name: "magrpo",
  config: MagrpoConfigSchema,
  rollout: rolloutMagrpo,
} as const satisfies Strategy<"magrpo", z.output<typeof MagrpoConfigSchema>>;

export const atgrpoStrategy = {
  name: "atgrpo",
  config: AtgrpoConfigSchema,
  // Stronger-MAS calls the team reward's weight α; the other strategies call it teamWeight.
  renamed: { alpha: "teamWeight" },
  rollout: rolloutAtgrpo,
} as const satisfies Strategy<"atgrpo", z.output<typeof AtgrpoConfigSchema>>;

export const STRATEGIES = [grpoStrategy, magrpoStrategy, atgrpoStrategy] as const;

/** A recipe's `strategy` section: `name` picks the strategy, the other keys are its config. */
export const StrategyConfigSchema = z.preprocess(
  (value) => renameKeys(currentName(value)),
  z.discriminatedUnion("name", [
    grpoStrategy.config.extend({ name: z.literal(grpoStrategy.name) }),
    magrpoStrategy.config.extend({ name: z.literal(magrpoStrategy.name) }),
    atgrpoStrategy.config.extend({ name: z.literal(atgrpoStrategy.name) }),
  ]),
);
export type StrategyConfig = z.output<typeof StrategyConfigSchema>;

/** The registry entry of a strategy name. */
export function strategyNamed(name: string): (typeof STRATEGIES)[number] {
  const found = STRATEGIES.find(
    (s) => s.name === name || ("formerNames" in s && (s.formerNames as readonly string[]).includes(name)),
  );
  if (!found) {
    throw new Error(`unknown strategy "${name}" (known: ${STRATEGIES.map((s) => s.name).join(", ")})`);
  }
  return found;
}

/** Rolls `tasks` out with the strategy `config.name` names. Samples come back without advantages. */
export function runStrategy(
  ctx: RolloutContext,
  tasks: readonly Task<unknown>[],
  config: StrategyConfig,
): Promise<RolloutResult> {
  const { name, ...rest } = config;
  const strategy = strategyNamed(name);
  return (strategy.rollout as Strategy<string, typeof rest>["rollout"])(ctx, tasks, rest);
}

/** `name: parallel` → `name: grpo`: a strategy's former name as its name. */
function currentName(value: unknown): unknown {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return value;
  const section = value as Record<string, unknown>;
  const renamed = STRATEGIES.find(
    (s) => "formerNames" in s && (s.formerNames as readonly unknown[]).includes(section.name),
  );
  return renamed ? { ...section, name: renamed.name } : value;
}

/** `alpha: 1` → `teamWeight: 1` for a strategy that renamed the key (unless both are given). */
function renameKeys(value: unknown): unknown {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return value;
  const section = value as Record<string, unknown>;
  const strategy = STRATEGIES.find((s) => s.name === section.name);
  const renamed: Readonly<Record<string, string>> | undefined =
    strategy && "renamed" in strategy ? strategy.renamed : undefined;
  if (!renamed) return value;
  const out = { ...section };
  for (const [old, current] of Object.entries(renamed)) {
    if (old in out && !(current in out)) {
      out[current] = out[old];
      delete out[old];
    }
  }
  return out;
}
