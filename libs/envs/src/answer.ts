/**
 * The `answer` of a solve: an episode's outcome in a form a page can show. Each environment's
 * registry entry renders its own final state into one of these shapes (the API returns it and the
 * playground draws it by `kind`).
 */
import type { AgentId } from "@troupe/core";
import type { Pos } from "./games/grid.ts";

/** One agent's action and what the environment said about it (StepResult.info[agent]). */
export interface ExecutedAction {
  readonly agent: AgentId;
  readonly text: string;
  readonly info: unknown;
}

export interface PlanPathAnswer {
  readonly kind: "plan-path";
  /** The final board: `#` blocked, `.` free, `A` the agent, `G` the goal. */
  readonly grid: string[];
  readonly start: Pos;
  readonly goal: Pos;
  readonly position: Pos;
  /** Cells visited from the start, in order (the start included). */
  readonly path: Pos[];
  /** The executed moves, e.g. "RRDD". */
  readonly moves: string;
  readonly optimal: number;
  readonly report: string | null;
  /** The `tool-call` roles: each turn's command, the tool's output and the plan, in order. */
  readonly calls?: readonly ToolCallTurn[];
}

/** One turn of the `tool-call` roles; null where that agent did not act. */
export interface ToolCallTurn {
  readonly command: string | null;
  /** What the plan agent read, e.g. `RRDD`, `no path`, `bad command: …`. */
  readonly output: string | null;
  readonly plan: string | null;
}

export interface BoardAnswer {
  readonly kind: "sokoban" | "sudoku";
  readonly board: string[];
  readonly movesTaken: number;
  readonly report: string | null;
  /** The `tool-call` roles: each turn's command, the tool's output and the plan, in order. */
  readonly calls?: readonly ToolCallTurn[];
}

/** One test of a run, as the answer shows it. */
export interface TestCaseAnswer {
  readonly source: string;
  readonly passed: boolean;
  readonly error?: string;
}

export interface TestRunAnswer {
  readonly passed: number;
  readonly total: number;
  readonly cases: readonly TestCaseAnswer[];
  /** Syntax, load or harness error, when the program never got to the tests. */
  readonly error?: string;
}

/** A coding team's final program and its test results. */
export interface CodeAnswer {
  readonly kind: "code";
  readonly entryPoint: string;
  /** The program the hidden tests ran (prompt and every agent's code), "" before any code. */
  readonly program: string;
  /** Each agent's last code (the coder–tester tester's is its tests). */
  readonly parts: Readonly<Record<AgentId, string>>;
  /** The dataset's hidden tests on the final program (null when no code was written). */
  readonly tests: TestRunAnswer | null;
  /** Coder–tester: the code against the tester's own tests. */
  readonly generatedTests?: TestRunAnswer | null;
  readonly turns: number;
}

/** A math team's answer: the agreed (or fallback) number, each agent's, and the tool's run. */
export interface MathAnswer {
  readonly kind: "math";
  readonly answer: number | null;
  readonly agree: boolean;
  readonly reasoner: number | null;
  readonly tool: {
    readonly answer: number | null;
    readonly program: string;
    readonly output: string;
    readonly status: string;
    readonly error?: string;
  } | null;
  readonly turns: number;
}

/** A writing team's texts and the reward tiers they reached. */
export interface WritingAnswer {
  readonly kind: "writing";
  readonly texts: Readonly<Record<AgentId, string>>;
  readonly tiers: {
    readonly structure: number;
    readonly coordination: number;
    readonly vocabulary: number;
    readonly style: number;
    readonly total: number;
    readonly stoppedAt?: string;
  } | null;
}

export interface StateAnswer {
  readonly kind: "state";
  readonly state: unknown;
}

export type SolveAnswer =
  | PlanPathAnswer
  | BoardAnswer
  | CodeAnswer
  | MathAnswer
  | WritingAnswer
  | StateAnswer;
