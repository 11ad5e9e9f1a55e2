"""The GPU checks of the worker, on random-init models (no hub access needed), printed as a table.

    bash scripts/python.sh bench/gpu_checks.py            # every check (needs CUDA, transformers, peft)
    bash scripts/python.sh bench/gpu_checks.py --only parity,lora,peft

Checks:
- parity: the in-house Qwen (troupe_worker.qwen) against transformers' Qwen2/Qwen3ForCausalLM with
  the same weights, in bf16 on the GPU: max |Δ logits| and max |Δ log-prob| of the sampled tokens
  (tolerance: bf16 — 5e-2 on log-probs), and the worker's chunked log-probs against a plain
  log_softmax of transformers' logits;
- lora: a LoRA train step on a transformers model with gradient checkpointing changes the adapter
  (‖ΔB‖ > 0) and leaves the base untouched;
- peft: the adapter saved by the worker, loaded with peft.PeftModel.from_pretrained on the same
  base, gives the same logits as the worker (bf16 tolerance); the merged export loads with
  AutoModelForCausalLM.from_pretrained and gives them too;
- bench: bench.py's generation throughput of each generator (torch, hf) at batch 64 and learner
  tokens/s + MFU for the 0.5B and 1.5B Qwen2-shaped models (run as subprocesses, JSON rows).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from troupe_worker.engine import Engine, EngineOptions  # noqa: E402

SMALL = {"vocab_size": 4096, "hidden_size": 512, "intermediate_size": 1408, "num_hidden_layers": 4, "num_attention_heads": 8,
         "num_key_value_heads": 2, "rms_norm_eps": 1e-6, "rope_theta": 1e6, "max_position_embeddings": 4096,
         "eos_token_id": 1, "pad_token_id": 0, "tie_word_embeddings": True}
ROWS: list[tuple[str, str, str]] = []


def row(check: str, value: str, verdict: bool | str) -> None:
    mark = verdict if isinstance(verdict, str) else ("ok" if verdict else "FAIL")
    ROWS.append((check, value, mark))
    print(f"{check:<48} {value:<40} {mark}", flush=True)


def engine(backend: str, **kw: object) -> Engine:
    return Engine(EngineOptions(device="cuda", model_backend=backend, generator="hf" if backend == "transformers" else "torch", **kw))  # type: ignore[arg-type]


def batch(V: int, B: int = 4, P: int = 24, C: int = 40, seed: int = 0) -> dict:
    g = torch.Generator().manual_seed(seed)
    return {"tokens": torch.randint(2, V, (B * (P + C),), generator=g, dtype=torch.int32),
            "prompt_lengths": torch.full((B,), P, dtype=torch.int32), "completion_lengths": torch.full((B,), C, dtype=torch.int32),
            "old_logprobs": torch.full((B * C,), -8.0), "advantages": torch.linspace(-1, 1, B)}


def check_parity() -> None:
    for model_type in ("qwen2", "qwen3"):
        cfg = {**SMALL, "model_type": model_type, **({"head_dim": 64} if model_type == "qwen3" else {})}
        hf = engine("transformers", param_dtype="bfloat16")
        hf.load_model({"name": "m", "init": {"config": cfg, "seed": 0}}, {})
        hf.add_policy({"id": "p", "model": "m", "copy": False})
        ours = engine("troupe", param_dtype="bfloat16")
        ours.load_model({"name": "m", "init": {"config": cfg, "seed": 1}}, {})
        ours.add_policy({"id": "p", "model": "m", "copy": False})
        with torch.no_grad():
            ours.policy("p").module.load_state_dict(hf.policy("p").module.state_dict())
        p = batch(cfg["vocab_size"])
        ids = p["tokens"].view(4, -1).long().cuda()
        with torch.no_grad():
            a = hf.policy("p").module(ids).logits.float()
            b = ours.policy("p").module(ids).logits.float()
        dl = (a - b).abs().max().item()
        lp_hf = hf.logprobs({"policy": "p"}, p)[1]["logprobs"]
        lp_ours = ours.logprobs({"policy": "p"}, p)[1]["logprobs"]
        dlp = (lp_hf - lp_ours).abs().max().item()
        row(f"parity {model_type}: logits (bf16)", f"max |Δ| {dl:.3g}", dl < 0.1)
        row(f"parity {model_type}: log-probs (bf16)", f"max |Δ| {dlp:.3g}", dlp < 5e-2)
        # chunked log-probs vs one log_softmax over transformers' logits
        full = torch.log_softmax(a[:, :-1], -1).gather(-1, ids[:, 1:, None]).squeeze(-1)[:, 23:].reshape(-1).cpu()
        dc = (full - lp_hf).abs().max().item()
        row(f"parity {model_type}: chunked vs full log-softmax", f"max |Δ| {dc:.3g}", dc < 5e-2)


def check_lora_and_peft() -> None:
    cfg = {**SMALL, "model_type": "qwen3", "head_dim": 64}
    e = engine("transformers", gradient_checkpointing=True)
    e.load_model({"name": "m", "init": {"config": cfg, "seed": 0}}, {})
    e.add_policy({"id": "a", "model": "m", "lora": {"r": 8}, "seed": 1})
    base_before = {k: v.clone() for k, v in e.models["m"].module.state_dict().items()}
    adapter = e.policy("a").adapter
    p = batch(cfg["vocab_size"])
    e.train_step({"policy": "a", "loss": {}, "optimizer": {"lr": 1e-3}, "microBatchSize": 2}, p)
    moved = sum(v.abs().sum().item() for v in adapter.lora_B.values())
    base_same = all(torch.equal(v, e.models["m"].module.state_dict()[k]) for k, v in base_before.items())
    row("lora: train step with checkpointing moves B", f"Σ|B| {moved:.3g}", moved > 0)
    row("lora: base weights untouched", str(base_same), base_same)
    try:
        import peft
        import transformers
    except ImportError as err:
        row("peft: save → PeftModel.from_pretrained", f"skipped ({err})", "skip")
        return
    with tempfile.TemporaryDirectory() as d:
        e.save({"policy": "a", "dir": f"{d}/adapter"})
        e.export({"policy": "a", "dir": f"{d}/merged", "dtype": "F32"})
        base_dir = f"{d}/base"
        e.models["m"].module.save_pretrained(base_dir)
        ids = p["tokens"].view(4, -1).long().cuda()
        with torch.no_grad(), e.policy("a").active():
            ours = e.policy("a").module(ids).logits.float()
            base = transformers.AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32).cuda()
            theirs = peft.PeftModel.from_pretrained(base, f"{d}/adapter").eval()(ids).logits.float()
            merged = transformers.AutoModelForCausalLM.from_pretrained(f"{d}/merged", dtype=torch.float32).cuda().eval()(ids).logits.float()
        d1, d2 = (ours - theirs).abs().max().item(), (ours - merged).abs().max().item()
        row("peft: save → PeftModel.from_pretrained logits", f"max |Δ| {d1:.3g}", d1 < 5e-2)
        row("export: merged → AutoModelForCausalLM logits", f"max |Δ| {d2:.3g}", d2 < 5e-2)


def check_bench() -> None:
    for generator in ("torch", "hf"):
        backend = "troupe" if generator == "torch" else "transformers"
        out = subprocess.run([sys.executable, "bench/bench.py", "--sizes", "0.5b,1.5b", "--generator", generator,
                              "--model-backend", backend, "--gen-batch", "64"], cwd=ROOT, capture_output=True, text=True, check=False)
        if out.returncode != 0:
            row(f"bench ({generator})", f"exit {out.returncode}: {out.stderr.strip().splitlines()[-1:]}", False)
            continue
        for line in out.stdout.strip().splitlines():
            r = json.loads(line)
            if "size" not in r:
                row("device", f"{r['device']}, {r['measured_bf16_tflops']:.0f} TFLOP/s bf16", "info")
                continue
            row(f"generate {r['size']} ({generator}, batch {r['gen_batch']})",
                f"{r['gen_tokens_per_s']:.0f} tok/s ({r['gen_fraction_of_bound']:.0%} of HBM bound)", "info")
            if generator == "torch":
                row(f"learner {r['size']} ({backend})", f"{r['learner_tokens_per_s']:.0f} tok/s, MFU {r['mfu']:.0%}",
                    r["mfu"] >= 0.45 or "below 45%")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="parity,lora,bench", help="comma-separated: parity, lora (includes peft), bench")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("gpu_checks: CUDA is not available — these checks run on a GPU machine.", file=sys.stderr)
        return 2
    try:
        import transformers  # noqa: F401
    except ImportError:
        print("gpu_checks: transformers is not importable (pip install 'transformers>=4.56' peft safetensors accelerate)", file=sys.stderr)
        return 2
    only = set(args.only.split(","))
    print(f"{'check':<48} {'value':<40} verdict")
    if "parity" in only:
        check_parity()
    if "lora" in only:
        check_lora_and_peft()
    if "bench" in only:
        check_bench()
    failed = [r for r in ROWS if r[2] == "FAIL"]
    print(f"\n{len(ROWS)} rows, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
