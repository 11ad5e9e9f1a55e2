"""Loading a Qwen2/Qwen3 model: from checkpoint files (bytes sent by the controller), from a local HF
directory, or randomly initialised from a config. `transformers`' Qwen2ForCausalLM /
Qwen3ForCausalLM when importable (and not disabled), troupe_worker.qwen otherwise; both have the HF
tensor names, so the same state dict loads into either.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Optional

import torch
from torch import nn

from . import qwen
from .safetensors_io import load_bytes

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json", "merges.txt", "generation_config.json")


def transformers_available() -> bool:
    try:
        import transformers  # noqa: F401
    except Exception:
        return False
    return True


@dataclass
class LoadedModel:
    name: str
    config: qwen.QwenConfig
    module: nn.Module
    backend: str  # "transformers" | "troupe"
    tokenizer_files: dict[str, bytes] = field(default_factory=dict)
    source: str = ""


def build_module(config: qwen.QwenConfig, backend: str) -> tuple[nn.Module, str]:
    """An initialised model of the config. backend: "auto" | "transformers" | "troupe"."""
    use_hf = backend == "transformers" or (backend == "auto" and transformers_available())
    if use_hf:
        import transformers

        hf_config = transformers.AutoConfig.for_model(**config.to_hf_json())
        module = transformers.AutoModelForCausalLM.from_config(hf_config, torch_dtype=torch.float32)
        return module, "transformers"
    return qwen.QwenForCausalLM(config), "troupe"


def hf_state_dict(module: nn.Module, config: qwen.QwenConfig) -> dict[str, torch.Tensor]:
    """The module's weights under HF names; lm_head.weight left out when tied (as HF saves it)."""
    sd = {k: v for k, v in module.state_dict().items() if not k.endswith("rotary_emb.inv_freq")}
    if config.tie_word_embeddings:
        sd.pop("lm_head.weight", None)
    return sd


def load_weights(module: nn.Module, config: qwen.QwenConfig, tensors: dict[str, torch.Tensor], file: str = "model.safetensors") -> None:
    """Copies HF-named tensors into the module; every problem (missing, unexpected, shape) is listed."""
    expected = hf_state_dict(module, config)
    problems = [f"{k}: missing (expected {list(v.shape)})" for k, v in expected.items() if k not in tensors]
    for k, t in tensors.items():
        if k not in expected:
            hint = " (tie_word_embeddings is true: lm_head shares model.embed_tokens.weight)" if k == "lm_head.weight" else ""
            problems.append(f"{k}: unexpected tensor{hint}")
        elif tuple(t.shape) != tuple(expected[k].shape):
            problems.append(f"{k}: expected {list(expected[k].shape)}, got {list(t.shape)}")
    if problems:
        raise ValueError(f"{file} does not match the {config.model_type} config:\n  " + "\n  ".join(problems))
    live = module.state_dict(keep_vars=True)  # tied names both point at the one parameter
    with torch.no_grad():
        for k, t in tensors.items():
            live[k].copy_(t.to(live[k].dtype))


def model_from_files(name: str, files: dict[str, bytes], backend: str = "auto") -> LoadedModel:
    if "config.json" not in files:
        raise ValueError(f"model {name}: config.json is missing (files: {', '.join(sorted(files)) or 'none'})")
    config = qwen.parse_config(json.loads(files["config.json"]))
    module, used = build_module(config, backend)
    weights: dict[str, torch.Tensor] = {}
    shards = sorted(k for k in files if k.endswith(".safetensors") and k.startswith("model"))
    if not shards:
        raise ValueError(f"model {name}: model.safetensors is missing")
    for shard in shards:
        try:
            weights.update(load_bytes(files[shard])[0])
        except ValueError as e:
            raise ValueError(f"model {name}: {shard}: {e}") from None
    load_weights(module, config, weights, f"model {name}: model.safetensors")
    tok = {k: v for k, v in files.items() if k in TOKENIZER_FILES}
    return LoadedModel(name, config, module, used, tok, source="files")


def model_from_path(name: str, path: str, backend: str = "auto") -> LoadedModel:
    """A local HF model directory (config.json, *.safetensors, tokenizer files)."""
    if not os.path.isdir(path):
        raise ValueError(f"model {name}: {path} is not a directory (download the model first, e.g. `huggingface-cli download Qwen/Qwen3-0.6B --local-dir {path}`)")
    files = {}
    for entry in sorted(os.listdir(path)):
        if entry == "config.json" or entry in TOKENIZER_FILES or (entry.endswith(".safetensors") and entry.startswith("model")):
            with open(os.path.join(path, entry), "rb") as f:
                files[entry] = f.read()
    loaded = model_from_files(name, files, backend)
    loaded.source = path
    return loaded


def model_from_config(name: str, config_json: dict, seed: int, backend: str = "auto", tokenizer_files: Optional[dict[str, bytes]] = None) -> LoadedModel:
    """Random HF-style init (matrices ~ N(0, initializer_range²)), seeded."""
    config = qwen.parse_config(config_json)
    torch.manual_seed(seed)
    module, used = build_module(config, backend)
    return LoadedModel(name, config, module, used, dict(tokenizer_files or {}), source="init")


def parameter_count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())
