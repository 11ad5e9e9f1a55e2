/**
 * What `eval:run` evaluates, made runnable:
 *
 *   --team name[@alias|@version]   a published team (default `latest`), through a backend:
 *       onnx    the embedded CPU engine (every policy published with its decode graph)
 *       torch   a PyTorch worker holding the published weights (GPU teams; `--device`)
 *       openai  an OpenAI-compatible server (vLLM, SGLang) at `--base-url`
 *       auto    onnx when every policy has its graph, torch otherwise (the default)
 *   --run id[@step|@warm-start]    a run's checkpoints (default: its newest committed step), on the
 *                                  engine its recipe names, with its evaluation sampling; @warm-start
 *                                  is its team before RL
 */
import { createRequire } from "node:module";
import { dirname } from "node:path";
import { enginePolicy } from "@troupe/engine";
import { createTorchEngine } from "@troupe/engine-torch";
import { createEnvironment } from "@troupe/envs";
import type { CodeRunner } from "@troupe/sandbox";
import { type ObjectStore, RunStore } from "@troupe/storage";
import {
  createOpenAIBackend,
  type InferenceBackend,
  type LoadedTeam,
  loadTeam,
  needsSandbox,
  type ServingPolicySet,
  type TeamManifest,
  type TeamRegistry,
} from "@troupe/teams";
import { createOnnxBackend } from "@troupe/teams/onnx";
import {
  cachedWarmStart,
  createEngine,
  evalSampling,
  parseRunConfig,
  parseRunRef,
  policySet,
  recipeEnvironment,
  restoreStep,
  WARM_START_REF,
} from "@troupe/trainer";
import type { SubjectInfo } from "./evaluate.ts";
import { EvalUsageError } from "./suite.ts";

/** The troupe_worker Python package: the folder of the @troupe/engine-torch-worker workspace package. */
const TORCH_WORKER_DIR = dirname(
  createRequire(import.meta.url).resolve("@troupe/engine-torch-worker/package.json"),
);

export type BackendChoice = "auto" | "onnx" | "torch" | "openai";

export interface BackendOptions {
  readonly backend: BackendChoice;
  /** The OpenAI-compatible server (backend openai). */
  readonly baseUrl?: string | undefined;
  readonly apiKey?: string | undefined;
  /** The torch worker's device (backend torch): cuda, cpu or auto. */
  readonly device?: string | undefined;
  /** The sandbox for teams whose environment runs the agents' code. */
  readonly runner?: CodeRunner | undefined;
}

/** A subject ready to evaluate; `close` releases its engines. */
export interface OpenSubject extends SubjectInfo {
  readonly loaded: LoadedTeam;
  close(): Promise<void>;
}

/** `name@ref` → [name, ref]. */
export function parseTeamRef(text: string): [string, string] {
  const at = text.indexOf("@");
  const name = at < 0 ? text : text.slice(0, at);
  const ref = at < 0 ? "latest" : text.slice(at + 1);
  if (name === "" || ref === "")
    throw new EvalUsageError(`--team: expected name[@alias|@version], got "${text}"`);
  return [name, ref];
}

/** Whether every policy of the team was published with the embedded engine's decode graph. */
export function isEmbedded(manifest: TeamManifest): boolean {
  return Object.values(manifest.policies).every((p) => p.onnx !== undefined);
}

/** The published weights in a PyTorch worker (one model per policy), as serving policies. */
export function createTorchBackend(device = "auto"): InferenceBackend {
  const engines: { close(): Promise<void> }[] = [];
  return {
    name: "torch",
    async policies(manifest: TeamManifest, registry: TeamRegistry): Promise<ServingPolicySet> {
      const ids = Object.keys(manifest.policies);
      const models: Record<string, { kind: "files"; files: Record<string, Uint8Array> }> = {};
      for (const id of ids)
        models[id] = { kind: "files", files: await registry.readPolicyFiles(manifest, id) };
      const engine = await createTorchEngine({
        python: process.env.TROUPE_PYTHON ?? "/usr/bin/python3",
        workerDir: TORCH_WORKER_DIR,
        workerArgs: device === "auto" ? [] : ["--device", device],
        models,
        policies: ids.map((id) => ({ id, model: id })),
      });
      engines.push(engine);
      return Object.fromEntries(ids.map((id) => [id, enginePolicy(engine, id, manifest.version)]));
    },
    async close() {
      await Promise.all(engines.splice(0).map((e) => e.close()));
    },
  };
}

function backendFor(
  choice: BackendChoice,
  manifest: TeamManifest,
  options: BackendOptions,
): InferenceBackend {
  const kind = choice === "auto" ? (isEmbedded(manifest) ? "onnx" : "torch") : choice;
  switch (kind) {
    case "onnx":
      if (!isEmbedded(manifest)) {
        throw new EvalUsageError(
          `team ${manifest.name} v${manifest.version} has policies without model.onnx: use --backend torch or openai`,
        );
      }
      return createOnnxBackend();
    case "torch":
      return createTorchBackend(options.device);
    case "openai":
      if (!options.baseUrl)
        throw new EvalUsageError("--backend openai: pass --base-url <OpenAI-compatible server>");
      return createOpenAIBackend({
        baseUrl: options.baseUrl,
        ...(options.apiKey ? { apiKey: options.apiKey } : {}),
      });
  }
}

export async function openTeam(
  registry: TeamRegistry,
  text: string,
  options: BackendOptions,
): Promise<OpenSubject> {
  const [name, ref] = parseTeamRef(text);
  const manifest = await registry.resolve(name, ref);
  const backend = backendFor(options.backend, manifest, options);
  const runner = needsSandbox(manifest.environment) ? options.runner : undefined;
  try {
    const loaded = await loadTeam(registry, manifest, backend, { runner });
    return {
      subject: { kind: "team", name, version: manifest.version, ref },
      label: `${name}@v${manifest.version}`,
      key: `team:${name}/${manifest.environment.name}`,
      backend: backend.name,
      loaded,
      close: async () => backend.close?.(),
    };
  } catch (error) {
    await backend.close?.();
    throw error;
  }
}

/**
 * A run's checkpoints at a committed step, in the engine its recipe names, served with the run's
 * evaluation sampling (as `trainer:eval` and the manifest's eval use it). `id@warm-start` is the
 * run's team before RL: the cached warm start its recipe trained first (what the run evaluated
 * "before step 0"), also the only team of a run with no RL steps (a compare's warm-start arm).
 */
export async function openRun(store: ObjectStore, text: string, runner?: CodeRunner): Promise<OpenSubject> {
  const [runId, wanted] = parseRunRef(text);
  const runStore = new RunStore(store, runId);
  const recipe = await parseRunConfig(await runStore.readConfig(), `run ${runId} config`);
  const { team } = recipeEnvironment(recipe);
  const warmStart = wanted === WARM_START_REF ? await cachedWarmStart(store, runId, recipe, team) : undefined;
  const step = warmStart?.step ?? (wanted as number | undefined) ?? (await runStore.latestCommittedStep());
  if (step === undefined)
    throw new EvalUsageError(
      `run ${runId} has no committed step${(recipe.sft?.steps ?? 0) > 0 ? ` (its team before RL: --run ${runId}@${WARM_START_REF})` : ""}`,
    );
  const checkpoints = warmStart?.runStore ?? runStore;
  const envOptions = { ...recipe.environment.options };
  if (needsSandbox(recipe.environment)) {
    if (!runner)
      throw new EvalUsageError(
        `run ${runId}: its environment runs the agents' code and no sandbox is available`,
      );
    envOptions.runner = runner;
  }
  const environment = createEnvironment(recipe.environment.name, envOptions);
  const ids = [...new Set(team.roles.map((r) => r.policy))];
  const engine = await createEngine(recipe, ids);
  try {
    await restoreStep(engine, checkpoints, team, step);
  } catch (error) {
    await engine.close();
    throw error;
  }
  const sampling = evalSampling(recipe);
  // solve() reads only the manifest's name, version and environment; a run has no manifest, so this
  // stands in for one (the run id and the step's checkpoint version).
  const manifest = {
    name: runId,
    version: step + 1,
    environment: { name: recipe.environment.name, options: recipe.environment.options },
  } as unknown as TeamManifest;
  const loaded: LoadedTeam = {
    manifest,
    environment,
    team,
    policies: policySet(engine, team, step + 1),
    sampling: Object.fromEntries(ids.map((id) => [id, sampling.sampling])),
    ...(sampling.roleSampling ? { roleSampling: sampling.roleSampling } : {}),
    backend: recipe.engine.kind === "torch" ? "torch" : "onnx",
  };
  return {
    subject: { kind: "run", runId, step, ...(warmStart ? { warmStart: true as const } : {}) },
    label: warmStart ? `run ${runId}@${WARM_START_REF}` : `run ${runId}@step ${step}`,
    // The warm start is another team than the run's steps: the gate must not match one to the other.
    key: `run:${runId}${warmStart ? `@${WARM_START_REF}` : ""}/${recipe.environment.name}`,
    backend: loaded.backend,
    loaded,
    close: () => engine.close(),
  };
}
