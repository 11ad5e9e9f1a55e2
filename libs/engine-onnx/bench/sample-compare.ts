/**
 * Cached sampling of the reference shape (16 prompts of 64 tokens, 64 new tokens each, baked step
 * session reused: the bench's `sample_kv_cache`) in this checkout and, with BENCH_COMPARE=<another
 * checkout of this repository> (e.g. a `git worktree` of the commit before), in that one too,
 * alternating call by call in one process: a before/after under the same machine load. Prints
 * per checkout the median wall and process-CPU ms of a call, tok/s, and whether the sampled tokens
 * are the same as this checkout's. The same rounds time the call's weight products alone
 * (gemm-floor.ts: what no change to the rest of the decode loop can beat on this machine), and
 * with BENCH_COMPARE the most any checkout could gain over that one: its call over the floor.
 *
 * Run: `npm run bench:sample` in libs/engine-onnx (BENCH_ROUNDS, default 9).
 */
import { createHash } from "node:crypto";
import { loadavg } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { samplingParams } from "@troupe/core";
import { ByteTokenizer, tinyQwenConfig } from "@troupe/engine";
import { weightProductsCall } from "./gemm-floor.ts";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const BATCH = 16;
const PROMPT = 64;
const NEW_TOKENS = 64;
const config = tinyQwenConfig({ num_key_value_heads: 2 });
const print = (record: Record<string, unknown>) => console.log(JSON.stringify(record));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

interface Checkout {
  readonly name: string;
  readonly sample: () => Promise<{ tokenIds: number[]; logprobs: number[] }[]>;
  readonly ms: number[];
  readonly cpuMs: number[];
  tokens?: string;
  logprobs?: number[];
}

let seed = 1;
const rand = () => {
  seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
  return seed / 2 ** 32;
};
const prompts = Array.from({ length: BATCH }, () =>
  Array.from({ length: PROMPT }, () => Math.floor(rand() * 256)),
);
const seeds = prompts.map((_, i) => i);

/** The engine and generateBatch of the checkout at `root` (its own sources, its own module graph). */
async function checkout(name: string, root: string): Promise<Checkout> {
  const src = (file: string) => pathToFileURL(join(root, "libs/engine-onnx/src", file)).href;
  const { createOnnxEngine } = await import(src("engine.ts"));
  const { generateBatch } = await import(src("runtime/generate.ts"));
  const engine = await createOnnxEngine({ policies: [{ id: "bench", config, seed: 0 }] });
  const tokenizer = Object.assign(Object.create(new ByteTokenizer()), { stopTokenIds: [] });
  const sampling = samplingParams({ maxTokens: NEW_TOKENS });
  const sample = () =>
    generateBatch(engine.runnerOf("bench"), engine.weightsOf("bench"), tokenizer, prompts, seeds, sampling, {
      weightsVersion: 0,
    });
  return { name, sample, ms: [], cpuMs: [] };
}

const here = resolve(import.meta.dirname, "../../..");
const checkouts = [await checkout("this", here)];
if (process.env.BENCH_COMPARE) checkouts.push(await checkout("compare", resolve(process.env.BENCH_COMPARE)));
const floor = {
  run: await weightProductsCall(config, BATCH, PROMPT, NEW_TOKENS),
  ms: [] as number[],
  cpuMs: [] as number[],
};
await floor.run();
const load = [loadavg()[0]];
for (const c of checkouts) {
  const completions = await c.sample(); // warm-up: sessions built
  c.tokens = createHash("sha256")
    .update(JSON.stringify(completions.map((x) => x.tokenIds)))
    .digest("hex");
  c.logprobs = completions.flatMap((x) => x.logprobs);
}
/** One timed call: its wall and process-CPU ms appended to `into`. */
async function timed(call: () => Promise<unknown>, into: { ms: number[]; cpuMs: number[] }): Promise<void> {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  await call();
  const cpu = process.cpuUsage(c0);
  into.ms.push(performance.now() - t0);
  into.cpuMs.push((cpu.user + cpu.system) / 1000);
}
for (let r = 0; r < ROUNDS; r++) {
  for (const c of r % 2 === 0 ? checkouts : [...checkouts].reverse()) await timed(c.sample, c);
  await timed(floor.run, floor);
}
load.push(loadavg()[0]);
const base = checkouts[0]!;
for (const c of checkouts) {
  print({
    bench: "sample_kv_cache",
    checkout: c.name === "this" ? here : resolve(process.env.BENCH_COMPARE!),
    ms: median(c.ms),
    minMs: Math.min(...c.ms),
    cpuMs: median(c.cpuMs),
    minCpuMs: Math.min(...c.cpuMs),
    tokensPerSecond: (BATCH * NEW_TOKENS) / (median(c.ms) / 1000),
    sameTokens: c.tokens === base.tokens,
    // The sampled tokens' log-probabilities against this checkout's: the largest difference.
    maxLogprobDiff: Math.max(...c.logprobs!.map((lp, i) => Math.abs(lp - base.logprobs![i]!))),
    rounds: ROUNDS,
    loadAverage1m: load,
  });
}
print({
  bench: "sample_kv_cache_weight_products",
  // The call's Gemms by the weights alone, same shapes and sessions (gemm-floor.ts).
  ms: median(floor.ms),
  minMs: Math.min(...floor.ms),
  cpuMs: median(floor.cpuMs),
  // The most a call of each checkout could be sped up by changing everything but these products.
  ceiling: Object.fromEntries(checkouts.map((c) => [c.name, median(c.ms) / median(floor.ms)])),
});
if (checkouts.length === 2)
  print({
    bench: "sample_kv_cache_ratio",
    wall: median(checkouts[1]!.ms) / median(base.ms),
    cpu: median(checkouts[1]!.cpuMs) / median(base.cpuMs),
    minWall: Math.min(...checkouts[1]!.ms) / Math.min(...base.ms),
    minCpu: Math.min(...checkouts[1]!.cpuMs) / Math.min(...base.cpuMs),
  });
process.exit(0);
