import { parseArgs } from "node:util";
import { type SamplingParams, teamPolicies } from "@troupe/core";
import { checkStore, type ObjectStore, openStore, RunStore } from "@troupe/storage/node";
import {
  checkpointSummary,
  createTeamRegistry,
  type EvalSummary,
  type PublishInput,
  type ServedSampling,
  servingFiles,
  type TeamManifest,
  versionFolder,
} from "@troupe/teams";
import { exportDecodeGraph } from "@troupe/teams/onnx";
import { createEngine, policySet } from "../engines.ts";
import { recipeEnvironment } from "../envs.ts";
import { evaluate } from "../evaluate.ts";
import { type Recipe, RecipeError } from "../recipe.ts";
import { loadRecipeFile, parseRunConfig } from "../recipe-files.ts";
import { checkpointedStep, restoreStep } from "../run/checkpoints.ts";
import { evalTasks } from "../run/tasks.ts";
import { cachedWarmStart, parseRunRef, WARM_START_REF } from "../run/warm-start.ts";
import { evalSampling } from "../sampling.ts";
import { storeLocation } from "./cli.ts";

export interface PublishRunOptions {
  readonly store: ObjectStore;
  readonly runId: string;
  /** Default: the newest committed step. */
  readonly step?: number | undefined;
  /** Publish the run's team before RL (its cached warm start) instead of a step's checkpoints. */
  readonly warmStart?: boolean | undefined;
  readonly name: string;
  readonly alias?: string | undefined;
  /** Evaluate when the step has no recorded eval metrics (default true). */
  readonly evaluate?: boolean | undefined;
  /** Held-out tasks of a fresh evaluation (default: the recipe's train.evalTasks). */
  readonly evalTasks?: number | undefined;
}

export interface PublishRunResult {
  readonly manifest: TeamManifest;
  /** Where the eval came from: the run's metrics, a fresh evaluation, or none. */
  readonly evalSource: "metrics" | "evaluated" | "none";
}

/**
 * The eval a training step recorded (`eval/successRate`, … written by train for the step's
 * checkpoint), or with `"warm-start"` the run's start evaluation (`eval-start`: its team before RL).
 */
export async function stepEvalMetrics(
  runStore: RunStore,
  step: number | typeof WARM_START_REF,
): Promise<EvalSummary | undefined> {
  const warmStart = step === WARM_START_REF;
  const prefix = warmStart ? "" : "eval/";
  const rows = warmStart
    ? (await runStore.readMetrics()).filter((r) => r.source === "eval-start")
    : (await runStore.readMetrics({ committedOnly: true })).filter((r) => r.step === step);
  const m = rows.find((r) => typeof r.metrics[`${prefix}successRate`] === "number")?.metrics;
  if (m === undefined) return undefined;
  const num = (key: string) => {
    const v = m[`${prefix}${key}`];
    if (typeof v !== "number")
      throw new RecipeError(
        `run ${runStore.runId} ${warmStart ? "start evaluation" : `step ${step}`}: ${prefix}${key} is missing`,
      );
    return v;
  };
  return {
    successRate: num("successRate"),
    ci95: [num("ci95Low"), num("ci95High")],
    tasks: num("tasks"),
    meanTeamReturn: num("meanTeamReturn"),
  };
}

/**
 * The sampling the team was evaluated with (the recipe's, at the evaluation temperature): the
 * team's, and each role's own (`sampling.roles`).
 */
export function servedSampling(recipe: Recipe): {
  team: ServedSampling;
  roles: Record<string, ServedSampling>;
} {
  const { sampling, roleSampling = {} } = evalSampling(recipe);
  const roles: Record<string, ServedSampling> = {};
  for (const [role, own] of Object.entries(roleSampling)) roles[role] = served(own);
  return { team: served(sampling), roles };
}

function served(s: SamplingParams): ServedSampling {
  return {
    temperature: s.temperature,
    topP: s.topP,
    maxTokens: s.maxTokens,
    topK: s.topK,
    stop: s.stop,
    stopTokenIds: s.stopTokenIds,
  };
}

export async function publishRun(options: PublishRunOptions): Promise<PublishRunResult> {
  const { store, runId } = options;
  const runStore = new RunStore(store, runId);
  const recipe = await parseRunConfig(await runStore.readConfig(), `run ${runId} config`);
  const { trainerEnv, team } = recipeEnvironment(recipe);
  // The warm start's checkpoints are in its cache run (run/warm-start.ts), at its last supervised step.
  const warmStart = options.warmStart ? await cachedWarmStart(store, runId, recipe, team) : undefined;
  if (warmStart && options.step !== undefined)
    throw new RecipeError(`publish: --step and @${WARM_START_REF} name two different teams; pass one`);
  const checkpoints = warmStart?.runStore ?? runStore;
  const step = warmStart?.step ?? (await checkpointedStep(runStore, team, options.step, "publish"));
  const { team: sampling, roles: roleSampling } = servedSampling(recipe);
  const policies: Record<string, PublishInput["policies"][string]> = {};
  for (const policyId of teamPolicies(team)) {
    const files = servingFiles(await checkpoints.readCheckpoint(policyId, step));
    const { model, parameters, config } = checkpointSummary(files);
    const graph = exportDecodeGraph(config);
    policies[policyId] = {
      files: { ...files, [graph.info.file]: graph.bytes },
      model,
      parameters,
      sampling,
      onnx: graph.info,
    };
  }

  let evalSummary = await stepEvalMetrics(runStore, warmStart ? WARM_START_REF : step);
  let evalSource: PublishRunResult["evalSource"] = evalSummary ? "metrics" : "none";
  if (evalSummary === undefined && options.evaluate !== false) {
    const engine = await createEngine(recipe, teamPolicies(team));
    try {
      await restoreStep(engine, checkpoints, team, step);
      const result = await evaluate({
        trainerEnv,
        team,
        policies: policySet(engine, team, step + 1),
        tasks: evalTasks(trainerEnv, recipe, options.evalTasks ?? recipe.train.evalTasks),
        sampling: evalSampling(recipe),
        seed: recipe.seed,
      });
      evalSummary = {
        successRate: result.successRate,
        ci95: [result.ci95[0], result.ci95[1]],
        tasks: result.tasks,
        meanTeamReturn: result.meanTeamReturn,
      };
      evalSource = "evaluated";
    } finally {
      await engine.close();
    }
  }

  const registry = createTeamRegistry(store);
  const manifest = await registry.publish({
    name: options.name,
    environment: {
      name: recipe.environment.name,
      ...(recipe.environment.module !== undefined ? { module: recipe.environment.module } : {}),
      options: recipe.environment.options,
    },
    team: {
      specialisation: recipe.team.specialisation,
      ...(recipe.team.maxTurns !== undefined ? { maxTurns: recipe.team.maxTurns } : {}),
      ...(recipe.team.turnOrder !== undefined ? { turnOrder: recipe.team.turnOrder } : {}),
    },
    roles: team.roles.map((r) => ({
      id: r.id,
      policy: r.policy,
      ...(roleSampling[r.id] ? { sampling: roleSampling[r.id] } : {}),
    })),
    policies,
    eval: evalSummary,
    source: { store: store.uri, runId, step, ...(warmStart ? { warmStart: true as const } : {}) },
    alias: options.alias,
  });
  return { manifest, evalSource };
}

export interface PublishCommandContext {
  readonly workspaceRoot: string;
  readonly resolveRecipePath: (name: string) => string;
  /** The folder the command was typed in: printed local paths are relative to it. */
  readonly invokedFrom?: string;
}

/** The `publish` command: arguments → publishRun → one line per fact on stdout. */
export async function commandPublish(argv: string[], context: PublishCommandContext): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      run: { type: "string" },
      step: { type: "string" },
      name: { type: "string" },
      alias: { type: "string" },
      recipe: { type: "string", default: "default" },
      store: { type: "string" },
      tasks: { type: "string" },
      "no-eval": { type: "boolean", default: false },
    },
    strict: true,
  });
  if (values.run === undefined) throw new RecipeError("publish: --run <id> is required");
  const [runId, ref] = parseRunRef(values.run);
  if (ref !== undefined && values.step !== undefined)
    throw new RecipeError(`publish: --run ${values.run} already names the team; drop --step`);
  if (values.name === undefined) throw new RecipeError("publish: --name <team> is required");
  const integer = (flag: string, text: string | undefined) => {
    if (text === undefined) return undefined;
    const n = Number(text);
    if (!Number.isInteger(n) || n < 0)
      throw new RecipeError(`publish: --${flag} must be a whole number, got "${text}"`);
    return n;
  };
  // The store: --store, else the recipe's (where `train` put the run).
  const storeUri = values.store ?? (await loadRecipeFile(context.resolveRecipePath(values.recipe))).store;
  const store = openStore(storeUri, { cwd: context.workspaceRoot });
  await checkStore(store); // publishing writes into it
  let result: PublishRunResult;
  try {
    result = await publishRun({
      store,
      runId,
      step: typeof ref === "number" ? ref : integer("step", values.step),
      warmStart: ref === WARM_START_REF,
      name: values.name,
      alias: values.alias,
      evaluate: !values["no-eval"],
      evalTasks: integer("tasks", values.tasks),
    });
  } catch (error) {
    const name = (error as Error).name;
    if (name === "ManifestError" || name === "PublishConflictError" || name === "TeamNotFoundError") {
      throw new RecipeError((error as Error).message);
    }
    throw error;
  }
  const { manifest, evalSource } = result;
  const folder = storeLocation(
    store,
    `${versionFolder(manifest.name, manifest.version)}/`,
    context.invokedFrom ?? process.cwd(),
  );
  const lines = [
    manifest.source.warmStart
      ? `published ${manifest.name}@${manifest.version} (run ${manifest.source.runId}@${WARM_START_REF}: its team before RL, supervised step ${manifest.source.step})`
      : `published ${manifest.name}@${manifest.version} (run ${manifest.source.runId}, step ${manifest.source.step})`,
    `  where: ${folder}`,
    `  roles: ${manifest.roles.map((r) => `${r.id}→${r.policy}`).join(", ")}`,
  ];
  if (manifest.eval) {
    const e = manifest.eval;
    lines.push(
      `  eval (${evalSource}): ${(100 * e.successRate).toFixed(1)}% held-out success, 95% CI [${(100 * e.ci95[0]).toFixed(1)}, ${(100 * e.ci95[1]).toFixed(1)}], ${e.tasks} tasks`,
    );
  }
  if (values.alias) lines.push(`  alias: ${manifest.name}@${values.alias} → v${manifest.version}`);
  process.stdout.write(`${lines.join("\n")}\n`);
  return 0;
}
