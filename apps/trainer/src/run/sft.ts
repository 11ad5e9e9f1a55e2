/**
 * Supervised warm start on solver demonstrations with injected mistakes.
 *
 * Each demonstration episode follows the environment's solver, except that with probability
 * `mistakeRate` the action actually executed is a corrupted copy of the solver's (a dropped,
 * swapped or substituted character, or a truncation). The training target is always the solver's
 * action, so later roles (a fixer) learn to recover from their teammates' mistakes while no role
 * is ever taught a mistake. `mistakeRoles` limits the slips to some roles (e.g. only the plan agent
 * of a tool team, whose slips then show the next turn's recovery without teaching distrust of the tool).
 *
 * `cut` is the other kind of imperfection, an imperfect demonstrator: with probability `cut.rate`
 * a role's target itself is cut to its first `cut.length` characters (a plan of its first moves),
 * and the cut text is both what the role is taught and what the environment runs. The warm start
 * then mostly stops where the demonstrator did, with the whole answer still in its distribution:
 * what RL can turn from pass@K into pass@1. A target already that short is never cut.
 *
 * The update is the engine's PPO step with advantage 1 on-policy (old log-probs = current ones):
 * ratio = 1, no clipping, and ∇(−mean_t r_t) = −mean_t ∇ℓ_t, exactly the token-mean negative
 * log-likelihood gradient. The reported loss is that NLL, computed from the same log-probs.
 */
import {
  type AgentId,
  deriveSeed,
  type Observation,
  type PolicyId,
  Rng,
  roleOf,
  type Task,
  type Team,
  turnStages,
} from "@troupe/core";
import type { Engine, OptimizerConfig, TrainMetrics, TrainStepConfig } from "@troupe/engine";
import { defaultPolicyLossConfig } from "@troupe/engine";
import type { TrainerEnvironment } from "../envs.ts";
import { type DemonstrationCut, RecipeError } from "../recipe.ts";

export interface Demonstration {
  readonly taskId: string;
  readonly agent: AgentId;
  readonly policyId: PolicyId;
  readonly observation: Observation;
  readonly target: string;
}

/** A plausible slip: drop, swap or substitute one character, or cut the text short. */
export function corrupt(text: string, rng: Rng): string {
  if (text.length === 0) return "?";
  const chars = [...text];
  const i = rng.int(chars.length);
  switch (rng.int(4)) {
    case 0:
      return chars.length > 1 ? [...chars.slice(0, i), ...chars.slice(i + 1)].join("") : "?";
    case 1: {
      if (chars.length < 2) return `${text}${text}`;
      const j = i === chars.length - 1 ? i - 1 : i + 1;
      [chars[i], chars[j]] = [chars[j]!, chars[i]!];
      const swapped = chars.join("");
      return swapped === text ? `${text.slice(0, -1)}` || "?" : swapped;
    }
    case 2: {
      const alphabet = [...new Set(chars)];
      const other = alphabet.length > 1 ? alphabet.filter((c) => c !== chars[i]) : ["?"];
      chars[i] = rng.pick(other);
      return chars.join("");
    }
    default:
      return chars.slice(0, Math.max(0, i)).join("") || "?";
  }
}

/** The demonstrator's target for a role: cut to `cut.length` characters with probability `cut.rate`. */
function cutTarget(target: string, roleId: string, cut: DemonstrationCut | undefined, rng: Rng): string {
  if (cut === undefined || !(cut.roles?.includes(roleId) ?? true)) return target;
  // Draw for every target of a cut role, so one maze's draws do not depend on its targets' lengths.
  const draw = rng.float();
  const chars = [...target];
  return draw < cut.rate && chars.length > cut.length ? chars.slice(0, cut.length).join("") : target;
}

export async function collectDemonstrations(
  trainerEnv: TrainerEnvironment,
  team: Team,
  tasks: readonly Task<unknown>[],
  options: {
    readonly mistakeRate: number;
    readonly seed: number;
    /** The roles whose executed actions may slip; all roles when absent. */
    readonly mistakeRoles?: readonly string[];
    readonly cut?: DemonstrationCut;
  },
): Promise<Demonstration[]> {
  const demo = trainerEnv.demo;
  if (!demo)
    throw new RecipeError(
      `environment "${trainerEnv.env.name}" has no solver demonstrations (an entry's demo, a data file's demonstrations): remove the sft section, or give it a solver (docs/your-own-task.md)`,
    );
  const { env } = trainerEnv;
  // Every episode at once: an environment that runs agents' code (the sandbox runs as many
  // programs as there are cores) is not left waiting on one program at a time. Each episode's
  // draws come from its own streams and its demonstrations keep the tasks' order, so the result
  // is the same as one episode after another.
  const episodes = await Promise.all(
    tasks.map((task) => demonstrationEpisode(env, demo, team, task, options)),
  );
  return episodes.flat();
}

/** One task's demonstrations: the solver's episode, its executed actions slipping or cut as configured. */
async function demonstrationEpisode(
  env: TrainerEnvironment["env"],
  demo: NonNullable<TrainerEnvironment["demo"]>,
  team: Team,
  task: Task<unknown>,
  options: Parameters<typeof collectDemonstrations>[3],
): Promise<Demonstration[]> {
  const out: Demonstration[] = [];
  const rng = new Rng(deriveSeed(options.seed, "sft-mistakes", task.id));
  // A stream of its own, so adding cuts leaves the slips of the same seed where they were.
  const cutRng = new Rng(deriveSeed(options.seed, "sft-cuts", task.id));
  let state = await env.reset(task, deriveSeed(options.seed, "reset", task.id));
  let done = false;
  for (let turn = 0; turn < team.maxTurns && !done; turn++) {
    for (const stage of turnStages(team)) {
      if (done) break;
      const actions: Record<AgentId, string> = {};
      for (const agent of stage) {
        const observation = env.observe(state, agent);
        const role = roleOf(team, agent);
        const target = cutTarget(demo(task, state, agent), role.id, options.cut, cutRng);
        out.push({ taskId: task.id, agent, policyId: role.policy, observation, target });
        const maySlip = options.mistakeRoles?.includes(role.id) ?? true;
        actions[agent] = maySlip && rng.float() < options.mistakeRate ? corrupt(target, rng) : target;
      }
      const result = await env.step(state, actions);
      state = result.state;
      done = result.done;
    }
  }
  return out;
}

export interface SftMetrics {
  /** Token-mean negative log-likelihood of the targets before the update. */
  readonly nll: number;
  readonly train: TrainMetrics;
}

/**
 * One supervised update per policy on a batch of demonstrations, in one forward/backward pass:
 * the loss is the token-mean negative log-likelihood −ℓ (β_NLL = 1) with every advantage 0, so the
 * policy-gradient term is 0 whatever ℓ_old is (0 is fed) and the loss the step reports *is* the
 * NLL before the update. (Scoring ℓ_old first to train with A = 1 and a ratio of 1 gives the same
 * gradient at a third more compute.)
 */
export async function sftStep(
  engine: Engine,
  demos: readonly Demonstration[],
  optimizer: OptimizerConfig,
  microBatching: Pick<TrainStepConfig, "microBatchSize" | "maxTokensPerMicroBatch">,
): Promise<Map<PolicyId, SftMetrics>> {
  const byPolicy = new Map<PolicyId, Demonstration[]>();
  for (const d of demos) {
    const list = byPolicy.get(d.policyId);
    if (list) list.push(d);
    else byPolicy.set(d.policyId, [d]);
  }
  const out = new Map<PolicyId, SftMetrics>();
  for (const [policyId, list] of byPolicy) {
    const sequences = list.map((d) => engine.encode(policyId, d.observation, d.target));
    const train = await engine.trainStep(
      policyId,
      sequences.map((s) => ({ ...s, oldLogprobs: s.completionTokenIds.map(() => 0), advantage: 0 })),
      { loss: SUPERVISED_LOSS, optimizer, ...microBatching },
    );
    out.set(policyId, { nll: train.loss, train });
  }
  return out;
}

/** The warm start's loss: token-mean −ℓ alone (no clip, KL or entropy term can act with A = 0). */
const SUPERVISED_LOSS = { ...defaultPolicyLossConfig, aggregation: "token-mean", nllCoef: 1 } as const;
