import { deepFreeze, stableHash, type Task } from "@troupe/core";
import { describe, expect, it } from "vitest";
import {
  generateSokobanTasks,
  type SokobanPuzzle,
  SokobanRewardsSchema,
  sokobanDemo,
  sokobanEnv,
  sokobanGame,
  solveSokoban,
} from "../../src/games/index.ts";
import { expectDemosOptimal } from "./expect.ts";
import { oneBox } from "./hand-puzzles.ts";
import { stepSync } from "./step-sync.ts";

/**
 * Two boxes:
 *   ########
 *   #@$.___#   box A (1,2) next to target (1,3)
 *   #____$.#   box B (2,5) next to target (2,6)
 *   ########
 * Optimal 5: R (A onto its target), D R R (walk behind B), R (B onto its target).
 */
const twoBoxes: SokobanPuzzle = {
  rows: 4,
  cols: 8,
  walls: ["########", "#______#", "#______#", "########"],
  targets: [
    [1, 3],
    [2, 6],
  ],
  boxes: [
    [1, 2],
    [2, 5],
  ],
  player: [1, 1],
  optimal: 5,
};

const taskOf = (payload: SokobanPuzzle): Task<SokobanPuzzle> => ({ id: "hand", split: "test", payload });

describe("sokoban rewards on hand-made levels", () => {
  const env = sokobanEnv();

  it("renders XSB symbols one row per line", () => {
    expect(env.observe(env.reset(taskOf(oneBox), 0), "planner").messages[0]!.content).toBe(
      "soko planner\n######\n#@___#\n#_$_##\n#__._#\n##___#\n######\nplan:",
    );
  });

  it("optimal solve: 5·(−0.01) + box on target 0.1 + solved 1 + optimal 0.5 = 1.55", () => {
    for (const plan of ["DRURD", "RDLDR"]) {
      const r = stepSync(env, env.reset(taskOf(oneBox), 0), { planner: plan });
      expect(r.teamReward).toBeCloseTo(1.55, 12);
      expect(r.localRewards).toEqual({ planner: 1 });
      expect(r.success).toBe(true);
    }
  });

  it("walking into a wall: 3·(−0.01) − 0.1", () => {
    const r = stepSync(env, env.reset(taskOf(oneBox), 0), { planner: "RRRR" });
    expect(r.teamReward).toBeCloseTo(-0.13, 12);
    expect(r.state.report).toBe("RRRR: wall at step 4 (1,4)");
    expect(r.done).toBe(false);
  });

  it("pushing the box into a corner is a deadlock: 3·(−0.01) − 1, local −1", () => {
    // R, D pushes the box to (3,2), D pushes it to (4,2): wall below, wall to the left.
    const r = stepSync(env, env.reset(taskOf(oneBox), 0), { planner: "RDD" });
    expect(r.teamReward).toBeCloseTo(-1.03, 12);
    expect(r.localRewards).toEqual({ planner: -1 });
    expect(r.done).toBe(true);
    expect(r.success).toBe(false);
    expect(r.info?.failure).toBe("deadlock");
  });

  it("a blocked push: 3·(−0.01) − 0.1, then the deadlock −1", () => {
    const r = stepSync(env, env.reset(taskOf(oneBox), 0), { planner: "RDDD" });
    expect(r.teamReward).toBeCloseTo(-1.13, 12);
    expect(r.state.report).toBe("RDDD: box blocked at step 4 (3,2); deadlock");
  });

  it("box onto a target then off it: (−0.01 + 0.1) + (−0.01 − 0.1) = −0.02, progress 0", () => {
    const env2 = sokobanEnv({ boxes: 2 });
    const r = stepSync(env2, env2.reset(taskOf(twoBoxes), 0), { planner: "RR" });
    expect(r.teamReward).toBeCloseTo(-0.02, 12);
    // From player (1,3), A (1,4), B (2,5) the optimum is still 5 (D R R pushes B home, U L pushes A back).
    expect(r.localRewards.planner).toBeCloseTo(0, 12);
    expect(solveSokoban(twoBoxes, r.state.board)).toHaveLength(5);
    // Solving both from the start: 5·(−0.01) + 0.1 + 0.1 + 1 + 0.5 = 1.65.
    expect(stepSync(env2, env2.reset(taskOf(twoBoxes), 0), { planner: "RDRRR" }).teamReward).toBeCloseTo(
      1.65,
      12,
    );
  });
});

describe("sokoban solver", () => {
  it("finds the optimum on hand-made levels and null on an unsolvable one", () => {
    expect(solveSokoban(oneBox, oneBox)).toHaveLength(5);
    expect(solveSokoban(twoBoxes, twoBoxes)).toHaveLength(5);
    expect(solveSokoban(oneBox, { player: [1, 1], boxes: [[4, 2]] })).toBeNull();
    expect(solveSokoban(oneBox, { player: [1, 1], boxes: [[3, 3]] })).toEqual([]);
  });

  it("documents per-plan box rewards as ±0.1 per box", () => {
    expect(sokobanGame(SokobanRewardsSchema.parse({}), 2).planRewardRange(64)).toEqual([-0.2, 0.2]);
  });
});

describe("sokoban generation by reverse play", () => {
  const tasks = generateSokobanTasks("train", 300, { seed: 3 });

  it("every level is solvable, its optimum ≥ minSolutionLength, and the demo solves it optimally", () => {
    for (const { payload } of tasks) {
      expect(payload.walls).toHaveLength(6);
      expect(payload.boxes).toHaveLength(1);
      expect(payload.optimal).toBeGreaterThanOrEqual(4);
    }
    expectDemosOptimal(sokobanEnv(), tasks, sokobanDemo);
  });

  it("two-box levels are solvable too", () => {
    const env = sokobanEnv({ boxes: 2, rows: 7, cols: 7 });
    for (const t of env.generateTasks("train", 20, { seed: 5 })) {
      const s0 = env.reset(t, 0);
      expect(stepSync(env, s0, { planner: sokobanDemo(t, s0, "planner") }).success).toBe(true);
    }
  });

  it("stepping a deep-frozen state works and leaves it unchanged", () => {
    const env = sokobanEnv();
    const s0 = deepFreeze(env.reset(taskOf(oneBox), 0));
    const before = stableHash(s0);
    const r = stepSync(env, s0, { planner: "DR" });
    expect(stableHash(s0)).toBe(before);
    expect(r.state.board.boxes).toEqual([[2, 3]]);
  });

  it("rejects bad payloads with the field named", () => {
    const env = sokobanEnv();
    expect(() => env.reset(taskOf({ ...oneBox, boxes: [[0, 0]] }), 0)).toThrow(
      /payload: boxes\.0: must be on floor/,
    );
    expect(() => env.reset(taskOf({ ...oneBox, optimal: 4 }), 0)).toThrow(
      /optimal is 4 but the solver gives 5/,
    );
  });
});
