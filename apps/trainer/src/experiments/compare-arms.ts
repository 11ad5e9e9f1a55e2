/**
 * The arms of `trainer:compare`: the same budget (steps, and as near as the tree shapes allow,
 * samples) for
 *
 *   grpo             a single agent (the planner alone, re-planning from its own reports; on
 *                    `coding`, one agent writing the whole function: `roles: single`; one
 *                    policy) trained with GRPO on whole episodes — the single-agent baseline
 *   warm-start       the warm-started team without RL
 *   magrpo           MAGRPO (aligned joint actions, every joint action branches), a policy per role;
 *                    MAGRPO's agents act simultaneously, so the turn order is parallel
 *   atgrpo-shared    AT-GRPO with one policy for every role
 *   atgrpo-per-role  AT-GRPO with a policy per role
 *
 * and `trained` (the recipe as it is) and the papers' test-time baselines, each arm a recipe
 * derived from the base recipe (compare.ts runs them, compare-results.ts tabulates them).
 *
 * Sample budget: per task and RL step, with N agents, T turns and K = AT-GRPO's candidates,
 *   AT-GRPO             N·T·K samples (K candidates per agent turn)
 *   GRPO (single)       K episodes × N·T planner turns = N·T·K   (the single agent gets N·T turns)
 *   MAGRPO aligned, G=K N·K·(1 + K + … + K^(T−1))                  (every joint action branches)
 * so MAGRPO gets proportionally fewer tasks per step. These are upper bounds (episodes end early
 * when solved); the table reports the samples each arm actually used.
 */
import { BASELINES } from "@troupe/envs";
import { EstimationConfigSchema } from "@troupe/rl";
import { recipeEnvironment } from "../envs.ts";
import { parseRecipe, type Recipe, RecipeError } from "../recipe.ts";

export const ARMS = [
  "grpo",
  "warm-start",
  "magrpo",
  "atgrpo-shared",
  "atgrpo-per-role",
  "trained",
  ...BASELINES,
] as const;
export type Arm = (typeof ARMS)[number];

/** The arms of `trainer:compare` without --arms: the training strategies on the games. */
export const DEFAULT_ARMS: readonly Arm[] = [
  "grpo",
  "warm-start",
  "magrpo",
  "atgrpo-shared",
  "atgrpo-per-role",
];

export const ARM_DESCRIPTIONS: Readonly<Record<Arm, string>> = {
  grpo: "single agent, GRPO",
  "warm-start": "team, warm start only",
  magrpo: "team, MAGRPO (per-role)",
  "atgrpo-shared": "team, AT-GRPO (shared policy)",
  "atgrpo-per-role": "team, AT-GRPO (per-role)",
  trained: "team, the recipe as it is",
  single: "baseline: one agent does the whole task (no RL)",
  "naive-concat": "baseline: agents answer independently, answers combined (no RL)",
  sequential: "baseline: each agent sees the previous one's answer (no RL)",
  discussion: "baseline: one round of discussion, then revise (no RL)",
};

/**
 * The recipe of one arm, derived from the base recipe (an AT-GRPO or a MAGRPO team recipe; K is
 * its candidates or its group size).
 */
export function armRecipe(base: Recipe, arm: Arm, seed: number): Recipe {
  if (arm === "trained")
    return parseRecipe({ ...structuredClone(base), name: `${base.name}-${arm}`, seed }, `compare arm ${arm}`);
  if ((BASELINES as readonly string[]).includes(arm)) {
    // The paper's test-time baselines: the recipe's starting policies (its warm start, if any),
    // answering the baseline's way, evaluated without RL.
    const out = structuredClone(base) as Record<string, unknown>;
    return parseRecipe(
      {
        ...out,
        name: `${base.name}-${arm}`,
        seed,
        environment: { ...base.environment, baseline: arm },
        train: { ...base.train, steps: 0 },
      },
      `compare arm ${arm}`,
    );
  }
  // Every other arm is a variation of an AT-GRPO or MAGRPO recipe's strategy and team.
  if (base.strategy.name !== "atgrpo" && base.strategy.name !== "magrpo") {
    throw new RecipeError(
      `compare arm ${arm}: the base recipe must use strategy atgrpo or magrpo (got ${base.strategy.name}); arms for any recipe: trained, ${BASELINES.join(", ")}`,
    );
  }
  const { team } = recipeEnvironment(base);
  const agents = team.roles.length;
  const turns = team.maxTurns;
  const k = base.strategy.name === "atgrpo" ? base.strategy.candidates : base.strategy.groupSize;
  const magrpoPerTask = agents * k * geometricSum(k, turns);
  const atgrpoPerTask = agents * turns * k;
  const out: Record<string, unknown> = { ...structuredClone(base), name: `${base.name}-${arm}`, seed };
  switch (arm) {
    case "grpo": {
      // The planner alone gets the team's N·T plans per episode; GRPO groups K whole episodes.
      out.environment = {
        name: base.environment.name,
        options: { ...base.environment.options, roles: "single", maxTurns: agents * turns },
      };
      out.team = { specialisation: "shared" };
      out.strategy = { name: "grpo", groupSize: k };
      // The single agent does the work of every role, so the team's slipping roles are its turns:
      // its demonstrations slip (and are cut) at the same rate (the team's role ids are not its roles).
      if (base.sft?.mistakeRoles || base.sft?.cut?.roles) {
        out.sft = {
          ...base.sft,
          mistakeRoles: undefined,
          ...(base.sft.cut ? { cut: { ...base.sft.cut, roles: undefined } } : {}),
        };
      }
      if (out.sft) out.sft = oneStopThreshold(out.sft as NonNullable<Recipe["sft"]>);
      break;
    }
    case "warm-start":
      out.train = { ...base.train, steps: 0 };
      break;
    case "magrpo": {
      // A MAGRPO base is this arm already (its own tasks per step, turn order and advantages).
      if (base.strategy.name === "magrpo") break;
      // MAGRPO samples joint actions on one state: the roles act simultaneously each turn (the
      // fixer plans from the turn's starting board, its plan executes after the planner's).
      out.team = { ...base.team, specialisation: "per-role", turnOrder: "parallel" };
      out.strategy = { name: "magrpo", groupSize: k, jointMode: "aligned" };
      // CoMLRL's MAGRPO advantages: mean baseline, no std normalisation.
      out.advantage = EstimationConfigSchema.parse({ normalizeStd: false });
      out.train = {
        ...base.train,
        tasksPerStep: Math.max(1, Math.round((base.train.tasksPerStep * atgrpoPerTask) / magrpoPerTask)),
      };
      break;
    }
    case "atgrpo-shared":
    case "atgrpo-per-role": {
      out.team = {
        ...base.team,
        specialisation: arm === "atgrpo-shared" ? "shared" : "per-role",
        ...(base.strategy.name === "magrpo" ? { turnOrder: undefined } : {}),
      };
      if (arm === "atgrpo-shared" && base.sft) out.sft = oneStopThreshold(base.sft);
      if (base.strategy.name === "magrpo") {
        // From a MAGRPO base: K candidates per agent turn, and as many samples per step.
        out.strategy = { name: "atgrpo", candidates: k };
        out.advantage = undefined;
        out.train = {
          ...base.train,
          tasksPerStep: Math.max(1, Math.round((base.train.tasksPerStep * magrpoPerTask) / atgrpoPerTask)),
        };
      }
      break;
    }
  }
  return parseRecipe(out, `compare arm ${arm}`);
}

/**
 * A per-role `sft.stopAtNll` as one number, for an arm whose one policy speaks for every role (the
 * single agent, a shared policy): the largest, since that policy's NLL keeps the entropy of the
 * role whose demonstrations keep the most (the cut ones) and would never reach the smaller values.
 */
function oneStopThreshold(sft: NonNullable<Recipe["sft"]>): NonNullable<Recipe["sft"]> {
  const stopAtNll = sft.stopAtNll;
  if (stopAtNll === undefined || typeof stopAtNll === "number") return sft;
  return { ...sft, stopAtNll: Math.max(...Object.values(stopAtNll)) };
}

/** 1 + k + … + k^(t−1): the nodes of an aligned MAGRPO tree of depth t with branching k. */
function geometricSum(k: number, t: number): number {
  let total = 0;
  for (let i = 0; i < t; i++) total += k ** i;
  return total;
}
