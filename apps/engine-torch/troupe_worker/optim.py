"""AdamW, the learning-rate schedule and gradient clipping, with the conventions of
libs/engine/src/optimizer.ts (so the same config gives the same update in both engines):

- decay rule: tensors with ≥ 2 dimensions are decayed (embeddings, linear weights, LoRA A/B); norm
  weights and biases are not;
- schedule, for the 0-based index `step` of the update:
    warm-up (step < W): lr · (step + 1) / W
    then, progress π = min(1, (step − W) / max(1, S − W)), floor r = minLrRatio:
      constant: lr;  linear: lr·(r + (1−r)(1−π));  cosine: lr·(r + (1−r)·½(1 + cos πp))
- clipping: torch's clip_grad_norm_ (coef = max / (‖g‖ + 1e-6), applied when < 1); max ≤ 0 only
  measures; a non-finite norm skips the update.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

SCHEDULES = ("constant", "cosine", "linear")


@dataclass(frozen=True)
class OptimizerConfig:
    lr: float = 1e-5
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    warmup_steps: int = 0
    schedule: str = "constant"
    total_steps: int = 1
    min_lr_ratio: float = 0.0

    @staticmethod
    def from_json(raw: dict) -> "OptimizerConfig":
        c = OptimizerConfig(
            lr=float(raw.get("lr", 1e-5)), beta1=float(raw.get("beta1", 0.9)), beta2=float(raw.get("beta2", 0.999)),
            eps=float(raw.get("eps", 1e-8)), weight_decay=float(raw.get("weightDecay", 0.01)),
            max_grad_norm=float(raw.get("maxGradNorm", 1.0)), warmup_steps=int(raw.get("warmupSteps", 0)),
            schedule=str(raw.get("schedule", "constant")), total_steps=int(raw.get("totalSteps", 1)),
            min_lr_ratio=float(raw.get("minLrRatio", 0.0)),
        )
        if c.schedule not in SCHEDULES:
            raise ValueError(f"optimizer.schedule: {c.schedule!r} is not one of {SCHEDULES}")
        if not c.lr >= 0:
            raise ValueError(f"optimizer.lr: must be ≥ 0, got {c.lr}")
        return c


def learning_rate(step: int, c: OptimizerConfig) -> float:
    if step < c.warmup_steps:
        return c.lr * (step + 1) / c.warmup_steps
    if c.schedule == "constant":
        return c.lr
    progress = min(1.0, (step - c.warmup_steps) / max(1, c.total_steps - c.warmup_steps))
    shape = 1 - progress if c.schedule == "linear" else 0.5 * (1 + math.cos(math.pi * progress))
    return c.lr * (c.min_lr_ratio + (1 - c.min_lr_ratio) * shape)


def make_adamw(named: list[tuple[str, nn.Parameter]], c: OptimizerConfig) -> torch.optim.AdamW:
    decay = [p for _, p in named if p.ndim >= 2]
    no_decay = [p for _, p in named if p.ndim < 2]
    groups = [{"params": decay, "weight_decay": c.weight_decay, "decayed": True},
              {"params": no_decay, "weight_decay": 0.0, "decayed": False}]
    return torch.optim.AdamW([g for g in groups if g["params"]], lr=c.lr, betas=(c.beta1, c.beta2), eps=c.eps)


def configure(optimizer: torch.optim.Optimizer, c: OptimizerConfig, lr: float) -> None:
    """The config may change between calls: set lr (from the schedule), betas, eps, decay on every group."""
    for g in optimizer.param_groups:
        g["lr"] = lr
        g["betas"] = (c.beta1, c.beta2)
        g["eps"] = c.eps
        g["weight_decay"] = c.weight_decay if g.get("decayed", True) else 0.0


def clip_gradients(params: list[nn.Parameter], max_norm: float, module: "nn.Module | None" = None) -> float:
    """Global L2 norm before clipping; FSDP1 modules clip with their own (sharded) method."""
    limit = max_norm if max_norm > 0 else float("inf")
    if module is not None and hasattr(module, "clip_grad_norm_"):  # FSDP1: norm over all shards
        return float(module.clip_grad_norm_(limit))
    grads = [p for p in params if p.grad is not None]
    if not grads:
        return 0.0
    return float(torch.nn.utils.clip_grad_norm_(grads, limit))
