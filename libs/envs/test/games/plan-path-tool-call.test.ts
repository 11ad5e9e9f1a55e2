/**
 * Plan-Path's `tool-call` roles: the `path R C` command, what the plan agent reads, the rewards,
 * the demonstrations, the rendering of an episode and the independence of branches.
 */
import { checkTeam, deepFreeze, Rng, type StepResult, stableHash } from "@troupe/core";
import { describe, expect, it } from "vitest";
import type { ExecutedAction, PlanPathAnswer } from "../../src/answer.ts";
import {
  envTeam,
  type PlanPathState,
  parsePathCommand,
  planPathDemo,
  planPathEnv,
  runPathCommand,
  sokobanEnv,
} from "../../src/games/index.ts";
import { createEnvironment, environmentOptions, renderAnswer } from "../../src/registry.ts";

import { expectWithinRewardBounds, thrownMessage } from "./expect.ts";
import { puzzle, task } from "./hand-4x4.ts";

const HINTS = ["positions", "offset", "neighbours"] as const;

type Env = ReturnType<typeof planPathEnv>;
const stepSync = (env: Env, state: PlanPathState, actions: Record<string, string>) => {
  const result = env.step(state, actions);
  if (result instanceof Promise) throw new Error("tool-call Plan-Path steps are synchronous");
  return result as StepResult<PlanPathState>;
};

describe("the path command", () => {
  it("parses exactly `path R C`, ends trimmed", () => {
    expect(parsePathCommand("path 3 3")).toEqual({ target: [3, 3] });
    expect(parsePathCommand("  path 0 12\n")).toEqual({ target: [0, 12] });
    const malformed = [
      "",
      "path",
      "path 3",
      "path 3 3 3",
      "path  3 3",
      "path 3,3",
      "Path 3 3",
      "path 03 3",
      "path -1 2",
      "path 3 3\nDDR",
      "path 100 1",
      "go to 3 3",
    ];
    for (const text of malformed)
      expect(parsePathCommand(text), text).toEqual({ error: 'expected "path R C"' });
  });

  it("gives the BFS path to the target, or says why there is none", () => {
    const at = (pos: readonly [number, number]) => ({ pos });
    const run = (text: string, from: readonly [number, number] = [0, 0]) =>
      runPathCommand(puzzle, at(from), text);
    expect(run("path 3 3")).toEqual({ output: "DDRDRR", moves: ["D", "D", "R", "D", "R", "R"], bad: false });
    expect(run("path 2 2")).toEqual({ output: "DDRR", moves: ["D", "D", "R", "R"], bad: false });
    expect(run("path 0 1").output).toBe("R");
    expect(run("path 3 3", [0, 3]).output).toBe("DLDDR");
    expect(run("path 4 0")).toEqual({ output: "bad command: 4 0 is off the board", moves: null, bad: true });
    expect(run("path 0 4").output).toBe("bad command: 0 4 is off the board");
    expect(run("path 0 2")).toEqual({ output: "bad command: 0 2 is a wall", moves: null, bad: true });
    expect(run("path 0 0").output).toBe("bad command: 0 0 is the agent's cell");
    expect(run("DDRDRR").output).toBe('bad command: expected "path R C"');
    // (0,0) is free but walled off from the agent at (2,0).
    const walled = { ...puzzle, rows: 3, grid: [".#..", "##..", "...."] };
    expect(runPathCommand(walled, at([2, 0]), "path 0 0")).toEqual({
      output: "no path",
      moves: null,
      bad: false,
    });
  });
});

describe("tool-call roles", () => {
  const env = planPathEnv({ roles: "tool-call", hints: [...HINTS], maxTurns: 2 });

  it("has the agents tool then plan, the compact prompts, and the tool's output in the plan agent's", () => {
    expect(env.agents).toEqual(["tool", "plan"]);
    expect(env.roles).toBe("tool-call");
    const s0 = env.reset(task, 0);
    expect(env.observe(s0, "tool").messages).toEqual([
      {
        role: "user",
        content:
          "path tool\nA.#.\n.#..\n...#\n#..G\nagent 0 0\ngoal 3 3\ngoal D3 R3\nnear Ux D. Lx R.\ncall:",
      },
    ]);
    const called = stepSync(env, s0, { tool: "path 3 3" });
    expect(env.observe(called.state, "plan").messages).toEqual([
      {
        role: "user",
        content:
          "path plan\nA.#.\n.#..\n...#\n#..G\nagent 0 0\ngoal 3 3\ngoal D3 R3\nnear Ux D. Lx R.\ntool: DDRDRR\nplan:",
      },
    ]);
    const bad = stepSync(env, s0, { tool: "path 0 2" });
    expect(env.observe(bad.state, "plan").messages[0]!.content).toContain(
      "\ntool: bad command: 0 2 is a wall\nplan:",
    );
    // Without hints: the board, the tool's line and the cue.
    const bare = planPathEnv({ roles: "tool-call" });
    const b1 = stepSync(bare, bare.reset(task, 0), { tool: "path 3 3" });
    expect(bare.observe(b1.state, "plan").messages[0]!.content).toBe(
      "path plan\nA.#.\n.#..\n...#\n#..G\ntool: DDRDRR\nplan:",
    );
  });

  it("rewards: the tool moves nothing and earns 1 / 0 / −0.1; the plan earns the compact team reward", () => {
    const s0 = env.reset(task, 0);
    const good = stepSync(env, s0, { tool: "path 3 3" });
    expect(good.teamReward).toBe(0);
    expect(good.localRewards).toEqual({ tool: 1 });
    expect(good.info).toEqual({
      tool: { command: "path 3 3", output: "DDRDRR", bad: false, reachesGoal: true },
    });
    expect(good.state.board.pos).toEqual([0, 0]);
    expect(good.state.turn).toBe(0);
    expect(good.done).toBe(false);
    // The plan as in plan-path.test.ts: 6·(−0.01) + 6/4 + 1 + 0.5 = 2.94.
    const solved = stepSync(env, good.state, { plan: "DDRDRR" });
    expect(solved.teamReward).toBeCloseTo(2.94, 12);
    expect(solved.localRewards).toEqual({ plan: 1 });
    expect(solved.success).toBe(true);
    expect(solved.state.turn).toBe(1);
    expect(solved.state.report).toBe("DDRDRR: solved");

    const wrong = stepSync(env, s0, { tool: "path 2 2" });
    expect(wrong.localRewards).toEqual({ tool: 0 });
    expect(wrong.state.toolOutput).toBe("DDRR");
    const noPath = stepSync(env, s0, { tool: "path 0 4" });
    expect(noPath.localRewards.tool).toBeCloseTo(-0.1, 12);
    expect(noPath.teamReward).toBe(0);
  });

  it("a second turn shows the report to both; failure lands on the last plan", () => {
    const s0 = env.reset(task, 0);
    const t1 = stepSync(env, s0, { tool: "path 2 2" });
    const p1 = stepSync(env, t1.state, { plan: "DDRR" });
    expect(p1.state.report).toBe("DDRR: not solved, at (2,2)");
    expect(p1.state.turn).toBe(1);
    expect(env.observe(p1.state, "tool").messages[0]!.content).toBe(
      "path tool\n..#.\n.#..\n..A#\n#..G\nagent 2 2\ngoal 3 3\ngoal D1 R1\nnear U. D. L. R#\nlast: DDRR: not solved, at (2,2)\ncall:",
    );
    const t2 = stepSync(env, p1.state, { tool: "path 3 3" });
    expect(t2.state.toolOutput).toBe("DR");
    expect(env.observe(t2.state, "plan").messages[0]!.content).toContain(
      "\nlast: DDRR: not solved, at (2,2)\ntool: DR\nplan:",
    );
    const p2 = stepSync(env, t2.state, { plan: "U" });
    expect(p2.done).toBe(true);
    expect(p2.success).toBe(false);
    expect(p2.info?.failure).toBe("out of turns");
    // U from (2,2) to (1,2): −0.01 + (2 − 3)/4, then the failure penalty −1.
    expect(p2.teamReward).toBeCloseTo(-0.01 - 0.25 - 1, 12);
  });

  it('reportLine "first": the report before the board, so the lines copied from keep their distance to the cue', () => {
    const first = planPathEnv({ roles: "tool-call", hints: [...HINTS], maxTurns: 2, reportLine: "first" });
    const p1 = stepSync(first, stepSync(first, first.reset(task, 0), { tool: "path 2 2" }).state, {
      plan: "DDRR",
    });
    expect(first.observe(p1.state, "tool").messages[0]!.content).toBe(
      "path tool\nlast: DDRR: not solved, at (2,2)\n..#.\n.#..\n..A#\n#..G\nagent 2 2\ngoal 3 3\ngoal D1 R1\nnear U. D. L. R#\ncall:",
    );
    const t2 = stepSync(first, p1.state, { tool: "path 3 3" });
    expect(first.observe(t2.state, "plan").messages[0]!.content).toBe(
      "path plan\nlast: DDRR: not solved, at (2,2)\n..#.\n.#..\n..A#\n#..G\nagent 2 2\ngoal 3 3\ngoal D1 R1\nnear U. D. L. R#\ntool: DR\nplan:",
    );
    // The first turn has no report: the same prompt either way.
    const s0 = first.reset(task, 0);
    expect(first.observe(s0, "tool")).toEqual(env.observe(env.reset(task, 0), "tool"));
  });

  it("branches from one frozen state never share state", () => {
    const s0 = deepFreeze(env.reset(task, 0));
    const before = stableHash(s0);
    const a = stepSync(env, s0, { tool: "path 3 3" });
    const b = stepSync(env, s0, { tool: "path 2 2" });
    expect(stableHash(s0)).toBe(before);
    expect([a.state.toolOutput, b.state.toolOutput, s0.toolOutput]).toEqual(["DDRDRR", "DDRR", null]);
    const a2 = stepSync(env, deepFreeze(a.state), { plan: "DDRDRR" });
    const b2 = stepSync(env, deepFreeze(b.state), { plan: "DDRR" });
    expect([a2.state.board.pos, b2.state.board.pos, s0.board.pos]).toEqual([
      [3, 3],
      [2, 2],
      [0, 0],
    ]);
    expect(a.state.toolOutput).toBe("DDRDRR");
  });

  it("demonstrations: the tool calls the goal, the plan is the solver's, and together they solve", () => {
    const s0 = env.reset(task, 0);
    expect(env.demo(task, s0, "tool")).toBe("path 3 3");
    expect(env.demo(task, s0, "plan")).toBe("DDRDRR");
    expect(planPathDemo(task, s0, "tool", "tool-call")).toBe("path 3 3");
    expect(planPathDemo(task, s0, "plan", "tool-call")).toBe("DDRDRR");
    const mid = stepSync(env, stepSync(env, s0, { tool: "path 0 1" }).state, { plan: "R" });
    expect(env.demo(task, mid.state, "tool")).toBe("path 3 3");
    expect(env.demo(task, mid.state, "plan")).toBe("LDDRDRR");

    const gen = planPathEnv({
      roles: "tool-call",
      rows: 6,
      cols: 6,
      blockedFraction: 0.15,
      minPathLength: 3,
    });
    for (const t of gen.generateTasks("train", 200, { seed: 3 })) {
      const start = gen.reset(t, 0);
      const called = stepSync(gen, start, { tool: gen.demo(t, start, "tool") });
      expect(called.localRewards.tool).toBe(1);
      // The tool's path is the plan the demonstration teaches: the plan agent learns to read it.
      expect(called.state.toolOutput).toBe(gen.demo(t, called.state, "plan"));
      const planned = stepSync(gen, called.state, { plan: gen.demo(t, called.state, "plan") });
      expect(planned.success).toBe(true);
      expect(planned.state.movesTaken).toBe(t.payload.optimal);
    }
  });

  it("random commands and plans stay within rewardBounds", () => {
    const gen = planPathEnv({ roles: "tool-call", rows: 6, cols: 6 });
    expect(gen.rewardBounds).toEqual(planPathEnv({ roles: "single", rows: 6, cols: 6 }).rewardBounds);
    const rng = new Rng(5);
    for (const t of gen.generateTasks("train", 100, { seed: 9 })) {
      let state = gen.reset(t, 0);
      let done = false;
      for (let turn = 0; turn < gen.maxTurns && !done; turn++) {
        for (const agent of gen.agents) {
          if (done) break;
          const text =
            agent === "tool"
              ? rng.float() < 0.2
                ? "path x"
                : `path ${rng.int(7)} ${rng.int(7)}`
              : Array.from({ length: rng.int(10) }, () => rng.pick(["U", "D", "L", "R"])).join("");
          const r = stepSync(gen, state, { [agent]: text });
          expectWithinRewardBounds(r, gen.rewardBounds);
          state = r.state;
          done = r.done;
        }
      }
      expect(done).toBe(true);
    }
  });

  it("the team: tool then plan, sequential, with the tool-call descriptions", () => {
    const team = checkTeam(envTeam(env), env);
    expect(team.roles.map((r) => [r.id, r.policy])).toEqual([
      ["tool", "shared"],
      ["plan", "shared"],
    ]);
    expect(team.roles[0]!.description).toMatch(/short command/);
    expect(team.maxTurns).toBe(2);
  });
});

describe("tool-call options and rendering", () => {
  it("an unknown roles value is one error line naming the key; every game offers tool calls", () => {
    const message = (f: () => unknown) => thrownMessage(f, "no error");
    const direct = message(() => planPathEnv({ roles: "toolcall" as never }));
    expect(direct).toMatch(/^plan-path options: roles: /);
    expect(direct).toContain('"tool-call"');
    expect(direct).not.toContain("\n");
    const registry = message(() => environmentOptions("plan-path", { roles: "toolcall" }));
    expect(registry).toMatch(/^environment\.options\.roles: /);
    expect(registry).not.toContain("\n");
    expect(environmentOptions("plan-path", { roles: "tool-call" }).roles).toBe("tool-call");
    expect(sokobanEnv({ roles: "tool-call" }).roles).toBe("tool-call");
    expect(environmentOptions("sudoku", { roles: "tool-call" }).roles).toBe("tool-call");
    expect(message(() => environmentOptions("sudoku", { roles: "toolcall" }))).toMatch(
      /^environment\.options\.roles: /,
    );
  });

  it("the registry builds it without a sandbox and renders each turn's command, output and plan", () => {
    const built = createEnvironment("plan-path", { roles: "tool-call", hints: ["positions"] });
    expect(built.team("shared").roles.map((r) => r.id)).toEqual(["tool", "plan"]);
    const env = planPathEnv({ roles: "tool-call", maxTurns: 2 });
    const actions: ExecutedAction[] = [];
    let state = env.reset(task, 0);
    for (const [agent, text] of [
      ["tool", "path 2 2"],
      ["plan", "DDRR"],
      ["tool", "path 3 3"],
      ["plan", "DR"],
    ] as const) {
      const r = stepSync(env, state, { [agent]: text });
      actions.push({ agent, text, info: r.info?.[agent] });
      state = r.state;
    }
    const answer = renderAnswer("plan-path", state, actions) as PlanPathAnswer;
    expect(answer.calls).toEqual([
      { command: "path 2 2", output: "DDRR", plan: "DDRR" },
      { command: "path 3 3", output: "DR", plan: "DR" },
    ]);
    expect(answer.moves).toBe("DDRRDR");
    expect(answer.path).toEqual([
      [0, 0],
      [1, 0],
      [2, 0],
      [2, 1],
      [2, 2],
      [3, 2],
      [3, 3],
    ]);
    expect(answer.report).toBe("DR: solved");
    // The other protocols' answers carry no calls.
    const compact = planPathEnv();
    const done = stepSync(compact, compact.reset(task, 0), { planner: "DDRDRR" });
    const plain = renderAnswer("plan-path", done.state, [
      { agent: "planner", text: "DDRDRR", info: done.info?.planner },
    ]) as PlanPathAnswer;
    expect(plain.calls).toBeUndefined();
  });

  it("the positions hint works in the compact protocol too", () => {
    const compact = planPathEnv({ hints: ["positions"] });
    expect(compact.observe(compact.reset(task, 0), "planner").messages[0]!.content).toBe(
      "path planner\nA.#.\n.#..\n...#\n#..G\nagent 0 0\ngoal 3 3\nplan:",
    );
  });
});
