/**
 * POST /v1/solve's body → the arguments of @troupe/teams `solve()`, and its result → the answer.
 * The HTTP options are flat ({temperature, topP, seed, maxTokens}); solve() groups them as sampling.
 */

import type { SolveInput, SolveOptions, SolveResult } from "@troupe/teams";
import type { SolveRequest, SolveResponse } from "./schemas.ts";

/** "planpath" → {name: "planpath", ref: "latest"}; "planpath@stable" → {name, ref: "stable"}. */
export function splitTeamRef(team: string): { name: string; ref: string } {
  const at = team.indexOf("@");
  return at < 0 ? { name: team, ref: "latest" } : { name: team.slice(0, at), ref: team.slice(at + 1) };
}

export function solveArguments(
  body: SolveRequest,
  signal: AbortSignal,
): { input: SolveInput; solveOptions: SolveOptions } {
  const input: SolveInput =
    body.input.generate !== undefined ? { generate: body.input.generate } : { task: body.input.task };
  const o = body.options ?? {};
  const sampling: NonNullable<SolveOptions["sampling"]> = {};
  if (o.temperature !== undefined) sampling.temperature = o.temperature;
  if (o.topP !== undefined) sampling.topP = o.topP;
  if (o.seed !== undefined) sampling.seed = o.seed;
  if (o.maxTokens !== undefined) sampling.maxTokens = o.maxTokens;
  return {
    input,
    solveOptions: { ...(o.maxTurns !== undefined ? { maxTurns: o.maxTurns } : {}), sampling, signal },
  };
}

export function solveResponse(
  team: { name: string; version: number },
  result: SolveResult,
  transcript: boolean,
): SolveResponse {
  return {
    team,
    task: result.task,
    answer: result.answer,
    solved: result.solved,
    teamReturn: result.teamReturn,
    ...(transcript ? { turns: result.turns } : {}),
    usage: result.usage,
    latencyMs: result.latencyMs,
    seed: result.seed,
  };
}
