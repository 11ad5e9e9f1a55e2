/**
 * The trainer CLI against damaged runs and bad stores, each call a separate process as a user
 * runs it:
 *  - a flipped byte in a committed rollout shard: `train --resume`, `eval` and `publish` fail,
 *    naming the shard's key (before, they exited 0 and said nothing); a flipped checkpoint byte too;
 *  - an attempt killed after its checkpoints committed but before its step did: the resume sweeps
 *    its files, so every object left is listed by a manifest;
 *  - bad stores (/proc, a file, a path under a file, S3 without credentials) and bad recipes fail
 *    fast with one error line, and leave no run folder behind.
 */
import { type SpawnSyncReturns, spawnSync } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { FileStore } from "@troupe/storage/node";
import { describe, expect, it } from "vitest";
import { orphans, TINY_THREE_STEPS, tempRoot, trainerProcess, writeTinyRecipe } from "./tiny.ts";

const root = tempRoot("integrity");

const { recipePath, storeRoot } = writeTinyRecipe(root, "integrity", 5, TINY_THREE_STEPS);

function cli(args: string[], env: NodeJS.ProcessEnv = {}): SpawnSyncReturns<string> {
  const [command, argv, options] = trainerProcess(args, env);
  return spawnSync(command, argv, { ...options, encoding: "utf8", timeout: 120_000 });
}
const train = (...args: string[]) => cli(["train", "--recipe", recipePath, ...args]);
const store = new FileStore(storeRoot);

async function flip(key: string, at: number): Promise<() => Promise<void>> {
  const good = await store.get(key);
  const bad = new Uint8Array(good);
  bad[at] = bad[at]! ^ 0x01;
  await store.put(key, bad);
  return () => store.put(key, good);
}

describe("damaged runs", () => {
  it("a flipped byte in a committed shard: --resume, eval and publish fail naming its key", async () => {
    const done = train("--run", "good");
    expect(done.status, done.stderr).toBe(0);
    const [shard] = (await store.list("runs/good/steps/00000001/shards/")).map((o) => o.key);
    const restore = await flip(shard!, 100);
    // The error is the last line (a resume first notes which run it continues), and no stack trace.
    const named = new RegExp(
      `(^|\\n)error: ${shard!.replace(/\./g, "\\.")}: sha256 [0-9a-f]{64}, manifest says [0-9a-f]{64} \\(corrupted\\)\\n$`,
    );
    for (const [what, run] of [
      ["resume", train("--run", "good", "--resume")],
      ["eval", cli(["eval", "--recipe", recipePath, "--run", "good"])],
      ["publish", cli(["publish", "--recipe", recipePath, "--run", "good", "--name", "t", "--no-eval"])],
    ] as const) {
      expect({ what, status: run.status }, run.stderr).toEqual({ what, status: 2 });
      expect(run.stderr).toMatch(named);
      expect(run.stderr).not.toMatch(/\n\s+at /);
    }
    await restore();

    // A flipped checkpoint byte is named as well; with both repaired, eval passes.
    const weights = (await store.list("runs/good/checkpoints/")).find((o) =>
      o.key.endsWith("/model.safetensors"),
    )!.key;
    const restoreWeights = await flip(weights, 200);
    const damaged = cli(["eval", "--recipe", recipePath, "--run", "good"]);
    expect(damaged.status).toBe(2);
    expect(damaged.stderr).toMatch(
      new RegExp(`^error: ${weights.replace(/\./g, "\\.")}: sha256 .* \\(corrupted\\)\\n$`),
    );
    await restoreWeights();
    const repaired = cli(["eval", "--recipe", recipePath, "--run", "good"]);
    expect(repaired.status, repaired.stderr).toBe(0);
  }, 600_000);

  it("files of an attempt killed after its checkpoints committed are swept on resume", async () => {
    const killed = cli(["train", "--recipe", recipePath, "--run", "killed"], {
      TROUPE_KILL_AT: "after-checkpoints@1",
    });
    expect(killed.signal).toBe("SIGKILL");
    // Step 1's shard and checkpoints are in the store, its step manifest is not.
    expect(await orphans(store, "killed")).toEqual([
      expect.stringMatching(/^runs\/killed\/steps\/00000001\/shards\/rollouts\.[0-9a-f]{12}\.parquet$/),
    ]);
    expect((await store.list("runs/killed/checkpoints/")).some((o) => o.key.includes("/00000001/"))).toBe(
      true,
    );
    const resumed = train("--run", "killed", "--resume");
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(resumed.stderr).toMatch(
      /resuming run killed after committed step 0 \(verified \d+ objects against their manifests; removed [1-9]\d* left by uncommitted attempts\)/,
    );
    expect(await orphans(store, "killed")).toEqual([]);
  }, 600_000);
});

describe("bad stores and bad recipes: one line, before any work, no run folder", () => {
  const aFile = join(root, "a-file");
  writeFileSync(aFile, "not a folder");
  const cases: [string, string, NodeJS.ProcessEnv?][] = [
    ["file:///proc/nope", "/proc is on proc, a kernel file system: runs cannot be stored there"],
    [`file://${aFile}`, "is a file, not a folder"],
    [`file://${aFile}/runs`, `${aFile} is a file, not a folder`],
    [
      "s3://troupe-nokeys/runs",
      "no S3 credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)",
      {
        AWS_ACCESS_KEY_ID: "",
        AWS_SECRET_ACCESS_KEY: "",
        AWS_PROFILE: "",
        AWS_EC2_METADATA_DISABLED: "true",
        AWS_SHARED_CREDENTIALS_FILE: join(root, "none"),
        AWS_CONFIG_FILE: join(root, "none"),
        AWS_ENDPOINT_URL: "http://127.0.0.1:9",
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
      },
    ],
  ];
  it.each(cases)(
    "store=%s",
    (uri, detail, env) => {
      const result = cli(
        ["train", "--recipe", recipePath, "--set", `store=${uri}`, "--run", "bad-store"],
        env ?? {},
      );
      expect({ status: result.status, signal: result.signal, stderr: result.stderr }).toEqual({
        status: 2,
        signal: null,
        stderr: `error: store ${uri}: ${detail}\n`,
      });
    },
    300_000,
  );

  it.each([
    [
      "environment.options.rows=100",
      /^error: \S+recipe\.yaml: environment\.options\.rows: Too big: expected number to be <=32\n$/,
    ],
    [
      "model.hidden_size=33",
      /^error: recipe: model\.hidden_size \(33\) must be divisible by model\.num_attention_heads \(2\)\n$/,
    ],
    [
      "engine.kind=openai",
      /^error: recipe: engine\.kind: "openai" generates but cannot train; keep engine\.kind "torch" as the learner and put the servers in engine\.rollout/,
    ],
  ])(
    "--set %s",
    (override, message) => {
      const fresh = join(root, `fresh-${override.split("=")[0]}`);
      const result = cli([
        "train",
        "--recipe",
        recipePath,
        "--set",
        `store=file://${fresh}`,
        "--set",
        override,
        "--run",
        "r",
      ]);
      expect(result.status, result.stderr).toBe(2);
      expect(result.stderr).toMatch(message);
      expect(result.stderr.trim().split("\n")).toHaveLength(1);
      expect(existsSync(join(fresh, "runs"))).toBe(false);
    },
    300_000,
  );
});
