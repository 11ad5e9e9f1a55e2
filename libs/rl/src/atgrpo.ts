/**
 * AT-GRPO — agent- and turn-wise grouped GRPO
 * (Zhao et al., "Stronger-MAS: Multi-Agent Reinforcement Learning for Collaborative LLMs", 2025).
 *
 * Tree-structured sampling with one surviving branch. At turn t, each agent i in turn order:
 *   1. observes the current state s and samples K candidates a_1..a_K from the SAME state;
 *   2. each candidate is stepped on its own copy of s (states are immutable, so "copy" is free):
 *        s_k', team_k, local_k = env.step(s, {i: a_k})
 *   3. its reward mixes the team and the agent's own reward:
 *        r_k = w_team · team_k + w_local · local_k      (Stronger-MAS: α · team + local, α = w_team)
 *   4. group (task, turn, agent) = the K candidates, return R_k = r_k; the controller's estimator
 *      gives A_k = (r_k − mean r) / (std r + ε) (estimators.ts)
 *   5. the best candidate k* = argmax_k r_k (ties broken by a seeded draw; or sampled with
 *      p ∝ exp(r_k / τ) when `selection` is "sample") continues the episode: s ← s_{k*}',
 *      and the agents after i in the same turn observe it.
 * The episode ends when the environment says done or after `maxTurns` turns.
 *
 * Group filters (optional, `filters`; the controller applies them to the step's groups before
 * estimating advantages): drop groups whose rewards are all equal; drop the lowest-mean fraction.
 *
 * Turn order: a sequential team's agents act one at a time in role order, as above. The agents of
 * a parallel team answer the same state together (an environment's step is then one joint action:
 * the math team's reasoner and tool both answer, and a turn ends). Each samples its K candidates
 * from that state, and their k-th candidates form the k-th joint action, stepped on its own copy of
 * s (as MAGRPO's K joint actions); agent i's candidate k is rewarded from that step,
 *        r_ik = w_team · team_k + w_local · local_ik,
 * its group is still (task, turn, agent), and the joint action with the largest Σ_i r_ik continues.
 * (Stepping each agent's candidates with its action alone would make every agent's answer a turn of
 * its own: the tool would answer after the reasoner's turn, never beside it.)
 */
import {
  deriveSeed,
  type EpisodeSummary,
  Rng,
  type RolloutContext,
  type RolloutSample,
  type StepResult,
  type Task,
  turnStages,
} from "@troupe/core";
import { z } from "zod";
import { groupKey } from "./grouping.ts";
import { checkCount, type RolloutNode, type RolloutResult, rewardParts } from "./rollout.ts";
import { edgeNode, rootNode, TreeRollout } from "./tree.ts";

export const AtgrpoConfigSchema = z.strictObject({
  /** K: candidates per (turn, agent). Stronger-MAS samples K = 4 branches per agent per turn. */
  candidates: z.number().int().min(1).default(4),
  /** w_team: weight of the team reward (Stronger-MAS's α = 1); recipes may still call it `alpha`. */
  teamWeight: z.number().default(1),
  /** w_local: weight of the agent's own reward. Stronger-MAS: 1. */
  localWeight: z.number().default(1),
  /** "argmax": the best candidate continues (ties broken by seed); "sample": p ∝ exp(r/τ). */
  selection: z.enum(["argmax", "sample"]).default("argmax"),
  /** τ for `selection: "sample"`. */
  selectionTemperature: z.number().gt(0).default(1),
});
export type AtgrpoConfig = z.output<typeof AtgrpoConfigSchema>;
export const defaultAtgrpoConfig: AtgrpoConfig = AtgrpoConfigSchema.parse({});

/** One task's AT-GRPO episode as it is built: the chosen path so far, and where it stands. */
interface ChosenPath<S> {
  readonly task: Task<unknown>;
  state: S;
  done: boolean;
  success: boolean;
  teamReturn: number;
  turns: number;
  /** The chosen path as rollout nodes; each holds all K candidates as children, the chosen one continues. */
  readonly root: RolloutNode;
  cursor: RolloutNode;
}

/** Index of the candidate that continues the episode. */
export function selectCandidate(
  rewards: readonly number[],
  mode: AtgrpoConfig["selection"],
  temperature: number,
  rng: Rng,
): number {
  if (mode === "sample") {
    const top = Math.max(...rewards);
    return rng.weightedIndex(rewards.map((r) => Math.exp((r - top) / temperature)));
  }
  const best = Math.max(...rewards);
  const tied = rewards.flatMap((r, k) => (r === best ? [k] : []));
  return tied.length === 1 ? tied[0]! : rng.pick(tied);
}

export async function rolloutAtgrpo<S, P>(
  ctx: RolloutContext<S, P>,
  tasks: readonly Task<P>[],
  config: AtgrpoConfig = defaultAtgrpoConfig,
): Promise<RolloutResult> {
  checkCount("atgrpo", "candidates", config.candidates, 1);
  const tree = new TreeRollout(ctx, tasks, "atgrpo");
  const K = config.candidates;
  const episodes: ChosenPath<S>[] = [];
  for (const task of tasks) {
    const root = rootNode();
    episodes.push({
      task,
      state: await tree.reset(task),
      done: false,
      success: false,
      teamReturn: 0,
      turns: 0,
      root,
      cursor: root,
    });
  }
  const samples: RolloutSample[] = [];
  for (let turn = 0; turn < ctx.team.maxTurns; turn++) {
    for (const stage of turnStages(ctx.team)) {
      const live = episodes.filter((ep) => !ep.done);
      if (live.length === 0) break;
      // Per live episode, per agent of the stage, its K candidates: request (e·A + a)·K + k.
      const A = stage.length;
      const requests = live.flatMap((ep) =>
        stage.flatMap((agent) => tree.candidates(ep.state, agent, K, ep.task.id, turn)),
      );
      const outputs = await tree.generate(requests);
      const at = (e: number, a: number, k: number) => (e * A + a) * K + k;
      const jointAction = (e: number, k: number) =>
        Object.fromEntries(stage.map((agent, a) => [agent, outputs[at(e, a, k)]!.text]));
      // Every joint action of every live episode steps at once (the sandbox runs their programs in
      // parallel); a step is a function of (state, actions), so the results are those of one at a time.
      const stepped = await Promise.all(
        live.flatMap((ep, e) => Array.from({ length: K }, (_, k) => tree.step(ep.state, jointAction(e, k)))),
      );
      for (const [e, ep] of live.entries()) {
        const results: StepResult<S>[] = stepped.slice(e * K, (e + 1) * K);
        const branch = ep.cursor.path;
        // rewards[a][k]: agent a's candidate k, rewarded from the k-th joint step.
        const rewards = stage.map((agent) => results.map((r) => rewardParts(r, agent, config)));
        for (const [a, agent] of stage.entries()) {
          const key = groupKey({ environment: ctx.env.name, taskId: ep.task.id, turn, agent });
          for (let k = 0; k < K; k++) {
            samples.push(
              tree.sample({
                task: ep.task,
                episode: 0,
                turn,
                agent,
                branch,
                candidate: k,
                seed: requests[at(e, a, k)]!.seed,
                observation: requests[at(e, a, k)]!.observation,
                completion: outputs[at(e, a, k)]!,
                reward: rewards[a]![k]!,
                return: rewards[a]![k]!.total,
                groupKey: key,
                success: results[k]!.success,
              }),
            );
          }
        }
        for (let k = 0; k < K; k++) {
          const returns = Object.fromEntries(stage.map((agent, a) => [agent, rewards[a]![k]!.total]));
          ep.cursor.children.push(edgeNode([...branch, k], turn, jointAction(e, k), results[k]!, returns));
        }
        const chosen = selectCandidate(
          results.map((_, k) => rewards.reduce((sum, r) => sum + r[k]!.total, 0)),
          config.selection,
          config.selectionTemperature,
          new Rng(deriveSeed(ctx.seed, "atgrpo-select", ctx.step, ep.task.id, turn, ...stage)),
        );
        const result = results[chosen]!;
        ep.state = result.state;
        ep.teamReturn += result.teamReward;
        ep.turns = turn + 1;
        ep.cursor = ep.cursor.children[chosen]!;
        if (result.success) ep.success = true;
        if (result.done) ep.done = true;
      }
    }
  }
  const summaries: EpisodeSummary[] = episodes.map((ep) => ({
    taskId: ep.task.id,
    episode: 0,
    success: ep.success,
    teamReturn: ep.teamReturn,
    turns: ep.turns,
  }));
  return tree.result(
    samples,
    summaries,
    episodes.map((ep) => ep.root),
  );
}
