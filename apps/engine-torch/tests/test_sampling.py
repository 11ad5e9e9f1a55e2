"""sampling.py against hand-worked distributions (the semantics of libs/engine/src/sampler.ts)."""

import math

import pytest
import torch

from troupe_worker.sampling import SamplingConfig, draw_uniforms, request_generators, sample, sampling_distribution

# softmax of log([0.5, 0.2, 0.2, 0.1]) is exactly that distribution
LOGITS = torch.log(torch.tensor([[0.5, 0.2, 0.2, 0.1]]))


def test_top_k_keeps_ties_by_lower_id() -> None:
    ids, q = sampling_distribution(LOGITS, SamplingConfig(top_k=2))
    assert ids[0, :2].tolist() == [0, 1]  # 1 and 2 tie: lower id first
    assert q[0].tolist() == pytest.approx([0.5 / 0.7, 0.2 / 0.7, 0, 0])


def test_top_p_keeps_the_shortest_prefix_reaching_p() -> None:
    ids, q = sampling_distribution(LOGITS, SamplingConfig(top_p=0.7))  # 0.5, 0.7 → two tokens
    assert q[0].tolist() == pytest.approx([0.5 / 0.7, 0.2 / 0.7, 0, 0])
    ids, q = sampling_distribution(LOGITS, SamplingConfig(top_p=0.71))  # needs a third
    assert q[0].tolist() == pytest.approx([0.5 / 0.9, 0.2 / 0.9, 0.2 / 0.9, 0])


def test_inverse_cdf_and_logprob() -> None:
    cfg = SamplingConfig()
    # cdf over ranks (ids 0, 1, 2, 3): 0.5, 0.7, 0.9, 1.0
    for u, want in [(0.0, 0), (0.49, 0), (0.51, 1), (0.69, 1), (0.75, 2), (0.95, 3)]:
        token, logprob = sample(LOGITS, cfg, torch.tensor([u], dtype=torch.float64))
        assert token.item() == want
        assert logprob.item() == pytest.approx(math.log([0.5, 0.2, 0.2, 0.1][want]))


def test_temperature_and_greedy() -> None:
    token, logprob = sample(LOGITS, SamplingConfig(temperature=0), torch.tensor([0.99], dtype=torch.float64))
    assert (token.item(), logprob.item()) == (0, 0.0)
    # T = 0.5 squares the probabilities before renormalising
    _, q = sampling_distribution(LOGITS, SamplingConfig(temperature=0.5))
    z = 0.25 + 0.04 + 0.04 + 0.01
    assert q[0].tolist() == pytest.approx([0.25 / z, 0.04 / z, 0.04 / z, 0.01 / z])


def test_ids_past_the_usable_vocab_are_never_drawn() -> None:
    # usable_vocab=3 drops id 3 (p 0.1): q renormalises over 0.5, 0.2, 0.2
    cfg = SamplingConfig(usable_vocab=3)
    _, q = sampling_distribution(LOGITS, cfg)
    assert q[0].tolist() == pytest.approx([0.5 / 0.9, 0.2 / 0.9, 0.2 / 0.9, 0])
    token, logprob = sample(LOGITS, cfg, torch.tensor([0.999], dtype=torch.float64))
    assert (token.item(), logprob.item()) == (2, pytest.approx(math.log(0.2 / 0.9)))
    # greedy over the usable ids only: a masked id with the largest logit is skipped
    high_last = torch.log(torch.tensor([[0.2, 0.3, 0.1, 0.4]]))
    token, _ = sample(high_last, SamplingConfig(temperature=0, usable_vocab=3), torch.tensor([0.5], dtype=torch.float64))
    assert token.item() == 1
    assert SamplingConfig.from_json({"usableVocab": 259}).usable_vocab == 259
    with pytest.raises(ValueError, match="sampling.usableVocab"):
        SamplingConfig.from_json({"usableVocab": -1})


def test_seeds_are_per_request() -> None:
    a = draw_uniforms(request_generators([5, 6]))
    b = draw_uniforms(request_generators([7, 5]))
    assert a[0].item() == b[1].item()
    assert a[0].item() != a[1].item()


def test_config_errors_name_the_field() -> None:
    with pytest.raises(ValueError, match="sampling.topP"):
        SamplingConfig.from_json({"topP": 0})
    with pytest.raises(ValueError, match="sampling.maxTokens"):
        SamplingConfig.from_json({"maxTokens": 0})
