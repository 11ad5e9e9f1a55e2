"""Batched generation with a KV cache. Two back ends, picked by `generator_backend`:

- `torch`: the plain loop below — left-padded prefill, then one token per step reusing the cache.
  Works with troupe_worker.qwen and with transformers models alike (the cache is passed back as
  the model returned it). The fallback when transformers is missing.
  For the in-house model, EngineOptions.decode picks static_decode.py instead (a static KV cache and
  a fixed-shape decode step, optionally replayed as a CUDA graph); this loop stays the reference.
- `hf`: transformers' `model.generate`, with sampling done by `SeededSampler` (a logits processor
  that draws from each request's own generator and forces that token), so seeds and log-probs keep
  the semantics of sampling.py.
Rollouts at inference-server speed come from a vLLM or SGLang server paired with this worker's
learner (the trainer's `engine.rollouts`), not from an engine inside the worker.

Every back end returns, per request, the completion token ids (a stop token included), the log-prob
of each under the sampling distribution, and whether it stopped on a stop token or ran to max_tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .qwen import KVCache, QwenForCausalLM
from .sampling import SamplingConfig, draw_uniforms, request_generators, sample


@dataclass
class Generated:
    token_ids: list[int]
    logprobs: list[float]
    finish_reason: str  # "stop" | "length"


def left_pad(prompts: list[list[int]], pad_id: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """ids [B, T] and attention mask [B, T] (0 on the left padding)."""
    if any(len(p) == 0 for p in prompts):
        raise ValueError("generate: every prompt needs at least one token")
    T = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), T), pad_id, dtype=torch.long)
    mask = torch.zeros((len(prompts), T), dtype=torch.long)
    for b, p in enumerate(prompts):
        ids[b, T - len(p) :] = torch.tensor(p, dtype=torch.long)
        mask[b, T - len(p) :] = 1
    return ids.to(device), mask.to(device)


class DecodeOutputs:
    """What a batched decode loop sampled, step by step: rows already done get `pad_id` and log-prob
    0; a live row that samples a stop token is done from then on. Shared by the eager loop and the
    static-cache loop (static_decode.py), so both stop and pad alike."""

    def __init__(self, batch: int, max_tokens: int, stop_token_ids: list[int], pad_id: int, device: torch.device) -> None:
        self.stops = torch.tensor(sorted(set(stop_token_ids)) or [-1], device=device)
        self.pad_id = pad_id
        self.tokens = torch.zeros((batch, max_tokens), dtype=torch.long, device=device)
        self.logprobs = torch.zeros((batch, max_tokens), dtype=torch.float64, device=device)
        self.lengths = torch.zeros(batch, dtype=torch.long, device=device)
        self.done = torch.zeros(batch, dtype=torch.bool, device=device)
        self.stopped = torch.zeros(batch, dtype=torch.bool, device=device)

    @torch.no_grad()
    def record(self, step: int, token: torch.Tensor, logprob: torch.Tensor) -> None:
        """Writes one decode step's sampled tokens [B], in place."""
        live = ~self.done
        self.tokens[:, step] = torch.where(live, token, torch.full_like(token, self.pad_id))
        self.logprobs[:, step] = torch.where(live, logprob, torch.zeros_like(logprob))
        self.lengths += live.long()
        hit = live & (token[:, None] == self.stops[None, :]).any(-1)
        self.stopped |= hit
        self.done |= hit

    def results(self) -> list[Generated]:
        """Each row's tokens and log-probs up to its length, and why it ended (one host sync)."""
        lengths, tokens, logprobs = self.lengths.tolist(), self.tokens.tolist(), self.logprobs.tolist()
        stopped = self.stopped.tolist()
        return [
            Generated(tokens[b][: lengths[b]], logprobs[b][: lengths[b]], "stop" if stopped[b] else "length")
            for b in range(len(lengths))
        ]


@torch.no_grad()
def torch_generate(model: nn.Module, prompts: list[list[int]], seeds: list[int], config: SamplingConfig,
                   pad_id: int, device: torch.device, autocast_dtype: "torch.dtype | None" = None) -> list[Generated]:
    """The plain KV-cache sampling loop. Positions count real tokens only (cumsum of the mask − 1),
    so a left-padded prompt sees the same positions as it would alone. The in-house model gets a
    preallocated KVCache written in place; the attention mask is allocated once for every step."""
    B = len(prompts)
    generators = request_generators(seeds)
    ids, prompt_mask = left_pad(prompts, pad_id, device)
    P = ids.shape[1]
    full_mask = torch.ones((B, P + config.max_tokens), dtype=prompt_mask.dtype, device=device)
    full_mask[:, :P] = prompt_mask
    mask = prompt_mask
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    outputs = DecodeOutputs(B, config.max_tokens, config.stop_token_ids, pad_id, device)
    cache = None
    if isinstance(model, QwenForCausalLM):
        dtype = autocast_dtype if autocast_dtype is not None and device.type == "cuda" else next(model.parameters()).dtype
        cache = KVCache(model.config, B, P + config.max_tokens, device, dtype)
    step_ids, step_pos = ids, positions
    autocast = torch.autocast("cuda", dtype=autocast_dtype) if autocast_dtype is not None and device.type == "cuda" else _null()
    for step in range(config.max_tokens):
        with autocast:
            out = model(step_ids, attention_mask=mask, position_ids=step_pos, past_key_values=cache, use_cache=True)
        cache = out.past_key_values
        logits = out.logits[:, -1, :].float()
        token, logprob = sample(logits, config, draw_uniforms(generators))
        outputs.record(step, token, logprob)
        if bool(outputs.done.all()):
            break
        step_ids = token[:, None]
        step_pos = step_pos[:, -1:] + 1
        mask = full_mask[:, : P + step + 1]
    return outputs.results()


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


class SeededSampler:
    """A transformers LogitsProcessor that samples each row with its request's generator (sampling.py
    semantics) and returns scores that make greedy decoding pick that token. Log-probs are recorded
    per step; rows that already finished keep drawing (their draws are discarded with their tokens)."""

    def __init__(self, seeds: list[int], config: SamplingConfig) -> None:
        self.generators = request_generators(seeds)
        self.config = config
        self.tokens: list[torch.Tensor] = []
        self.logprobs: list[torch.Tensor] = []

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        token, logprob = sample(scores.float(), self.config, draw_uniforms(self.generators))
        self.tokens.append(token)
        self.logprobs.append(logprob)
        forced = torch.full_like(scores, float("-inf"))
        forced.scatter_(-1, token[:, None], 0.0)
        return forced


@torch.no_grad()
def hf_generate(model: nn.Module, prompts: list[list[int]], seeds: list[int], config: SamplingConfig,
                pad_id: int, device: torch.device, autocast_dtype: "torch.dtype | None" = None) -> list[Generated]:
    """transformers' generate (its own KV cache and kernels) with SeededSampler doing the sampling;
    under bf16 autocast on CUDA when the weights are float32 (as the learner's forward passes)."""
    from transformers import LogitsProcessorList  # guarded: only called when transformers is importable

    ids, mask = left_pad(prompts, pad_id, device)
    sampler = SeededSampler(seeds, config)
    stops = sorted(set(config.stop_token_ids))
    autocast = torch.autocast("cuda", dtype=autocast_dtype) if autocast_dtype is not None and device.type == "cuda" else _null()
    with autocast:
        out = model.generate(
            input_ids=ids, attention_mask=mask, do_sample=False, max_new_tokens=config.max_tokens,
            logits_processor=LogitsProcessorList([sampler]), eos_token_id=stops or None, pad_token_id=pad_id,
            temperature=None, top_p=None, top_k=None,
        )
    new = out[:, ids.shape[1] :].tolist()
    steps_lp = torch.stack(sampler.logprobs, dim=1).tolist() if sampler.logprobs else [[] for _ in prompts]
    results = []
    stop_set = set(stops)
    for b in range(len(prompts)):
        tokens: list[int] = []
        finish = "length"
        for t in new[b][: config.max_tokens]:
            tokens.append(t)
            if t in stop_set:
                finish = "stop"
                break
        results.append(Generated(tokens, steps_lp[b][: len(tokens)], finish))
    return results
