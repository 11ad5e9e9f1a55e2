/**
 * The paired engine: a real learner (the embedded ONNX engine, a tiny model) and two rollout
 * servers (stub-server.ts on 127.0.0.1). A generate finding the servers behind the learner pushes
 * the newest weights (lora: load `<policy>-v<step>`, unload the one it replaces, release its folder;
 * full: POST the reload route), within `maxStaleness` a request goes on with the servers' weights,
 * a failed push fails the generate waiting for it in one line, and requests go to the least-loaded
 * server. The same engine against servers that generate with the pushed weights is
 * apps/trainer/test/run/server-rollouts.test.ts.
 */
import { samplingParams, userObservation } from "@troupe/core";
import {
  ByteTokenizer,
  defaultOptimizerConfig,
  defaultPolicyLossConfig,
  tinyQwenConfig,
} from "@troupe/engine";
import { SMALL_QWEN_SHAPE } from "@troupe/engine/testing";
import { createOnnxEngine } from "@troupe/engine-onnx";
import { afterEach, describe, expect, it } from "vitest";
import { createOpenAIEngine, type OpenAIEngine } from "../src/engine.ts";
import { createPairedEngine, type PairedEngine, type PairedEngineOptions } from "../src/paired.ts";
import { RELOAD_ROUTE, StubOpenAIServer } from "./stub-server.ts";

const tokenizer = new ByteTokenizer();
const observation = userObservation("hi");
const sampling = samplingParams({ maxTokens: 4 });

let stubs: StubOpenAIServer[] = [];
let paired: PairedEngine | undefined;
/** Folders written and released by the paired engine, in order. */
let written: string[] = [];
let released: string[] = [];

async function setup(
  options: Partial<Omit<PairedEngineOptions, "learner" | "servers">> = {},
): Promise<PairedEngine> {
  const learner = await createOnnxEngine({
    policies: [{ id: "p", config: tinyQwenConfig(SMALL_QWEN_SHAPE), seed: 1 }],
  });
  stubs = [await StubOpenAIServer.start(), await StubOpenAIServer.start()];
  const servers: OpenAIEngine[] = stubs.map((stub) =>
    createOpenAIEngine({ baseUrl: stub.url, models: { p: { model: "base", tokenizer } }, retries: 0 }),
  );
  written = [];
  released = [];
  paired = createPairedEngine({
    learner,
    servers,
    weightSync: "lora",
    writeWeights: async (_policyId, name) => {
      written.push(name);
      return `/weights/${name}`;
    },
    releaseWeights: async (folder) => {
      released.push(folder);
    },
    ...options,
  });
  return paired;
}

afterEach(async () => {
  await paired?.close();
  paired = undefined;
  await Promise.all(stubs.map((s) => s.close()));
});

/** One train step of policy p on the learner, through the paired engine. */
async function trainOnce(engine: PairedEngine): Promise<void> {
  const sequence = engine.encode("p", observation, "ok");
  const [old] = await engine.logprobs("p", [sequence]);
  await engine.trainStep("p", [{ ...sequence, oldLogprobs: old!, advantage: 1 }], {
    loss: defaultPolicyLossConfig,
    optimizer: { ...defaultOptimizerConfig, lr: 1e-3 },
    microBatchSize: 1,
  });
}

const generate = (engine: PairedEngine, seeds: number[]) =>
  engine.generate(
    seeds.map((seed) => ({ policyId: "p", observation, seed })),
    sampling,
  );

/** The `model` of each completion request a stub received, in order. */
const models = (stub: StubOpenAIServer) =>
  stub.requests.filter((r) => r.path === "/v1/completions").map((r) => r.body.model);
const loads = (stub: StubOpenAIServer) =>
  stub.requests.filter((r) => r.path === "/v1/load_lora_adapter").map((r) => r.body);

describe("paired engine", () => {
  it("the first generate loads <policy>-v<step> on every server; requests split over the least loaded", async () => {
    const engine = await setup();
    expect(engine.kind).toBe("onnx+openai");
    const out = await generate(engine, [0, 1, 2, 3]);
    expect(out.map((c) => c.text)).toEqual(["s0", "s1", "s2", "s3"]);
    expect(written).toEqual(["p-v0"]);
    for (const stub of stubs) {
      expect(loads(stub)).toEqual([{ lora_name: "p-v0", lora_path: "/weights/p-v0" }]);
      expect(models(stub)).toEqual(["p-v0", "p-v0"]);
    }
    expect(engine.syncState("p")).toEqual({
      updates: 0,
      version: 0,
      servers: stubs.map((s) => ({ baseUrl: s.url, updates: 0, version: 0, name: "p-v0" })),
    });
  }, 60_000);

  it("maxStaleness 0: after an update a generate waits for the new weights; the old adapter and folder go", async () => {
    const engine = await setup();
    await generate(engine, [0]);
    await trainOnce(engine);
    expect(engine.syncState("p")).toMatchObject({
      updates: 1,
      version: 1,
      servers: [{ updates: 0 }, { updates: 0 }],
    });
    await generate(engine, [1, 2]);
    expect(written).toEqual(["p-v0", "p-v1"]);
    expect(released).toEqual(["/weights/p-v0"]);
    for (const stub of stubs) {
      expect([...stub.adapters.keys()]).toEqual(["p-v1"]);
      expect(models(stub).at(-1)).toBe("p-v1");
    }
    // two updates in a row are pushed once, as the newest weights
    await trainOnce(engine);
    await trainOnce(engine);
    await engine.sync();
    expect(written).toEqual(["p-v0", "p-v1", "p-v3"]);
    expect(engine.syncState("p").servers.map((s) => s.name)).toEqual(["p-v3", "p-v3"]);
  }, 60_000);

  it("maxStaleness 1: a generate goes on with the previous weights while the push runs", async () => {
    let finishWrite: (() => void) | undefined;
    const engine = await setup({
      maxStaleness: 1,
      writeWeights: async (_policyId, name) => {
        written.push(name);
        if (name !== "p-v0") await new Promise<void>((resolve) => (finishWrite = resolve));
        return `/weights/${name}`;
      },
    });
    await generate(engine, [0, 1]);
    await trainOnce(engine);
    const [during] = await generate(engine, [2]);
    expect(during!.text).toBe("s2");
    expect(written).toEqual(["p-v0", "p-v1"]); // the push has started, and waits on its folder
    expect(stubs.flatMap(models)).toEqual(["p-v0", "p-v0", "p-v0"]);
    finishWrite!();
    await engine.sync();
    await generate(engine, [3, 4]);
    expect(stubs.map((s) => models(s).at(-1))).toEqual(["p-v1", "p-v1"]);
  }, 60_000);

  it("full sync: every server reloads the folder on its route; the served model name stays", async () => {
    const engine = await setup({ weightSync: "full", reloadPath: RELOAD_ROUTE });
    await generate(engine, [0, 1]);
    await trainOnce(engine);
    await generate(engine, [2, 3]);
    for (const stub of stubs) {
      expect(stub.reloads).toEqual(["/weights/p-v0", "/weights/p-v1"]);
      expect(models(stub)).toEqual(["base", "base"]);
    }
    expect(engine.syncState("p").servers.map((s) => [s.version, s.name])).toEqual([
      [1, "p-v1"],
      [1, "p-v1"],
    ]);
  }, 60_000);

  it("a failed push fails the waiting generate in one line naming policy and version; the next one retries", async () => {
    const engine = await setup();
    stubs[1]!.schedule({ kind: "status", status: 500, message: "disk\nfull" });
    const error = (await generate(engine, [0]).catch((e: unknown) => e)) as Error;
    expect(error.message).toMatch(/^weight sync of policy "p" \(p-v0\): .*HTTP 500: disk full/);
    expect(error.message).not.toContain("\n");
    // the next generate pushes again (served by server 0 meanwhile if its load of p-v0 went through)
    expect((await generate(engine, [1]))[0]!.text).toBe("s1");
    await engine.sync();
    expect(stubs.map((s) => [...s.adapters.keys()])).toEqual([["p-v0"], ["p-v0"]]);
  }, 60_000);

  it("names an unknown policy, and refuses a bad configuration", async () => {
    const engine = await setup();
    await expect(engine.generate([{ policyId: "q", observation, seed: 0 }], sampling)).rejects.toThrow(
      'unknown policy "q" (the learner has: p)',
    );
    const base = { learner: engine.learner, servers: engine.servers, writeWeights: async () => "/w" };
    expect(() => createPairedEngine({ ...base, servers: [], weightSync: "lora" })).toThrow(
      "createPairedEngine: servers is empty",
    );
    expect(() => createPairedEngine({ ...base, weightSync: "full" })).toThrow(
      /weightSync "full" needs reloadPath/,
    );
    expect(() => createPairedEngine({ ...base, weightSync: "lora", maxStaleness: 1.5 })).toThrow(
      "createPairedEngine: maxStaleness = 1.5 must be a non-negative integer",
    );
  }, 60_000);
});
