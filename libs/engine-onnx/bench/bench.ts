/**
 * Benchmark of the ONNX engine on the reference shape (vocab 512, d 256, 4 layers, 4 heads,
 * MLP 1024, batch 16 × 128 tokens): forward, forward+backward+AdamW, sampling with the KV cache
 * (and, for comparison, without one: every step recomputes the whole sequences), achieved GFLOP/s, and the same training step in PyTorch (CPU) when it is installed.
 * Prints one JSON line per measurement. Run: `npm run bench` in libs/engine-onnx.
 *
 * Every timing has the median wall time `ms` and the median process CPU time `cpuMs` (all threads):
 * on a machine shared with other jobs the wall time stretches with the load, while the CPU time
 * mostly measures our own work, so `cpuMs / 2` is a fair estimate of the wall time on 2 idle cores.
 * The first line records the load average. Last, `bench/memory.ts` runs in a child process
 * (peak RSS of a Qwen2.5-0.5B-sized model while generating).
 *
 * Environment: BENCH_REPEATS (default 5), BENCH_TORCH=0 skips the torch comparison,
 * BENCH_MEMORY=0 the memory measurement. BENCH_COMPARE=<another checkout of this repository> (e.g. a
 * `git worktree` of the commit before) runs `bench/sample-compare.ts` after the cached sampling:
 * `sample_kv_cache` of this checkout and of that one alternating in one process (a before/after
 * under the same load), and whether their tokens are the same.
 */
import { execFileSync } from "node:child_process";
import { loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { samplingParams } from "@troupe/core";
import {
  ByteTokenizer,
  defaultOptimizerConfig,
  defaultPolicyLossConfig,
  qwenParameterCount,
  type TrainSequence,
  tinyQwenConfig,
} from "@troupe/engine";
import { createOnnxEngine } from "../src/engine.ts";
import { generateBatch, SequenceSampler } from "../src/runtime/generate.ts";
import { padBatch } from "../src/runtime/padding.ts";

const REPEATS = Number(process.env.BENCH_REPEATS ?? 5);
const BATCH = 16;
const TIME = 128;
const PROMPT = 64;
const SAMPLE_TOKENS = 64;
const SAMPLE_TOKENS_NO_CACHE = 32;

const config = tinyQwenConfig({ num_key_value_heads: 2 });
const print = (record: Record<string, unknown>) => console.log(JSON.stringify(record));

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** Median wall and process-CPU milliseconds of `repeats` runs after one warm-up run. */
async function timeIt(repeats: number, fn: () => Promise<unknown>): Promise<{ ms: number; cpuMs: number }> {
  await fn(); // warm-up (session creation, allocator)
  const times: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    await fn();
    const c = process.cpuUsage(c0);
    times.push(performance.now() - t0);
    cpu.push((c.user + c.system) / 1000);
  }
  return { ms: median(times), cpuMs: median(cpu) };
}

/** Matmul FLOPs of one forward token at context length t (2 per multiply-add). */
function forwardFlopsPerToken(contextLength: number): number {
  const c = config;
  const qOut = c.num_attention_heads * c.head_dim;
  const kvOut = c.num_key_value_heads * c.head_dim;
  const linear =
    c.hidden_size * (qOut + 2 * kvOut) + qOut * c.hidden_size + 3 * c.hidden_size * c.intermediate_size;
  const attention = 2 * contextLength * qOut; // q·k and p·v
  return 2 * (c.num_hidden_layers * (linear + attention) + c.vocab_size * c.hidden_size);
}

const engine = await createOnnxEngine({ policies: [{ id: "bench", config, seed: 0 }] });
let seed = 1;
const rand = () => {
  seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
  return seed / 2 ** 32;
};
const tokens = (n: number) => Array.from({ length: n }, () => Math.floor(rand() * 256));
const sequences = Array.from({ length: BATCH }, () => ({
  promptTokenIds: tokens(PROMPT),
  completionTokenIds: tokens(TIME - PROMPT),
}));
const oldLogprobs = await engine.logprobs("bench", sequences);
const batch: TrainSequence[] = sequences.map((s, i) => ({
  ...s,
  oldLogprobs: oldLogprobs[i]!.map((lp) => lp + 0.05),
  advantage: i % 2 === 0 ? 1 : -1,
}));
print({
  bench: "shape",
  parameters: qwenParameterCount(config),
  batch: BATCH,
  time: TIME,
  vocab: config.vocab_size,
  hidden: config.hidden_size,
  layers: config.num_hidden_layers,
  heads: config.num_attention_heads,
  kvHeads: config.num_key_value_heads,
  mlp: config.intermediate_size,
  threads: 2,
  loadAverage1m: loadavg()[0],
});

const tokensPerBatch = BATCH * TIME;
const fwdFlops = tokensPerBatch * forwardFlopsPerToken(TIME);
const forward = await timeIt(REPEATS, () => engine.logprobs("bench", sequences));
const forwardMs = forward.ms;
print({ bench: "forward", ...forward, gflops: fwdFlops / forwardMs / 1e6 });

const trainConfig = {
  loss: defaultPolicyLossConfig,
  optimizer: { ...defaultOptimizerConfig, lr: 1e-5 },
  microBatchSize: BATCH,
};
const train = await timeIt(REPEATS, () => engine.trainStep("bench", batch, trainConfig));
const trainMs = train.ms;
print({ bench: "train_step", ...train, gflops: (3 * fwdFlops) / trainMs / 1e6, note: "fwd+bwd+AdamW" });

// Sampling: no stop tokens, so every row generates exactly maxTokens.
const tokenizer = Object.assign(Object.create(new ByteTokenizer()), { stopTokenIds: [] });
const runner = engine.runnerOf("bench");
const prompts = Array.from({ length: BATCH }, () => tokens(PROMPT));
const seeds = prompts.map((_, i) => i);
// Cached sampling three ways: the weights baked into the step session and the session reused (what
// engine.generate does between two weight updates), a new weights version every call (each call
// pays the session rebuild, as the first generate after an optimizer step does), and the weights
// as session inputs (no version given).
let version = 0;
const sampleVariants = [
  { bench: "sample_kv_cache", weightsVersion: () => 0 },
  { bench: "sample_kv_cache_rebuilt", weightsVersion: () => ++version },
  { bench: "sample_kv_cache_weight_inputs", weightsVersion: () => undefined },
];
for (const v of sampleVariants) {
  const { ms, cpuMs } = await timeIt(Math.max(1, Math.floor(REPEATS / 2)), () => {
    const weightsVersion = v.weightsVersion();
    return generateBatch(
      runner,
      engine.weightsOf("bench"),
      tokenizer,
      prompts,
      seeds,
      samplingParams({ maxTokens: SAMPLE_TOKENS }),
      weightsVersion === undefined ? {} : { weightsVersion },
    );
  });
  printSampling(v.bench, SAMPLE_TOKENS, { ms, cpuMs });
}

if (process.env.BENCH_COMPARE) {
  // In a child process: the other checkout's modules and ORT sessions apart from this engine's.
  const script = join(dirname(fileURLToPath(import.meta.url)), "sample-compare.ts");
  const out = execFileSync(process.execPath, ["--conditions=@troupe/source", "--import", "tsx", script], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "ignore"],
  });
  for (const line of out.trim().split("\n")) if (line.startsWith("{")) console.log(line);
}

/**
 * Sampling without a KV cache, for comparison: every step runs the prefill over the whole
 * sequences so far (left-padded) and samples each row's next token from its last column.
 */
async function sampleWithoutCache(newTokens: number): Promise<void> {
  const sampling = samplingParams({ maxTokens: newTokens });
  const V = config.vocab_size;
  const usable = Math.min(V, tokenizer.vocabSize);
  const rows = prompts.map((p, b) => new SequenceSampler(p, seeds[b]!, sampling, tokenizer, V, usable));
  for (let n = 0; n < newTokens; n++) {
    const full = padBatch(
      rows.map((r) => [...r.prompt, ...r.tokens]),
      "left",
      tokenizer.padTokenId,
    );
    const weights = engine.weightsOf("bench");
    const { logits } = await runner.decoder.prefill(weights, full.ids, full.positions, full.valid, BATCH);
    rows.forEach((r, b) => r.sample(logits, b));
  }
}
const noCache = await timeIt(Math.max(1, Math.floor(REPEATS / 2)), () =>
  sampleWithoutCache(SAMPLE_TOKENS_NO_CACHE),
);
printSampling("sample_no_cache", SAMPLE_TOKENS_NO_CACHE, noCache);

function printSampling(bench: string, newTokens: number, time: { ms: number; cpuMs: number }): void {
  print({
    bench,
    batch: BATCH,
    promptTokens: PROMPT,
    newTokens,
    ...time,
    tokensPerSecond: (BATCH * newTokens) / (time.ms / 1000),
  });
}

if (process.env.BENCH_TORCH !== "0") {
  try {
    execFileSync("/usr/bin/python3", ["-c", "import torch"], { stdio: "ignore" });
    const script = join(dirname(fileURLToPath(import.meta.url)), "torch_step.py");
    const out = execFileSync(
      "/usr/bin/python3",
      [script, JSON.stringify({ ...config, batch: BATCH, time: TIME, threads: 2, repeats: REPEATS })],
      {
        env: { ...process.env, OPENBLAS_CORETYPE: process.env.OPENBLAS_CORETYPE ?? "Haswell" },
        encoding: "utf8",
      },
    );
    const torch = JSON.parse(out.trim().split("\n").pop()!) as {
      torch: string;
      train_step_ms: number;
      train_step_cpu_ms: number;
      forward_ms: number;
      forward_cpu_ms: number;
    };
    // The CPU-time ratios hold better than the wall-time ones when other jobs share the cores.
    print({
      bench: "torch_cpu",
      torch: torch.torch,
      trainStepMs: torch.train_step_ms,
      trainStepCpuMs: torch.train_step_cpu_ms,
      forwardMs: torch.forward_ms,
      forwardCpuMs: torch.forward_cpu_ms,
      onnxSpeedupTrain: torch.train_step_ms / trainMs,
      onnxSpeedupForward: torch.forward_ms / forwardMs,
      onnxSpeedupTrainCpu: torch.train_step_cpu_ms / train.cpuMs,
      onnxSpeedupForwardCpu: torch.forward_cpu_ms / forward.cpuMs,
    });
  } catch (e) {
    print({ bench: "torch_cpu", skipped: `torch unavailable: ${(e as Error).message.split("\n")[0]}` });
  }
}
await engine.close();

// The completion window (`completionWindow`) on the games' shape: a 2-layer model 128 wide, prompts
// of 80–120 tokens and answers of 4–16, a warm-start micro-batch of 16. Both engines run
// alternately in this one process, so the ratio holds whatever else loads the machine.
{
  const games = tinyQwenConfig({
    vocab_size: 259,
    hidden_size: 128,
    intermediate_size: 384,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
  });
  const policies = [{ id: "games", config: games, seed: 0 }];
  const full = await createOnnxEngine({ policies, memoryArena: true });
  const windowed = await createOnnxEngine({ policies, memoryArena: true, completionWindow: true });
  const gamesBatch: TrainSequence[] = Array.from({ length: BATCH }, () => {
    const promptTokenIds = tokens(80 + Math.floor(rand() * 41));
    const completionTokenIds = tokens(4 + Math.floor(rand() * 13));
    return {
      promptTokenIds,
      completionTokenIds,
      oldLogprobs: completionTokenIds.map(() => -1),
      advantage: 0,
    };
  });
  const step = { ...trainConfig, loss: { ...defaultPolicyLossConfig, nllCoef: 1 } };
  const times = { full: [] as number[], windowed: [] as number[] };
  await full.trainStep("games", gamesBatch, step);
  await windowed.trainStep("games", gamesBatch, step);
  for (let i = 0; i < Math.max(3, REPEATS); i++) {
    for (const [name, e] of [
      ["full", full],
      ["windowed", windowed],
    ] as const) {
      const t0 = performance.now();
      await e.trainStep("games", gamesBatch, step);
      times[name].push(performance.now() - t0);
    }
  }
  print({
    bench: "train_step_completion_window",
    shape: "2 layers, d 128, 16 × (80–120 prompt + 4–16 answer tokens)",
    fullMs: median(times.full),
    windowedMs: median(times.windowed),
    ratio: median(times.windowed) / median(times.full),
  });
  await full.close();
  await windowed.close();
}

if (process.env.BENCH_MEMORY !== "0") {
  // Peak RSS is per process: the 0.5B model runs in a child of its own.
  const script = join(dirname(fileURLToPath(import.meta.url)), "memory.ts");
  const out = execFileSync(process.execPath, ["--conditions=@troupe/source", "--import", "tsx", script], {
    encoding: "utf8",
  });
  console.log(out.trim().split("\n").pop());
}
