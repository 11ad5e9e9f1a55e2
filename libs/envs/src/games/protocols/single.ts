/**
 * The `single` protocol, the single-agent baseline of the compact protocol: the `planner` alone,
 * one plan per turn; from the second turn on it sees the report of its own last plan and re-plans.
 */
import type { AgentId } from "@troupe/core";
import { COMPACT_ROLE_DESCRIPTIONS, compactProtocol } from "./compact.ts";
import type { RoleProtocol } from "./protocol.ts";

export const SINGLE_AGENTS: readonly AgentId[] = ["planner"];

export const singleProtocol: RoleProtocol = {
  ...compactProtocol,
  roles: "single",
  agents: SINGLE_AGENTS,
  descriptions: COMPACT_ROLE_DESCRIPTIONS,
  planners: 1,
};
