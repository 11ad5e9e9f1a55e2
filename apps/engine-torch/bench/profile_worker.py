"""Where the worker's time goes on a GPU: torch.profiler tables for one generate and one train_step.

    bash scripts/python.sh bench/profile_worker.py [--size 0.5b] [--generator torch|hf] [--micro 4] [--rows 20]

Prints the top operators by self CUDA time and by self CPU time. A decode loop whose CPU time far
exceeds its CUDA time is launch- or sync-bound (the GPU waits for Python), not bandwidth-bound.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import SIZES  # noqa: E402
from troupe_worker.engine import Engine, EngineOptions  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="0.5b", choices=sorted(SIZES))
    ap.add_argument("--generator", default="torch", choices=["torch", "hf"])
    ap.add_argument("--micro", type=int, default=4)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--gen-batch", type=int, default=64)
    ap.add_argument("--gen-tokens", type=int, default=16)
    ap.add_argument("--rows", type=int, default=20)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("profile: CUDA is not available — this profiles the worker on a GPU.", file=sys.stderr)
        return 2
    cfg = {"model_type": "qwen2", "rms_norm_eps": 1e-6, "rope_theta": 1e6, "max_position_embeddings": 32768, "eos_token_id": 1, "pad_token_id": 0, **SIZES[args.size]}
    backend = "troupe" if args.generator == "torch" else "transformers"
    engine = Engine(EngineOptions(device="cuda", model_backend=backend, generator=args.generator))
    engine.load_model({"name": "m", "init": {"config": cfg, "seed": 0}}, {})
    engine.add_policy({"id": "p", "model": "m", "copy": False})
    V = cfg["vocab_size"]
    g = torch.Generator().manual_seed(0)
    prompts = torch.randint(2, V, (args.gen_batch * 128,), generator=g, dtype=torch.int32)
    gen = ({"policy": "p", "seeds": list(range(args.gen_batch)), "sampling": {"maxTokens": args.gen_tokens, "temperature": 1.0, "stopTokenIds": []}},
           {"prompt_tokens": prompts, "prompt_lengths": torch.full((args.gen_batch,), 128, dtype=torch.int32)})
    P, C = args.seq // 2, args.seq - args.seq // 2
    train = ({"policy": "p", "loss": {}, "optimizer": {"lr": 1e-6}, "microBatchSize": args.micro},
             {"tokens": torch.randint(2, V, (args.batch * args.seq,), generator=g, dtype=torch.int32),
              "prompt_lengths": torch.full((args.batch,), P, dtype=torch.int32), "completion_lengths": torch.full((args.batch,), C, dtype=torch.int32),
              "old_logprobs": torch.full((args.batch * C,), -12.0), "advantages": torch.randn(args.batch, generator=g)})
    for name, call in (("generate", lambda: engine.generate(*gen)), ("train_step", lambda: engine.train_step(*train))):
        call()  # warm-up
        torch.cuda.synchronize()
        t = time.perf_counter()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            call()
            torch.cuda.synchronize()
        wall = time.perf_counter() - t
        events = prof.key_averages()
        cuda_total = sum(e.self_device_time_total for e in events) / 1e6
        print(f"\n=== {name} ({args.size}, {args.generator}): wall {wall:.3f} s under the profiler, Σ self CUDA {cuda_total:.3f} s ===")
        print(events.table(sort_by="self_cuda_time_total", row_limit=args.rows))
        print(events.table(sort_by="self_cpu_time_total", row_limit=args.rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
