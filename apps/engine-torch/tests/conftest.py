"""Shared fixtures: a tiny Qwen-style model defined here (no download), and an engine on CPU."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
torch.set_num_threads(1)

from troupe_worker.engine import Engine, EngineOptions  # noqa: E402


def tiny_config(model_type: str = "qwen3", tied: bool = True, **overrides: object) -> dict:
    cfg = {
        "model_type": model_type, "vocab_size": 48, "hidden_size": 32, "intermediate_size": 48,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8,
        "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": tied,
        "eos_token_id": 2, "pad_token_id": 0, "bos_token_id": 1, "initializer_range": 0.2,
    }
    if model_type == "qwen2":
        cfg.pop("head_dim")
    cfg.update(overrides)
    return cfg


def make_engine(model_type: str = "qwen3", tied: bool = True, seed: int = 0, **kw: object) -> Engine:
    engine = Engine(EngineOptions(device="cpu", model_backend="troupe", generator="torch", **kw))  # type: ignore[arg-type]
    engine.load_model({"name": "m", "init": {"config": tiny_config(model_type, tied), "seed": seed}}, {})
    return engine


@pytest.fixture
def engine() -> Engine:
    e = make_engine()
    e.add_policy({"id": "p", "model": "m", "copy": False})
    return e
