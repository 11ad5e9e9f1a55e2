/**
 * What every game module wires the same way around `gameEnvironment`: the environment from the
 * game's options object, the check of a task payload given from outside (the API's `input.task`),
 * and the solver's demonstrations with the default options.
 */
import type { AgentId, Task } from "@troupe/core";
import type { z } from "zod";
import { gameDemo } from "./demo.ts";
import {
  type EpisodeOptions,
  EpisodeOptionsSchema,
  type GameEnvironment,
  type GameState,
  type RolesVariant,
  RolesVariantSchema,
} from "./episode.ts";
import type { Game } from "./game.ts";
import { gameEnvironment } from "./game-environment.ts";
import { parseOptions } from "./options.ts";
import type { GenerationSchema, SplitTaskGenerator } from "./splits.ts";

export interface GameModuleSpec<
  O extends z.ZodType<EpisodeOptions>,
  G extends GenerationSchema,
  Puzzle,
  Board,
  Move,
> {
  /** The game's task generator; its name and generation schema are the environment's. */
  readonly generateTasks: SplitTaskGenerator<G, Puzzle>;
  /** The game's options: the episode options, the generation fields and its rewards. */
  readonly optionsSchema: O;
  /** The game for parsed options. */
  readonly game: (options: z.output<O>, generation: z.output<G>) => Game<Puzzle, Board, Move>;
  /** A task payload's shape (the error of a bad one names the task and the field). */
  readonly puzzleSchema: z.ZodType;
  /** What the schema cannot check; throws with `where` (`<env> task <id>`) leading its message. */
  readonly checkPuzzle: (puzzle: Puzzle, where: string) => void;
}

export interface GameModule<Options, Puzzle, Board> {
  /** The environment for an options object (defaults for every field left out). */
  env(options?: Options): GameEnvironment<Puzzle, Board>;
  /**
   * The solver's next action text for `agent` ("planner" | "fixer" | "tool" | "plan"), with the
   * game of the default options; `roles` "tool-call" gives that protocol's actions (see `gameDemo`).
   */
  demo(task: Task<Puzzle>, state: GameState<Puzzle, Board>, agent: AgentId, roles?: RolesVariant): string;
}

/** A game's environment builder and demonstrations from its schemas, game and task generator. */
export function gameModule<
  O extends z.ZodType<EpisodeOptions>,
  G extends GenerationSchema,
  Puzzle,
  Board,
  Move,
>(spec: GameModuleSpec<O, G, Puzzle, Board, Move>): GameModule<z.input<O>, Puzzle, Board> {
  const { env: name, schema: generationSchema } = spec.generateTasks;
  const build = (options: unknown) => {
    const parsed = parseOptions(`${name} options`, spec.optionsSchema, options);
    // The generation schema keeps its own fields of the options (zod objects strip the others).
    const generation = generationSchema.parse(parsed) as z.output<G>;
    return { parsed, generation, game: spec.game(parsed, generation) };
  };
  // Payloads that passed the check: a task is reset many times (a group's K rollouts, every served
  // solve of the same generated task), and its check, a zod parse plus the game's own (a BFS for a
  // maze), is the same each time. Puzzles are data nothing mutates after they are made.
  const checked = new WeakSet<object>();
  const checkPuzzle = (payload: unknown, taskId: string): Puzzle => {
    if (typeof payload === "object" && payload !== null && checked.has(payload)) return payload as Puzzle;
    const where = `${name} task ${taskId}`;
    spec.checkPuzzle(parseOptions(`${where}: payload`, spec.puzzleSchema, payload) as Puzzle, where);
    if (typeof payload === "object" && payload !== null) checked.add(payload);
    // Keep the caller's object (not zod's copy) so per-puzzle caches and identity checks hold.
    return payload as Puzzle;
  };
  const defaultGame = build({}).game;
  return {
    env(options = {} as z.input<O>) {
      const { parsed, generation, game } = build(options);
      return gameEnvironment({
        game,
        options: parsed,
        checkPuzzle,
        // Parsed options are valid input to the generator's schema.
        generateTasks: (split, count, seed) =>
          spec.generateTasks(split, count, { ...generation, seed } as z.input<G> & { seed: number }),
      });
    },
    demo: (task, state, agent, roles = "compact") =>
      gameDemo(defaultGame, task, state, agent, Number.POSITIVE_INFINITY, roles),
  };
}

/**
 * A game's options: the episode options with every role protocol (each game has a `toolCall`, so
 * `tool-call` too), its generation fields, and its rewards (defaults filled in).
 */
export function gameOptionsSchema<G extends z.ZodRawShape, R extends z.ZodObject>(
  generation: z.ZodObject<G>,
  rewards: R,
) {
  return EpisodeOptionsSchema.extend({
    roles: RolesVariantSchema.default("compact"),
    ...generation.shape,
    // A parsed object is never undefined, which zod cannot see through the generic `R`.
    rewards: rewards.default(rewards.parse({}) as z.util.NoUndefined<z.output<R>>),
  }).strict();
}
