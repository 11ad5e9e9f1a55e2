/**
 * The game environment under every protocol: random play within the reward bounds, turns, the
 * order of a parallel step, demonstrations; and the task difficulty (`Environment.difficulty`,
 * used by success-by-difficulty reports: the length of an optimal plan from the start).
 */
import { checkTeam, deepFreeze, Rng, type StepResult, stableHash, type Task, turnStages } from "@troupe/core";
import { describe, expect, it } from "vitest";
import {
  envTeam,
  type GameEnvironment,
  type GameState,
  planPathDemo,
  planPathEnv,
  sokobanDemo,
  sokobanEnv,
  sudokuDemo,
  sudokuEnv,
} from "../../src/games/index.ts";
import { createEnvironment } from "../../src/index.ts";
import { expectWithinRewardBounds } from "./expect.ts";

type AnyEnv = GameEnvironment<unknown, unknown>;
type AnyDemo = (task: Task<never>, state: GameState<never, never>, agent: string) => string;

const games: { name: string; env: AnyEnv; demo: AnyDemo; randomPlan: (rng: Rng) => string }[] = [
  {
    name: "plan-path",
    env: planPathEnv() as unknown as AnyEnv,
    demo: planPathDemo as AnyDemo,
    randomPlan: randomMoves,
  },
  {
    name: "sokoban",
    env: sokobanEnv() as unknown as AnyEnv,
    demo: sokobanDemo as AnyDemo,
    randomPlan: randomMoves,
  },
  {
    name: "sudoku",
    env: sudokuEnv() as unknown as AnyEnv,
    demo: sudokuDemo as AnyDemo,
    randomPlan: randomPlacements,
  },
];

function randomMoves(rng: Rng): string {
  if (rng.float() < 0.1) return "no idea";
  return Array.from({ length: rng.int(12) }, () => rng.pick(["U", "D", "L", "R"])).join("");
}

function randomPlacements(rng: Rng): string {
  if (rng.float() < 0.1) return "12";
  return Array.from({ length: 1 + rng.int(6) }, () => `${rng.int(4)}${rng.int(4)}${rng.int(5)}`).join(" ");
}

async function play(env: AnyEnv, state: GameState<unknown, unknown>, agent: string, text: string) {
  return (await env.step(deepFreeze(state), { [agent]: text })) as StepResult<GameState<unknown, unknown>>;
}

describe.each(games)("$name: role protocol", ({ env, demo, randomPlan }) => {
  it("random policy over 150 tasks: no exceptions, rewards within rewardBounds, frozen states untouched", async () => {
    const tasks = env.generateTasks("train", 150, { seed: 21 });
    const team4 = envTeam(env);
    let steps = 0;
    for (const [i, task] of tasks.entries()) {
      const rng = new Rng(i);
      let state = deepFreeze(env.reset(task, i));
      let done = false;
      for (let turn = 0; turn < team4.maxTurns && !done; turn++) {
        for (const [agent] of turnStages(team4)) {
          if (done) break;
          const before = stableHash(state);
          const r = await play(env, state, agent!, randomPlan(rng));
          expect(stableHash(state)).toBe(before);
          expectWithinRewardBounds(r, env.rewardBounds);
          state = r.state;
          done = r.done;
          steps++;
        }
      }
      expect(done).toBe(true); // the environment ends the episode by maxTurns
    }
    expect(steps).toBeGreaterThan(150);
  });

  it("demonstrations solve from mid-episode boards (after random moves)", async () => {
    for (const [i, task] of env.generateTasks("validation", 30, { seed: 4 }).entries()) {
      const rng = new Rng(1000 + i);
      const r1 = await play(env, env.reset(task, 0), "planner", randomPlan(rng));
      if (r1.done) continue; // solved by chance, or a Sokoban deadlock
      const r2 = await play(env, r1.state, "fixer", demo(task as never, r1.state as never, "fixer"));
      expect(r2.success).toBe(true);
      expect(r2.localRewards.fixer).toBe(1);
    }
  });

  it("turns: the planner's step does not end a turn, the fixer's does; failure lands at maxTurns", async () => {
    const [task] = env.generateTasks("train", 1, { seed: 5 });
    const s0 = env.reset(task!, 0);
    const r1 = await play(env, s0, "planner", "?");
    expect(r1.state.turn).toBe(0);
    let state = r1.state;
    let last = r1;
    for (let k = 0; k < 2 * env.maxTurns - 1; k++) {
      last = await play(env, state, k % 2 === 0 ? "fixer" : "planner", "?");
      state = last.state;
    }
    expect(state.turn).toBe(env.maxTurns);
    expect(last.done).toBe(true);
    expect(last.teamReward).toBeCloseTo(-0.1 - 1, 12);
  });

  it("a parallel step applies planner then fixer; unknown agents and empty steps are rejected", async () => {
    const [task] = env.generateTasks("train", 1, { seed: 6 });
    const s0 = env.reset(task!, 0);
    const r = await env.step(s0, { fixer: demo(task as never, s0 as never, "fixer"), planner: "?" });
    expect(r.localRewards).toEqual({ planner: -0.1, fixer: 1 });
    expect(r.state.turn).toBe(1);
    expect(r.success).toBe(true);
    expect(() => env.step(s0, { critic: "x" })).toThrow(/unknown agent "critic"; agents: planner, fixer/);
    expect(() => env.step(s0, {})).toThrow(/at least one/);
    expect(() => env.observe(s0, "tool")).toThrow(/unknown agent/);
  });

  it("envTeam matches the environment", () => {
    const team = checkTeam(envTeam(env), env);
    expect(team.roles.map((r) => r.id)).toEqual(["planner", "fixer"]);
    expect(team.roles.map((r) => r.policy)).toEqual(["shared", "shared"]);
    expect(team.turnOrder).toBe("sequential");
    expect(team.maxTurns).toBe(4);
    expect(envTeam(env, { policies: "per-role" }).roles.map((r) => r.policy)).toEqual(["planner", "fixer"]);
  });

  it("compact prompts stay short and demonstrations stay under 64 characters", () => {
    for (const task of env.generateTasks("train", 50, { seed: 8 })) {
      const s0 = env.reset(task, 0);
      expect(env.observe(s0, "planner").messages[0]!.content.length).toBeLessThanOrEqual(140);
      expect(demo(task as never, s0 as never, "planner").length).toBeLessThan(64);
    }
  });
});

describe("tool roles need a CodeRunner", () => {
  it("refuses to construct without one, naming the option", () => {
    expect(() => planPathEnv({ roles: "tool" })).toThrow(/needs a CodeRunner in options.runner/);
    expect(() => sokobanEnv({ roles: "tool" })).toThrow(/needs a CodeRunner/);
    expect(() => sudokuEnv({ roles: "tool", runner: {} as never })).toThrow(
      /runner: runner must be a CodeRunner/,
    );
  });
});

describe("game difficulty", () => {
  it("Plan-Path and Sokoban: the optimal plan's length stored with the puzzle", () => {
    for (const name of ["plan-path", "sokoban"] as const) {
      const { env, generateTasks } = createEnvironment(name, {});
      const tasks = generateTasks("test", 20, 0);
      expect(tasks.map((t) => env.difficulty!(t))).toEqual(
        tasks.map((t) => (t.payload as { optimal: number }).optimal),
      );
    }
  });

  it("Plan-Path: every generated length between the options' bounds, as the generator promises", () => {
    const { env, generateTasks } = createEnvironment("plan-path", { minPathLength: 3, maxPathLength: 5 });
    const lengths = new Set(generateTasks("test", 60, 0).map((t) => env.difficulty!(t)));
    expect([...lengths].sort()).toEqual([3, 4, 5]);
  });

  it("Sudoku: the cells left to fill", () => {
    const { env, generateTasks } = createEnvironment("sudoku", {});
    for (const task of generateTasks("test", 10, 0)) {
      const blanks = (task.payload as { givens: number[] }).givens.filter((v) => v === 0).length;
      expect(env.difficulty!(task)).toBe(blanks);
      expect(blanks).toBeGreaterThan(0);
    }
  });
});
