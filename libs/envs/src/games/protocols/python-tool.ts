/**
 * The `tool` protocol (the Stronger-MAS / AT-GRPO roles, for real LLMs); turn = tool then plan:
 *  - `tool` writes Python in a ```python block; the environment runs it through the `CodeRunner`
 *    given in the options with the current board as data (`puzzle`, loaded from puzzle.json), and
 *    shows its output to the plan agent. It moves nothing; its local reward is the progress its
 *    printed plan (last output line, or what follows `####`) *would* make from the board.
 *  - `plan` answers after `####` (e.g. `#### UURDL`); the plan is executed from the board.
 */
import { type AgentId, type Observation, userObservation } from "@troupe/core";
import type { RunResult } from "@troupe/sandbox";
import type { GameState } from "../episode.ts";
import type { Game } from "../game.ts";
import { answerText } from "../grid.ts";
import { commitPlan, invalidPlanReward, planProgressFrom, type RoleProtocol, type Step } from "./protocol.ts";

export const TOOL_AGENTS: readonly AgentId[] = ["tool", "plan"];

export const PYTHON_TOOL_ROLE_DESCRIPTIONS: Readonly<Record<string, string>> = {
  tool: "writes Python that computes a plan; its output is shown to the plan agent",
  plan: "gives the final plan after ####; the environment executes it",
};

/** Loads the board data the prompt promises as `puzzle`. */
export const PYTHON_PRELUDE = 'import json\nwith open("puzzle.json") as _f:\n    puzzle = json.load(_f)\n';

/** The last ```python (or bare ```) block of a message, or null. */
export function extractPython(text: string): string | null {
  const blocks = [...text.matchAll(/```(?:python|py|python3)?[ \t]*\n([\s\S]*?)```/g)];
  const code = blocks.at(-1)?.[1];
  return code === undefined || code.trim() === "" ? null : code;
}

/** What of a tool program's output is a plan: after `####` if printed, else the last non-empty line. */
export function toolPlanText(stdout: string): string {
  if (stdout.includes("####")) return answerText(stdout);
  const lines = stdout.split("\n").filter((l) => l.trim() !== "");
  return lines.at(-1) ?? "";
}

/** A program run as the plan agent reads it: its output's tail, with the status when it failed. */
export function formatRun(result: RunResult, maxChars: number): string {
  const tail = (s: string) => (s.length > maxChars ? `...${s.slice(-maxChars)}` : s);
  if (result.status === "ok") return tail(result.stdout) || "(no output)";
  const stderr = result.stderr.trim() === "" ? "" : `\n${tail(result.stderr)}`;
  return `[${result.status}] ${tail(result.stdout)}${stderr}`;
}

/** Runs the tool agent's program; its output goes to the plan agent, its plan is only evaluated. */
async function runTool<Puzzle, Board, Move>(
  { game, options, puzzle, draft }: Step<Puzzle, Board, Move>,
  agent: AgentId,
  text: string,
): Promise<void> {
  const code = extractPython(text);
  if (code === null) {
    draft.toolOutput = "(the tool agent wrote no ```python block)";
    draft.local[agent] = invalidPlanReward(game.rewards.invalid);
    draft.info[agent] = { code: false };
    return;
  }
  const result: RunResult = await options.runner!.run({
    language: "python",
    code: `${PYTHON_PRELUDE}${code}`,
    files: { "puzzle.json": JSON.stringify(game.toolData(puzzle, draft.board)) },
    limits: { wallMs: options.toolWallMs },
  });
  draft.toolOutput = formatRun(result, options.toolOutputChars);
  const moves = result.status === "ok" ? game.parsePlan(toolPlanText(result.stdout)) : null;
  draft.local[agent] =
    moves === null
      ? invalidPlanReward(game.rewards.invalid)
      : planProgressFrom(game, puzzle, draft.board, moves, options.maxPlanLength);
  draft.info[agent] = { code: true, status: result.status, planReadable: moves !== null };
}

function boardSection<Puzzle, Board>(
  game: Game<Puzzle, Board, unknown>,
  state: GameState<Puzzle, Board>,
): string {
  const last = state.report === null ? "" : `\nLast executed plan: ${state.report}`;
  return `${game.toolRules}\n\nCurrent board (row 0 at the top):\n${game.render(state.puzzle, state.board)}${last}`;
}

function toolObservation<Puzzle, Board>(
  game: Game<Puzzle, Board, unknown>,
  state: GameState<Puzzle, Board>,
): Observation {
  const system =
    `You are the tool agent of a two-agent team solving a ${game.title} puzzle. You write a Python program ` +
    "that computes a plan; its output is shown to the plan agent, who gives the final answer.";
  const user =
    `${boardSection(game, state)}\n\n` +
    "Your program runs with python3. The variable `puzzle` already holds the current board as data:\n" +
    `${JSON.stringify(game.toolData(state.puzzle, state.board))}\n\n` +
    `Write exactly one \`\`\`python block. Print the plan (${game.planFormat}) as the last line of output.`;
  return userObservation(user, system);
}

function planObservation<Puzzle, Board>(
  game: Game<Puzzle, Board, unknown>,
  state: GameState<Puzzle, Board>,
): Observation {
  const system =
    `You are the plan agent of a two-agent team solving a ${game.title} puzzle. The tool agent ran a program ` +
    "to help you. Give the final plan after ####; it is executed from the current board.";
  const user =
    `${boardSection(game, state)}\n\n` +
    `Tool agent's program output:\n${state.toolOutput ?? "(none)"}\n\n` +
    `Answer with the plan (${game.planFormat}) after ####.`;
  return userObservation(user, system);
}

export const pythonToolProtocol: RoleProtocol = {
  roles: "tool",
  agents: TOOL_AGENTS,
  descriptions: PYTHON_TOOL_ROLE_DESCRIPTIONS,
  planners: 1,
  compact: false,
  async: true,
  check(game, options) {
    if (options.runner === undefined) {
      throw new Error(
        `${game.name}: roles "tool" runs the tool agent's Python and needs a CodeRunner in options.runner ` +
          '(e.g. the sandbox from @troupe/sandbox); use roles "compact" to run without one',
      );
    }
  },
  observe: (game, state, agent) =>
    agent === "tool" ? toolObservation(game, state) : planObservation(game, state),
  act: (step, agent, text) => (agent === "tool" ? runTool(step, agent, text) : commitPlan(step, agent, text)),
};
