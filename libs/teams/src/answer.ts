/**
 * The `answer` of a solve: each environment's registry entry renders its final state (a board and
 * the executed path for the games, the program and its test results for coding, the answer and
 * the tool's run for math, the texts and reward tiers for writing).
 */
export {
  type CodeAnswer,
  type ExecutedAction,
  type PlanPathAnswer,
  renderAnswer,
  type SolveAnswer,
} from "@troupe/envs/registry";
