/**
 * The test-time baselines of the MAGRPO paper, for any registered environment and team. Each
 * wraps the environment so that one turn of the team's task is answered in another way, then
 * steps the real environment once with the answers (its reward, success and answer are the real
 * ones) and ends the episode:
 *
 * | baseline       | who answers                                | what each sees                                   |
 * |----------------|--------------------------------------------|--------------------------------------------------|
 * | `single`       | one agent (the team's first policy)        | every role's task; writes each part under `### <role>` |
 * | `naive-concat` | every role, in parallel                    | its own task only; the answers are combined as they are |
 * | `sequential`   | every role, one after the other            | its task and the previous role's answer (once)    |
 * | `discussion`   | every role, twice in parallel              | round 2: its task, its own and the others' round-1 answers; it revises |
 *
 * The steps that only collect answers give no reward. A single agent's answer without any
 * `### <role>` header is every role's answer.
 */
import {
  type AgentId,
  type Environment,
  type JointAction,
  type Observation,
  type StepResult,
  type Team,
  userObservation,
} from "@troupe/core";
import { z } from "zod";
import type { ExecutedAction } from "./answer.ts";
import type { RegisteredEnvironment } from "./registry.ts";

export const BaselineSchema = z.enum(["single", "naive-concat", "sequential", "discussion"]);
export type Baseline = z.infer<typeof BaselineSchema>;
export const BASELINES: readonly Baseline[] = BaselineSchema.options;

export const SINGLE_AGENT: AgentId = "single";

export interface BaselineState {
  readonly inner: unknown;
  /** Answers collected so far this round, by inner agent. */
  readonly drafts: Readonly<Record<AgentId, string>>;
  /** Discussion: the round-1 answers, once every agent has given one. */
  readonly first: Readonly<Record<AgentId, string>> | null;
  readonly done: boolean;
}

const textOf = (o: Observation) => o.messages.map((m) => m.content).join("\n\n");

function withNote(o: Observation, note: string): Observation {
  const last = o.messages.at(-1);
  if (!last) return userObservation(note);
  return {
    messages: [...o.messages.slice(0, -1), { role: last.role, content: `${last.content}\n\n${note}` }],
  };
}

/** Splits a single agent's text into the roles' parts by `### <role>` headers (none: the whole text for every role). */
export function splitByRole(text: string, agents: readonly AgentId[]): Record<AgentId, string> {
  const header = new RegExp(
    `^#{1,4}\\s*(${agents.map((a) => a.replace(/[^\w-]/g, "")).join("|")})\\s*:?\\s*$`,
    "gim",
  );
  const marks = [...text.matchAll(header)];
  if (marks.length === 0) return Object.fromEntries(agents.map((a) => [a, text]));
  const parts: Record<AgentId, string> = Object.fromEntries(agents.map((a) => [a, ""]));
  marks.forEach((m, i) => {
    const agent = agents.find((a) => a.toLowerCase() === m[1]!.toLowerCase())!;
    const end = i + 1 < marks.length ? marks[i + 1]!.index! : text.length;
    parts[agent] = text.slice(m.index! + m[0].length, end).trim();
  });
  return parts;
}

/** The environment answered the baseline's way; one inner turn per episode. */
export function baselineEnvironment(
  inner: Environment<unknown, unknown>,
  baseline: Baseline,
  order: readonly AgentId[],
): Environment<BaselineState, unknown> {
  const agents = baseline === "single" ? [SINGLE_AGENT] : order;
  const finish = async (state: BaselineState, actions: JointAction): Promise<StepResult<BaselineState>> => {
    const result = await inner.step(state.inner, actions);
    const locals = Object.values(result.localRewards);
    return {
      ...result,
      state: { ...state, inner: result.state, drafts: actions, done: true },
      localRewards:
        baseline === "single"
          ? { [SINGLE_AGENT]: locals.reduce((a, b) => a + b, 0) }
          : Object.fromEntries(order.map((a) => [a, result.localRewards[a] ?? 0])),
      done: true,
    };
  };
  const collect = (state: BaselineState, drafts: Record<AgentId, string>): StepResult<BaselineState> => ({
    state: { ...state, drafts },
    teamReward: 0,
    localRewards: Object.fromEntries(agents.map((a) => [a, 0])),
    done: false,
  });
  return {
    // The registry name + the baseline: `renderAnswer` finds the inner state by it.
    name: `${inner.name}+${baseline}`,
    agents,
    ...(inner.rewardBounds ? { rewardBounds: inner.rewardBounds } : {}),
    // The same tasks, so the same difficulty.
    ...(inner.difficulty ? { difficulty: (task) => inner.difficulty!(task) } : {}),
    async reset(task, seed) {
      return { inner: await inner.reset(task, seed), drafts: {}, first: null, done: false };
    },
    observe(state, agent) {
      if (baseline === "single") {
        const parts = order.map((a) => `### ${a}\n${textOf(inner.observe(state.inner, a))}`);
        return userObservation(
          `You do this whole task alone: every part below is yours. Answer each part under its own header (${order.map((a) => `\`### ${a}\``).join(", ")}).\n\n${parts.join("\n\n")}`,
        );
      }
      const own = inner.observe(state.inner, agent);
      if (baseline === "sequential") {
        const previous = order[order.indexOf(agent) - 1];
        if (previous === undefined || state.drafts[previous] === undefined) return own;
        return withNote(own, `Your teammate (${previous}) answered:\n${state.drafts[previous]}`);
      }
      if (baseline === "discussion" && state.first) {
        const others = order
          .filter((a) => a !== agent)
          .map((a) => `${a}:\n${state.first![a] ?? ""}`)
          .join("\n\n");
        return withNote(
          own,
          `Your first answer:\n${state.first[agent] ?? ""}\n\nYour teammates' first answers:\n${others}\n\nRevise your answer in light of theirs.`,
        );
      }
      return own;
    },
    async step(state, actions) {
      if (state.done) throw new Error(`${inner.name} (${baseline}): step called on a finished episode`);
      const drafts = { ...state.drafts, ...actions };
      switch (baseline) {
        case "single":
          return finish(state, splitByRole(actions[SINGLE_AGENT] ?? "", order));
        case "naive-concat":
          return finish(state, drafts);
        case "sequential":
          return order.every((a) => drafts[a] !== undefined) ? finish(state, drafts) : collect(state, drafts);
        case "discussion":
          if (state.first === null)
            return { ...collect(state, {}), state: { ...state, drafts: {}, first: drafts } };
          return finish(state, drafts);
      }
    },
  };
}

/** The team that plays a baseline: one role on the team's first policy for `single`, else the team's roles. */
export function baselineTeam(team: Team, baseline: Baseline): Team {
  const name = `${team.name}-${baseline}`;
  switch (baseline) {
    case "single":
      return {
        name,
        roles: [{ id: SINGLE_AGENT, policy: team.roles[0]!.policy }],
        turnOrder: "sequential",
        maxTurns: 1,
      };
    case "naive-concat":
      return { ...team, name, turnOrder: "parallel", maxTurns: 1 };
    case "sequential":
      return { ...team, name, turnOrder: "sequential", maxTurns: 1 };
    case "discussion":
      return { ...team, name, turnOrder: "parallel", maxTurns: 2 };
  }
}

/** A registered environment and its team, answered the baseline's way (for evaluation arms). */
export function withBaseline(
  registered: RegisteredEnvironment,
  team: Team,
  baseline: Baseline,
): { registered: RegisteredEnvironment; team: Team } {
  const order = team.roles.map((r) => r.id);
  const env = baselineEnvironment(registered.env, baseline, order) as Environment<unknown, unknown>;
  const evaluationEnv =
    registered.evaluationEnv === registered.env
      ? env
      : (baselineEnvironment(registered.evaluationEnv, baseline, order) as Environment<unknown, unknown>);
  const { demo: _demo, ...rest } = registered;
  return {
    registered: {
      ...rest,
      env,
      evaluationEnv,
      team: () => baselineTeam(team, baseline),
      render: (state: unknown, actions: readonly ExecutedAction[]) =>
        registered.render((state as BaselineState).inner, actions),
      needsSandbox: registered.needsSandbox,
    },
    team: baselineTeam(team, baseline),
  };
}
