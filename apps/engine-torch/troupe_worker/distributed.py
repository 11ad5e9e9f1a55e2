"""Several GPUs, one box or many, under `torchrun` (which sets RANK / WORLD_SIZE / LOCAL_RANK).

Rank 0 talks to the controller; every request it reads is broadcast to the other ranks, and all
ranks execute it (FSDP forward and backward passes are collective). Full-model policies are
sharded with FSDP2 `fully_shard` (torch ≥ 2.4) or FSDP1 otherwise; in train_step each rank takes
every world_size-th sequence and the gradients are averaged by FSDP.

!!! MULTI-GPU CODE PATH: not exercised by the CPU test suite (a single process has world size 1 and
every function here is then a no-op). Keep it small. Checked by hand with
`torchrun --nproc-per-node 2 -m troupe_worker --selftest` on a GPU box (see docs/gpu.md).
LoRA policies are not sharded (the frozen base is replicated); generation runs the full batch on
every rank (rank 0's result is returned).
"""

from __future__ import annotations

import os
from typing import Any, Optional

import torch
from torch import nn


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def rank() -> int:
    return int(os.environ.get("RANK", "0"))


def init() -> Optional[torch.device]:
    """Joins the process group when launched by torchrun; returns this rank's device (None: single process)."""
    if world_size() == 1:
        return None
    import torch.distributed as dist

    local = int(os.environ.get("LOCAL_RANK", "0"))
    if torch.cuda.is_available():
        torch.cuda.set_device(local)
        dist.init_process_group("nccl")
        return torch.device("cuda", local)
    dist.init_process_group("gloo")
    return torch.device("cpu")


def broadcast(obj: Any) -> Any:
    """Rank 0's object on every rank (requests: header and payloads, pickled)."""
    if world_size() == 1:
        return obj
    import torch.distributed as dist

    box = [obj]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def all_reduce_sums(sums: dict[str, torch.Tensor]) -> None:
    import torch.distributed as dist

    keys = sorted(sums)
    device = torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")
    flat = torch.stack([sums[k].double() for k in keys]).to(device)
    dist.all_reduce(flat)
    for k, v in zip(keys, flat.cpu()):
        sums[k] = v


def wrap_for_training(module: nn.Module) -> nn.Module:
    """FSDP-shards a full policy's model when world_size > 1 (each decoder layer its own unit)."""
    if world_size() == 1:
        return module
    layers = list(module.model.layers)
    try:  # FSDP2 (per-parameter DTensor sharding)
        try:
            from torch.distributed.fsdp import fully_shard  # torch ≥ 2.6
        except ImportError:
            from torch.distributed._composable.fsdp import fully_shard  # torch 2.4–2.5
        for layer in layers:
            fully_shard(layer)
        fully_shard(module)
        return module
    except ImportError:
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from torch.distributed.fsdp.wrap import ModuleWrapPolicy

        layer_type = type(layers[0])
        return FSDP(module, auto_wrap_policy=ModuleWrapPolicy({layer_type}), use_orig_params=True,
                    device_id=torch.cuda.current_device() if torch.cuda.is_available() else None)


def full_module(module: nn.Module) -> nn.Module:
    """The module whose state_dict has full (unsharded) HF-named tensors, for save/export.
    FSDP1 needs its FULL_STATE_DICT context; FSDP2 parameters are DTensors gathered by `full_tensor`
    in `gathered_state_dict`. Single process: the module itself."""
    if world_size() == 1:
        return module
    return _Gathered(module)


class _Gathered(nn.Module):
    """A view whose state_dict() is the full, unsharded state dict of an FSDP1/FSDP2 module."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = [inner]  # a list so it is not registered as a submodule

    def state_dict(self, *args: Any, **kwargs: Any) -> dict[str, torch.Tensor]:  # type: ignore[override]
        inner = self.inner[0]
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

        if isinstance(inner, FSDP):
            from torch.distributed.fsdp import FullStateDictConfig, StateDictType

            with FSDP.state_dict_type(inner, StateDictType.FULL_STATE_DICT, FullStateDictConfig(offload_to_cpu=True, rank0_only=False)):
                return {k.replace("_fsdp_wrapped_module.", ""): v for k, v in inner.state_dict().items()}
        out = {}
        for k, v in inner.state_dict().items():
            out[k] = v.full_tensor() if hasattr(v, "full_tensor") else v
        return out
