"""The tensor loss against hand-computed values of libs/engine/src/loss.ts's equations."""

import math

import pytest
import torch

from troupe_worker.loss import LossConfig, aggregation_weights, policy_loss, token_loss

PPO = LossConfig()


def t(*xs: float) -> torch.Tensor:
    return torch.tensor([list(xs)], dtype=torch.float64)


def test_clip_branches_by_hand() -> None:
    # ratio 1.5, A = +1: L¹ = −1.5, L² = −1.2 → max = −1.2 (clipped, flat). A = −1: L¹ = 1.5 wins.
    lp = t(math.log(1.5), math.log(1.5)).requires_grad_(True)
    terms = token_loss(lp, t(0, 0), torch.tensor([[1.0, -1.0]], dtype=torch.float64), PPO)
    assert terms.pg.flatten().tolist() == pytest.approx([-1.2, 1.5])
    assert terms.clipped.tolist() == [[True, False]]
    terms.loss.sum().backward()
    # ∂L/∂ℓ = −A·r on the unclipped branch, 0 on the clipped one
    assert lp.grad.flatten().tolist() == pytest.approx([0.0, 1.5])


def test_dual_clip_bounds_negative_advantages() -> None:
    # ratio 4, A = −1: L¹ = 4 > L² = 1.2 → 4, then min(4, −A·c = 3) = 3 with c = 3.
    cfg = LossConfig(dual_clip=3.0)
    terms = token_loss(t(math.log(4.0)), t(0), torch.tensor([[-1.0]], dtype=torch.float64), cfg)
    assert terms.pg.item() == pytest.approx(3.0)
    assert terms.clipped.item()


def test_k3_kl_and_entropy_terms() -> None:
    # ℓ = log 2, ℓ_ref = 0: δ = −log 2, k3 = e^δ − δ − 1 = 0.5 + log 2 − 1
    cfg = LossConfig(kl_coef=0.5, entropy_coef=0.1)
    lp = t(math.log(2.0))
    terms = token_loss(lp, lp.clone(), torch.tensor([[0.0]], dtype=torch.float64), cfg, ref_logprobs=t(0.0), entropies=t(2.0))
    k3 = 0.5 + math.log(2) - 1
    assert terms.kl.item() == pytest.approx(k3)
    assert terms.loss.item() == pytest.approx(0.5 * k3 - 0.1 * 2.0)


def test_aggregations_by_hand() -> None:
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    def w(agg: str) -> list[float]:
        return aggregation_weights(mask, agg).flatten().tolist()

    assert w("token-mean") == pytest.approx([0.25] * 3 + [0.25, 0, 0] + [0, 0, 0])
    # two live sequences: 1/(3·2) and 1/(1·2); the empty one is left out
    assert w("sequence-mean") == pytest.approx([1 / 6] * 3 + [0.5, 0, 0] + [0, 0, 0])
    assert w("sequence-sum") == pytest.approx([0.5] * 3 + [0.5, 0, 0] + [0, 0, 0])


def test_policy_loss_metrics() -> None:
    # unclipped ratios 1 everywhere: loss = −mean(A) over tokens; approxKl = 0; no clipping.
    lp = torch.zeros(2, 2, dtype=torch.float64)
    out = policy_loss(lp, lp, torch.tensor([[1.0], [-3.0]], dtype=torch.float64), torch.ones(2, 2), PPO)
    assert out["loss"].item() == pytest.approx(-(1 + 1 - 3 - 3) / 4)
    assert out["clipped"].item() == 0
    assert out["tokens"].item() == 4
    with pytest.raises(ValueError, match="loss.aggregation"):
        LossConfig.from_json({"aggregation": "mean"})


def test_supervised_term() -> None:
    # A = 0, β_NLL = 1 (the warm start's loss): L = −ℓ whatever ℓ_old, and ∂L/∂ℓ = −1.
    cfg = LossConfig.from_json({"aggregation": "token-mean", "nllCoef": 1})
    lp = t(-0.5, -2.0).requires_grad_(True)
    terms = token_loss(lp, t(0.0, -9.0), torch.zeros(1, 1, dtype=torch.float64), cfg)
    assert terms.loss.flatten().tolist() == pytest.approx([0.5, 2.0])
    terms.loss.sum().backward()
    assert lp.grad.flatten().tolist() == pytest.approx([-1.0, -1.0])
