/**
 * What every game environment shares whatever its role protocol: the episode options, the state,
 * and the environment's interface. The protocols themselves are in protocols/, one a file; the
 * environment that runs them is game-environment.ts.
 */
import type { AgentId, Environment, Split, Task } from "@troupe/core";
import type { CodeRunner } from "@troupe/sandbox";
import { z } from "zod";
import { COMPACT_HINTS } from "./game.ts";
import { parseOptions } from "./options.ts";

/** Every role protocol; `tool-call` needs a game with a `toolCall` (see protocols/). */
export const RolesVariantSchema = z.enum(["compact", "tool", "single", "tool-call"]);
export type RolesVariant = z.infer<typeof RolesVariantSchema>;
/** The protocols every game offers: the `roles` option of games without a tool of their own. */
export const GameRolesSchema = z.enum(["compact", "tool", "single"]);

/** Where the compact observation puts the last report (`reportLine`). */
export const REPORT_LINES = ["after-hints", "first"] as const;
export type ReportLine = (typeof REPORT_LINES)[number];

const isCodeRunner = (value: unknown): value is CodeRunner =>
  typeof value === "object" && value !== null && typeof (value as { run?: unknown }).run === "function";

/** Options every game environment takes, with their defaults. */
export const EpisodeOptionsSchema = z.object({
  roles: GameRolesSchema.default("compact"),
  /** Turns per episode; a turn is every role acting once. */
  maxTurns: z.number().int().min(1).max(64).default(4),
  /**
   * Extra lines of the compact observation after the board (see `CompactHint` in game.ts), in this
   * order; [] is the board picture alone.
   */
  hints: z.array(z.enum(COMPACT_HINTS)).default([]),
  /**
   * Where the compact observation puts the report on the last executed plan (`last: …`): after the
   * hint lines (default), or first, before the board. First, every line an agent copies from (the
   * hints, the tool's output) stays the same distance from its cue on every turn, since the one
   * line whose length and presence vary comes before them.
   */
  reportLine: z.enum(REPORT_LINES).default("after-hints"),
  /** Moves of one plan executed at most; the rest is ignored (and reported). */
  maxPlanLength: z.number().int().min(1).max(1000).default(64),
  /** Runs the tool agent's Python (required when roles = "tool"): the sandbox from @troupe/sandbox. */
  runner: z
    .custom<CodeRunner>(isCodeRunner, "runner must be a CodeRunner (an object with run(request))")
    .optional(),
  /** Wall-clock limit for one tool program, ms. */
  toolWallMs: z.number().int().positive().default(10_000),
  /** Characters of the tool program's output shown to the plan agent (the tail is kept). */
  toolOutputChars: z.number().int().positive().default(1500),
  /**
   * The `tool-call` roles: a plan the tool gives is padded with `.` to this many characters (the
   * plan parsers skip dots). The plan agent reads `tool: <output>` on the line before its cue, so
   * at a fixed width the k-th character it writes copies the character a constant distance back,
   * whatever the plan's length — one attention offset to learn; without it the distance grows with
   * the plan, and a 2-layer byte model learns the copy late or not at all, depending on the seed.
   * 0 (or absent): no padding.
   */
  toolWidth: z.number().int().min(0).max(256).optional(),
  /** Base seed for `generateTasks` when none is given there. */
  seed: z.number().int().default(0),
});
/** The episode options with every protocol allowed (a game's own schema narrows `roles`). */
const AnyEpisodeOptionsSchema = EpisodeOptionsSchema.extend({ roles: RolesVariantSchema.default("compact") });
export type EpisodeOptions = z.input<typeof AnyEpisodeOptionsSchema>;
export type ParsedEpisodeOptions = z.output<typeof AnyEpisodeOptionsSchema>;

/** The episode options out of a game's options object (other keys are the game's own). */
export function parseEpisodeOptions(name: string, options: EpisodeOptions): ParsedEpisodeOptions {
  return parseOptions(`${name} options`, AnyEpisodeOptionsSchema, options);
}

export interface GameState<Puzzle, Board> {
  readonly puzzle: Puzzle;
  readonly board: Board;
  /** Completed turns. */
  readonly turn: number;
  /** Valid moves executed so far in the episode. */
  readonly movesTaken: number;
  readonly solved: boolean;
  readonly done: boolean;
  /** The environment's report on the last executed plan, e.g. `RRD: blocked at step 3 (2,4)`. */
  readonly report: string | null;
  /** Tool variants: the last tool program's output, or the tool call's output line, as shown to the plan agent. */
  readonly toolOutput: string | null;
}

export interface GenerateOptions {
  /** Base seed of the split's seed stream (default: the environment's `seed` option). */
  readonly seed?: number;
}

export interface GameEnvironment<Puzzle, Board> extends Environment<GameState<Puzzle, Board>, Puzzle> {
  readonly roles: RolesVariant;
  readonly maxTurns: number;
  readonly rewardBounds: {
    readonly team: readonly [number, number];
    readonly local: readonly [number, number];
  };
  /** Synchronous: the initial state depends only on the task. */
  reset(task: Task<Puzzle>, seed: number): GameState<Puzzle, Board>;
  /** `count` distinct tasks of `split`, disjoint from every other split (see splits.ts). */
  generateTasks(split: Split, count: number, options?: GenerateOptions): Task<Puzzle>[];
  /** The solver's next action text for `agent` (see `gameDemo`). */
  demo(task: Task<Puzzle>, state: GameState<Puzzle, Board>, agent: AgentId): string;
}
