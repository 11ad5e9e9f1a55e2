"""Loading a model: from a local HF directory, from checkpoint files (bytes sent by the
controller), or randomly initialised from a config.

- A local HF folder with `transformers` importable (the GPU path): `AutoModelForCausalLM.
  from_pretrained` — any architecture it knows (Qwen2/2.5/3, Llama, ...), sharded safetensors,
  tied or untied heads, the rope settings it supports. The config travels as the folder's own
  config.json (`HFConfig`).
- Otherwise troupe_worker.qwen, the in-house Qwen2/Qwen3 twin (CPU tests, and machines without
  transformers); it has the HF tensor names, so the same state dict loads into either.

EOS ids are the config's plus generation_config.json's (Qwen3 ends chat turns with <|im_end|>,
which only generation_config.json names).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
import sys
from typing import Any, Optional, Union

import torch
from torch import nn

from . import qwen
from .safetensors_io import load_bytes

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json", "merges.txt",
                   "generation_config.json", "chat_template.jinja")


class HFConfig:
    """A transformers model's config.json as the engine reads it (the fields QwenConfig also has)."""

    def __init__(self, raw: dict, generation: Optional[dict] = None) -> None:
        self.raw = raw
        text = raw.get("text_config") or {}
        self.model_type = str(raw.get("model_type", "?"))
        self.vocab_size = int(raw.get("vocab_size") or text.get("vocab_size"))
        self.tie_word_embeddings = bool(raw.get("tie_word_embeddings", text.get("tie_word_embeddings", False)))
        self.pad_token_id = raw.get("pad_token_id")
        self.eos_token_id = raw.get("eos_token_id")
        self.generation = generation or {}

    def eos_ids(self) -> list[int]:
        return merge_eos(self.eos_token_id, self.generation.get("eos_token_id"))

    def to_hf_json(self) -> dict:
        return dict(self.raw)


def merge_eos(*values: Any) -> list[int]:
    """EOS ids from several sources (an int, a list or None each), first seen first."""
    out: list[int] = []
    for v in values:
        for e in ([] if v is None else [v] if isinstance(v, int) else list(v)):
            if int(e) not in out:
                out.append(int(e))
    return out


def transformers_available() -> bool:
    try:
        import transformers  # noqa: F401
    except Exception:
        return False
    return True


@dataclass
class LoadedModel:
    name: str
    config: Union[qwen.QwenConfig, HFConfig]
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
    return hf_state_dict_of(module.state_dict(), config)


def hf_state_dict_of(state: dict[str, torch.Tensor], config: Any) -> dict[str, torch.Tensor]:
    sd = {k: v for k, v in state.items() if not k.endswith("rotary_emb.inv_freq")}
    if config.tie_word_embeddings:
        sd.pop("lm_head.weight", None)
    return sd


def load_weights(module: nn.Module, config: qwen.QwenConfig, tensors: dict[str, torch.Tensor], file: str = "model.safetensors") -> None:
    """Copies HF-named tensors into the module; every problem (missing, unexpected, shape) is listed.

    A tied model's file may still hold `lm_head.weight` (Qwen3-0.6B and -1.7B ship it, a copy of the
    embedding): as transformers does, the tied embedding wins and the copy is dropped — with a
    warning if it is not in fact the same matrix."""
    expected = hf_state_dict(module, config)
    if config.tie_word_embeddings and "lm_head.weight" in tensors:
        tensors = dict(tensors)
        head = tensors.pop("lm_head.weight")
        embed = tensors.get("model.embed_tokens.weight")
        if embed is None:
            tensors["model.embed_tokens.weight"] = head  # only the head was saved: it is the embedding
        elif embed.shape != head.shape or not torch.equal(embed, head):
            print(f"troupe_worker: {file}: lm_head.weight differs from model.embed_tokens.weight but tie_word_embeddings "
                  "is true; the embedding is used for both (as transformers does)", file=sys.stderr)
    problems = [f"{k}: missing (expected {list(v.shape)})" for k, v in expected.items() if k not in tensors]
    for k, t in tensors.items():
        if k not in expected:
            problems.append(f"{k}: unexpected tensor")
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


def read_json_file(path: str, what: str) -> Optional[dict]:
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except ValueError as e:
        raise ValueError(f"{what}: {path} is not valid JSON: {e}") from None


def model_from_path(name: str, path: str, backend: str = "auto") -> LoadedModel:
    """A local HF model directory (config.json, *.safetensors, tokenizer files)."""
    if not os.path.isdir(path):
        raise ValueError(f"model {name}: {path} is not a directory (download the model first, e.g. `huggingface-cli download Qwen/Qwen3-0.6B --local-dir {path}`)")
    if backend == "transformers" or (backend == "auto" and transformers_available()):
        return hf_model_from_path(name, path)
    files = {}
    for entry in sorted(os.listdir(path)):
        if entry == "config.json" or entry in TOKENIZER_FILES or (entry.endswith(".safetensors") and entry.startswith("model")):
            with open(os.path.join(path, entry), "rb") as f:
                files[entry] = f.read()
    loaded = model_from_files(name, files, backend)
    loaded.source = path
    return loaded


def hf_model_from_path(name: str, path: str) -> LoadedModel:
    """transformers' own loader: whatever architecture, sharding, tying and rope the folder has."""
    import transformers

    raw = read_json_file(os.path.join(path, "config.json"), f"model {name}")
    if raw is None:
        raise ValueError(f"model {name}: {path}/config.json is missing")
    generation = read_json_file(os.path.join(path, "generation_config.json"), f"model {name}")
    module = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="sdpa")
    tok = {}
    for entry in TOKENIZER_FILES:
        if os.path.exists(os.path.join(path, entry)):
            with open(os.path.join(path, entry), "rb") as f:
                tok[entry] = f.read()
    return LoadedModel(name, HFConfig(raw, generation), module, "transformers", tok, source=path)


def model_from_config(name: str, config_json: dict, seed: int, backend: str = "auto", tokenizer_files: Optional[dict[str, bytes]] = None) -> LoadedModel:
    """Random HF-style init (matrices ~ N(0, initializer_range²)), seeded."""
    config = qwen.parse_config(config_json)
    torch.manual_seed(seed)
    module, used = build_module(config, backend)
    return LoadedModel(name, config, module, used, dict(tokenizer_files or {}), source="init")


def parameter_count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())
