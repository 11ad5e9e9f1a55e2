/**
 * `nx run trainer:chaos` — a reliability bench: does a run survive being killed, and is damage
 * to a stored run caught by name?
 *
 *  1. kills: a tiny recipe (warm start + RL) runs once uninterrupted (the reference), then as
 *     victim runs that are killed with SIGKILL at random wall-clock moments (uniform over the
 *     reference's duration, seeded) and resumed, until `--kills` kills have landed (a victim that
 *     finishes first is compared and a fresh one starts). Every victim must end identical to the
 *     reference: committed steps, samples byte for byte, every checkpoint file of the last step,
 *     metrics (wall times aside) — and with no object of an uncommitted attempt left behind;
 *  2. corruption: one byte of a committed rollout shard, then of a checkpoint, is flipped in a
 *     finished run; `train --resume`, `eval` and `publish` must each fail naming the damaged key;
 *  3. S3 with injected faults (when the S3 test server, Ceph RGW, and the storage tests' fault
 *     proxy are available; `--no-s3` skips it): a victim stored on s3:// through the fault proxy
 *     (500s, 500 after the write, 503 SlowDown, delays, stalls, dropped connections), killed
 *     `--s3-kills` times, must end identical to the reference too.
 *
 * Bounded in time: no new kill is started after `--budget-seconds`; the victim in flight is then
 * resumed to its end. Prints one line per outcome and a JSON summary; exits 1 unless every run
 * survived identical and every corruption was named.
 *
 *   npx nx run trainer:chaos [-- --kills 20 --seed 1 --s3-kills 5 --budget-seconds 1800 --no-s3]
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { canonicalJson, Rng, sha256Hex } from "@troupe/core";
import { FileStore, type ObjectStore, RunStore, S3Store } from "@troupe/storage/node";
import { type FaultProxy, startFaultProxy } from "../../../libs/storage/test/fault-proxy.ts";
import { appRoot, orphans, TINY_PLAN_PATH, trainerProcess } from "../test/tiny.ts";

const workspaceRoot = resolve(appRoot, "../..");

const { values } = parseArgs({
  options: {
    kills: { type: "string", default: "20" },
    "s3-kills": { type: "string" },
    seed: { type: "string", default: "1" },
    "budget-seconds": { type: "string", default: "1800" },
    "no-s3": { type: "boolean", default: false },
    keep: { type: "boolean", default: false },
  },
  strict: true,
});
const KILLS = Number(values.kills);
const S3_KILLS = values["s3-kills"] !== undefined ? Number(values["s3-kills"]) : Math.ceil(KILLS / 4);
const SEED = Number(values.seed);
const deadline = Date.now() + Number(values["budget-seconds"]) * 1000;
for (const [flag, n] of [
  ["--kills", KILLS],
  ["--s3-kills", S3_KILLS],
  ["--seed", SEED],
] as const) {
  if (!Number.isInteger(n) || n < 0) throw new Error(`${flag} must be a whole number`);
}

const root = mkdtempSync(join(tmpdir(), "troupe-chaos-"));
// The AWS SDK's notice about Node 20 (multi-line, on every process that touches S3) is not news here.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
const rng = new Rng(SEED);
const log = (line: string) => process.stdout.write(`${line}\n`);

let recipes = 0;

/** Warm start and RL long enough for kills to land in every phase; small enough to run in seconds. */
function writeRecipe(store: string): string {
  const path = join(root, `recipe-${recipes++}.yaml`);
  writeFileSync(
    path,
    `
name: chaos
seed: 3
store: ${store}
${TINY_PLAN_PATH}
strategy: { name: atgrpo, candidates: 2 }
sampling: { temperature: 1, maxTokens: 8 }
sft: { steps: 4, batchSize: 8, lr: 0.003, mistakeRate: 0.3 }
train: { steps: 6, tasksPerStep: 2, evalEvery: 3, evalTasks: 4, checkpointEvery: 2 }
`,
  );
  return path;
}

interface Launch {
  readonly status: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stderr: string;
  readonly ms: number;
  /** From the first line the trainer prints (its engine is built, the run begins) to its exit. */
  readonly workMs: number;
}

/**
 * The trainer CLI as a user runs it. With `killAfterMs`: SIGKILL that long after its first output
 * line (the run's start note), so the kill lands in the run's work, not in Node's start-up.
 */
function cli(args: string[], env: NodeJS.ProcessEnv = {}, killAfterMs?: number): Promise<Launch> {
  const started = performance.now();
  const [command, argv, options] = trainerProcess(args, env);
  const child = spawn(command, argv, { ...options, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  let firstOutput: number | undefined;
  let timer: NodeJS.Timeout | undefined;
  child.stderr.on("data", (chunk) => {
    stderr += chunk.toString();
    if (firstOutput === undefined) {
      firstOutput = performance.now();
      if (killAfterMs !== undefined) timer = setTimeout(() => child.kill("SIGKILL"), killAfterMs);
    }
  });
  const limit = setTimeout(() => child.kill("SIGKILL"), 600_000);
  return new Promise((done) => {
    child.on("close", (status, signal) => {
      clearTimeout(timer);
      clearTimeout(limit);
      const now = performance.now();
      done({ status, signal, stderr, ms: now - started, workMs: now - (firstOutput ?? started) });
    });
  });
}

const lastLine = (text: string) => text.trim().split("\n").at(-1) ?? "";

/** Where a run stands: no config yet, in its warm start, or after N committed RL steps. */
async function progress(store: ObjectStore, runId: string): Promise<string> {
  if (!(await store.head(`runs/${runId}/config.json`))) return "start-up";
  const latest = await new RunStore(store, runId).latestCommittedStep();
  return latest === undefined ? "warm start" : `rl, ${latest + 1} committed`;
}

/** Differences between a run and the reference (empty: identical, wall times aside). */
async function differences(ref: RunStore, run: RunStore): Promise<string[]> {
  const out: string[] = [];
  const steps = await run.committedSteps();
  const refSteps = await ref.committedSteps();
  if (canonicalJson(steps) !== canonicalJson(refSteps)) return [`committed steps ${steps} ≠ ${refSteps}`];
  const samples = async (r: RunStore, step: number) =>
    canonicalJson(
      [...(await r.readStep(step)).shards.values()]
        .flat()
        .map((s) => ({ ...s, provenance: { ...s.provenance, runId: "" } })),
    );
  for (const step of steps) {
    if ((await samples(run, step)) !== (await samples(ref, step))) out.push(`samples of step ${step}`);
  }
  const last = steps.at(-1)!;
  for (const policyId of ["planner", "fixer"]) {
    const mine = await run.readCheckpoint(policyId, last);
    const theirs = await ref.readCheckpoint(policyId, last);
    for (const name of new Set([...Object.keys(mine), ...Object.keys(theirs)])) {
      const a = mine[name] ? await sha256Hex(mine[name]!) : "missing";
      const b = theirs[name] ? await sha256Hex(theirs[name]!) : "missing";
      if (a !== b) out.push(`checkpoint ${policyId}/${name} of step ${last}`);
    }
  }
  const metrics = async (r: RunStore) =>
    canonicalJson(
      (await r.readMetrics())
        .filter((row) => row.source === "eval-start" || steps.includes(row.step))
        .map(({ step, source, metrics: m }) => {
          const { seconds: _seconds, ...rest } = m;
          return { step, source, metrics: rest };
        }),
    );
  if ((await metrics(run)) !== (await metrics(ref))) out.push("metrics");
  return out;
}

interface ChainResult {
  readonly kills: number;
  readonly phases: string[];
  readonly identical: boolean;
  readonly diff: string[];
  readonly orphans: number;
  readonly storeErrors: string[];
}

/**
 * One victim run: launched, killed after a random delay and resumed while kills are wanted and the
 * budget lasts, then resumed to its end and compared with the reference.
 */
async function victim(options: {
  storeUri: string;
  /** The same store, opened here (directly, not through the fault proxy). */
  store: ObjectStore;
  runId: string;
  env: NodeJS.ProcessEnv;
  kills: number;
  typicalMs: number;
  reference: RunStore;
}): Promise<ChainResult> {
  const { store, runId, env } = options;
  const recipe = writeRecipe(options.storeUri);
  const phases: string[] = [];
  const storeErrors: string[] = [];
  const args = async () => [
    "train",
    "--recipe",
    recipe,
    "--run",
    runId,
    ...((await store.head(`runs/${runId}/config.json`)) ? ["--resume"] : []),
  ];
  let finished = false;
  while (phases.length < options.kills && Date.now() < deadline && !finished) {
    const delay = Math.round(rng.float() * options.typicalMs);
    const run = await cli(await args(), env, delay);
    if (run.signal === "SIGKILL") phases.push(await progress(store, runId));
    else if (run.status === 0) finished = true;
    else storeErrors.push(lastLine(run.stderr));
    if (storeErrors.length > 5) throw new Error(`victim ${runId}: ${storeErrors.join(" | ")}`);
  }
  while (!finished) {
    const run = await cli(await args(), env);
    if (run.status === 0) finished = true;
    else {
      storeErrors.push(lastLine(run.stderr));
      if (storeErrors.length > 5) throw new Error(`victim ${runId}: ${storeErrors.join(" | ")}`);
    }
  }
  const runStore = new RunStore(store, runId);
  const diff = await differences(options.reference, runStore);
  const left = await orphans(store, runId);
  return {
    kills: phases.length,
    phases,
    identical: diff.length === 0,
    diff,
    orphans: left.length,
    storeErrors,
  };
}

/** Flips one byte of `key`, runs resume, eval and publish, restores it: which named the key. */
async function corrupt(store: FileStore, recipe: string, runId: string, key: string): Promise<string[]> {
  const good = await store.get(key);
  const bad = new Uint8Array(good);
  const at = rng.int(bad.length);
  bad[at] = bad[at]! ^ (1 << rng.int(8));
  await store.put(key, bad);
  const named: string[] = [];
  try {
    for (const [what, args] of [
      ["train --resume", ["train", "--recipe", recipe, "--run", runId, "--resume"]],
      ["eval", ["eval", "--recipe", recipe, "--run", runId]],
      ["publish", ["publish", "--recipe", recipe, "--run", runId, "--name", "chaos", "--no-eval"]],
    ] as const) {
      const run = await cli([...args]);
      const line = lastLine(run.stderr);
      const ok = run.status === 2 && line.startsWith(`error: ${key}: `) && !/\n\s+at /.test(run.stderr);
      log(
        `  ${ok ? "named" : "MISSED"}  ${what}: ${ok ? line.slice(0, 120) : `exit ${run.status}: ${line}`}`,
      );
      if (ok) named.push(what);
    }
  } finally {
    await store.put(key, good);
  }
  return named;
}

async function main(): Promise<number> {
  const started = performance.now();
  log(
    `chaos: ${KILLS} kills on file:// runs, ${values["no-s3"] ? "no S3" : `${S3_KILLS} on s3:// through a fault proxy`}, seed ${SEED}, in ${root}`,
  );

  // The reference: uninterrupted.
  const refRoot = join(root, "reference");
  const refRecipe = writeRecipe(`file://${refRoot}`);
  const reference = await cli(["train", "--recipe", refRecipe, "--run", "run"]);
  if (reference.status !== 0) throw new Error(`the reference run failed: ${reference.stderr}`);
  const refRun = new RunStore(new FileStore(refRoot), "run");
  log(
    `reference: ${Math.round(reference.ms)} ms uninterrupted, ${Math.round(reference.workMs)} ms of it after start-up ` +
      `(${(await refRun.committedSteps()).length} RL steps)`,
  );

  // 1. Kills on file stores: victims until KILLS kills have landed.
  const chains: ChainResult[] = [];
  let landed = 0;
  for (let i = 0; landed < KILLS && Date.now() < deadline; i++) {
    const storeRoot = join(root, `victim-${i}`);
    const chain = await victim({
      storeUri: `file://${storeRoot}`,
      store: new FileStore(storeRoot),
      runId: "run",
      env: {},
      kills: KILLS - landed,
      typicalMs: reference.workMs,
      reference: refRun,
    });
    chains.push(chain);
    landed += chain.kills;
    log(
      `victim ${i}: ${chain.kills} kills (${chain.phases.join("; ") || "none"}) → ${chain.identical ? "identical" : `DIFFERENT: ${chain.diff.join("; ")}`}, ${chain.orphans} orphaned objects`,
    );
  }
  const survived = chains.filter((c) => c.identical && c.orphans === 0).reduce((n, c) => n + c.kills, 0);

  // 2. Corruption of a finished run: a shard, then a checkpoint file.
  const lastRoot = join(root, `victim-${chains.length - 1}`);
  const lastStore = new FileStore(lastRoot);
  const lastRecipe = writeRecipe(`file://${lastRoot}`);
  const steps = await new RunStore(lastStore, "run").committedSteps();
  const step = steps[rng.int(steps.length)]!;
  const [shard] = (await lastStore.list(`runs/run/steps/${String(step).padStart(8, "0")}/shards/`)).map(
    (o) => o.key,
  );
  const weights = (await lastStore.list(`runs/run/checkpoints/`))
    .map((o) => o.key)
    .filter(
      (k) => k.includes(`/${String(steps.at(-1)).padStart(8, "0")}/`) && k.endsWith("/model.safetensors"),
    );
  const checkpoint = weights[rng.int(weights.length)]!;
  log(`corrupting ${shard}`);
  const shardNamed = await corrupt(lastStore, lastRecipe, "run", shard!);
  log(`corrupting ${checkpoint}`);
  const checkpointNamed = await corrupt(lastStore, lastRecipe, "run", checkpoint);
  const detected = shardNamed.length + checkpointNamed.length;

  // 3. S3 through the fault proxy.
  let s3: (ChainResult & { faults: Record<string, number> }) | { skipped: string } = { skipped: "--no-s3" };
  if (!values["no-s3"]) s3 = await s3Victim(refRun, reference.workMs);

  const s3Ok = "skipped" in s3 || (s3.identical && s3.orphans === 0);
  const summary = {
    kills: landed,
    victims: chains.length,
    survivedIdentical: survived,
    corruptionsNamed: detected,
    corruptionChecks: 6,
    s3,
    seconds: Math.round((performance.now() - started) / 1000),
  };
  log("");
  log(`kills survived with identical results: ${survived}/${landed} (over ${chains.length} victim runs)`);
  log(
    `corruptions detected by name: ${detected}/6 (shard: ${shardNamed.join(", ")}; checkpoint: ${checkpointNamed.join(", ")})`,
  );
  if ("skipped" in s3) log(`s3 with injected faults: skipped (${s3.skipped})`);
  else
    log(
      `s3 with injected faults: ${s3.identical && s3.orphans === 0 ? "identical" : `DIFFERENT: ${s3.diff.join("; ")}`} after ${s3.kills} kills, ` +
        `${Object.entries(s3.faults)
          .filter(([k, n]) => k !== "none" && n > 0)
          .map(([k, n]) => `${n} ${k}`)
          .join(", ")} injected, ${s3.storeErrors.length} runs ended by a store error and resumed`,
    );
  log(JSON.stringify(summary));
  if (landed < KILLS) log(`(the budget ran out after ${landed} of ${KILLS} kills)`);
  return survived === landed && detected === 6 && s3Ok ? 0 : 1;
}

async function s3Victim(refRun: RunStore, typicalMs: number) {
  const tools = join(workspaceRoot, "tools/ceph");
  if (!existsSync(join(tools, "start-rgw.sh"))) return { skipped: "no tools/ceph/start-rgw.sh" };
  const user = String(process.pid);
  let server: { endpoint: string; region: string; accessKeyId: string; secretAccessKey: string };
  try {
    const out = execFileSync("bash", [join(tools, "start-rgw.sh"), "--user", user], {
      encoding: "utf8",
      timeout: 420_000,
      stdio: ["ignore", "pipe", "pipe"],
    });
    server = JSON.parse(lastLine(out));
  } catch (error) {
    return {
      skipped: `no S3 test server: ${lastLine(String((error as { stderr?: string }).stderr ?? error))}`,
    };
  }
  let proxy: FaultProxy | undefined;
  try {
    const prefix = `chaos-${process.pid}-${Date.now()}`;
    const credentials = { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey };
    const direct = new S3Store({
      bucket: "troupe-test",
      prefix,
      endpoint: server.endpoint,
      region: server.region,
      credentials,
      createBucket: true,
    });
    await direct.head("probe"); // creates the bucket when it is not there yet
    proxy = await startFaultProxy(
      server.endpoint,
      {
        error500: 0.04,
        error500After: 0.03,
        slowDown: 0.03,
        slow: 0.05,
        slowMs: 100,
        stall: 0.01,
        stallMs: 1500,
        dropBefore: 0.02,
        dropMidBody: 0.02,
      },
      SEED,
    );
    const chain = await victim({
      storeUri: `s3://troupe-test/${prefix}`,
      store: direct,
      runId: "run",
      env: {
        AWS_ENDPOINT_URL: proxy.endpoint,
        AWS_ENDPOINT_URL_S3: proxy.endpoint,
        AWS_REGION: server.region,
        AWS_ACCESS_KEY_ID: server.accessKeyId,
        AWS_SECRET_ACCESS_KEY: server.secretAccessKey,
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
      },
      kills: S3_KILLS,
      typicalMs: typicalMs * 1.5,
      reference: refRun,
    });
    const faults = { ...proxy.counts };
    for (const { key } of await direct.list("")) await direct.delete(key);
    direct.close();
    return { ...chain, faults };
  } finally {
    await proxy?.close();
    try {
      execFileSync("bash", [join(tools, "stop-rgw.sh"), "--user", user], { stdio: "ignore" });
    } catch {
      // another user keeps it, or it is gone already
    }
  }
}

main()
  .then((code) => {
    process.exitCode = code;
  })
  .catch((error) => {
    process.stderr.write(`chaos: ${(error as Error).message}\n`);
    process.exitCode = 2;
  })
  .finally(() => {
    if (!values.keep) rmSync(root, { recursive: true, force: true });
    else log(`kept ${root}`);
  });
