"""The GPU engine's device check: one call, under 8 minutes, one table.

    bash apps/engine-torch/bench/device-check.sh                 # on the GPU machine, from the repo root
    bash scripts/python.sh bench/device_check.py --cpu-smoke      # here: tiny models on CPU, checks the plumbing

Parts, each run as its own subprocess under its own timeout (a part that fails, hangs or runs out of
the total budget becomes a row saying so; the table is always printed):

- gen <size> b<B>: generation of random-init Qwen2.5-shaped models, bf16 weights, B prompts of 128
  random tokens + 128 new tokens, temperature 0, no stop tokens, once per decode path (eager: the
  reference loop; graph: static KV cache + CUDA-graph decode step), tokens/s end to end (prefill
  included) and the fraction of the HBM roofline, and whether the paths gave identical tokens;
- learner <size> [compiled]: train_step tokens/s and MFU (6·N·tokens / time / measured bf16 peak,
  as bench.py), fp32 master weights + bf16 autocast, 16 sequences of 1024 tokens, micro-batch 8,
  plain blocks and torch.compile'd blocks (EngineOptions.compile_blocks);
- pytest: tests/test_static_decode.py on this machine (its CUDA-graph and compile tests run here;
  last, as they compile for minutes on a GPU);
- trainer: the default recipe with engine.kind torch on CUDA for 2 steps, when node and the
  repository's node_modules are there (skipped with the reason otherwise).

HBM roofline of decode (one token per row per step; every step reads every weight once and the
K/V of every position in context):

    bytes/step   = W + B · c̄ · kv        W  = parameter bytes (bf16: 2 · N)
                                          kv = 2 (K and V) · layers · kv_heads · head_dim · 2 bytes
                                          c̄  = P + (new − 1) / 2, the mean context of a decode step
    roofline tok/s = B · BW / bytes/step  BW = the datasheet bandwidth of the device (BANDWIDTH below)

The static cache reads all S = P + new slots every step (masked slots included); the roofline counts
only the useful c̄, so the fraction is of the ideal.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # apps/engine-torch
REPO = ROOT.parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

#: datasheet HBM bandwidth in bytes/s by a substring of torch.cuda.get_device_name (first match wins)
BANDWIDTH = [("H100 PCIe", 2.0e12), ("H100", 3.35e12), ("H200", 4.8e12), ("A100-SXM4-80GB", 2.04e12), ("A100", 1.555e12)]
#: targets (fraction of the HBM roofline at batch 64 / 256, 0.5B, bf16)
GEN_TARGET = {64: 0.25, 256: 0.40}
MFU_TARGET = 0.45


def assumed_bandwidth(name: str) -> tuple[float, str]:
    for key, bw in BANDWIDTH:
        if key in name:
            return bw, f"{key} datasheet {bw / 1e12:.2f} TB/s"
    return 0.0, f"no datasheet bandwidth for {name!r}"


# ---- child parts (each prints one JSON object on its last stdout line) ----------------------------
def qwen_config(size: str) -> dict:
    from bench import SIZES

    return {"model_type": "qwen2", "rms_norm_eps": 1e-6, "rope_theta": 1e6, "max_position_embeddings": 32768,
            "eos_token_id": 1, "pad_token_id": 0, **SIZES[size]}


def part_gen(size: str, batch: int, prompt: int, new: int, modes: list[str], device_name: str, param_dtype: str) -> dict:
    """Generation tok/s of each decode path on one model, and whether their tokens agree.
    param_dtype bfloat16: bf16 weights; float32: fp32 master weights under bf16 autocast (the
    trainer's default; the static paths decode with bf16 shadows of the Linear weights)."""
    import torch

    from troupe_worker.engine import Engine, EngineOptions

    cuda = device_name == "cuda"
    engine = Engine(EngineOptions(device=device_name, param_dtype=param_dtype if cuda else "float32", model_backend="troupe",
                                  generator="torch", decode="eager"))
    cfg = qwen_config(size)
    info = engine.load_model({"name": size, "init": {"config": cfg, "seed": 0}}, {})
    engine.add_policy({"id": "p", "model": size, "copy": False})
    N, V = info["parameters"], cfg["vocab_size"]
    g = torch.Generator().manual_seed(0)
    payloads = {"prompt_tokens": torch.randint(2, V, (batch * prompt,), generator=g, dtype=torch.int32),
                "prompt_lengths": torch.full((batch,), prompt, dtype=torch.int32)}
    args = {"policy": "p", "seeds": list(range(batch)), "sampling": {"maxTokens": new, "temperature": 0.0, "stopTokenIds": []}}

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    out: dict = {"size": size, "batch": batch, "prompt": prompt, "new": new, "parameters": N}
    tokens = {}
    for mode in modes:
        engine.options.decode = mode
        t = time.perf_counter()
        # warm-up: the graph path captures its graph here (the same cache length, so the full length);
        # the eager path needs a few steps only
        warm = args if mode != "eager" else {**args, "sampling": {**args["sampling"], "maxTokens": min(4, new)}}
        engine.generate(warm, payloads)
        sync()
        out[f"{mode}_warmup_s"] = time.perf_counter() - t
        t = time.perf_counter()
        _, res = engine.generate(args, payloads)
        sync()
        elapsed = time.perf_counter() - t
        tokens[mode] = res["tokens"]
        out[f"{mode}_tok_s"] = int(res["lengths"].sum()) / elapsed
        out[f"{mode}_s"] = elapsed
    # identical tokens: every path against the first (eager, the reference)
    ref = modes[0]
    for mode in modes[1:]:
        a, b = tokens[ref].view(batch, -1), tokens[mode].view(batch, -1)
        same_rows = int((a == b).all(-1).sum()) if a.shape == b.shape else 0
        out[f"{mode}_identical_rows"] = same_rows
        if same_rows < batch and a.shape == b.shape:
            diff = (a != b).nonzero()[0].tolist()
            out[f"{mode}_first_difference"] = {"row": diff[0], "token": diff[1]}
    head_dim = cfg["hidden_size"] // cfg["num_attention_heads"]
    kv = 2 * cfg["num_hidden_layers"] * cfg["num_key_value_heads"] * head_dim * 2  # bytes per position in context
    # bytes a decode step must read: every weight once, in the compute dtype (bf16 on CUDA)
    weight_bytes = sum(p.numel() * (2 if cuda else p.element_size()) for p in engine.models[size].module.parameters())
    mean_context = prompt + (new - 1) / 2
    out.update(weight_bytes=weight_bytes, kv_bytes_per_position=kv, bytes_per_step=weight_bytes + batch * mean_context * kv)
    return out


def part_learner(size: str, compiled: bool, seq: int, batch: int, micro: int, steps: int, device_name: str) -> dict:
    import torch

    from bench import measured_bf16_peak
    from troupe_worker.engine import Engine, EngineOptions

    cuda = device_name == "cuda"
    engine = Engine(EngineOptions(device=device_name, model_backend="troupe", generator="torch", compile_blocks=compiled))
    cfg = qwen_config(size)
    N = engine.load_model({"name": size, "init": {"config": cfg, "seed": 0}}, {})["parameters"]
    engine.add_policy({"id": "p", "model": size, "copy": False})
    V = cfg["vocab_size"]
    g = torch.Generator().manual_seed(0)
    P, C = seq // 2, seq - seq // 2
    payloads = {"tokens": torch.randint(2, V, (batch * seq,), generator=g, dtype=torch.int32),
                "prompt_lengths": torch.full((batch,), P, dtype=torch.int32), "completion_lengths": torch.full((batch,), C, dtype=torch.int32),
                "old_logprobs": torch.full((batch * C,), -12.0), "advantages": torch.randn(batch, generator=g)}
    step = {"policy": "p", "loss": {}, "optimizer": {"lr": 1e-6}, "microBatchSize": micro}
    t = time.perf_counter()
    engine.train_step(step, payloads)  # warm-up (and compilation)
    if cuda:
        torch.cuda.synchronize()
    warmup = time.perf_counter() - t
    t = time.perf_counter()
    for _ in range(steps):
        engine.train_step(step, payloads)
    if cuda:
        torch.cuda.synchronize()
    tps = steps * batch * seq / (time.perf_counter() - t)
    peak = measured_bf16_peak(torch.device("cuda")) if cuda else 0.0
    return {"size": size, "compiled": compiled, "parameters": N, "tokens_per_s": tps, "warmup_s": warmup,
            "measured_bf16_flops": peak, "mfu": 6 * N * tps / peak if peak else None}


# ---- the orchestrator ------------------------------------------------------------------------
class Table:
    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str]] = []

    def add(self, check: str, value: str, verdict: str) -> None:
        self.rows.append((check, value, verdict))
        print(f"[device-check] {check}: {value} — {verdict}", flush=True)

    def render(self) -> str:
        w0 = max(len("check"), *(len(r[0]) for r in self.rows))
        w1 = max(len("value"), *(len(r[1]) for r in self.rows))
        lines = [f"| {'check':<{w0}} | {'value':<{w1}} | verdict |", f"|{'-' * (w0 + 2)}|{'-' * (w1 + 2)}|---------|"]
        lines += [f"| {a:<{w0}} | {b:<{w1}} | {c} |" for a, b, c in self.rows]
        return "\n".join(lines)


def run_part(argv: list[str], timeout: float, cwd: Path = ROOT, env: "dict | None" = None) -> tuple[object, str]:
    """(the part's JSON result, or None; a one-line reason when it failed)."""
    try:
        out = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=max(1.0, timeout), env=env)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout:.0f} s"
    sys.stderr.write(out.stderr[-4000:])
    if out.returncode != 0:
        tail = (out.stderr.strip().splitlines() or out.stdout.strip().splitlines() or ["(no output)"])[-1]
        return None, f"exit {out.returncode}: {tail[:160]}"
    try:
        return json.loads(out.stdout.strip().splitlines()[-1]), ""
    except (json.JSONDecodeError, IndexError):
        return None, f"no JSON result: {out.stdout.strip()[-160:]!r}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=["gen", "learner"], help="(internal) run one part and print its JSON")
    ap.add_argument("--size", default="0.5b")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--prompt", type=int, default=128, help="prompt tokens per row (gen)")
    ap.add_argument("--new", type=int, default=128, help="new tokens per row (gen)")
    ap.add_argument("--modes", default="eager,graph", help="decode paths to compare, the reference first (gen)")
    ap.add_argument("--param-dtype", default="bfloat16", choices=["bfloat16", "float32"], help="weights on the device (gen)")
    ap.add_argument("--compiled", action="store_true", help="torch.compile the decoder blocks (learner)")
    ap.add_argument("--seq", type=int, default=1024, help="tokens per training sequence (learner)")
    ap.add_argument("--train-batch", type=int, default=16, help="sequences per train_step (learner)")
    ap.add_argument("--micro", type=int, default=8, help="micro-batch size (learner)")
    ap.add_argument("--steps", type=int, default=3, help="timed train steps (learner)")
    ap.add_argument("--device", default="cuda", help="cuda | cpu (children)")
    ap.add_argument("--budget", type=float, default=float(os.environ.get("DEVICE_CHECK_BUDGET_S", 420)),
                    help="seconds for every part together (default 420, env DEVICE_CHECK_BUDGET_S)")
    ap.add_argument("--cpu-smoke", action="store_true", help="tiny models on CPU, eager vs static: checks the plumbing only")
    ap.add_argument("--skip", default="", help="comma-separated parts to leave out: gen, pytest, learner, compiled, trainer")
    args = ap.parse_args()

    if args.part == "gen":
        print(json.dumps(part_gen(args.size, args.batch, args.prompt, args.new, args.modes.split(","), args.device, args.param_dtype)))
        return 0
    if args.part == "learner":
        print(json.dumps(part_learner(args.size, args.compiled, args.seq, args.train_batch, args.micro, args.steps, args.device)))
        return 0
    return orchestrate(args)


def orchestrate(args: argparse.Namespace) -> int:
    import torch

    start = time.monotonic()
    table = Table()
    py = sys.executable
    skip = set(filter(None, args.skip.split(",")))
    smoke = args.cpu_smoke
    if not smoke and not torch.cuda.is_available():
        print("device_check: CUDA is not available — run it on the GPU machine, or use --cpu-smoke here.", file=sys.stderr)
        return 2
    device = "cpu" if smoke else "cuda"
    name = "cpu (smoke)" if smoke else torch.cuda.get_device_name(0)
    bw, bw_note = (0.0, "cpu smoke: no roofline") if smoke else assumed_bandwidth(name)
    table.add("device", f"{name}, torch {torch.__version__}", "info")
    table.add("assumed HBM bandwidth", bw_note, "info")
    if not smoke:
        from bench import measured_bandwidth

        table.add("measured copy bandwidth", f"{measured_bandwidth(torch.device('cuda')) / 1e12:.2f} TB/s (2 GiB copy, read + write)", "info")
        torch.cuda.empty_cache()

    def left() -> float:
        return args.budget - (time.monotonic() - start)

    def part(label: str, argv: list[str], timeout: float, **kw: object) -> object:
        if left() < 10:
            table.add(label, f"skipped: {args.budget:.0f} s budget spent", "skip")
            return None
        result, why = run_part(argv, min(timeout, left()), **kw)  # type: ignore[arg-type]
        if result is None:
            table.add(label, why, "FAIL")
        return result

    # (size, batch, prompt, new, weights): bf16 weights as the targets; then fp32 masters +
    # autocast, what the trainer runs by default
    gen_runs = [("smoke", 4, 8, 8, "bfloat16")] if smoke else \
        [("0.5b", 64, 128, 128, "bfloat16"), ("0.5b", 256, 128, 128, "bfloat16"), ("0.5b", 64, 128, 128, "float32")]
    modes = "eager,static" if smoke else "eager,graph"
    if "gen" not in skip:
        for size, B, P, T, weights in gen_runs:
            if weights == "float32":
                size_label = f"{size} b{B} fp32+autocast"
            else:
                size_label = f"{size} b{B}"
            r = part(f"gen {size_label}", [py, __file__, "--part", "gen", "--size", size, "--batch", str(B), "--prompt", str(P),
                                           "--new", str(T), "--modes", modes, "--device", device, "--param-dtype", weights], 150)
            if not isinstance(r, dict):
                continue
            roofline = B * bw / r["bytes_per_step"] if bw else 0.0
            for mode in modes.split(","):
                tps = r[f"{mode}_tok_s"]
                frac = tps / roofline if roofline else None
                target = GEN_TARGET.get(B) if mode != "eager" and size == "0.5b" and weights == "bfloat16" else None
                verdict = "info" if frac is None or target is None else ("ok" if frac >= target else f"below {target:.0%}")
                value = f"{tps:,.0f} tok/s" + (f", {frac:.1%} of roofline {roofline:,.0f} tok/s" if frac is not None else "")
                table.add(f"gen {size_label} {mode}", value + f" (warm-up {r[f'{mode}_warmup_s']:.1f} s)", verdict)
            for mode in modes.split(",")[1:]:
                same = r[f"{mode}_identical_rows"]
                first = r.get(f"{mode}_first_difference")
                table.add(f"gen {size_label} {mode} = eager tokens", f"{same}/{B} rows identical" + (f", first difference {first}" if first else ""),
                          "ok" if same == B else "FAIL")

    learner_runs = [("smoke", False), ("smoke", True)] if smoke else [("0.5b", False), ("1.5b", False), ("0.5b", True), ("1.5b", True)]
    for size, compiled in learner_runs:
        if ("compiled" if compiled else "learner") in skip or "learner" in skip:
            continue
        label = f"learner {size}" + (" compiled" if compiled else "")
        if compiled and not hasattr(torch, "compile"):
            table.add(label, f"skipped: torch {torch.__version__} has no torch.compile", "skip")
            continue
        extra = ["--seq", "32", "--train-batch", "4", "--micro", "2", "--steps", "1"] if smoke else \
            ["--seq", str(args.seq), "--train-batch", str(args.train_batch), "--micro", str(args.micro), "--steps", str(args.steps)]
        r = part(label, [py, __file__, "--part", "learner", "--size", size, *(["--compiled"] if compiled else []), "--device", device, *extra],
                 200 if compiled else 120)
        if isinstance(r, dict):
            mfu = r["mfu"]
            value = f"{r['tokens_per_s']:,.0f} tok/s" + (f", MFU {mfu:.1%}" if mfu is not None else "") + f" (warm-up {r['warmup_s']:.1f} s)"
            table.add(label, value, "info" if mfu is None else ("ok" if mfu >= MFU_TARGET else f"below {MFU_TARGET:.0%}"))

    if "pytest" not in skip:
        if subprocess.run([py, "-c", "import pytest"], capture_output=True).returncode != 0:
            table.add("pytest test_static_decode.py", "skipped: pytest is not importable here", "skip")
        elif left() < 10:
            table.add("pytest test_static_decode.py", "skipped: budget spent", "skip")
        else:
            try:
                out = subprocess.run([py, "-m", "pytest", "tests/test_static_decode.py", "-rs", "-p", "no:cacheprovider"], cwd=ROOT,
                                     capture_output=True, text=True, timeout=min(300, left()))
                lines = out.stdout.strip().splitlines() or ["(no output)"]
                # the "N passed, M skipped in T s" line, else the last one
                summary = next((ln for ln in reversed(lines) if " passed" in ln or " failed" in ln or " error" in ln), lines[-1]).strip("= ")
                table.add("pytest test_static_decode.py", summary[:120], "ok" if out.returncode == 0 else "FAIL")
                if out.returncode != 0:
                    sys.stderr.write(out.stdout[-4000:])
            except subprocess.TimeoutExpired:
                table.add("pytest test_static_decode.py", "timed out", "FAIL")

    if "trainer" not in skip:
        trainer_row(table, left, smoke)

    took = time.monotonic() - start
    text = f"## device check ({name}, {took:.0f} s)\n\n" + table.render() + "\n"
    print("\n" + text, flush=True)
    out_dir = os.environ.get("OUT")
    if out_dir:
        Path(out_dir, "device-check.md").write_text(text)
        Path(out_dir, "device-check.json").write_text(json.dumps({"device": name, "seconds": took, "rows": table.rows}, indent=1))
    return 1 if any(r[2] == "FAIL" for r in table.rows) else 0


def trainer_row(table: Table, left: "object", smoke: bool) -> None:
    """The default recipe with engine.kind torch on CUDA for 2 RL steps (no warm start, 50 eval
    tasks): what `nx run trainer:train` does, when this machine has node and node_modules."""
    label = "trainer default recipe (torch, cuda, 2 steps)"
    node, tsx = shutil.which("node"), REPO / "node_modules" / ".bin" / "tsx"
    if node is None:
        table.add(label, "skipped: no node on this machine (the trainer is Node; see docs/gpu.md)", "skip")
        return
    if not tsx.exists():
        table.add(label, "skipped: no node_modules (run npm ci first; see docs/gpu.md)", "skip")
        return
    if smoke:
        table.add(label, "skipped: --cpu-smoke", "skip")
        return
    remaining = left()  # type: ignore[operator]
    if remaining < 30:
        table.add(label, "skipped: budget spent", "skip")
        return
    sets = ["engine.kind=torch", "engine.device=cuda", f"engine.python={sys.executable}", "sft.steps=0", "train.steps=2",
            "train.evalEvery=0", "train.evalTasks=50"]
    argv = ["npx", "nx", "run", "trainer:train", "--", "--recipe", "default"] + [a for s in sets for a in ("--set", s)]
    t = time.monotonic()
    try:
        out = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=min(240, remaining))
    except subprocess.TimeoutExpired:
        table.add(label, f"timed out after {min(240, remaining):.0f} s", "FAIL")
        return
    tail = (out.stdout.strip().splitlines() or ["(no output)"])[-1][:120]
    sys.stderr.write(out.stdout[-3000:] + out.stderr[-3000:])
    table.add(label, f"{time.monotonic() - t:.0f} s, exit {out.returncode}: {tail}", "ok" if out.returncode == 0 else "FAIL")


if __name__ == "__main__":
    sys.exit(main())
