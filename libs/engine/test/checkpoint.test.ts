import { describe, expect, it } from "vitest";
import { decodeCheckpoint, encodeCheckpoint } from "../src/checkpoint.ts";
import { tinyQwenConfig } from "../src/model-config.ts";
import { AdamW } from "../src/optimizer.ts";
import { readSafetensors, writeSafetensors } from "../src/safetensors.ts";
import { cloneWeights } from "../src/tensor.ts";
import { ByteTokenizer, HfTokenizer } from "../src/tokenizer.ts";
import { defaultOptimizerConfig } from "../src/types.ts";
import { initQwenWeights } from "../src/weights.ts";

const config = tinyQwenConfig({ num_hidden_layers: 1, hidden_size: 32, head_dim: 8, intermediate_size: 64 });
const weights = initQwenWeights(config, 5);
const tokenizer = new ByteTokenizer();
const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

function trainedOptimizer() {
  const params = cloneWeights(weights);
  const opt = new AdamW(params, { ...defaultOptimizerConfig, lr: 1e-3 });
  const grads = new Map([...params].map(([name, t]) => [name, t.data.map((_, i) => Math.sin(i))]));
  opt.step(grads);
  opt.step(grads);
  return { params, opt };
}

describe("checkpoint", () => {
  it("round-trips config, weights, tokenizer, optimizer and trainer state", () => {
    const { params, opt } = trainedOptimizer();
    const files = encodeCheckpoint({
      config,
      weights: params,
      tokenizer,
      optimizerState: opt.state(),
      trainerState: { format_version: 1, optimizer_step: 2, run: "r1" },
    });
    expect(Object.keys(files).sort()).toEqual([
      "config.json",
      "model.safetensors",
      "optimizer.safetensors",
      "tokenizer.json",
      "tokenizer_config.json",
      "trainer_state.json",
    ]);
    const back = decodeCheckpoint(files);
    expect(back.config).toEqual(config);
    expect(back.warnings).toEqual([]);
    expect([...back.weights.keys()]).toEqual([...params.keys()]);
    for (const [name, t] of params) expect(back.weights.get(name)!.data).toEqual(t.data);
    expect(back.tokenizer).toBeInstanceOf(ByteTokenizer);
    expect(back.optimizerState!.step).toBe(2);
    expect(back.optimizerState!.expAvgSq.get("model.norm.weight")).toEqual(
      opt.state().expAvgSq.get("model.norm.weight"),
    );
    expect(back.trainerState).toEqual({ format_version: 1, optimizer_step: 2, run: "r1" });
    expect(readSafetensors(files["model.safetensors"]!).metadata).toEqual({ format: "pt" });
  });

  it("writes bf16 weights on request, within bf16 precision", () => {
    const files = encodeCheckpoint({ config, weights, tokenizer }, { weightsDtype: "BF16" });
    const full = encodeCheckpoint({ config, weights, tokenizer });
    expect(files["model.safetensors"]!.length).toBeLessThan(full["model.safetensors"]!.length * 0.51 + 4096);
    const back = decodeCheckpoint(files).weights.get("model.layers.0.mlp.up_proj.weight")!.data;
    const orig = weights.get("model.layers.0.mlp.up_proj.weight")!.data;
    orig.forEach((x, i) => expect(Math.abs(back[i]! - x)).toBeLessThanOrEqual(Math.abs(x) * 2 ** -8));
  });

  it("keeps an HF tokenizer's files", () => {
    const hfFiles = new ByteTokenizer().toFiles();
    const config2 = JSON.parse(new TextDecoder().decode(hfFiles["tokenizer_config.json"]));
    delete config2.troupe_tokenizer; // now only an HF tokenizer
    const hf = new HfTokenizer({ ...hfFiles, "tokenizer_config.json": json(config2) });
    const back = decodeCheckpoint(encodeCheckpoint({ config, weights, tokenizer: hf }));
    expect(back.tokenizer).toBeInstanceOf(HfTokenizer);
    expect(back.tokenizer.encodeChat([{ role: "user", content: "x" }])).toEqual(
      tokenizer.encodeChat([{ role: "user", content: "x" }]),
    );
  });

  it("names a missing file", () => {
    const files = { ...encodeCheckpoint({ config, weights, tokenizer }) };
    delete files["config.json"];
    expect(() => decodeCheckpoint(files)).toThrow("checkpoint: config.json is missing");
    const noTokenizer = { ...encodeCheckpoint({ config, weights, tokenizer }) };
    delete noTokenizer["tokenizer.json"];
    delete noTokenizer["tokenizer_config.json"];
    expect(() => decodeCheckpoint(noTokenizer)).toThrow("checkpoint: tokenizer: tokenizer.json is missing");
  });

  it("names a tensor whose shape does not fit config.json", () => {
    const files = { ...encodeCheckpoint({ config, weights, tokenizer }) };
    const bad = cloneWeights(weights);
    const up = bad.get("model.layers.0.mlp.up_proj.weight")!;
    bad.set("model.layers.0.mlp.up_proj.weight", { shape: [32, 64], data: up.data });
    files["model.safetensors"] = writeSafetensors(bad);
    expect(() => decodeCheckpoint(files)).toThrow(
      "model.safetensors: weights do not match the qwen3 config:\n  model.layers.0.mlp.up_proj.weight: expected [64,32], got [32,64]",
    );
  });

  it("names a bad config field, trainer state field or optimizer tensor", () => {
    const files = encodeCheckpoint({ config, weights, tokenizer });
    expect(() =>
      decodeCheckpoint({ ...files, "config.json": json({ ...config, model_type: "gpt2" }) }),
    ).toThrow("config.json: model_type");
    expect(() =>
      decodeCheckpoint({ ...files, "trainer_state.json": json({ format_version: 1, optimizer_step: -1 }) }),
    ).toThrow("trainer_state.json: optimizer_step");
    const { params, opt } = trainedOptimizer();
    const withOpt = encodeCheckpoint({ config, weights: params, tokenizer, optimizerState: opt.state() });
    const tensors = readSafetensors(withOpt["optimizer.safetensors"]!).tensors;
    tensors.set("model.norm.weight.exp_avg", { dtype: "F32", shape: [3], data: new Float32Array(3) });
    const corrupt = writeSafetensors(tensors, { metadata: { format: "troupe-adamw", step: "2" } });
    expect(() => decodeCheckpoint({ ...withOpt, "optimizer.safetensors": corrupt })).toThrow(
      "optimizer.safetensors: model.norm.weight.exp_avg: expected [32], got [3]",
    );
    expect(() =>
      decodeCheckpoint({ ...withOpt, "trainer_state.json": json({ format_version: 1, optimizer_step: 5 }) }),
    ).toThrow("optimizer.safetensors is at step 2, trainer_state.json says optimizer_step 5");
  });

  it("refuses a tokenizer with more ids than the model's vocabulary", () => {
    const small = tinyQwenConfig({
      vocab_size: 200,
      bos_token_id: null,
      eos_token_id: null,
      pad_token_id: null,
      num_hidden_layers: 1,
    });
    expect(() => encodeCheckpoint({ config: small, weights: initQwenWeights(small, 0), tokenizer })).toThrow(
      "the tokenizer has 259 ids, more than vocab_size 200",
    );
  });
});
