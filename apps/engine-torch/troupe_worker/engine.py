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
import json
import math
import os
import sys
import tempfile
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
from .models import LoadedModel, merge_eos, hf_state_dict, hf_state_dict_of, load_weights, model_from_config, model_from_files, model_from_path
from .optim import OptimizerConfig, clip_gradients, configure, learning_rate, make_adamw
from .safetensors_io import load_bytes, load_file, save_file
from .sampling import SamplingConfig
from .static_decode import resolve_decode, static_generate

TRAINER_STATE_FORMAT_VERSION = 1


@dataclass
class EngineOptions:
    device: str = "cpu"
    #: dtype of the weights kept on the device (float32 = fp32 master weights; bfloat16 halves memory)
    param_dtype: str = "float32"
    #: bf16 autocast of forward passes on CUDA (ignored on CPU)
    autocast: bool = True
    #: "auto" (hf for transformers models, torch otherwise) | "torch" | "hf". Rollouts at inference-
    #: server speed come from a vLLM/SGLang server next to the worker (the trainer's engine.rollouts).
    generator: str = "auto"
    #: "auto" | "transformers" | "troupe" (troupe_worker.qwen)
    model_backend: str = "auto"
    #: sequences per forward in `logprobs`
    logprob_batch_size: int = 8
    #: completion positions per lm_head chunk (the [chunk, vocab] fp32 logits are the peak)
    logprob_chunk: int = 1024
    gradient_checkpointing: bool = False
    #: decode path of the worker's own loop for the in-house model (static_decode.py): "eager" (the
    #: reference loop), "static" (static KV cache, fixed-shape step), "graph" (static + the step
    #: replayed as a CUDA graph; CUDA and torch ≥ 2.0 only), "auto" (graph where supported, else eager)
    decode: str = "eager"
    #: torch.compile each decoder block of the in-house model for train steps (forward and backward;
    #: generation and no-grad passes run the plain blocks). Needs torch ≥ 2.0. Off until measured.
    compile_blocks: bool = False


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
        resolve_decode(options.decode, self.device)  # a bad or unsupported mode fails here, named
        if options.compile_blocks and not hasattr(torch, "compile"):
            raise ValueError(f"compile_blocks: torch.compile needs torch ≥ 2.0, this is torch {torch.__version__}")

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
            # non-reentrant: reentrant checkpointing gives a LoRA adapter on a frozen base no gradient
            loaded.module.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        if self.options.compile_blocks:
            if not hasattr(loaded.module, "compile_blocks"):
                raise ValueError(f"compile_blocks: needs the in-house model (model_backend troupe), model {name!r} is {loaded.backend}")
            loaded.module.compile_blocks()
        loaded.module.eval()
        self.models[name] = loaded
        generation = json.loads(loaded.tokenizer_files.get("generation_config.json") or b"{}")
        return {"name": name, "backend": loaded.backend, "config": loaded.config.to_hf_json(),
                "parameters": sum(p.numel() for p in loaded.module.parameters()),
                "eosTokenIds": merge_eos(loaded.config.eos_ids(), generation.get("eos_token_id"))}

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
            module = model.module if take else _copy_module(model.module)
            if take:
                self.claimed.add(model_name)
            module.requires_grad_(True)
            module = distributed.wrap_for_training(module, self.device)
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
        if backend == "auto":
            backend = "hf" if policy.model.backend == "transformers" else "torch"
        autocast = torch.bfloat16 if self.device.type == "cuda" and self.options.autocast and self.param_dtype == torch.float32 else None
        policy.module.eval()
        with policy.active():
            if backend == "hf":
                results = hf_generate(policy.module, prompts, seeds, sampling, pad, self.device, autocast)
            elif self._decode_path(policy) != "eager":
                results = static_generate(policy.module, prompts, seeds, sampling, pad, self.device, autocast,
                                          use_graph=self._decode_path(policy) == "graph", graph_key=(policy.adapter,))
            else:
                results = torch_generate(policy.module, prompts, seeds, sampling, pad, self.device, autocast)
        return self._pack_generated(results)

    def _decode_path(self, policy: Policy) -> str:
        """eager | static | graph for this policy: the static paths need the in-house model (a
        transformers model under decode=auto runs eager; an explicit static/graph is refused)."""
        mode = resolve_decode(self.options.decode, self.device)
        from .qwen import QwenForCausalLM

        if mode != "eager" and not isinstance(policy.module, QwenForCausalLM):
            if self.options.decode == "auto":
                return "eager"
            raise ValueError(f"decode={mode}: needs the in-house model (model_backend troupe), policy {policy.id!r} runs "
                             f"{type(policy.module).__name__}; use decode=eager or auto")
        return mode

    @staticmethod
    def _pack_generated(results: list[Generated]) -> tuple[dict, dict[str, Any]]:
        tokens = [t for r in results for t in r.token_ids]
        logprobs = [x for r in results for x in r.logprobs]
        return ({"finishReasons": [r.finish_reason for r in results]},
                {"tokens": torch.tensor(tokens, dtype=torch.int32), "lengths": torch.tensor([len(r.token_ids) for r in results], dtype=torch.int32),
                 "logprobs": torch.tensor(logprobs, dtype=torch.float32)})

    # ---- log-probs --------------------------------------------------------------------------
    def completion_logprobs(self, policy: Policy, seqs: list[list[int]], prompt_lengths: list[int],
                            completion_lengths: list[int], entropy: str = "none",
                            usable_vocab: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
        """log p(token) of every completion token, flat [N] float32 in row order, and the entropy of
        each of those next-token distributions (zeros when entropy == "none"; "detached": values
        without a graph; "grad": differentiable).

        Memory: the lm_head runs only on the N completion positions (prompt and padding positions
        never reach the vocabulary), in chunks of `logprob_chunk` positions, each under non-reentrant
        checkpointing when gradients are on: the chunk's [chunk, V] fp32 logits are recomputed in the
        backward pass instead of being kept — never a full B·T·V tensor.

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
        # (row, position) of every completion token's prediction: position P−1+i predicts token P+i
        rows = torch.cat([torch.full((C,), b, dtype=torch.long) for b, C in enumerate(completion_lengths)] or [torch.zeros(0, dtype=torch.long)])
        cols = torch.cat([torch.arange(P - 1, P - 1 + C) for P, C in zip(prompt_lengths, completion_lengths)] or [torch.zeros(0, dtype=torch.long)])
        targets = ids[rows, cols + 1].to(self.device)
        ids = ids.to(self.device)
        chunk = max(1, self.options.logprob_chunk)
        with policy.active(), self.autocast():
            module = policy.module
            if distributed.is_sharded(module):
                # FSDP2 gathers the root's parameters (embedding, final norm, lm_head) around
                # forward() only: run this pass as a registered forward method of the root.
                if not hasattr(module, "troupe_logprobs"):
                    from torch.distributed.fsdp import register_fsdp_forward_method

                    module.troupe_logprobs = _policy_logprobs.__get__(module)
                    register_fsdp_forward_method(module, "troupe_logprobs")
                return module.troupe_logprobs(ids, rows.to(self.device), cols.to(self.device), targets, vocab, entropy, chunk)
            return _policy_logprobs(module, ids, rows.to(self.device), cols.to(self.device), targets, vocab, entropy, chunk)

    def logprobs(self, args: dict, payloads: dict[str, Any]) -> tuple[dict, dict[str, Any]]:
        policy = self.policy(args["policy"])
        batch = SequenceBatch.from_payloads(payloads)
        out: list[torch.Tensor] = []
        policy.module.eval()
        size = max(1, self.options.logprob_batch_size)
        max_tokens = args.get("maxTokensPerMicroBatch")
        lengths = [len(t) for t in batch.tokens]
        # In batch order (the replies are read back in it), cut like a training step's micro-batches.
        chunks = distributed.micro_batches(list(range(len(lengths))), lengths, size,
                                           None if max_tokens is None else int(max_tokens))
        with torch.no_grad():
            for rows in chunks:
                lp, _ = self.completion_logprobs(policy, [batch.tokens[b] for b in rows], [batch.prompt_lengths[b] for b in rows],
                                                 [batch.completion_lengths[b] for b in rows], usable_vocab=int(args.get("usableVocab", 0)))
                out.append(lp.cpu())
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
        # Per-sequence aggregation weight over the WHOLE batch (every completion token is masked in): see loss.py.
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
        world = distributed.world_size()
        # Data parallel: every rank the same number of micro-batches (None = a zero-weight padding
        # row), each under microBatchSize rows and maxTokensPerMicroBatch padded tokens.
        max_tokens = args.get("maxTokensPerMicroBatch")
        if max_tokens is not None and int(max_tokens) < 1:
            raise ValueError(f"maxTokensPerMicroBatch: must be ≥ 1, got {max_tokens}")
        # A padding row runs the shortest row that has a completion, with zero weight.
        pad_row = min((b for b in range(B) if batch.completion_lengths[b] > 0), key=lambda b: (len(batch.tokens[b]), b))
        plan = distributed.rank_micro_batches([len(t) for t in batch.tokens], world, distributed.rank(), micro,
                                              None if max_tokens is None else int(max_tokens), len(batch.tokens[pad_row]))

        named = policy.trainable()
        params = [p for _, p in named]
        if policy.optimizer is None:
            policy.optimizer = make_adamw(named, opt_cfg)
        lr = learning_rate(policy.step, opt_cfg)
        configure(policy.optimizer, opt_cfg, lr)
        policy.optimizer.zero_grad(set_to_none=True)
        policy.module.train()
        sums = {k: torch.zeros((), dtype=torch.float64) for k in ("loss", "pg", "kl", "entropy", "clipped", "old_minus_new", "tokens")}
        entropy_mode = "grad" if loss_cfg.entropy_coef != 0 else "detached"
        for rows in plan:
            real = [b if b is not None else pad_row for b in rows]
            lp, ent = self.completion_logprobs(policy, [batch.tokens[b] for b in real], [batch.prompt_lengths[b] for b in real],
                                               [batch.completion_lengths[b] for b in real], entropy=entropy_mode,
                                               usable_vocab=int(args.get("usableVocab", 0)))
            old_t, ref_t, adv_t, w_t, mask_t = [], [], [], [], []
            for b, r in zip(rows, real):
                C = batch.completion_lengths[r]
                old_t.append(torch.tensor(old[starts[r] : starts[r] + C]))
                if ref is not None:
                    ref_t.append(torch.tensor(ref[starts[r] : starts[r] + C]))
                adv_t.append(torch.full((C,), adv[r]))
                w_t.append(torch.full((C,), seq_weight(C) if b is not None else 0.0))
                mask_t.append(torch.full((C,), 1.0 if b is not None else 0.0))
            dev = lp.device
            flat = lambda xs: torch.cat(xs).to(device=dev, dtype=torch.float32)  # noqa: E731
            weights, mask = flat(w_t), flat(mask_t)
            terms = policy_loss(lp, flat(old_t), flat(adv_t), mask, loss_cfg,
                                ref_logprobs=flat(ref_t) if ref is not None else None,
                                entropies=ent if entropy_mode == "grad" else None, weights=weights)
            # Gradients are averaged over ranks; each rank's share of the batch loss is scaled back up.
            # The adapter stays active through backward: checkpointed layers re-run their forward
            # (and the LoRA hooks) there, and must see the same adapter as the first time.
            with policy.active():
                (terms["loss"] * world).backward()
            terms["entropy"] = (weights * ent.detach()).sum()  # reported even when β_H = 0
            for k in sums:
                sums[k] += terms[k].detach().double().cpu()
        policy.module.eval()
        if world > 1:
            distributed.all_reduce_sums(sums)
            if not distributed.is_sharded(policy.module):
                distributed.average_gradients(params)
        grad_norm = clip_gradients(params, opt_cfg.max_grad_norm)
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
    # Checkpoints are folders on the worker's machine: the worker writes (and reads) the files
    # there and the protocol carries the folder and the file names; the controller moves the files
    # to the store. (Without a `dir`, save/export/load carry the bytes in the frame — small models
    # and tests.)
    def save_to(self, policy: Policy, folder: str) -> list[str]:
        """The policy's checkpoint in `folder`: tokenizer files, config.json, trainer_state.json and
        - LoRA: adapter_model.safetensors + adapter_config.json (the PEFT save_pretrained layout);
        - a full model: model.safetensors (HF names, fp32), or under FSDP2 dcp/ — the model and
          optimizer as torch.distributed.checkpoint shards, written by every rank;
        - optimizer.safetensors (AdamW moments, optimizer.ts's format) unless in the DCP shards."""
        sharded = policy.adapter is None and distributed.is_sharded(policy.module)
        if distributed.rank() == 0:
            os.makedirs(folder, exist_ok=True)
        distributed.barrier()
        if sharded:
            distributed.save_sharded(policy.module, policy.optimizer, folder)
        names: list[str] = []

        def write(name: str, data: bytes) -> None:
            with open(os.path.join(folder, name), "wb") as f:
                f.write(data)
            names.append(name)

        if distributed.rank() == 0:
            for name, data in policy.model.tokenizer_files.items():
                write(name, data)
            # the base's config for an adapter, so its shapes can be checked
            write("config.json", (json.dumps(policy.model.config.to_hf_json(), indent=2) + "\n").encode())
            if policy.adapter is not None:
                save_file(_fp32(policy.adapter.peft_state_dict()), os.path.join(folder, "adapter_model.safetensors"), {"format": "pt"})
                names.append("adapter_model.safetensors")
                write("adapter_config.json", adapter_config_bytes(policy.adapter.config, policy.model.source or policy.model.name))
            elif not sharded:
                save_file(_fp32(hf_state_dict(policy.module, policy.model.config)), os.path.join(folder, "model.safetensors"), {"format": "pt"})
                names.append("model.safetensors")
            if not sharded:
                save_file(self._optimizer_tensors(policy), os.path.join(folder, "optimizer.safetensors"),
                          {"format": "troupe-adamw", "step": str(policy.step)})
                names.append("optimizer.safetensors")
            state = {"format_version": TRAINER_STATE_FORMAT_VERSION, "optimizer_step": policy.step, **({"sharded": True} if sharded else {})}
            write("trainer_state.json", (json.dumps(state, indent=2) + "\n").encode())
        distributed.barrier()
        if sharded and distributed.rank() == 0:
            for root, _, files in os.walk(os.path.join(folder, "dcp")):
                names += [os.path.relpath(os.path.join(root, f), folder) for f in files]
        return sorted(names)

    def save(self, args: dict) -> dict[str, Any]:
        """{files: names, dir?}; with no `dir` the files' bytes too (payloads file:<name>)."""
        policy = self.policy(args["policy"])
        if args.get("dir"):
            return {"files": self.save_to(policy, args["dir"]), "dir": args["dir"]}
        with tempfile.TemporaryDirectory(prefix="troupe-save-") as folder:
            names = self.save_to(policy, folder)
            return {"files": names, "bytes": _read_files(folder, names)}

    def _optimizer_tensors(self, policy: Policy) -> dict[str, torch.Tensor]:
        """optimizer.ts's format: `<name>.exp_avg` / `<name>.exp_avg_sq`, metadata {format: troupe-adamw, step}."""
        tensors = {}
        state = policy.optimizer.state if policy.optimizer is not None else {}
        for name, p in policy.trainable():
            s = state.get(p, {})
            tensors[f"{name}.exp_avg"] = s.get("exp_avg", torch.zeros_like(p)).float()
            tensors[f"{name}.exp_avg_sq"] = s.get("exp_avg_sq", torch.zeros_like(p)).float()
        return tensors

    def load(self, args: dict, payloads: dict[str, Any]) -> dict:
        """From a folder (`dir`, read by rank 0 and broadcast; DCP shards by every rank) or from
        the frame's file payloads."""
        policy = self.policy(args["policy"])
        folder = args.get("dir")
        state = json.loads(_read_one(folder, "trainer_state.json") or b"{}") if folder and distributed.rank() == 0 else {}
        state = distributed.broadcast(state) if folder else state
        if folder and state.get("sharded"):
            if policy.optimizer is None:
                policy.optimizer = make_adamw(policy.trainable(), OptimizerConfig())
            distributed.load_sharded(policy.module, policy.optimizer, folder)
            policy.step = int(state["optimizer_step"])
            return self.policy_info(policy)
        if folder:
            tensors = distributed.broadcast(_load_folder(folder) if distributed.rank() == 0 else None)
        else:
            tensors = {}
            files = {k[len("file:") :]: v for k, v in payloads.items() if k.startswith("file:")}
            for name, data in files.items():
                tensors[name] = load_bytes(data) if name.endswith(".safetensors") else data
        return self._load_files(policy, tensors)

    def _load_files(self, policy: Policy, files: dict[str, Any]) -> dict:
        """files: name → (tensors, metadata) for .safetensors, bytes otherwise."""
        if policy.adapter is not None:
            for need in ("adapter_model.safetensors", "adapter_config.json"):
                if need not in files:
                    raise ValueError(f"load {policy.id}: {need} is missing (a LoRA policy loads an adapter)")
            lora_cfg = LoraConfig.from_json(json.loads(files["adapter_config.json"]))
            if lora_cfg != policy.adapter.config:
                policy.adapter = Adapter(policy.model.module, lora_cfg).to(self.device)
                policy.host.attach(policy.adapter)
            policy.adapter.load_peft_state_dict(files["adapter_model.safetensors"][0])
        else:
            if "model.safetensors" not in files:
                raise ValueError(f"load {policy.id}: model.safetensors is missing (files: {', '.join(sorted(files))})")
            load_weights(policy.module, policy.model.config, files["model.safetensors"][0], "model.safetensors")
        policy.optimizer = None
        policy.step = 0
        if "trainer_state.json" in files:
            policy.step = int(json.loads(files["trainer_state.json"])["optimizer_step"])
        if "optimizer.safetensors" in files:
            self._load_optimizer(policy, *files["optimizer.safetensors"])
        return self.policy_info(policy)

    def _load_optimizer(self, policy: Policy, tensors: dict[str, torch.Tensor], meta: dict[str, str]) -> None:
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

    def export_to(self, policy: Policy, folder: str, dtype: torch.dtype) -> list[str]:
        """The policy as a plain HF model (LoRA merged into the base) in `folder`: config.json,
        model.safetensors, tokenizer files — what AutoModelForCausalLM.from_pretrained, the
        embedded engine and inference servers load. Every rank gathers (FSDP2), rank 0 writes."""
        sd = distributed.full_state_dict(policy.module)
        if distributed.rank() != 0:
            distributed.barrier()
            return []
        sd = {k: v.detach() for k, v in hf_state_dict_of(sd, policy.model.config).items()}
        if policy.adapter is not None:
            with torch.no_grad():
                for key in policy.adapter.lora_A:
                    path = key.replace("/", ".")
                    sd[f"{path}.weight"] = sd[f"{path}.weight"].float() + policy.adapter.delta(path).float()
        os.makedirs(folder, exist_ok=True)
        names = []
        for name, data in policy.model.tokenizer_files.items():
            with open(os.path.join(folder, name), "wb") as f:
                f.write(data)
            names.append(name)
        with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as f:
            f.write(json.dumps(policy.model.config.to_hf_json(), indent=2) + "\n")
        save_file({k: v.to(dtype) for k, v in sd.items()}, os.path.join(folder, "model.safetensors"), {"format": "pt"})
        distributed.barrier()
        return sorted(names + ["config.json", "model.safetensors"])

    def export(self, args: dict) -> dict[str, Any]:
        policy = self.policy(args["policy"])
        dtype = {"F32": torch.float32, "BF16": torch.bfloat16}[args.get("dtype", "F32")]
        if args.get("dir"):
            return {"files": self.export_to(policy, args["dir"], dtype), "dir": args["dir"]}
        with tempfile.TemporaryDirectory(prefix="troupe-export-") as folder:
            names = self.export_to(policy, folder, dtype)
            return {"files": names, "bytes": _read_files(folder, names)}


def _copy_module(module: nn.Module) -> nn.Module:
    """A deep copy for a policy's own weights; compiled blocks (compile_blocks) are compiled anew for
    the copy rather than deep-copied with their wrappers."""
    compiled = getattr(module, "compiled_blocks", None)
    if compiled is None:
        return copy.deepcopy(module)
    module.compiled_blocks = None
    try:
        clone = copy.deepcopy(module)
    finally:
        module.compiled_blocks = compiled
    clone.compile_blocks()
    return clone


def _read_one(folder: str, name: str) -> Optional[bytes]:
    path = os.path.join(folder, name)
    if not os.path.exists(path):
        return None
    with open(path, "rb") as f:
        return f.read()


def _read_files(folder: str, names: list[str]) -> dict[str, bytes]:
    return {n: _read_one(folder, n) or b"" for n in names}


def _load_folder(folder: str) -> dict[str, Any]:
    """A checkpoint folder's files: (tensors, metadata) for .safetensors, bytes otherwise."""
    if not os.path.isdir(folder):
        raise ValueError(f"load: {folder} is not a directory")
    out: dict[str, Any] = {}
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            out[name] = load_file(path) if name.endswith(".safetensors") else _read_one(folder, name)
    return out


def _policy_logprobs(module: nn.Module, ids: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor, targets: torch.Tensor,
                     vocab: int, entropy: str, chunk: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Engine.completion_logprobs' forward: hidden states of the right-padded batch (no attention
    mask: under the causal mask real tokens never read the padding after them), the completion
    positions picked out, then lm_head chunk by chunk."""
    if hasattr(module, "hidden_states"):  # troupe_worker.qwen
        h = module.hidden_states(ids)[0]
    else:  # transformers' *ForCausalLM
        h = module.model(input_ids=ids).last_hidden_state
    h = h[rows, cols]  # [N, H]
    lps, ents = [], []
    for start in range(0, h.shape[0], chunk):
        hc, tc = h[start : start + chunk], targets[start : start + chunk]
        if torch.is_grad_enabled() and hc.requires_grad:
            from torch.utils.checkpoint import checkpoint

            lp, ent = checkpoint(_head_logprobs, module.lm_head, hc, tc, vocab, entropy, use_reentrant=False)
        else:
            lp, ent = _head_logprobs(module.lm_head, hc, tc, vocab, entropy)
        lps.append(lp)
        ents.append(ent)
    if not lps:
        z = torch.zeros(0, device=ids.device)
        return z, z
    return torch.cat(lps), torch.cat(ents)


def _head_logprobs(head: nn.Module, h: torch.Tensor, targets: torch.Tensor, vocab: int, entropy: str) -> tuple[torch.Tensor, torch.Tensor]:
    """log p(target) and the entropy from hidden states [n, H] through lm_head, in float32."""
    logits = head(h)[..., :vocab].float()
    lse = torch.logsumexp(logits, dim=-1)
    lp = logits.gather(-1, targets[:, None]).squeeze(-1) - lse
    if entropy == "none":
        return lp, torch.zeros_like(lp)

    def ent_of(z: torch.Tensor) -> torch.Tensor:
        logp = z - lse[:, None]
        return -(logp.exp() * logp).sum(-1)

    if entropy == "grad":
        return lp, ent_of(logits)
    with torch.no_grad():
        return lp, ent_of(logits.detach())


def _fp32(sd: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k: v.detach().float() for k, v in sd.items()}


def _num(x: Any) -> Any:
    """JSON has no NaN/Infinity: non-finite metrics travel as the strings "NaN", "Infinity", "-Infinity"."""
    v = float(x)
    if math.isfinite(v):
        return v
    return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
