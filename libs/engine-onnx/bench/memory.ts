/**
 * Generation memory of a Qwen2.5-0.5B-sized model (random weights) on the CPU engine: peak RSS of
 * this process divided by the fp32 weight bytes (target ≤ 2.5). Runs in its own process (peak RSS
 * is per process), prints one JSON line. Run: `npm run bench:memory` in libs/engine-onnx.
 *
 * The weights are drawn with a cheap xorshift uniform of the config's standard deviation (σ·√3·U[−1,1])
 * straight into Float32Arrays: the memory test needs the shapes, not Box–Muller normals (which take
 * minutes for 494 M parameters).
 *
 * Environment: BENCH_MEMORY_TOKENS (default 8 new tokens), BENCH_MEMORY_PROMPT (default 16 tokens).
 */
import { samplingParams } from "@troupe/core";
import {
  ByteTokenizer,
  qwenParameterCount,
  qwenWeightNames,
  tinyQwenConfig,
  type Weights,
} from "@troupe/engine";
import { createOnnxEngine } from "../src/engine.ts";
import { generateBatch } from "../src/runtime/generate.ts";

const NEW_TOKENS = Number(process.env.BENCH_MEMORY_TOKENS ?? 8);
const PROMPT_TOKENS = Number(process.env.BENCH_MEMORY_PROMPT ?? 16);

/** Qwen2.5-0.5B's architecture (config.json of Qwen/Qwen2.5-0.5B). */
const config = tinyQwenConfig({
  model_type: "qwen2",
  vocab_size: 151936,
  hidden_size: 896,
  intermediate_size: 4864,
  num_hidden_layers: 24,
  num_attention_heads: 14,
  num_key_value_heads: 2,
  head_dim: 64,
  rope_theta: 1000000,
  max_position_embeddings: 32768,
  tie_word_embeddings: true,
  initializer_range: 0.02,
  bos_token_id: 151643,
  eos_token_id: 151643,
  pad_token_id: 151643,
});

function fastRandomWeights(): Weights {
  const weights: Weights = new Map();
  let s = 0x9e3779b9 | 0;
  const scale = config.initializer_range * Math.sqrt(3) * 2 ** -31;
  for (const spec of qwenWeightNames(config)) {
    const data = new Float32Array(spec.shape.reduce((a, b) => a * b, 1));
    if (spec.kind === "norm") data.fill(1);
    else if (spec.kind !== "bias") {
      for (let i = 0; i < data.length; i++) {
        s ^= s << 13;
        s ^= s >>> 17;
        s ^= s << 5;
        data[i] = s * scale;
      }
    }
    weights.set(spec.name, { shape: [...spec.shape], data });
  }
  return weights;
}

const baselineRss = process.memoryUsage().rss;
const t0 = performance.now();
const weights = fastRandomWeights();
const initMs = performance.now() - t0;
const weightBytes = qwenParameterCount(config) * 4;
const engine = await createOnnxEngine({ policies: [{ id: "qwen0.5b", config, weights }] });
const tokenizer = Object.assign(Object.create(new ByteTokenizer()), { stopTokenIds: [] });
const prompt = Array.from({ length: PROMPT_TOKENS }, (_, i) => (i * 37) % 256);
const t1 = performance.now();
const [completion] = await generateBatch(
  engine.runnerOf("qwen0.5b"),
  engine.weightsOf("qwen0.5b"),
  tokenizer,
  [prompt],
  [0],
  samplingParams({ maxTokens: NEW_TOKENS }),
);
const generateMs = performance.now() - t1;
const peakRss = process.resourceUsage().maxRSS * 1024;
console.log(
  JSON.stringify({
    bench: "memory_qwen2.5_0.5b",
    parameters: qwenParameterCount(config),
    weightBytes,
    peakRssBytes: peakRss,
    peakRssOverWeights: peakRss / weightBytes,
    baselineRssBytes: baselineRss,
    target: 2.5,
    batch: 1,
    promptTokens: PROMPT_TOKENS,
    newTokens: completion!.tokenIds.length,
    initMs,
    generateMs,
  }),
);
await engine.close();
