"""The worker's engine: models, policies and the tensor work of the Engine interface
(libs/engine/src/types.ts). No RL logic lives here: the controller sends token ids, old log-probs
and advantages; the worker returns completions, log-probs and updated weights.

Policies:
- full: its own trainable copy of a model (per-role full models, a shared policy, or a
  heterogeneous team with its own model and tokenizer per role);
- LoRA: an adapter on a frozen base shared by every LoRA policy of that model; a forward pass runs
  one policy's adapter (the controller sends one generate call per policy: one pass per group).
"""

from __future__ import annotations

import copy
import importlib.util
import json
import math
import sys
import traceback
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any, Iterator, Optional

import torch
from torch import nn

from . import distributed
from .generate import Generated, hf_generate, torch_generate
from .lora import Adapter, LoraConfig, LoraHost, adapter_config_bytes
from .loss import LossConfig, policy_loss
from .models import LoadedModel, hf_state_dict, load_weights, model_from_config, model_from_files, model_from_path
from .optim import OptimizerConfig, clip_gradients, configure, learning_rate, make_adamw
from .safetensors_io import load_bytes, save_bytes
from .sampling import SamplingConfig

TRAINER_STATE_FORMAT_VERSION = 1


@dataclass
class EngineOptions:
    device: str = "cpu"
    #: dtype of the weights kept on the device (float32 = fp32 master weights; bfloat16 halves memory)
    param_dtype: str = "float32"
    #: bf16 autocast of forward passes on CUDA (ignored on CPU)
    autocast: bool = True
    #: "auto" (hf for transformers models, torch otherwise) | "torch" | "hf" | "vllm"
    generator: str = "auto"
    #: "auto" | "transformers" | "troupe" (troupe_worker.qwen)
    model_backend: str = "auto"
    #: sequences per forward in `logprobs`
    logprob_batch_size: int = 8
    gradient_checkpointing: bool = False


@dataclass
class Policy:
    id: str
    model: LoadedModel
    module: nn.Module
    adapter: Optional[Adapter] = None
    host: Optional[LoraHost] = None
    optimizer: Optional[torch.optim.Optimizer] = None
    step: int = 0

    def trainable(self) -> list[tuple[str, nn.Parameter]]:
        """(file name, parameter): HF names for a full model, peft names for an adapter."""
        if self.adapter is not None:
            return [(f"base_model.model.{k.replace('/', '.')}.lora_{ab}.weight", d[k])
                    for ab, d in (("A", self.adapter.lora_A), ("B", self.adapter.lora_B)) for k in d]
        return list(self.module.named_parameters())

    @contextmanager
    def active(self) -> Iterator[None]:
        with self.host.use(self.adapter) if self.host is not None else nullcontext():
            yield


@dataclass
class SequenceBatch:
    """Prompt+completion sequences, flat as they come over the wire."""

    tokens: list[list[int]]  # prompt + completion ids
    prompt_lengths: list[int]
    completion_lengths: list[int]

    @staticmethod
    def from_payloads(p: dict[str, Any]) -> "SequenceBatch":
        flat = p["tokens"].tolist()
        prompts = p["prompt_lengths"].tolist()
        completions = p["completion_lengths"].tolist()
        if len(prompts) != len(completions):
            raise ValueError(f"prompt_lengths has {len(prompts)} rows, completion_lengths {len(completions)}")
        if sum(prompts) + sum(completions) != len(flat):
            raise ValueError(f"tokens has {len(flat)} ids, the lengths add up to {sum(prompts) + sum(completions)}")
        seqs, at = [], 0
        for b, (P, C) in enumerate(zip(prompts, completions)):
            if P < 1:
                raise ValueError(f"sequence {b}: the prompt needs at least one token")
            seqs.append(flat[at : at + P + C])
            at += P + C
        return SequenceBatch(seqs, prompts, completions)


class Engine:
    def __init__(self, options: EngineOptions) -> None:
        self.options = options
        self.device = torch.device(options.device)
        self.param_dtype = getattr(torch, options.param_dtype)
        self.models: dict[str, LoadedModel] = {}
        self.claimed: set[str] = set()
        self.hosts: dict[str, LoraHost] = {}
        self.policies: dict[str, Policy] = {}
        #: set when vLLM, picked by `--generator auto`, failed once: the built-in generators take over
        self.vllm_failed = False

    # ---- setup ------------------------------------------------------------------------------
    def load_model(self, args: dict, payloads: dict[str, Any]) -> dict:
        name = args["name"]
        if name in self.models:
            raise ValueError(f"model {name!r} is already loaded")
        backend = args.get("backend", self.options.model_backend)
        files = {k[len("file:") :]: v for k, v in payloads.items() if k.startswith("file:")}
        if args.get("path"):
            loaded = model_from_path(name, args["path"], backend)
        elif "init" in args:
            loaded = model_from_config(name, args["init"]["config"], int(args["init"].get("seed", 0)), backend, files)
        else:
            loaded = model_from_files(name, files, backend)
        loaded.module.to(device=self.device, dtype=self.param_dtype)
        if self.options.gradient_checkpointing or args.get("gradientCheckpointing"):
            loaded.module.gradient_checkpointing_enable()
        loaded.module.eval()
        self.models[name] = loaded
        return {"name": name, "backend": loaded.backend, "config": loaded.config.to_hf_json(),
                "parameters": sum(p.numel() for p in loaded.module.parameters())}

    def add_policy(self, args: dict) -> dict:
        pid, model_name = args["id"], args["model"]
        if pid in self.policies:
            raise ValueError(f"policy {pid!r} already exists")
        if model_name not in self.models:
            raise ValueError(f"policy {pid!r}: no model {model_name!r} (loaded: {sorted(self.models)})")
        model = self.models[model_name]
        if args.get("lora"):
            host = self.hosts.get(model_name)
            if host is None:
                if model_name in self.claimed:
                    raise ValueError(f"policy {pid!r}: model {model_name!r} is trained in place by a full policy; it cannot be a LoRA base")
                for p in model.module.parameters():
                    p.requires_grad_(False)
                host = self.hosts[model_name] = LoraHost(model.module)
            seed = args.get("seed")
            adapter = Adapter(model.module, LoraConfig.from_json(args["lora"]), None if seed is None else int(seed)).to(self.device)
            host.attach(adapter)
            policy = Policy(pid, model, model.module, adapter, host)
        else:
            take = not args.get("copy", True) and model_name not in self.claimed and model_name not in self.hosts
            module = model.module if take else copy.deepcopy(model.module)
            if take:
                self.claimed.add(model_name)
            module.requires_grad_(True)
            module = distributed.wrap_for_training(module)
            policy = Policy(pid, model, module)
        self.policies[pid] = policy
        return self.policy_info(policy)

    def policy_info(self, policy: Policy) -> dict:
        return {"id": policy.id, "parameters": sum(p.numel() for _, p in policy.trainable()),
                "vocabSize": policy.model.config.vocab_size, "optimizerStep": policy.step}

    def policy(self, pid: str) -> Policy:
        if pid not in self.policies:
            raise ValueError(f"no policy {pid!r} (policies: {sorted(self.policies)})")
        return self.policies[pid]

    def autocast(self) -> Any:
        if self.device.type == "cuda" and self.options.autocast and self.param_dtype == torch.float32:
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return nullcontext()

    # ---- generate ---------------------------------------------------------------------------
    def generate(self, args: dict, payloads: dict[str, Any]) -> tuple[dict, dict[str, Any]]:
        policy = self.policy(args["policy"])
        sampling = SamplingConfig.from_json(args["sampling"])
        seeds = [int(s) for s in args["seeds"]]
        flat, lengths = payloads["prompt_tokens"].tolist(), payloads["prompt_lengths"].tolist()
        if len(lengths) != len(seeds):
            raise ValueError(f"generate: {len(lengths)} prompts but {len(seeds)} seeds")
        if sum(lengths) != len(flat):
            raise ValueError(f"generate: prompt_tokens has {len(flat)} ids, prompt_lengths add up to {sum(lengths)}")
        prompts, at = [], 0
        for n in lengths:
            prompts.append(flat[at : at + n])
            at += n
        vocab = policy.model.config.vocab_size
        for b, p in enumerate(prompts):
            bad = [t for t in p if not 0 <= t < vocab]
            if bad:
                raise ValueError(f"generate: prompt {b} has token id {bad[0]} outside [0, {vocab})")
        cfg = policy.model.config
        pad = cfg.pad_token_id if cfg.pad_token_id is not None else (cfg.eos_ids() or [0])[0]
        backend = self.options.generator
        chosen_by_auto = backend == "auto"
        if chosen_by_auto:
            backend = self.auto_generator(policy)
        policy.module.eval()
        with policy.active():
            results = None
            if backend == "vllm":
                from .vllm_backend import vllm_generate

                try:
                    results = vllm_generate(self, policy, prompts, seeds, sampling)
                except Exception:  # noqa: BLE001 — `auto` falls back to the worker's own generate
                    if not chosen_by_auto:
                        raise
                    self.vllm_failed = True
                    print(f"troupe_worker: vLLM generate failed; using the built-in generator from now on\n{traceback.format_exc()}", file=sys.stderr)
                    backend = "hf" if policy.model.backend == "transformers" else "torch"
            if results is None and backend == "hf":
                results = hf_generate(policy.module, prompts, seeds, sampling, pad, self.device)
            elif results is None:
                autocast = torch.bfloat16 if self.device.type == "cuda" and self.options.autocast and self.param_dtype == torch.float32 else None
                results = torch_generate(policy.module, prompts, seeds, sampling, pad, self.device, autocast)
        return self._pack_generated(results)

    def auto_generator(self, policy: Policy) -> str:
        """`--generator auto`: vLLM when it is importable and the worker is one process on a GPU (it
        runs next to the training model; under FSDP each rank would build its own engine), else
        transformers' generate for transformers models, else the worker's own KV-cache loop."""
        if (self.device.type == "cuda" and distributed.world_size() == 1 and not self.vllm_failed
                and importlib.util.find_spec("vllm") is not None):
            return "vllm"
        return "hf" if policy.model.backend == "transformers" else "torch"

    @staticmethod
    def _pack_generated(results: list[Generated]) -> tuple[dict, dict[str, Any]]:
        tokens = [t for r in results for t in r.token_ids]
        logprobs = [x for r in results for x in r.logprobs]
        return ({"finishReasons": [r.finish_reason for r in results]},
                {"tokens": torch.tensor(tokens, dtype=torch.int32), "lengths": torch.tensor([len(r.token_ids) for r in results], dtype=torch.int32),
                 "logprobs": torch.tensor(logprobs, dtype=torch.float32)})

    # ---- log-probs --------------------------------------------------------------------------
    def forward_logprobs(self, policy: Policy, seqs: list[list[int]], entropy: bool,
                         usable_vocab: int = 0) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
        """Right-padded forward: logprob[b, t] = log p(seqs[b][t+1] | seqs[b][≤t]) and the entropy of
        that next-token distribution, [B, T−1] float32. Right padding needs no attention mask: under
        the causal mask real tokens never read the padding after them.

        With 0 < usable_vocab < vocab_size the softmax runs over ids [0, usable_vocab) only — the ids
        the tokenizer has and the sampler may draw (sampling.py masks the rest) — so scoring and
        training see exactly the distribution that sampled the tokens (PPO ratio 1 on-policy)."""
        vocab, what = policy.model.config.vocab_size, ""
        if 0 < usable_vocab < vocab:
            vocab, what = usable_vocab, "the tokenizer's ids "
        T = max(len(s) for s in seqs)
        ids = torch.zeros((len(seqs), T), dtype=torch.long)
        for b, s in enumerate(seqs):
            ids[b, : len(s)] = torch.tensor(s, dtype=torch.long)
        if int(ids.max()) >= vocab or int(ids.min()) < 0:
            b = next(b for b, s in enumerate(seqs) if any(not 0 <= t < vocab for t in s))
            raise ValueError(f"sequence {b}: a token id is outside {what}[0, {vocab})")
        ids = ids.to(self.device)
        with policy.active(), self.autocast():
            logits = policy.module(ids[:, :-1]).logits[..., :vocab].float()
        logp = torch.log_softmax(logits, dim=-1)
        chosen = logp.gather(-1, ids[:, 1:, None]).squeeze(-1)
        ent = -(logp.exp() * logp).sum(-1) if entropy else None
        return chosen, ent

    def logprobs(self, args: dict, payloads: dict[str, Any]) -> tuple[dict, dict[str, Any]]:
        policy = self.policy(args["policy"])
        batch = SequenceBatch.from_payloads(payloads)
        out: list[torch.Tensor] = []
        policy.module.eval()
        size = max(1, self.options.logprob_batch_size)
        with torch.no_grad():
            for start in range(0, len(batch.tokens), size):
                rows = range(start, min(start + size, len(batch.tokens)))
                lp, _ = self.forward_logprobs(policy, [batch.tokens[b] for b in rows], entropy=False,
                                              usable_vocab=int(args.get("usableVocab", 0)))
                for i, b in enumerate(rows):
                    P, C = batch.prompt_lengths[b], batch.completion_lengths[b]
                    out.append(lp[i, P - 1 : P - 1 + C].cpu())
        flat = torch.cat(out) if out else torch.zeros(0)
        return {}, {"logprobs": flat.float()}

    # ---- train step -------------------------------------------------------------------------
    def train_step(self, args: dict, payloads: dict[str, Any]) -> dict:
        policy = self.policy(args["policy"])
        loss_cfg = LossConfig.from_json(args["loss"])
        opt_cfg = OptimizerConfig.from_json(args["optimizer"])
        micro = int(args.get("microBatchSize", 8))
        if micro < 1:
            raise ValueError(f"microBatchSize: must be ≥ 1, got {micro}")
        batch = SequenceBatch.from_payloads(payloads)
        B = len(batch.tokens)
        n_completion = sum(batch.completion_lengths)
        old = payloads["old_logprobs"].double().tolist()
        adv = payloads["advantages"].double().tolist()
        ref = payloads["ref_logprobs"].double().tolist() if "ref_logprobs" in payloads else None
        if len(old) != n_completion:
            raise ValueError(f"old_logprobs has {len(old)} values, the completions have {n_completion} tokens")
        if len(adv) != B:
            raise ValueError(f"advantages has {len(adv)} values for {B} sequences")
        if ref is not None and len(ref) != n_completion:
            raise ValueError(f"ref_logprobs has {len(ref)} values, the completions have {n_completion} tokens")
        for name, values in (("old_logprobs", old), ("advantages", adv), ("ref_logprobs", ref or [])):
            bad = next((i for i, x in enumerate(values) if not math.isfinite(x)), None)
            if bad is not None:
                raise ValueError(f"{name}[{bad}] is {values[bad]}")
        total_tokens = n_completion
        live = sum(1 for c in batch.completion_lengths if c > 0)
        if total_tokens == 0:
            raise ValueError("train_step: the batch has no completion token")
        # Per-sequence aggregation weight (every completion token is masked in): see loss.py.
        def seq_weight(c: int) -> float:
            if c == 0:
                return 0.0
            if loss_cfg.aggregation == "token-mean":
                return 1.0 / total_tokens
            if loss_cfg.aggregation == "sequence-mean":
                return 1.0 / (c * live)
            return 1.0 / live

        starts = [0]
        for c in batch.completion_lengths:
            starts.append(starts[-1] + c)
        rank, world = distributed.rank(), distributed.world_size()
        mine = [b for b in range(B) if b % world == rank]  # data parallel: each rank its share of rows

        named = policy.trainable()
        params = [p for _, p in named]
        if policy.optimizer is None:
            policy.optimizer = make_adamw(named, opt_cfg)
        lr = learning_rate(policy.step, opt_cfg)
        configure(policy.optimizer, opt_cfg, lr)
        policy.optimizer.zero_grad(set_to_none=True)
        policy.module.train()
        sums = {k: torch.zeros((), dtype=torch.float64) for k in ("loss", "pg", "kl", "entropy", "clipped", "old_minus_new", "tokens")}
        need_entropy = loss_cfg.entropy_coef != 0
        for start in range(0, len(mine), micro):
            rows = mine[start : start + micro]
            lp, ent = self.forward_logprobs(policy, [batch.tokens[b] for b in rows], entropy=True,
                                            usable_vocab=int(args.get("usableVocab", 0)))
            Tm = lp.shape[1]
            shape = (len(rows), Tm)
            old_t = torch.zeros(shape, dtype=torch.float32)
            ref_t = torch.zeros(shape, dtype=torch.float32)
            mask = torch.zeros(shape, dtype=torch.float32)
            weights = torch.zeros(shape, dtype=torch.float32)
            adv_t = torch.tensor([[adv[b]] for b in rows], dtype=torch.float32)
            for i, b in enumerate(rows):
                P, C = batch.prompt_lengths[b], batch.completion_lengths[b]
                span = slice(P - 1, P - 1 + C)
                old_t[i, span] = torch.tensor(old[starts[b] : starts[b] + C])
                if ref is not None:
                    ref_t[i, span] = torch.tensor(ref[starts[b] : starts[b] + C])
                mask[i, span] = 1.0
                weights[i, span] = seq_weight(C)
            dev = lp.device
            terms = policy_loss(lp, old_t.to(dev), adv_t.to(dev), mask.to(dev), loss_cfg,
                                ref_logprobs=ref_t.to(dev) if ref is not None else None,
                                entropies=ent if need_entropy else None, weights=weights.to(dev))
            # FSDP averages gradients over ranks; each rank's share of the batch loss is scaled back up.
            (terms["loss"] * world).backward()
            terms["entropy"] = (weights.to(dev) * ent.detach()).sum()  # reported even when β_H = 0
            for k in sums:
                sums[k] += terms[k].detach().double().cpu()
        policy.module.eval()
        if world > 1:
            distributed.all_reduce_sums(sums)
        grad_norm = clip_gradients(params, opt_cfg.max_grad_norm, policy.module if world > 1 else None)
        if math.isfinite(grad_norm):
            policy.optimizer.step()
            policy.step += 1
        policy.optimizer.zero_grad(set_to_none=True)
        tokens = float(sums["tokens"])
        return {
            "loss": _num(sums["loss"]), "pgLoss": _num(sums["pg"]), "kl": _num(sums["kl"]),
            "entropy": _num(sums["entropy"]), "clipFraction": float(sums["clipped"]) / tokens,
            "approxKl": _num(sums["old_minus_new"] / tokens), "gradNorm": _num(grad_norm), "lr": lr,
            "tokens": int(tokens), "optimizerStep": policy.step,
        }

    # ---- checkpoints ------------------------------------------------------------------------
    def save(self, args: dict) -> dict[str, bytes]:
        policy = self.policy(args["policy"])
        files: dict[str, bytes] = dict(policy.model.tokenizer_files)
        cfg_json = (json.dumps(policy.model.config.to_hf_json(), indent=2) + "\n").encode()
        if policy.adapter is not None:
            files["adapter_model.safetensors"] = save_bytes(_fp32(policy.adapter.peft_state_dict()), {"format": "pt"})
            files["adapter_config.json"] = adapter_config_bytes(policy.adapter.config, policy.model.source or policy.model.name)
            files["config.json"] = cfg_json  # the base's config, so the adapter's shapes can be checked
        else:
            files["config.json"] = cfg_json
            files["model.safetensors"] = save_bytes(_fp32(hf_state_dict(distributed.full_module(policy.module), policy.model.config)), {"format": "pt"})
        files["optimizer.safetensors"] = self._optimizer_bytes(policy)
        files["trainer_state.json"] = (json.dumps({"format_version": TRAINER_STATE_FORMAT_VERSION, "optimizer_step": policy.step}, indent=2) + "\n").encode()
        return files

    def _optimizer_bytes(self, policy: Policy) -> bytes:
        """optimizer.ts's format: `<name>.exp_avg` / `<name>.exp_avg_sq`, metadata {format: troupe-adamw, step}."""
        tensors = {}
        state = policy.optimizer.state if policy.optimizer is not None else {}
        for name, p in policy.trainable():
            s = state.get(p, {})
            tensors[f"{name}.exp_avg"] = s.get("exp_avg", torch.zeros_like(p)).float()
            tensors[f"{name}.exp_avg_sq"] = s.get("exp_avg_sq", torch.zeros_like(p)).float()
        return save_bytes(tensors, {"format": "troupe-adamw", "step": str(policy.step)})

    def load(self, args: dict, payloads: dict[str, Any]) -> dict:
        policy = self.policy(args["policy"])
        files = {k[len("file:") :]: v for k, v in payloads.items() if k.startswith("file:")}
        if policy.adapter is not None:
            for need in ("adapter_model.safetensors", "adapter_config.json"):
                if need not in files:
                    raise ValueError(f"load {policy.id}: {need} is missing (a LoRA policy loads an adapter)")
            lora_cfg = LoraConfig.from_json(json.loads(files["adapter_config.json"]))
            if lora_cfg != policy.adapter.config:
                policy.adapter = Adapter(policy.model.module, lora_cfg).to(self.device)
                policy.host.attach(policy.adapter)
            policy.adapter.load_peft_state_dict(load_bytes(files["adapter_model.safetensors"])[0])
        else:
            if "model.safetensors" not in files:
                raise ValueError(f"load {policy.id}: model.safetensors is missing (files: {', '.join(sorted(files))})")
            load_weights(policy.module, policy.model.config, load_bytes(files["model.safetensors"])[0], "model.safetensors")
        policy.optimizer = None
        policy.step = 0
        if "trainer_state.json" in files:
            policy.step = int(json.loads(files["trainer_state.json"])["optimizer_step"])
        if "optimizer.safetensors" in files:
            self._load_optimizer(policy, files["optimizer.safetensors"])
        return self.policy_info(policy)

    def _load_optimizer(self, policy: Policy, data: bytes) -> None:
        tensors, meta = load_bytes(data)
        if meta.get("format") != "troupe-adamw":
            raise ValueError(f'optimizer.safetensors: __metadata__.format must be "troupe-adamw", got {meta.get("format")!r}')
        step = int(meta.get("step", "0"))
        if step != policy.step:
            raise ValueError(f"optimizer.safetensors is at step {step}, trainer_state.json says optimizer_step {policy.step}")
        named = policy.trainable()
        policy.optimizer = make_adamw(named, OptimizerConfig())
        for name, p in named:
            for suffix in ("exp_avg", "exp_avg_sq"):
                if f"{name}.{suffix}" not in tensors:
                    raise ValueError(f"optimizer.safetensors: {name}.{suffix}: missing")
            if step > 0:
                policy.optimizer.state[p] = {
                    "step": torch.tensor(float(step)),
                    "exp_avg": tensors[f"{name}.exp_avg"].to(p.device, torch.float32).reshape(p.shape).clone(),
                    "exp_avg_sq": tensors[f"{name}.exp_avg_sq"].to(p.device, torch.float32).reshape(p.shape).clone(),
                }

    def export(self, args: dict) -> dict[str, bytes]:
        """The policy as a plain HF model (LoRA merged into the base): config.json, model.safetensors
        (F32 or BF16), tokenizer files — what the embedded engine and inference servers load."""
        policy = self.policy(args["policy"])
        dtype = {"F32": torch.float32, "BF16": torch.bfloat16}[args.get("dtype", "F32")]
        sd = {k: v.detach().clone() for k, v in hf_state_dict(distributed.full_module(policy.module), policy.model.config).items()}
        if policy.adapter is not None:
            with torch.no_grad():
                for key in policy.adapter.lora_A:
                    path = key.replace("/", ".")
                    sd[f"{path}.weight"] = sd[f"{path}.weight"].float() + policy.adapter.delta(path).float()
        files = dict(policy.model.tokenizer_files)
        files["config.json"] = (json.dumps(policy.model.config.to_hf_json(), indent=2) + "\n").encode()
        files["model.safetensors"] = save_bytes({k: v.to(dtype) for k, v in sd.items()}, {"format": "pt"})
        return files


def _fp32(sd: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k: v.detach().float() for k, v in sd.items()}


def _num(x: Any) -> Any:
    """JSON has no NaN/Infinity: non-finite metrics travel as the strings "NaN", "Infinity", "-Infinity"."""
    v = float(x)
    if math.isfinite(v):
        return v
    return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
