"""Several GPUs, one box or many, under `torchrun` (which sets RANK / WORLD_SIZE / LOCAL_RANK).

Rank 0 talks to the controller; every request it reads is broadcast to the other ranks, and all
ranks execute it. Data parallelism in train_step: the rows are sorted by length and dealt to the
ranks, and every rank's share is padded with zero-weight rows to the same count, so every rank runs
the same number of micro-batches (FSDP's collectives are per forward/backward: a rank with one
micro-batch fewer would hang the others). The loss of each rank is scaled by world size and the
gradients averaged, so the update is the one-process update of the whole batch.

How the gradients are averaged:
- full models on CUDA: FSDP2 `fully_shard` per decoder layer, with a mixed-precision policy —
  bf16 compute, fp32 master weights and fp32 gradient reductions; checkpoints are
  `torch.distributed.checkpoint` shards, written by every rank;
- everything else (LoRA adapters on a replicated frozen base; full models on CPU with gloo):
  replicated parameters whose gradients are all-reduced (averaged) after the backward passes —
  what DDP does, without its bucketing/overlap, which does not pay for adapters.

Collectives may wait for a rank that is saving a checkpoint or running an evaluation: the process
group's timeout is TROUPE_COLLECTIVE_TIMEOUT_MINUTES (default 60), not torch's 10 minutes.
"""

from __future__ import annotations

import datetime
import os
from typing import Any, Optional

import torch
from torch import nn


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def rank() -> int:
    return int(os.environ.get("RANK", "0"))


def collective_timeout() -> datetime.timedelta:
    return datetime.timedelta(minutes=float(os.environ.get("TROUPE_COLLECTIVE_TIMEOUT_MINUTES", "60")))


def init() -> Optional[torch.device]:
    """Joins the process group when launched by torchrun; returns this rank's device (None: single process)."""
    if world_size() == 1:
        return None
    import torch.distributed as dist

    local = int(os.environ.get("LOCAL_RANK", "0"))
    if torch.cuda.is_available() and os.environ.get("TROUPE_DIST_BACKEND", "nccl") == "nccl":
        if local >= torch.cuda.device_count():
            raise RuntimeError(f"LOCAL_RANK {local} has no GPU: this node has {torch.cuda.device_count()} "
                               f"(launch at most that many processes per node, or set TROUPE_DIST_BACKEND=gloo for CPU ranks)")
        torch.cuda.set_device(local)
        dist.init_process_group("nccl", timeout=collective_timeout())
        return torch.device("cuda", local)
    dist.init_process_group("gloo", timeout=collective_timeout())
    return torch.device("cpu")


def broadcast(obj: Any) -> Any:
    """Rank 0's object on every rank (requests: header and payloads, pickled)."""
    if world_size() == 1:
        return obj
    import torch.distributed as dist

    box = [obj]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def _reduce_device() -> torch.device:
    import torch.distributed as dist

    if dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def all_reduce_sums(sums: dict[str, torch.Tensor]) -> None:
    import torch.distributed as dist

    keys = sorted(sums)
    flat = torch.stack([sums[k].double() for k in keys]).to(_reduce_device())
    dist.all_reduce(flat)
    for k, v in zip(keys, flat.cpu()):
        sums[k] = v


def average_gradients(params: list[nn.Parameter]) -> None:
    """Replicated parameters: every gradient becomes the mean over ranks (one flat all-reduce per
    dtype). A parameter without a gradient on this rank counts as zero, so every rank joins with
    the same flat size."""
    if world_size() == 1 or not params:
        return
    import torch.distributed as dist

    world = world_size()
    by_dtype: dict[torch.dtype, list[nn.Parameter]] = {}
    for p in params:
        by_dtype.setdefault(p.dtype, []).append(p)
    device = _reduce_device()
    for dtype, group in sorted(by_dtype.items(), key=lambda kv: str(kv[0])):
        flat = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1).float() for p in group]).to(device)
        dist.all_reduce(flat)
        flat /= world
        at = 0
        for p in group:
            n = p.numel()
            p.grad = flat[at : at + n].view_as(p).to(device=p.device, dtype=p.dtype).clone()
            at += n


def is_sharded(module: nn.Module) -> bool:
    """Whether FSDP2 sharded the module (its parameters are DTensors)."""
    return any(type(p).__name__ == "DTensor" for p in module.parameters())


def wrap_for_training(module: nn.Module, device: torch.device) -> nn.Module:
    """FSDP2-shards a full policy's model on CUDA when world_size > 1 (each decoder layer its own
    unit; bf16 compute, fp32 params and reductions). On CPU (gloo) the module stays replicated and
    `average_gradients` does the data-parallel part."""
    if world_size() == 1 or device.type != "cuda":
        return module
    try:
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard  # torch ≥ 2.6
    except ImportError as e:
        raise RuntimeError(f"multi-GPU full-model training needs FSDP2 (torch ≥ 2.6): {e}") from None
    layers = list(_decoder_layers(module))
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in layers:
        fully_shard(layer, mp_policy=policy)
    fully_shard(module, mp_policy=policy)
    return module


def _decoder_layers(module: nn.Module) -> list[nn.Module]:
    inner = getattr(module, "model", None)
    layers = getattr(inner, "layers", None)
    if layers is None:
        raise ValueError(f"FSDP: {type(module).__name__} has no .model.layers to shard layer by layer")
    return list(layers)


def full_state_dict(module: nn.Module) -> dict[str, torch.Tensor]:
    """The full (unsharded) state dict: FSDP2 DTensors gathered with `full_tensor` (a collective:
    every rank must call it); a replicated module's own state dict otherwise."""
    out = {}
    for k, v in module.state_dict().items():
        out[k] = v.full_tensor() if hasattr(v, "full_tensor") else v
    return out


def save_sharded(module: nn.Module, optimizer: Optional[torch.optim.Optimizer], folder: str) -> None:
    """FSDP2: model and optimizer state as torch.distributed.checkpoint shards in folder/dcp (each
    rank writes its own shards — the folder must be shared by every node)."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict

    model_sd, optim_sd = get_state_dict(module, optimizer if optimizer is not None else [])
    dcp.save({"model": model_sd, "optimizer": optim_sd}, checkpoint_id=os.path.join(folder, "dcp"))


def load_sharded(module: nn.Module, optimizer: Optional[torch.optim.Optimizer], folder: str) -> None:
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

    model_sd, optim_sd = get_state_dict(module, optimizer if optimizer is not None else [])
    state = {"model": model_sd, "optimizer": optim_sd}
    dcp.load(state, checkpoint_id=os.path.join(folder, "dcp"))
    set_state_dict(module, optimizer if optimizer is not None else [], model_state_dict=state["model"],
                   optim_state_dict=state["optimizer"])


def barrier() -> None:
    if world_size() > 1:
        import torch.distributed as dist

        dist.barrier()


def micro_batches(rows: list[Optional[int]], lengths: list[int], micro: int,
                  max_tokens: Optional[int], pad_length: int = 1) -> list[list[Optional[int]]]:
    """Consecutive micro-batches of `rows` (indices into `lengths`; None = a zero-weight padding
    row of `pad_length` tokens): at most `micro` rows each and, with `max_tokens`, at
    most that many padded tokens (rows × the longest), as the TypeScript engines plan them
    (libs/engine/src/micro-batch.ts). A row over `max_tokens` alone is refused."""
    out: list[list[Optional[int]]] = []
    current: list[Optional[int]] = []
    longest = 0
    for r in rows:
        n = lengths[r] if r is not None else pad_length
        if max_tokens is not None and n > max_tokens:
            raise ValueError(f"sequence {r} has {n} tokens, more than maxTokensPerMicroBatch {max_tokens}")
        count = len(current) + 1
        if current and (count > micro or (max_tokens is not None and count * max(longest, n) > max_tokens)):
            out.append(current)
            current, longest = [], 0
        current.append(r)
        longest = max(longest, n)
    if current:
        out.append(current)
    return out


def rank_micro_batches(lengths: list[int], world: int, rank_: int, micro: int,
                       max_tokens: Optional[int], pad_length: int = 1) -> list[list[Optional[int]]]:
    """This rank's micro-batches of a batch: its rows (shard_rows) cut by micro_batches, then padded
    with one-padding-row micro-batches to the largest count any rank has, so that every rank runs
    the same number of forward/backward passes (FSDP's collectives hang otherwise)."""
    plans = [micro_batches(shard_rows(lengths, world, r), lengths, micro, max_tokens, pad_length) for r in range(world)]
    mine = plans[rank_]
    most = max(len(p) for p in plans)
    return mine + [[None] for _ in range(most - len(mine))]


def shard_rows(lengths: list[int], world: int, rank_: int) -> list[Optional[int]]:
    """This rank's rows of a batch: sorted by length (longest first) and dealt round-robin, so the
    ranks get similar token counts; then padded with None (a zero-weight row) to ⌈B / world⌉, so
    every rank runs the same number of micro-batches. Within a rank, rows stay longest first, so a
    micro-batch holds rows of similar length (little padding)."""
    order = sorted(range(len(lengths)), key=lambda b: (-lengths[b], b))
    mine: list[Optional[int]] = list(order[rank_::world])
    per_rank = -(-len(lengths) // world)
    return mine + [None] * (per_rank - len(mine))
