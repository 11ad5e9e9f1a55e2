import { deepFreeze, stableHash } from "@troupe/core";
import { describe, expect, it } from "vitest";
import {
  generatePlanPathTasks,
  type PlanPathPuzzle,
  parseDirections,
  planPathDemo,
  planPathEnv,
  renderPlanPath,
  shortestPlanPath,
} from "../../src/games/index.ts";
import { expectDemosOptimal } from "./expect.ts";
import { puzzle, task } from "./hand-4x4.ts";
import { stepSync } from "./step-sync.ts";

describe("plan-path rewards on a hand-made instance", () => {
  const env = planPathEnv();

  it("optimal plan: 6·(−0.01) + shaping (6 − 0)/4 + goal 1 + optimal 0.5 = 2.94", () => {
    const r = stepSync(env, env.reset(task, 0), { planner: "DDRRDR" });
    expect(r.teamReward).toBeCloseTo(-0.06 + 1.5 + 1 + 0.5, 12);
    expect(r.localRewards).toEqual({ planner: 1 });
    expect(r.done).toBe(true);
    expect(r.success).toBe(true);
    expect(r.state.report).toBe("DDRRDR: solved");
  });

  it("moves after the goal are not executed (same reward as the optimal plan)", () => {
    const r = stepSync(env, env.reset(task, 0), { planner: "d d r r d r u u" });
    expect(r.teamReward).toBeCloseTo(2.94, 12);
    expect(r.state.movesTaken).toBe(6);
  });

  it("blocked move, then a fix from where the plan stopped; no optimal bonus for an 8-move episode", () => {
    const s0 = env.reset(task, 0);
    // R: (0,0)→(0,1), d 6→7: −0.01 + (6 − 7)/4 = −0.26; R into '#': −0.1. Total −0.36.
    const r1 = stepSync(env, s0, { planner: "RR" });
    expect(r1.teamReward).toBeCloseTo(-0.36, 12);
    expect(r1.state.report).toBe("RR: blocked at step 2 (0,1)");
    expect(r1.state.board.pos).toEqual([0, 1]);
    // Local: (h_before − h_after)/h_before − 0.1 = (6 − 7)/6 − 0.1.
    expect(r1.localRewards.planner).toBeCloseTo(-1 / 6 - 0.1, 12);
    expect(r1.done).toBe(false);
    expect(r1.state.turn).toBe(0); // the fixer has not acted yet
    // LDDRRDR: 7 moves, each −0.01 + 1/4 = 0.24 → 1.68; goal +1; 8 moves ≠ 6: no bonus. 2.68.
    const r2 = stepSync(env, r1.state, { fixer: "LDDRRDR" });
    expect(r2.teamReward).toBeCloseTo(2.68, 12);
    expect(r2.localRewards).toEqual({ fixer: 1 });
    expect(r2.success).toBe(true);
    expect(r2.state.turn).toBe(1);
    // The episode return telescopes: shaping (6 − 0)/4 + 8·(−0.01) − 0.1 + 1 = 2.32.
    expect(r1.teamReward + r2.teamReward).toBeCloseTo(2.32, 12);
  });

  it("off the grid, unreadable plans, and the failure penalty when turns run out", () => {
    const short = planPathEnv({ maxTurns: 1 });
    const s0 = short.reset(task, 0);
    const off = stepSync(short, s0, { planner: "U" });
    expect(off.teamReward).toBeCloseTo(-0.1, 12);
    expect(off.state.report).toBe("U: off grid at step 1 (0,0)");
    // D: −0.01 + (6 − 5)/4 = 0.24.
    const r1 = stepSync(short, s0, { planner: "D" });
    expect(r1.teamReward).toBeCloseTo(0.24, 12);
    expect(r1.localRewards.planner).toBeCloseTo(1 / 6, 12);
    // Unreadable: −0.1; last role of the last turn acted, unsolved: −1.
    const r2 = stepSync(short, r1.state, { fixer: "go to the goal" });
    expect(r2.teamReward).toBeCloseTo(-1.1, 12);
    expect(r2.localRewards).toEqual({ fixer: -0.1 });
    expect(r2.done).toBe(true);
    expect(r2.success).toBe(false);
    expect(r2.info?.failure).toBe("out of turns");
    expect(() => stepSync(short, r2.state, { planner: "D" })).toThrow(/finished episode/);
  });

  it("γ < 1 and a custom scale change the shaping term exactly", () => {
    const env2 = planPathEnv({ rewards: { shapingGamma: 0.9, shapingScale: 10 } });
    // D from d = 6 to d' = 5: −0.01 + (6 − 0.9·5)/10 = −0.01 + 0.15 = 0.14.
    expect(stepSync(env2, env2.reset(task, 0), { planner: "D" }).teamReward).toBeCloseTo(0.14, 12);
  });

  it("plans longer than maxPlanLength are cut", () => {
    const env3 = planPathEnv({ maxPlanLength: 2 });
    const r = stepSync(env3, env3.reset(task, 0), { planner: "DDRRDR" });
    expect(r.state.movesTaken).toBe(2);
    expect(r.state.report).toBe("DDRRDR: not solved, at (2,0) (cut at 2)");
  });

  it("demonstrations teach no more moves than a plan executes", () => {
    const env3 = planPathEnv({ maxPlanLength: 2 });
    expect(env3.demo(task, env3.reset(task, 0), "planner")).toBe("DD");
    expect(env.demo(task, env.reset(task, 0), "planner")).toBe("DDRDRR");
  });

  it("renders one row per line and the compact prompts", () => {
    const s0 = env.reset(task, 0);
    expect(renderPlanPath(puzzle, s0.board)).toBe("A.#.\n.#..\n...#\n#..G");
    expect(env.observe(s0, "planner").messages).toEqual([
      { role: "user", content: "path planner\nA.#.\n.#..\n...#\n#..G\nplan:" },
    ]);
    const r = stepSync(env, s0, { planner: "RR" });
    expect(env.observe(r.state, "fixer").messages[0]!.content).toBe(
      "path fixer\n.A#.\n.#..\n...#\n#..G\nlast: RR: blocked at step 2 (0,1)\nfix:",
    );
  });

  it("adds the hint lines after the board, in the order asked", () => {
    const hinted = planPathEnv({ hints: ["position", "offset", "neighbours"] });
    const s0 = hinted.reset(task, 0);
    expect(hinted.observe(s0, "planner").messages[0]!.content).toBe(
      "path planner\nA.#.\n.#..\n...#\n#..G\nat 0,0 goal 3,3\ngoal D3 R3\nnear Ux D. Lx R.\nplan:",
    );
    const r = stepSync(hinted, s0, { planner: "RR" });
    expect(hinted.observe(r.state, "fixer").messages[0]!.content).toBe(
      "path fixer\n.A#.\n.#..\n...#\n#..G\nat 0,1 goal 3,3\ngoal D3 R2\nnear Ux D# L. R#\nlast: RR: blocked at step 2 (0,1)\nfix:",
    );
    // Next to the goal, the neighbour is `G`; on it, the offset says so.
    const near = stepSync(hinted, s0, { planner: "DDRDR" });
    const offsetOnly = planPathEnv({ hints: ["neighbours", "offset"] });
    expect(offsetOnly.observe(near.state, "fixer").messages[0]!.content).toContain(
      "near U. Dx L. RG\ngoal R1\n",
    );
  });

  it("refuses hints the protocol does not show", () => {
    expect(() =>
      planPathEnv({ roles: "tool", hints: ["offset"], runner: { run: async () => ({}) as never } }),
    ).toThrow(
      'plan-path options: hints are lines of the compact observation, which roles "tool" does not use',
    );
    expect(() => planPathEnv({ hints: ["compass" as never] })).toThrow(/hints/);
  });
});

describe("plan-path solver and parser", () => {
  it("shortest path on the hand-made instance, from the start and from mid-way", () => {
    // Ties broken in U, D, L, R order: at (2,1) both D and R lead to distance 2; D comes first.
    expect(shortestPlanPath(puzzle, [0, 0])).toEqual(["D", "D", "R", "D", "R", "R"]);
    expect(shortestPlanPath(puzzle, [0, 3])).toEqual(["D", "L", "D", "D", "R"]);
  });

  it("parses letters, words and lists; rejects anything else", () => {
    expect(parseDirections("UURDL")).toEqual(["U", "U", "R", "D", "L"]);
    expect(parseDirections("I think...\n#### ['U', 'r']")).toEqual(["U", "R"]);
    expect(parseDirections("up, up, left")).toEqual(["U", "U", "L"]);
    expect(parseDirections("UUX")).toBeNull();
    expect(parseDirections("")).toBeNull();
    expect(parseDirections("####")).toBeNull();
  });

  it("demonstrations: each role's text solves optimally from the current board", () => {
    const env = planPathEnv();
    const s0 = env.reset(task, 0);
    expect(planPathDemo(task, s0, "planner")).toBe("DDRDRR");
    expect(planPathDemo(task, s0, "plan")).toBe("#### DDRDRR");
    expect(planPathDemo(task, s0, "tool")).toMatch(/^```python\n[\s\S]*deque[\s\S]*```$/);
    const r1 = stepSync(env, s0, { planner: "R" });
    expect(planPathDemo(task, r1.state, "fixer")).toBe("LDDRDRR");
    expect(() => planPathDemo(task, r1.state, "critic")).toThrow(/unknown agent/);
  });
});

/** Independent BFS (string keys, array queue) to check the generator's `optimal`. */
function referenceDistance(p: PlanPathPuzzle): number {
  const seen = new Map<string, number>([[`${p.start}`, 0]]);
  const queue: (readonly [number, number])[] = [p.start];
  while (queue.length > 0) {
    const [r, c] = queue.shift()!;
    const d = seen.get(`${r},${c}`)!;
    if (r === p.goal[0] && c === p.goal[1]) return d;
    for (const [nr, nc] of [
      [r - 1, c],
      [r + 1, c],
      [r, c - 1],
      [r, c + 1],
    ] as const) {
      if (p.grid[nr]?.[nc] === "." && !seen.has(`${nr},${nc}`)) {
        seen.set(`${nr},${nc}`, d + 1);
        queue.push([nr, nc]);
      }
    }
  }
  return -1;
}

describe("plan-path generation", () => {
  const tasks = generatePlanPathTasks("train", 400, { seed: 7 });

  it("every instance is solvable, optimal = BFS, 22% blocked, distance ≥ minPathLength, and the demo is optimal", () => {
    for (const { payload } of tasks) {
      expect(payload.grid.join("").split("#").length - 1).toBe(22);
      expect(referenceDistance(payload)).toBe(payload.optimal);
      expect(payload.optimal).toBeGreaterThanOrEqual(4);
    }
    expectDemosOptimal(planPathEnv(), tasks, planPathDemo);
  });

  it("maxPathLength bounds the BFS distance; without it the same seed gives the same tasks", () => {
    const short = generatePlanPathTasks("train", 200, { seed: 7, minPathLength: 3, maxPathLength: 5 });
    expect(short).toHaveLength(200);
    const lengths = new Set(short.map((t) => t.payload.optimal));
    expect([...lengths].sort()).toEqual([3, 4, 5]);
    for (const t of short) expect(referenceDistance(t.payload)).toBe(t.payload.optimal);
    expect(generatePlanPathTasks("train", 5, { seed: 7, maxPathLength: undefined }).map((t) => t.id)).toEqual(
      tasks.slice(0, 5).map((t) => t.id),
    );
    expect(() => generatePlanPathTasks("train", 1, { seed: 7, maxPathLength: 0 })).toThrow(/maxPathLength/);
  });

  it("is deterministic in the seed and respects size options", () => {
    expect(generatePlanPathTasks("train", 5, { seed: 7 }).map((t) => t.id)).toEqual(
      tasks.slice(0, 5).map((t) => t.id),
    );
    expect(stableHash(generatePlanPathTasks("train", 5, { seed: 8 }))).not.toBe(
      stableHash(tasks.slice(0, 5)),
    );
    const small = generatePlanPathTasks("validation", 20, {
      rows: 5,
      cols: 7,
      blockedFraction: 0.1,
      seed: 1,
    });
    for (const t of small) expect(t.payload.grid).toHaveLength(5);
    expect(small[0]!.payload.grid[0]).toHaveLength(7);
  });

  it("rejects bad options and payloads with the field named", () => {
    expect(() => planPathEnv({ rows: 1 })).toThrow(/plan-path options: rows/);
    expect(() => planPathEnv({ colz: 3 } as never)).toThrow(/plan-path options/);
    expect(() => generatePlanPathTasks("train", 1, { blockedFraction: 2 })).toThrow(/blockedFraction/);
    const env = planPathEnv();
    expect(() => env.reset({ ...task, payload: { ...puzzle, goal: [0, 2] } }, 0)).toThrow(
      /payload: goal: must be a free cell/,
    );
    expect(() => env.reset({ ...task, payload: { ...puzzle, optimal: 5 } }, 0)).toThrow(
      /optimal is 5 but BFS gives 6/,
    );
  });

  it("stepping a deep-frozen state works and leaves it unchanged", () => {
    const env = planPathEnv();
    const s0 = deepFreeze(env.reset(task, 0));
    const before = stableHash(s0);
    const r = stepSync(env, s0, { planner: "DDR" });
    expect(stableHash(s0)).toBe(before);
    expect(r.state.board.pos).toEqual([2, 1]);
  });
});
