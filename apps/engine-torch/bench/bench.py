"""GPU benchmark of the worker's engine on random-init Qwen2-architecture models (~0.5B, ~1.5B).

    python bench/bench.py [--sizes 0.5b,1.5b] [--seq 1024] [--batch 8] [--micro 4] [--gen-batch 64]
    python bench/bench.py --cpu-smoke        # a tiny config on CPU: checks the code path only
    bash bench/device-check.sh               # the one-call device check (device_check.py): one table

Reports, per size:
- learner: tokens/s of train_step (forward + backward + AdamW, bf16 autocast, fp32 master weights)
  and MFU = 6·N·tokens / time / peak, where the peak is MEASURED: the best of a few large bf16
  matmuls (2·n³ flops each) on this GPU, not the datasheet number;
- peak GPU memory of the train step;
- generation: tokens/s at batch `--gen-batch` against the HBM-bandwidth bound. Decoding one token
  per sequence reads every weight once per step (bf16: 2·N bytes) plus the KV cache, so
  tokens/s ≤ batch · bandwidth / (2·N + KV bytes per step); the bandwidth is measured with a large
  device-to-device copy (2 × bytes per copy).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from troupe_worker.engine import Engine, EngineOptions  # noqa: E402

# Qwen2.5-0.5B and Qwen2.5-1.5B shapes (vocab 151936, tied embeddings).
SIZES = {
    "0.5b": dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True),
    "1.5b": dict(hidden_size=1536, intermediate_size=8960, num_hidden_layers=28, num_attention_heads=12, num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True),
    "smoke": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, vocab_size=512, tie_word_embeddings=True),
}


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measured_bf16_peak(device: torch.device, n: int = 8192, reps: int = 10) -> float:
    """Best observed bf16 matmul throughput in flop/s."""
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    sync(device)
    best = 0.0
    for _ in range(reps):
        t = time.perf_counter()
        a @ b
        sync(device)
        best = max(best, 2 * n**3 / (time.perf_counter() - t))
    return best


def measured_bandwidth(device: torch.device, mib: int = 2048, reps: int = 5) -> float:
    """Device memory bandwidth in bytes/s from a big copy (reads + writes)."""
    x = torch.empty(mib * 2**20 // 4, device=device, dtype=torch.float32)
    y = torch.empty_like(x)
    y.copy_(x)
    sync(device)
    best = 0.0
    for _ in range(reps):
        t = time.perf_counter()
        y.copy_(x)
        sync(device)
        best = max(best, 2 * x.numel() * 4 / (time.perf_counter() - t))
    return best


def bench_size(name: str, args: argparse.Namespace, device: torch.device, peak: float, bandwidth: float) -> dict:
    cfg = {"model_type": "qwen2", "rms_norm_eps": 1e-6, "rope_theta": 1e6, "max_position_embeddings": 32768, "eos_token_id": 1, "pad_token_id": 0, **SIZES[name]}
    engine = Engine(EngineOptions(device=str(device), model_backend=args.model_backend, generator=args.generator, gradient_checkpointing=args.gradient_checkpointing,
                                  decode=args.decode, compile_blocks=args.compile_blocks))
    info = engine.load_model({"name": name, "init": {"config": cfg, "seed": 0}}, {})
    engine.add_policy({"id": "p", "model": name, "copy": False})
    N = info["parameters"]
    V = cfg["vocab_size"]
    g = torch.Generator().manual_seed(0)
    P, C = args.seq // 2, args.seq - args.seq // 2
    tokens = torch.randint(2, V, (args.batch, args.seq), generator=g, dtype=torch.int32)
    payloads = {
        "tokens": tokens.flatten(),
        "prompt_lengths": torch.full((args.batch,), P, dtype=torch.int32),
        "completion_lengths": torch.full((args.batch,), C, dtype=torch.int32),
        "old_logprobs": torch.full((args.batch * C,), -float(torch.log(torch.tensor(float(V))))),
        "advantages": torch.randn(args.batch, generator=g),
    }
    step = {"policy": "p", "loss": {}, "optimizer": {"lr": 1e-6}, "microBatchSize": args.micro}
    engine.train_step(step, payloads)  # warm-up: allocator, kernels, optimizer state
    sync(device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    t = time.perf_counter()
    for _ in range(args.steps):
        engine.train_step(step, payloads)
    sync(device)
    elapsed = time.perf_counter() - t
    trained = args.steps * args.batch * args.seq  # every position is forwarded and back-propagated
    learner_tps = trained / elapsed
    result = {
        "size": name, "parameters": N, "learner_tokens_per_s": learner_tps,
        "mfu": 6 * N * learner_tps / peak if peak else None,
        "train_peak_memory_gib": torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None,
    }
    # generation: batch gen_batch, prompt gen_prompt, exactly gen_tokens new tokens (no stop tokens)
    prompts = torch.randint(2, V, (args.gen_batch * args.gen_prompt,), generator=g, dtype=torch.int32)
    gen_args = {"policy": "p", "seeds": list(range(args.gen_batch)), "sampling": {"maxTokens": args.gen_tokens, "temperature": 1.0, "stopTokenIds": []}}
    gen_payloads = {"prompt_tokens": prompts, "prompt_lengths": torch.full((args.gen_batch,), args.gen_prompt, dtype=torch.int32)}
    engine.generate({**gen_args, "sampling": {**gen_args["sampling"], "maxTokens": 4}}, gen_payloads)
    sync(device)
    t = time.perf_counter()
    _, out = engine.generate(gen_args, gen_payloads)
    sync(device)
    gen_elapsed = time.perf_counter() - t
    generated = int(out["lengths"].sum())
    # bound: per step read the bf16 weights once and the KV cache (2·layers·kv_heads·head_dim·2 bytes per token in context)
    head_dim = cfg["hidden_size"] // cfg["num_attention_heads"]
    kv_per_token = 2 * cfg["num_hidden_layers"] * cfg["num_key_value_heads"] * head_dim * 2
    mean_context = args.gen_prompt + args.gen_tokens / 2
    bytes_per_step = 2 * N + args.gen_batch * mean_context * kv_per_token
    bound = args.gen_batch * bandwidth / bytes_per_step if bandwidth else None
    result.update({"gen_batch": args.gen_batch, "gen_tokens_per_s": generated / gen_elapsed, "gen_bound_tokens_per_s": bound,
                   "gen_fraction_of_bound": (generated / gen_elapsed) / bound if bound else None})
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="0.5b,1.5b")
    ap.add_argument("--seq", type=int, default=1024, help="tokens per training sequence (half prompt, half completion)")
    ap.add_argument("--batch", type=int, default=16, help="sequences per train_step")
    ap.add_argument("--micro", type=int, default=4, help="micro-batch size")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--gen-batch", type=int, default=64)
    ap.add_argument("--gen-prompt", type=int, default=128)
    ap.add_argument("--gen-tokens", type=int, default=128)
    ap.add_argument("--generator", default="auto", choices=["auto", "torch", "hf"])
    ap.add_argument("--model-backend", default="auto", choices=["auto", "transformers", "troupe"])
    ap.add_argument("--gradient-checkpointing", action="store_true")
    ap.add_argument("--decode", default="eager", choices=["auto", "eager", "static", "graph"], help="the own loop's decode path (static_decode.py)")
    ap.add_argument("--compile-blocks", action="store_true", help="torch.compile the decoder blocks for train steps")
    ap.add_argument("--cpu-smoke", action="store_true", help="tiny config on CPU: exercises the code path, measures nothing meaningful")
    args = ap.parse_args()
    if args.cpu_smoke:
        device = torch.device("cpu")
        args.sizes, args.seq, args.batch, args.micro, args.steps = "smoke", 32, 4, 2, 1
        args.gen_batch, args.gen_prompt, args.gen_tokens = 4, 8, 8
        peak, bandwidth = 0.0, 0.0
    else:
        if not torch.cuda.is_available():
            print("bench: CUDA is not available — this benchmark measures GPU throughput and refuses to run on CPU.\n"
                  "       Run it on a GPU box, or use --cpu-smoke to check the code path on a tiny model.", file=sys.stderr)
            return 2
        device = torch.device("cuda")
        peak, bandwidth = measured_bf16_peak(device), measured_bandwidth(device)
        print(json.dumps({"device": torch.cuda.get_device_name(device), "measured_bf16_tflops": peak / 1e12,
                          "measured_bandwidth_gb_s": bandwidth / 1e9}))
    for name in args.sizes.split(","):
        print(json.dumps(bench_size(name.strip(), args, device, peak, bandwidth)))
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
