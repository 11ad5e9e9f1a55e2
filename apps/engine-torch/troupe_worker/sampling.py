"""Next-token sampling, batched, with the semantics of libs/engine/src/sampler.ts:

    1. p = softmax(z / T)
    2. top-k (k > 0): keep the k most probable tokens (ties: lower id first)
    3. top-p (p < 1): of those, renormalised, keep the shortest prefix whose mass reaches p
    4. q = p / Σ_kept p; draw with ONE uniform u per row by inverse CDF over the kept tokens
       (most probable first); the returned log-prob is log q(token)
    T = 0 is greedy (argmax) with log-prob 0.
    Ids ≥ usable_vocab (the rows a model's embedding has beyond its tokenizer: Qwen pads 151 665
    tokens to 151 936, the tiny models 259 to 512) are never drawn: their logits are −∞ before
    step 1, as in libs/engine-onnx/src/runtime/generate.ts.

Each request has its own torch.Generator seeded with its seed, and draws exactly one uniform per
generated token, so a request's completion depends on its seed alone, not on the rest of the batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class SamplingConfig:
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    max_tokens: int = 256
    stop_token_ids: tuple[int, ...] = ()
    #: tokens [0, usable_vocab) may be sampled; 0 = every id of the model
    usable_vocab: int = 0

    @staticmethod
    def from_json(raw: dict) -> "SamplingConfig":
        """The TS SamplingParams (camelCase) → SamplingConfig, checked."""
        t = float(raw.get("temperature", 1.0))
        p = float(raw.get("topP", 1.0))
        k = int(raw.get("topK", 0))
        m = int(raw.get("maxTokens", 256))
        if not t >= 0:
            raise ValueError(f"sampling.temperature: must be ≥ 0, got {t}")
        if not 0 < p <= 1:
            raise ValueError(f"sampling.topP: must be in (0, 1], got {p}")
        if k < 0:
            raise ValueError(f"sampling.topK: must be ≥ 0, got {k}")
        if m < 1:
            raise ValueError(f"sampling.maxTokens: must be ≥ 1, got {m}")
        stops = tuple(int(s) for s in raw.get("stopTokenIds", []))
        usable = int(raw.get("usableVocab", 0))
        if usable < 0:
            raise ValueError(f"sampling.usableVocab: must be ≥ 0, got {usable}")
        return SamplingConfig(temperature=t, top_p=p, top_k=k, max_tokens=m, stop_token_ids=stops, usable_vocab=usable)


def request_generators(seeds: list[int]) -> list[torch.Generator]:
    """One CPU generator per request (uniforms are drawn on the CPU, so results do not depend on the device)."""
    gens = []
    for s in seeds:
        g = torch.Generator()
        g.manual_seed(int(s) & 0xFFFF_FFFF_FFFF_FFFF)
        gens.append(g)
    return gens


def draw_uniforms(generators: list[torch.Generator]) -> torch.Tensor:
    """One U[0, 1) per request: [B] float64."""
    return torch.cat([torch.rand(1, generator=g, dtype=torch.float64) for g in generators])


def usable_logits(logits: torch.Tensor, config: SamplingConfig) -> torch.Tensor:
    """The logits with ids ≥ usable_vocab set to −∞ (a copy when anything is masked)."""
    if 0 < config.usable_vocab < logits.shape[-1]:
        logits = logits.clone()
        logits[..., config.usable_vocab :] = float("-inf")
    return logits


def sampling_distribution(logits: torch.Tensor, config: SamplingConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids [B, V] most probable first, q [B, V] float64, zero outside the kept set)."""
    logits = usable_logits(logits, config).float()
    V = logits.shape[-1]
    # Descending by probability. log-softmax(z/T) is increasing in z, so sorting the float32 logits
    # gives the order of the float64 probabilities without a float64 sort of the vocabulary; the
    # stable sort of −z keeps lower ids first among ties.
    order = torch.sort(-logits, dim=-1, stable=True).indices
    p = torch.softmax(logits.gather(-1, order).double() / config.temperature, dim=-1)
    rank = torch.arange(V, device=logits.device)
    keep = torch.ones_like(p, dtype=torch.bool)
    if 0 < config.top_k < V:
        keep &= rank < config.top_k
    if config.top_p < 1:
        kept_p = p * keep
        cumulative = kept_p.cumsum(-1) / kept_p.sum(-1, keepdim=True)
        # keep rank r iff the mass before r is still below top_p (always keeps rank 0)
        before = cumulative - kept_p / kept_p.sum(-1, keepdim=True)
        keep &= before < config.top_p
    q = p * keep
    q = q / q.sum(-1, keepdim=True)
    return order, q


def sample(logits: torch.Tensor, config: SamplingConfig, uniforms: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """logits [B, V], uniforms [B] → (token ids [B] int64, log q [B] float64)."""
    if config.temperature == 0:
        return usable_logits(logits, config).argmax(-1), torch.zeros(logits.shape[0], dtype=torch.float64, device=logits.device)
    ids, q = sampling_distribution(logits, config)
    cdf = q.cumsum(-1)
    u = uniforms.to(device=q.device, dtype=q.dtype)[:, None]
    # first rank whose cumulative mass exceeds u (sampler.ts: u −= q_r until u < 0)
    pick = (cdf <= u).sum(-1, keepdim=True).clamp(max=q.shape[-1] - 1)
    # rounding leftovers (u ≥ Σq by ~1e-16) fall back to the last kept rank
    last_kept = (q > 0).sum(-1, keepdim=True) - 1
    pick = torch.minimum(pick, last_kept)
    token = ids.gather(-1, pick).squeeze(-1)
    return token, q.gather(-1, pick).squeeze(-1).log()
