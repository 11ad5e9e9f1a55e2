"""Generation with vLLM (`--generator vllm`), in the worker's process, next to the training model.

!!! GPU-ONLY CODE PATH: vLLM is not installable on the CPU CI image, so nothing here runs in the
test suite. Keep it small.

- One `vllm.LLM` per policy, built from the policy's export (LoRA merged) in a temporary folder;
  after an optimizer step the new weights are pushed in place with the model's `load_weights`
  (vLLM's own HF-name loader) — or, if this vLLM version hides the model, the LLM is rebuilt.
- Per-request seeds: vLLM's `SamplingParams(seed=...)` (reproducible per request, not bit-equal to
  the torch sampler's draws).
- Log-probs: vLLM reports the raw model distribution's log-probs; the engine's contract is log q
  under the sampling distribution (temperature / top-k / top-p applied), so they are recomputed
  with one scoring forward of the training model (`sampling_logprobs`).
- GPU memory share: TROUPE_VLLM_GPU_MEMORY (default 0.3); the rest is left to training.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

import torch

from .generate import Generated
from .sampling import SamplingConfig, sampling_distribution

_LLMS: dict[str, dict[str, Any]] = {}


def _build(engine: Any, policy: Any) -> Any:
    import vllm

    folder = tempfile.mkdtemp(prefix=f"troupe-vllm-{policy.id}-")
    for name, data in engine.export({"policy": policy.id, "dtype": "BF16"}).items():
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
    return vllm.LLM(model=folder, dtype="bfloat16", gpu_memory_utilization=float(os.environ.get("TROUPE_VLLM_GPU_MEMORY", "0.3")),
                    enable_prefix_caching=True, seed=0)


def _push_weights(engine: Any, policy: Any, llm: Any) -> bool:
    """In-place weight update; False when this vLLM version does not expose the model (then rebuild)."""
    from .safetensors_io import load_bytes

    try:
        model = llm.llm_engine.model_executor.driver_worker.model_runner.model
    except AttributeError:
        return False
    tensors, _ = load_bytes(engine.export({"policy": policy.id, "dtype": "BF16"})["model.safetensors"])
    model.load_weights(((k, v.to("cuda")) for k, v in tensors.items()))
    return True


def sampling_logprobs(engine: Any, policy: Any, prompts: list[list[int]], completions: list[list[int]], config: SamplingConfig) -> list[list[float]]:
    """log q(token) under the warped distribution, for tokens sampled elsewhere."""
    out = []
    with torch.no_grad(), policy.active(), engine.autocast():
        for p, c in zip(prompts, completions):
            if not c:
                out.append([])
                continue
            if config.temperature == 0:
                out.append([0.0] * len(c))
                continue
            ids = torch.tensor([p + c], device=engine.device)
            logits = policy.module(ids[:, :-1]).logits[0, len(p) - 1 :].float()
            order, q = sampling_distribution(logits, config)
            rank = (order == torch.tensor(c, device=order.device)[:, None]).float().argmax(-1, keepdim=True)
            out.append(q.gather(-1, rank).squeeze(-1).log().tolist())
    return out


def vllm_generate(engine: Any, policy: Any, prompts: list[list[int]], seeds: list[int], config: SamplingConfig) -> list[Generated]:
    import vllm

    entry = _LLMS.get(policy.id)
    if entry is None:
        entry = _LLMS[policy.id] = {"llm": _build(engine, policy), "step": policy.step}
    elif entry["step"] != policy.step:
        if not _push_weights(engine, policy, entry["llm"]):
            entry["llm"] = _build(engine, policy)
        entry["step"] = policy.step
    params = [
        vllm.SamplingParams(temperature=config.temperature, top_p=config.top_p, top_k=config.top_k or -1, max_tokens=config.max_tokens,
                            stop_token_ids=list(config.stop_token_ids), seed=int(s) & 0x7FFF_FFFF, detokenize=False)
        for s in seeds
    ]
    outputs = entry["llm"].generate([{"prompt_token_ids": p} for p in prompts], params, use_tqdm=False)
    completions = [list(o.outputs[0].token_ids) for o in outputs]
    logprobs = sampling_logprobs(engine, policy, prompts, completions, config)
    stops = set(config.stop_token_ids)
    return [Generated(c, lp, "stop" if c and c[-1] in stops else "length") for c, lp in zip(completions, logprobs)]
