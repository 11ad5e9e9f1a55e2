"""LoRA adapters (Hu et al. 2021), several per base model, one per role:

    y = x Wᵀ + b + (α / r) · (x Aᵀ) Bᵀ          A [r, in] ~ kaiming-uniform, B [out, r] = 0

so a fresh adapter leaves the base model unchanged. The base stays frozen and shared; each policy
owns an `Adapter` (its A and B per target module). Adapters are attached with forward hooks on the
base's nn.Linear modules, which read the adapter that is active for the current forward pass — one
forward per adapter group, and the base module tree (and its HF tensor names) stays untouched.

Why hooks rather than peft: the same code serves transformers' Qwen modules and troupe_worker.qwen
(Debian's image has no peft), and several adapters share a base without rewrapping it. The files
are peft's: `adapter_model.safetensors` with keys `base_model.model.<module>.lora_A.weight` /
`lora_B.weight` and `adapter_config.json` (peft_type LORA), so `peft.PeftModel.from_pretrained`
loads them, and adapters saved by peft (without bias or DoRA) load here.
"""

from __future__ import annotations

import json
import math
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Callable, Iterator, Optional

import torch
import torch.nn.functional as F
from torch import nn

DEFAULT_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass(frozen=True)
class LoraConfig:
    r: int = 16
    alpha: float = 32.0
    target_modules: tuple[str, ...] = DEFAULT_TARGETS

    @property
    def scale(self) -> float:
        return self.alpha / self.r

    @staticmethod
    def from_json(raw: dict) -> "LoraConfig":
        r = int(raw.get("r", 16))
        if r <= 0:
            raise ValueError(f"lora.r: must be > 0, got {r}")
        targets = tuple(raw.get("targetModules") or raw.get("target_modules") or DEFAULT_TARGETS)
        return LoraConfig(r=r, alpha=float(raw.get("alpha", raw.get("lora_alpha", 2 * r))), target_modules=targets)

    def to_peft_json(self, base_model: str) -> dict:
        return {
            "peft_type": "LORA", "task_type": "CAUSAL_LM", "r": self.r, "lora_alpha": self.alpha,
            "lora_dropout": 0.0, "target_modules": list(self.target_modules), "bias": "none",
            "fan_in_fan_out": False, "use_rslora": False, "use_dora": False, "inference_mode": False,
            "base_model_name_or_path": base_model,
        }


def target_linears(base: nn.Module, config: LoraConfig) -> dict[str, nn.Linear]:
    """Module path → nn.Linear for every Linear whose last name is a target (e.g. model.layers.0.self_attn.q_proj)."""
    found = {name: m for name, m in base.named_modules() if isinstance(m, nn.Linear) and name.split(".")[-1] in config.target_modules}
    if not found:
        raise ValueError(f"lora.targetModules: none of {list(config.target_modules)} names a Linear of the model")
    return found


class Adapter(nn.Module):
    """One policy's A/B matrices, keyed by module path ('.' replaced by '/': ModuleDict keys cannot hold dots)."""

    def __init__(self, base: nn.Module, config: LoraConfig, seed: Optional[int] = None) -> None:
        """`seed`: A is drawn from its own seeded stream (on the CPU, whatever the device), so a run's
        adapters start the same in every process; None draws from torch's global generator."""
        super().__init__()
        self.config = config
        self.lora_A = nn.ParameterDict()
        self.lora_B = nn.ParameterDict()
        with torch.random.fork_rng(devices=[]) if seed is not None else nullcontext():
            if seed is not None:
                torch.manual_seed(seed)
            for path, linear in target_linears(base, config).items():
                w = linear.weight
                a = torch.empty(config.r, linear.in_features, dtype=torch.float32)
                nn.init.kaiming_uniform_(a, a=math.sqrt(5))  # peft's default init of A
                self.lora_A[path.replace(".", "/")] = nn.Parameter(a.to(w.device))
                self.lora_B[path.replace(".", "/")] = nn.Parameter(torch.zeros(linear.out_features, config.r, device=w.device))

    def delta(self, path: str) -> torch.Tensor:
        """ΔW = (α/r) · B A, the update merged into W by `merged_state_dict`."""
        key = path.replace(".", "/")
        return self.config.scale * (self.lora_B[key] @ self.lora_A[key])

    def peft_state_dict(self) -> dict[str, torch.Tensor]:
        out = {}
        for key in self.lora_A:
            path = key.replace("/", ".")
            out[f"base_model.model.{path}.lora_A.weight"] = self.lora_A[key].detach()
            out[f"base_model.model.{path}.lora_B.weight"] = self.lora_B[key].detach()
        return out

    def load_peft_state_dict(self, tensors: dict[str, torch.Tensor]) -> None:
        expected = self.peft_state_dict()
        problems = [f"{k}: missing" for k in expected if k not in tensors]
        problems += [f"{k}: unexpected tensor" for k in tensors if k not in expected]
        for k, t in tensors.items():
            if k in expected and tuple(t.shape) != tuple(expected[k].shape):
                problems.append(f"{k}: expected {list(expected[k].shape)}, got {list(t.shape)}")
        if problems:
            raise ValueError("adapter_model.safetensors does not fit the adapter:\n  " + "\n  ".join(problems))
        with torch.no_grad():
            for key in self.lora_A:
                path = key.replace("/", ".")
                self.lora_A[key].copy_(tensors[f"base_model.model.{path}.lora_A.weight"])
                self.lora_B[key].copy_(tensors[f"base_model.model.{path}.lora_B.weight"])


class LoraHost:
    """Hooks on a shared base model that add the active adapter's low-rank update."""

    def __init__(self, base: nn.Module) -> None:
        self.base = base
        self.active: Optional[Adapter] = None
        self.hooked: set[str] = set()
        self.modules = {name: m for name, m in base.named_modules() if isinstance(m, nn.Linear)}

    def attach(self, adapter: Adapter) -> None:
        for key in adapter.lora_A:
            path = key.replace("/", ".")
            if path not in self.hooked:
                self.modules[path].register_forward_hook(self._hook(path))
                self.hooked.add(path)

    def _hook(self, path: str) -> Callable[[nn.Module, tuple, torch.Tensor], Optional[torch.Tensor]]:
        key = path.replace(".", "/")

        def hook(module: nn.Module, inputs: tuple, output: torch.Tensor) -> Optional[torch.Tensor]:
            adapter = self.active
            if adapter is None or key not in adapter.lora_A:
                return None
            x = inputs[0]
            a, b = adapter.lora_A[key], adapter.lora_B[key]
            return output + adapter.config.scale * F.linear(F.linear(x.to(a.dtype), a), b).to(output.dtype)

        return hook

    @contextmanager
    def use(self, adapter: Optional[Adapter]) -> Iterator[None]:
        previous, self.active = self.active, adapter
        try:
            yield
        finally:
            self.active = previous


def adapter_config_bytes(config: LoraConfig, base_model: str) -> bytes:
    return (json.dumps(config.to_peft_json(base_model), indent=2) + "\n").encode()
