/** What every game module wires the same way: options, the check of a given task, demonstrations. */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { gameOptionsSchema } from "../../src/games/game-module.ts";
import { planPathDemo, planPathEnv } from "../../src/games/index.ts";
import { task } from "./hand-4x4.ts";

describe("gameModule", () => {
  it("a given task is checked, named, and kept as the caller's object", () => {
    const env = planPathEnv();
    expect(env.reset(task, 0).puzzle).toBe(task.payload);
    expect(() => env.reset({ ...task, payload: { ...task.payload, optimal: 5 } }, 0)).toThrow(
      "plan-path task hand-4x4: payload.optimal is 5 but BFS gives 6",
    );
    expect(() => env.reset({ ...task, payload: { ...task.payload, rows: "4" } as never }, 0)).toThrow(
      /^plan-path task hand-4x4: payload: rows: /,
    );
  });

  it("options: one line naming the field; demonstrations with the default game", () => {
    expect(() => planPathEnv({ rows: 1 })).toThrow(/^plan-path options: rows: /);
    expect(() => planPathEnv({ colour: "red" } as never)).toThrow(/^plan-path options: /);
    const env = planPathEnv();
    expect(planPathDemo(task, env.reset(task, 0), "planner")).toBe("DDRDRR");
  });

  it("gameOptionsSchema: the episode options with every protocol, the generation fields, the rewards with their defaults", () => {
    const schema = gameOptionsSchema(
      z.object({ size: z.number().default(3) }),
      z.object({ win: z.number().default(1) }),
    );
    expect(schema.parse({})).toMatchObject({ roles: "compact", size: 3, rewards: { win: 1 } });
    expect(schema.safeParse({ other: 1 }).success).toBe(false);
    expect(schema.parse({ roles: "tool-call" }).roles).toBe("tool-call");
    expect(Object.keys(schema.shape)[0]).toBe("roles"); // in the episode options' place: parsed key order unchanged
  });
});
