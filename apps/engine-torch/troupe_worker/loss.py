"""The PPO-clip policy-gradient loss of libs/engine/src/loss.ts, on tensors. Same equations, same names:

    r    = exp(ℓ − ℓ_old)
    L^pg = max(−A·r, −A·clip(r, 1−ε_low, 1+ε_high));   dual-clip where A < 0: min(L^pg, −A·c)
    k3   = exp(δ) − δ − 1,  δ = ℓ_ref − ℓ
    L    = L^pg + β_KL·k3 − β_H·H − β_NLL·ℓ

Aggregation weights w (token-mean, sequence-mean, sequence-sum) are computed over the WHOLE batch
before it is cut into micro-batches, so that Σ over micro-batches of Σ w·L is exactly the batch
loss and accumulated gradients equal the full-batch gradient.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

AGGREGATIONS = ("token-mean", "sequence-mean", "sequence-sum")


@dataclass(frozen=True)
class LossConfig:
    clip_low: float = 0.2
    clip_high: float = 0.2
    dual_clip: Optional[float] = None
    kl_coef: float = 0.0
    entropy_coef: float = 0.0
    nll_coef: float = 0.0
    aggregation: str = "token-mean"

    @staticmethod
    def from_json(raw: dict) -> "LossConfig":
        """The TS PolicyLossConfig (camelCase) → LossConfig."""
        agg = raw.get("aggregation", "token-mean")
        if agg not in AGGREGATIONS:
            raise ValueError(f"loss.aggregation: {agg!r} is not one of {AGGREGATIONS}")
        dual = raw.get("dualClip")
        if dual is not None and not dual > 1:
            raise ValueError(f"loss.dualClip: must be > 1, got {dual}")
        return LossConfig(
            clip_low=float(raw.get("clipLow", 0.2)),
            clip_high=float(raw.get("clipHigh", 0.2)),
            dual_clip=None if dual is None else float(dual),
            kl_coef=float(raw.get("klCoef", 0.0)),
            entropy_coef=float(raw.get("entropyCoef", 0.0)),
            nll_coef=float(raw.get("nllCoef") or 0.0),
            aggregation=agg,
        )


def aggregation_weights(mask: torch.Tensor, aggregation: str) -> torch.Tensor:
    """w [B, T] with loss = Σ w·L; mask [B, T] of 0/1. Sequences with no token are left out."""
    mask = mask.float()
    per_seq = mask.sum(dim=1, keepdim=True)
    live = (per_seq > 0).sum().clamp(min=1)
    if aggregation == "token-mean":
        return mask / mask.sum().clamp(min=1)
    if aggregation == "sequence-mean":
        return mask / per_seq.clamp(min=1) / live
    if aggregation == "sequence-sum":
        return mask / live
    raise ValueError(f"unknown aggregation {aggregation!r}")


@dataclass
class TokenLoss:
    """Per-token terms [B, T] (zero where masked out is the caller's business, via the weights)."""

    loss: torch.Tensor
    pg: torch.Tensor
    kl: torch.Tensor
    clipped: torch.Tensor


def token_loss(logprobs: torch.Tensor, old_logprobs: torch.Tensor, advantages: torch.Tensor, config: LossConfig,
               ref_logprobs: Optional[torch.Tensor] = None, entropies: Optional[torch.Tensor] = None) -> TokenLoss:
    """tokenLoss of loss.ts, elementwise. advantages broadcast against logprobs ([B, 1] or [B, T])."""
    ratio = torch.exp(logprobs - old_logprobs)
    unclipped = -advantages * ratio
    clipped_loss = -advantages * torch.clamp(ratio, 1 - config.clip_low, 1 + config.clip_high)
    use_clipped = clipped_loss > unclipped  # the flat, clipped branch is active (ties: unclipped, as loss.ts)
    pg = torch.where(use_clipped, clipped_loss, unclipped)
    clipped = use_clipped
    if config.dual_clip is not None:
        bound = -advantages * config.dual_clip
        dual = (advantages < 0) & (bound < pg)
        pg = torch.where(dual, bound.expand_as(pg), pg)
        clipped = clipped | dual
    kl = torch.zeros_like(pg)
    if config.kl_coef != 0 and ref_logprobs is not None:
        delta = ref_logprobs - logprobs
        kl = torch.exp(delta) - delta - 1
    loss = pg + config.kl_coef * kl
    if config.entropy_coef != 0 and entropies is not None:
        loss = loss - config.entropy_coef * entropies
    if config.nll_coef != 0:
        loss = loss - config.nll_coef * logprobs
    return TokenLoss(loss=loss, pg=pg, kl=kl, clipped=clipped)


def policy_loss(logprobs: torch.Tensor, old_logprobs: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
                config: LossConfig, ref_logprobs: Optional[torch.Tensor] = None,
                entropies: Optional[torch.Tensor] = None, weights: Optional[torch.Tensor] = None) -> dict[str, torch.Tensor]:
    """policyLoss of loss.ts on [B, T] tensors. `weights` defaults to this batch's aggregation weights;
    pass the full batch's weights for a micro-batch. Returns loss (differentiable) and the metrics'
    sums: pg, kl, entropy (weighted), clipped and old_minus_new (token sums), tokens."""
    if weights is None:
        weights = aggregation_weights(mask, config.aggregation)
    terms = token_loss(logprobs, old_logprobs, advantages, config, ref_logprobs, entropies)
    live = mask.bool()
    return {
        "loss": (weights * terms.loss).sum(),
        "pg": (weights * terms.pg).sum().detach(),
        "kl": (weights * terms.kl).sum().detach(),
        "entropy": (weights * entropies).sum().detach() if entropies is not None else torch.zeros(()),
        "clipped": (terms.clipped & live).sum().detach(),
        "old_minus_new": ((old_logprobs - logprobs) * mask).sum().detach(),
        "tokens": mask.sum().detach(),
    }
