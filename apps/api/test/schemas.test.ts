/**
 * The HTTP boundary's schemas: team names and refs, a solve request (exactly one of task or
 * generate, bounded turns and seeds, unknown fields refused with their path), and the response,
 * error and stats shapes the server answers with.
 */
import { describe, expect, it } from "vitest";
import {
  ErrorSchema,
  HealthSchema,
  MAX_SEED,
  MAX_TURNS_LIMIT,
  SolveRequestSchema,
  TeamNameParam,
  TeamRefQuery,
} from "../src/schemas.ts";

/** The first issue's path and message, or "ok". */
function verdict(body: unknown): "ok" | { path: PropertyKey[]; message: string } {
  const parsed = SolveRequestSchema.safeParse(body);
  if (parsed.success) return "ok";
  const issue = parsed.error.issues[0]!;
  return { path: issue.path, message: issue.message };
}

describe("team names and refs", () => {
  it("a name is 1–64 of a-z 0-9 . _ -, starting with a letter or digit; a ref may have capitals", () => {
    for (const ok of ["tiny", "plan-path.v2", "a", "0_x", "a".repeat(64)])
      expect(TeamNameParam.safeParse(ok).success, ok).toBe(true);
    for (const bad of ["", "Tiny", "-x", ".x", "a/b", "a".repeat(65), "tiny@stable"]) {
      expect(TeamNameParam.safeParse(bad).success, bad).toBe(false);
    }
    expect(TeamRefQuery.parse({})).toEqual({});
    for (const ok of ["latest", "stable", "v3", "3", "Canary_1"])
      expect(TeamRefQuery.safeParse({ ref: ok }).success, ok).toBe(true);
    for (const bad of ["../x", "", "-1", "a b"])
      expect(TeamRefQuery.safeParse({ ref: bad }).success, bad).toBe(false);
    expect(TeamRefQuery.safeParse({ ref: "v1", version: 2 }).success).toBe(false);
  });
});

describe("SolveRequestSchema", () => {
  it("takes a team (name or name@ref) and exactly one of task or generate", () => {
    expect(verdict({ team: "tiny", input: { generate: { seed: 3 } } })).toBe("ok");
    expect(verdict({ team: "tiny@v2", input: { generate: { split: "train", seed: 0 } } })).toBe("ok");
    expect(verdict({ team: "tiny@stable", input: { task: { id: "t", payload: {} } } })).toBe("ok");
    expect(verdict({ team: "tiny", input: {} })).toEqual({
      path: ["input"],
      message: "give either task or generate",
    });
    expect(verdict({ team: "tiny", input: { task: {}, generate: { seed: 1 } } })).toEqual({
      path: ["input"],
      message: "give task or generate, not both",
    });
    expect(verdict({ team: "Tiny", input: { generate: { seed: 1 } } })).toEqual({
      path: ["team"],
      message: 'a team is "name" or "name@ref" (ref: latest, an alias, v3 or 3)',
    });
  });

  it("bounds turns and seeds, and names an unknown field", () => {
    const body = (options: Record<string, unknown>, generate: Record<string, unknown> = { seed: 1 }) => ({
      team: "tiny",
      input: { generate },
      options,
    });
    expect(MAX_TURNS_LIMIT).toBe(64);
    expect(MAX_SEED).toBe(2 ** 31 - 1);
    expect(verdict(body({ maxTurns: 64, stream: true, transcript: false }))).toBe("ok");
    expect(verdict(body({ maxTurns: 65 }))).toMatchObject({ path: ["options", "maxTurns"] });
    expect(verdict(body({ maxTurns: 0 }))).toMatchObject({ path: ["options", "maxTurns"] });
    expect(verdict(body({}, { seed: MAX_SEED }))).toBe("ok");
    expect(verdict(body({}, { seed: MAX_SEED + 1 }))).toMatchObject({ path: ["input", "generate", "seed"] });
    expect(verdict(body({}, { seed: 1.5 }))).toMatchObject({ path: ["input", "generate", "seed"] });
    expect(verdict(body({}, { seed: 1, split: "dev" }))).toMatchObject({
      path: ["input", "generate", "split"],
    });
    expect(verdict(body({ temprature: 1 }))).toMatchObject({ path: ["options"] });
    expect(verdict({ team: "tiny", input: { generate: { seed: 1 } }, extra: 1 })).toMatchObject({ path: [] });
  });
});

describe("answer schemas", () => {
  it("an error has one of the documented codes, a message and an optional field path", () => {
    const error = { error: { code: "not_found", message: "no team", path: ["path", "name"] } };
    expect(ErrorSchema.parse(error)).toEqual(error);
    expect(ErrorSchema.safeParse({ error: { code: "teapot", message: "x" } }).success).toBe(false);
    expect(
      ErrorSchema.parse({ error: { code: "internal", message: "internal server error" } }).error.path,
    ).toBeUndefined();
  });

  it("health is ok: true, with whole non-negative counters when there are stats", () => {
    expect(HealthSchema.parse({ ok: true })).toEqual({ ok: true });
    expect(HealthSchema.safeParse({ ok: false }).success).toBe(false);
    const stats = {
      processes: 1,
      requests: 3,
      byStatus: { "200": 3 },
      rateLimited: 0,
      solves: 1,
      inFlightSolves: 0,
      clientAborts: 0,
      cpuMs: 12.5,
      ortRuns: 2,
      ortCpuMs: 4,
    };
    expect(HealthSchema.parse({ ok: true, stats })).toEqual({ ok: true, stats });
    expect(HealthSchema.safeParse({ ok: true, stats: { ...stats, requests: -1 } }).success).toBe(false);
    expect(HealthSchema.safeParse({ ok: true, stats: { ...stats, solves: 0.5 } }).success).toBe(false);
  });
});
