/**
 * The trainer's command line.
 *
 *   nx run trainer:train [-- --recipe <name|file>] [--set key=value ...] [--run <id>] [--resume]
 *
 * Recipes are YAML files in apps/trainer/recipes (pass a name) or anywhere (pass a path).
 * Relative `file://` stores are relative to the workspace root, so runs land in
 * ./.troupe/runs/<id>/ wherever the command is started from. `<command> --help` prints one
 * command's usage; a user error is one `error:` line (set TROUPE_DEBUG=1 for the stack of an
 * unexpected one).
 *
 * This file picks the command and turns its errors into exit codes; each command is a module of
 * commands/.
 */
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { MemoryBudgetError } from "@troupe/engine-onnx";
import {
  IntegrityError,
  ObjectNotFoundError,
  RetriesExhaustedError,
  RunConflictError,
  StoreError,
} from "@troupe/storage/node";
import { workspaceRoot } from "./app-paths.ts";
import { checkSetKeys, errorLine, setArguments, wantsHelp } from "./commands/cli.ts";
import { commandCompare } from "./commands/compare.ts";
import { commandEval } from "./commands/eval.ts";
import { commandPublish } from "./commands/publish.ts";
import { commandReport } from "./commands/report.ts";
import { commandSft } from "./commands/sft.ts";
import { commandSweep } from "./commands/sweep.ts";
import { commandTrain, ResumableError } from "./commands/train.ts";
import { USAGE, USAGES } from "./commands/usage.ts";
import {
  invokedFrom,
  resolveGridPath,
  resolveRecipePath,
  storeFor,
  timestampId,
} from "./commands/workspace.ts";
import { RecipeError } from "./recipe.ts";

/** Errors that are the user's to fix (a flag, a recipe, a store, a run): one line, exit 2. */
function isUserError(error: unknown): boolean {
  return (
    error instanceof RecipeError ||
    error instanceof StoreError ||
    error instanceof ObjectNotFoundError ||
    error instanceof IntegrityError ||
    error instanceof RunConflictError ||
    error instanceof RetriesExhaustedError ||
    error instanceof MemoryBudgetError ||
    ((error as { code?: string })?.code?.startsWith("ERR_PARSE_ARGS") ?? false)
  );
}

const COMMANDS: Record<string, (argv: string[]) => Promise<number>> = {
  train: commandTrain,
  sft: commandSft,
  eval: commandEval,
  compare: (argv) => commandCompare(argv, { resolveRecipePath, storeFor, timestampId }),
  sweep: (argv) =>
    commandSweep(argv, { resolveRecipePath, resolveGridPath, storeFor, timestampId, workspaceRoot }),
  publish: (argv) => commandPublish(argv, { workspaceRoot, resolveRecipePath, invokedFrom }),
  report: (argv) => commandReport(argv, { workspaceRoot, resolveRecipePath }),
};

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === "help" || command === "--help" || command === "-h") {
    process.stdout.write(`${USAGE}\n`);
    return command === undefined ? 2 : 0;
  }
  const run = COMMANDS[command];
  if (!run) {
    process.stderr.write(
      `error: unknown command "${command}" (commands: ${Object.keys(COMMANDS).join(", ")})\n`,
    );
    return 2;
  }
  if (wantsHelp(rest)) {
    process.stdout.write(`${USAGES[command]}\n`);
    return 0;
  }
  try {
    // Every command's --set keys, before any file is read: a typo names the flag, not the recipe.
    checkSetKeys(setArguments(rest));
    return await run(rest);
  } catch (error) {
    process.stderr.write(`${errorLine(error)}\n`);
    if (error instanceof ResumableError) {
      // The step in flight was not committed; the run continues from its last committed step.
      process.stderr.write(`continue with: ${error.resume}\n`);
      return 1;
    }
    if (isUserError(error)) return 2;
    if (process.env.TROUPE_DEBUG) process.stderr.write(`${(error as Error).stack}\n`);
    return 1;
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
