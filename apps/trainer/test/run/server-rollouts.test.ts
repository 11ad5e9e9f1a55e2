/**
 * Rollouts on OpenAI-compatible servers paired with a learner (engine.rollout), against real HTTP
 * servers on 127.0.0.1 backed by the embedded engine (onnx-openai-server.ts): the server's
 * completions are those of the weights it was sent, so "the server has version v" is checked by
 * what it generates, not only by what it was told.
 *
 * 1. lora sync, two policies, two servers: generation goes to the servers (spread over both), each
 *    update is loaded as `<policy>-v<step>` on every server, the replaced adapter is unloaded and
 *    its folder removed, and the servers' completions equal the learner's own at every version.
 * 2. full sync: the update is exported to a folder and the reload route loads it.
 * 3. Staleness: with maxStaleness 0 a generate waits for the push in flight; with 1 it goes on
 *    with the previous weights while the push runs.
 * 4. A server answering 500, garbage, or refusing the weights: one error line naming it.
 * 5. The trainer with engine.kind torch and engine.rollout (the real torch worker as the learner,
 *    when Debian's torch is importable): samples tagged with their step, the server reloaded with
 *    each step's weights.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import {
  type Completion,
  type SamplingParams,
  samplingParams,
  teamPolicies,
  userObservation,
} from "@troupe/core";
import {
  defaultOptimizerConfig,
  defaultPolicyLossConfig,
  type Engine,
  type EngineGenerateRequest,
  type TrainStepConfig,
  tinyQwenConfig,
} from "@troupe/engine";
import { createOnnxEngine } from "@troupe/engine-onnx";
import {
  createOpenAIEngine,
  createPairedEngine,
  type PairedEngine,
  type WeightSync,
} from "@troupe/engine-openai";
import { FileStore, RunStore } from "@troupe/storage/node";
import { afterEach, describe, expect, it } from "vitest";
import { checkEngineRecipe, createEngine } from "../../src/engines.ts";
import { createEnvironment, recipeTeam } from "../../src/envs.ts";
import { loadRecipeText } from "../../src/recipe.ts";
import { folderWeights } from "../../src/run/server-rollouts.ts";
import { train } from "../../src/run/train.ts";
import { OnnxOpenAIServer } from "../onnx-openai-server.ts";
import { quiet, tempRoot, tinyPlanPath } from "../tiny.ts";

const root = tempRoot("server-rollouts");

const config = tinyQwenConfig({
  hidden_size: 16,
  intermediate_size: 32,
  num_hidden_layers: 1,
  num_attention_heads: 2,
  num_key_value_heads: 1,
  head_dim: 8,
});
const sampling: SamplingParams = samplingParams({ temperature: 1, topP: 1, topK: 0, maxTokens: 5 });
const trainConfig: TrainStepConfig = {
  loss: defaultPolicyLossConfig,
  optimizer: { ...defaultOptimizerConfig, lr: 0.05 },
  microBatchSize: 8,
};

const requests = (policyId: string, n: number, seed0 = 0): EngineGenerateRequest[] =>
  Array.from({ length: n }, (_, i) => ({
    policyId,
    observation: userObservation(`task ${i}`),
    seed: seed0 + i,
  }));

/** One update from completions, every one with advantage 1. */
async function update(engine: Engine, policyId: string, completions: readonly Completion[]) {
  return engine.trainStep(
    policyId,
    completions.map((c) => ({
      promptTokenIds: c.promptTokenIds,
      completionTokenIds: c.tokenIds,
      oldLogprobs: c.logprobs,
      advantage: 1,
    })),
    trainConfig,
  );
}

/**
 * The same completions: the same tokens, log-probs equal to 1e-6 (the learner keeps float64 weights
 * between updates; the server loads their float32 checkpoint).
 */
function expectSame(actual: readonly Completion[], expected: readonly Completion[]): void {
  expect(actual.map(({ logprobs: _, ...c }) => c)).toEqual(expected.map(({ logprobs: _, ...c }) => c));
  actual.forEach((c, i) =>
    c.logprobs.forEach((lp, k) => expect(lp).toBeCloseTo(expected[i]!.logprobs[k]!, 6)),
  );
}

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

async function setup(options: {
  policies: readonly string[];
  servers: number;
  weightSync: WeightSync;
  maxStaleness?: number;
  reloadDelayMs?: number;
}): Promise<{ learner: Engine; paired: PairedEngine; servers: OnnxOpenAIServer[]; syncDir: string }> {
  const learner = await createOnnxEngine({
    policies: options.policies.map((id, i) => ({ id, config, seed: 11 + i })),
  });
  const base = await learner.save(options.policies[0]!);
  const servers: OnnxOpenAIServer[] = [];
  for (let i = 0; i < options.servers; i++) {
    const server = await OnnxOpenAIServer.start({
      baseName: "base",
      base,
      reloadPath: "/update_weights_from_disk",
      ...(options.reloadDelayMs !== undefined ? { reloadDelayMs: options.reloadDelayMs } : {}),
    });
    open.push(server);
    servers.push(server);
  }
  const syncDir = mkdtempSync(join(root, "sync-"));
  const paired = createPairedEngine({
    learner,
    servers: servers.map((s) =>
      createOpenAIEngine({
        baseUrl: s.baseUrl,
        models: Object.fromEntries(options.policies.map((id) => [id, { model: "base" }])),
        retries: 0,
      }),
    ),
    weightSync: options.weightSync,
    writeWeights: folderWeights(learner, options.weightSync, syncDir),
    releaseWeights: async (folder) => rmSync(folder, { recursive: true, force: true }),
    reloadPath: "/update_weights_from_disk",
    maxStaleness: options.maxStaleness ?? 0,
  });
  open.push(paired);
  return { learner, paired, servers, syncDir };
}

const chats = (s: OnnxOpenAIServer) => s.requests("/v1/chat/completions");

describe("paired engine: rollouts on OpenAI-compatible servers, learning on the learner", () => {
  it("lora sync: every update is loaded as <policy>-v<step> on every server, which then generates it", async () => {
    const { learner, paired, servers, syncDir } = await setup({
      policies: ["a", "b"],
      servers: 2,
      weightSync: "lora",
    });
    const batch = [...requests("a", 4), ...requests("b", 2, 100)];
    const v0 = await paired.generate(batch, sampling);
    // The servers' completions are the learner's own: same weights, same seeds.
    expectSame(v0, await learner.generate(batch, sampling));
    // Spread over both servers (least-loaded: 3 each), each policy under its version-0 adapter.
    expect(servers.map((s) => chats(s).length)).toEqual([3, 3]);
    for (const s of servers) {
      // a's and b's first pushes run concurrently: their order on a server is not fixed
      const loads = s.requests("/v1/load_lora_adapter").map((r) => r.body as { lora_name: string });
      expect(loads.sort((x, y) => x.lora_name.localeCompare(y.lora_name))).toEqual([
        { lora_name: "a-v0", lora_path: join(syncDir, "a-v0") },
        { lora_name: "b-v0", lora_path: join(syncDir, "b-v0") },
      ]);
      expect(new Set(chats(s).map((r) => r.body.model))).toEqual(new Set(["a-v0", "b-v0"]));
    }

    const metrics = await update(paired, "a", v0.slice(0, 4));
    expect(metrics.optimizerStep).toBe(1);
    // Nothing is sent until a generate needs it (a learner that never generates sends nothing).
    expect(servers.map((s) => s.requests("/v1/load_lora_adapter").length)).toEqual([2, 2]);
    const again = requests("a", 4);
    const v1 = await paired.generate(again, sampling);
    expectSame(v1, await learner.generate(again, sampling));
    expect(v1.map((c) => c.logprobs)).not.toEqual(v0.slice(0, 4).map((c) => c.logprobs));
    for (const s of servers) {
      const names = s.requests("/v1/load_lora_adapter").map((r) => r.body.lora_name as string);
      expect([...names.slice(0, 2).sort(), ...names.slice(2)]).toEqual(["a-v0", "b-v0", "a-v1"]);
      expect(s.requests("/v1/unload_lora_adapter").map((r) => r.body)).toEqual([{ lora_name: "a-v0" }]);
      expect(s.served().sort()).toEqual(["a-v1", "b-v0", "base"]);
      expect(
        chats(s)
          .slice(-2)
          .map((r) => r.body.model),
      ).toEqual(["a-v1", "a-v1"]);
    }
    // The replaced adapter's folder is gone; the served ones stay.
    expect([existsSync(join(syncDir, "a-v0")), existsSync(join(syncDir, "a-v1"))]).toEqual([false, true]);
    expect(paired.syncState("a")).toEqual({
      updates: 1,
      version: 1,
      servers: servers.map((s) => ({ baseUrl: s.baseUrl, updates: 1, version: 1, name: "a-v1" })),
    });
  });

  it("full sync: the update is written to a folder and every server's reload route loads it", async () => {
    const { learner, paired, servers, syncDir } = await setup({
      policies: ["p"],
      servers: 1,
      weightSync: "full",
    });
    const v0 = await paired.generate(requests("p", 3), sampling);
    await update(paired, "p", v0);
    const v1 = await paired.generate(requests("p", 3), sampling);
    expectSame(v1, await learner.generate(requests("p", 3), sampling));
    const [server] = servers;
    expect(server!.requests("/update_weights_from_disk").map((r) => r.body)).toEqual([
      { model_path: join(syncDir, "p-v0") },
      { model_path: join(syncDir, "p-v1") },
    ]);
    expect(new Set(chats(server!).map((r) => r.body.model))).toEqual(new Set(["base"]));
    expect(existsSync(join(syncDir, "p-v0"))).toBe(false);
  });

  it("maxStaleness 0: a generate after an update waits until the servers have its weights", async () => {
    const { learner, paired, servers } = await setup({
      policies: ["p"],
      servers: 1,
      weightSync: "full",
      reloadDelayMs: 300,
    });
    const v0 = await paired.generate(requests("p", 2), sampling);
    await update(paired, "p", v0);
    const v1 = await paired.generate(requests("p", 2), sampling);
    const reload = servers[0]!.requests("/update_weights_from_disk")[1]!;
    expect(
      chats(servers[0]!)
        .slice(-2)
        .every((c) => c.start >= reload.end),
    ).toBe(true);
    expectSame(v1, await learner.generate(requests("p", 2), sampling));
  });

  it("maxStaleness 1: a generate goes on with the previous weights while the push runs", async () => {
    const { paired, servers } = await setup({
      policies: ["p"],
      servers: 1,
      weightSync: "full",
      maxStaleness: 1,
      reloadDelayMs: 400,
    });
    const v0 = await paired.generate(requests("p", 2), sampling);
    await update(paired, "p", v0);
    const during = await paired.generate(requests("p", 2), sampling);
    expect(paired.syncState("p").servers[0]!.version).toBe(0);
    expect(during).toEqual(v0); // the previous weights, same seeds
    await paired.sync();
    expect(paired.syncState("p").servers[0]!.version).toBe(1);
    // The requests were served before the server had loaded the update.
    const reload = servers[0]!.requests("/update_weights_from_disk")[1]!;
    expect(
      chats(servers[0]!)
        .slice(-2)
        .every((c) => c.end <= reload.end),
    ).toBe(true);
  });

  it("a server answering 500 or garbage, or refusing the weights, fails in one line naming it", async () => {
    const { paired, servers } = await setup({ policies: ["p"], servers: 1, weightSync: "lora" });
    const server = servers[0]!;
    const url = server.baseUrl.replace(/[.]/g, "\\.");
    server.fault = {
      path: "/v1/load_lora_adapter",
      status: 500,
      body: '{"error":{"message":"out of\\nmemory"}}',
    };
    await expect(paired.generate(requests("p", 1), sampling)).rejects.toThrow(
      new RegExp(
        `^weight sync of policy "p" \\(p-v0\\): POST ${url}/v1/load_lora_adapter: HTTP 500: out of memory$`,
      ),
    );
    server.fault = { path: "/v1/chat/completions", status: 500, body: '{"error":{"message":"engine dead"}}' };
    await expect(paired.generate(requests("p", 1), sampling)).rejects.toThrow(
      new RegExp(`^POST ${url}/v1/chat/completions: HTTP 500: engine dead$`),
    );
    server.fault = { path: "/v1/chat/completions", status: 200, body: "<html>\n<body>proxy error</body>" };
    const garbage = await paired.generate(requests("p", 1), sampling).catch((e: Error) => e.message);
    expect(garbage).toMatch(
      new RegExp(`^POST ${url}/v1/chat/completions: malformed response: \\(body\\): not JSON`),
    );
    expect(garbage).not.toContain("\n");
  });
});

describe("recipes with engine.rollout", () => {
  const base = `
name: server-rollouts
seed: 3
${tinyPlanPath({ hidden: 16 })}
team: { specialisation: shared }
strategy: { name: atgrpo, candidates: 2, advantage: { baseline: raw, normalizeStd: false, eps: 0.000001 } }
sampling: { temperature: 1, topP: 1, topK: 0, maxTokens: 4 }
train: { steps: 2, tasksPerStep: 1, evalEvery: 0, evalTasks: 1, checkpointEvery: 1 }
`;
  const env = createEnvironment("plan-path", {
    roles: "compact",
    maxTurns: 2,
    rows: 4,
    cols: 4,
    blockedFraction: 0.1,
    minPathLength: 2,
  });

  it("refuses what is not supported, in one line naming the key", () => {
    const torch = "engine.kind=torch";
    const r = (...sets: string[]) => loadRecipeText(base, [torch, ...sets]);
    const rollout = ["engine.rollout.kind=openai", "engine.rollout.baseUrls=[http://127.0.0.1:8000]"];
    expect(() => r(...rollout)).toThrow(/^recipe: engine\.rollout\.syncDir: /);
    expect(() => r(...rollout, "engine.rollout.syncDir=/s", "engine.rollout.weightSync=delta")).toThrow(
      /^recipe: engine\.rollout\.weightSync: .*"lora"\|"full"|'lora' \| 'full'/,
    );
    expect(() =>
      r("engine.rollout.kind=openai", "engine.rollout.baseUrls=[not a url]", "engine.rollout.syncDir=/s"),
    ).toThrow(/^recipe: engine\.rollout\.baseUrls\.0: /);
    const ok = [...rollout, "engine.rollout.syncDir=/s"];
    const check =
      (...sets: string[]) =>
      () =>
        checkEngineRecipe(r(...ok, ...sets), ["shared"]);
    expect(check()).toThrow(/^recipe: engine\.rollout\.weightSync: "lora" needs engine\.lora/);
    expect(check("engine.rollout.weightSync=full")).toThrow(/^recipe: engine\.rollout\.reloadPath: required/);
    expect(check("engine.rollout.weightSync=full", "engine.rollout.reloadPath=/reload")).toThrow(
      /^recipe: engine\.rollout\.servedModel: required when model\.from is unset/,
    );
    expect(() =>
      checkEngineRecipe(
        r(
          ...ok,
          "engine.rollout.weightSync=full",
          "engine.rollout.reloadPath=/r",
          "engine.rollout.servedModel=m",
        ),
        ["a", "b"],
      ),
    ).toThrow(
      /^recipe: engine\.rollout\.weightSync: "full" serves one model per server and the team has 2 policies/,
    );
    expect(check("engine.lora.r=4", "mode=rollout")).toThrow(
      /^recipe: engine\.rollout: server rollouts run with mode "all"/,
    );
    expect(check("engine.lora.r=4")).not.toThrow();
    expect(() => checkEngineRecipe(loadRecipeText(base, ["engine.kind=openai"]), ["shared"])).toThrow(
      /^recipe: engine\.kind: "openai" generates but cannot train; keep engine\.kind "torch" as the learner and put the servers in engine\.rollout/,
    );
  });

  const python = process.env.TROUPE_PYTHON ?? "/usr/bin/python3";
  const torchAvailable = spawnSync(python, ["-c", "import torch"], { stdio: "ignore" }).status === 0;

  it.skipIf(!torchAvailable)(
    "trains with the torch worker as learner and a server generating: samples tagged with their step, the server reloaded each step",
    async () => {
      const team = recipeTeam(env, { specialisation: "shared" });
      const policyIds = teamPolicies(team);
      // The server starts from the recipe's initial weights (the same seeds as the learner's).
      const init = await createEngine(loadRecipeText(base), policyIds);
      const server = await OnnxOpenAIServer.start({
        baseName: "tiny",
        base: await init.save(policyIds[0]!),
        reloadPath: "/update_weights_from_disk",
      });
      await init.close();
      open.push(server);
      const syncDir = mkdtempSync(join(root, "recipe-sync-"));
      const recipe = loadRecipeText(`${base}
engine:
  kind: torch
  python: ${python}
  device: cpu
  threads: 1
  generator: torch
  modelBackend: troupe
  rollout:
    kind: openai
    baseUrls: [${server.baseUrl}]
    weightSync: full
    reloadPath: /update_weights_from_disk
    servedModel: tiny
    exportDtype: float32
    syncDir: ${syncDir}
    retries: 0
`);
      checkEngineRecipe(recipe, policyIds);
      const engine = await createEngine(recipe, policyIds);
      open.push(engine);
      expect(engine.kind).toBe("torch+openai");
      const runStore = new RunStore(new FileStore(join(root, "store")), "server-run");
      await runStore.writeConfig(recipe);
      await train({ recipe, trainerEnv: env, team, engine, runStore, reporter: quiet });

      const reloads = server.requests("/update_weights_from_disk").map((r) => r.body.model_path);
      const folder = join(syncDir, recipe.name);
      // Version 0 before the first rollout, then each step's weights (the last one pushed as the run ends).
      expect(reloads).toEqual([0, 1, 2].map((v) => join(folder, `shared-v${v}`)));
      expect(chats(server).length).toBeGreaterThan(0);
      expect(new Set(chats(server).map((r) => r.body.model))).toEqual(new Set(["tiny"]));
      const reloadLog = server.requests("/update_weights_from_disk");
      for (const step of [0, 1]) {
        const samples = [...(await runStore.readStep(step)).shards.values()].flat();
        expect(samples.length).toBeGreaterThan(0);
        expect(new Set(samples.map((s) => s.provenance.policyVersion))).toEqual(new Set([step]));
        // Step s's rollouts ran on version s: between its reload and the next one.
        const between = chats(server).filter(
          (c) => c.start >= reloadLog[step]!.end && c.end <= reloadLog[step + 1]!.start,
        );
        expect(between.length).toBeGreaterThan(0);
      }
      // Strictly on-policy: no request was being answered while the weights changed.
      for (const c of chats(server)) {
        expect(reloadLog.every((r) => c.end <= r.start || c.start >= r.end)).toBe(true);
      }
    },
    180_000,
  );
});
