"""Op dispatch: frames in, engine calls, frames out.

Ops (args → result; payloads in brackets):
    hello        {protocol}                                 → {protocol, worker, torch, device, ...}
    load_model   {name, path? | init?, backend?} [file:*]   → {name, backend, config, parameters}
    add_policy   {id, model, lora?, seed?, copy?}           → PolicyInfo   (seed: of the LoRA A init)
    generate     {policy, seeds, sampling} [prompt_tokens, prompt_lengths]
                                                            → {finishReasons} [tokens, lengths, logprobs]
    logprobs     {policy} [tokens, prompt_lengths, completion_lengths] → {} [logprobs]
    train_step   {policy, loss, optimizer, microBatchSize}
                 [tokens, prompt_lengths, completion_lengths, old_logprobs, advantages, ref_logprobs?]
                                                            → TrainMetrics
    save / export {policy, dir?, dtype?}                    → {files, dir?} [file:* when no dir]
    load         {policy, dir?} [file:* when no dir]        → PolicyInfo
    echo         {bytes?} [*]                               → {bytes} [*, pattern]   (tests: large frames)
    shutdown     {}                                         → {}   (then the worker exits)
"""

from __future__ import annotations

import argparse
import platform
import sys
import traceback
from typing import Any, BinaryIO

import torch

from . import __version__, distributed
from .engine import Engine, EngineOptions
from .protocol import PROTOCOL_VERSION, Message, ProtocolError, read_message, write_message


def worker_info(engine: Engine) -> dict:
    import importlib.util

    return {
        "protocol": PROTOCOL_VERSION, "worker": __version__, "torch": torch.__version__,
        "python": platform.python_version(), "device": str(engine.device),
        "cuda": torch.cuda.get_device_name(engine.device) if engine.device.type == "cuda" else None,
        "worldSize": distributed.world_size(),
        "backends": {name: importlib.util.find_spec(name) is not None for name in ("transformers", "peft", "vllm", "safetensors")},
        "options": vars(engine.options),
    }


class Server:
    def __init__(self, args: argparse.Namespace, device: str) -> None:
        self.engine = Engine(EngineOptions(
            device=device, param_dtype=args.param_dtype, autocast=not args.no_autocast, generator=args.generator,
            model_backend=args.model_backend, logprob_batch_size=args.logprob_batch_size, logprob_chunk=args.logprob_chunk,
            gradient_checkpointing=args.gradient_checkpointing,
            decode=getattr(args, "decode", "eager"), compile_blocks=getattr(args, "compile_blocks", False),
        ))

    def handle(self, msg: Message) -> Message:
        """Runs one request; any exception becomes an error reply with the traceback."""
        try:
            if msg.kind != "request":
                raise ProtocolError(f"expected a request, got a {msg.kind!r} frame")
            result, payloads = self.dispatch(msg.op, msg.body, msg.payloads)
            return Message("response", msg.id, msg.op, result, payloads)
        except Exception as e:  # noqa: BLE001 — every failure goes back to the controller
            return Message("error", msg.id, msg.op, error={"type": type(e).__name__, "message": str(e), "traceback": traceback.format_exc()})

    def dispatch(self, op: str, args: dict, payloads: dict[str, Any]) -> tuple[dict, dict[str, Any]]:
        e = self.engine
        if op == "hello":
            theirs = args.get("protocol")
            if theirs != PROTOCOL_VERSION:
                raise ProtocolError(f"protocol version mismatch: the controller speaks v{theirs}, this worker v{PROTOCOL_VERSION} (update apps/engine-torch and @troupe/engine-torch together)")
            return worker_info(e), {}
        if op == "load_model":
            return e.load_model(args, payloads), {}
        if op == "add_policy":
            return e.add_policy(args), {}
        if op == "generate":
            return e.generate(args, payloads)
        if op == "logprobs":
            return e.logprobs(args, payloads)
        if op == "train_step":
            return e.train_step(args, payloads), {}
        if op in ("save", "export"):
            out = e.save(args) if op == "save" else e.export(args)
            data = out.pop("bytes", {})
            return out, {f"file:{k}": v for k, v in data.items()}
        if op == "load":
            return e.load(args, payloads), {}
        if op == "shutdown":
            return {}, {}
        if op == "echo":  # for the controller's tests: the payloads back, plus `bytes` bytes of a known pattern
            out = dict(payloads)
            n = int(args.get("bytes", 0))
            if n:
                out["pattern"] = bytes(range(256)) * (n // 256) + bytes(range(n % 256))
            return {"bytes": n}, out
        if op == "crash":  # for the controller's tests: dies like a segfault or an OOM kill would
            sys.stderr.write("troupe_worker: crash requested\n")
            sys.stderr.flush()
            import os

            os._exit(int(args.get("code", 7)))
        raise ValueError(f"unknown op {op!r}")

    def serve(self, reader: BinaryIO, writer: BinaryIO) -> int:
        while True:
            try:
                msg = read_message(reader)
            except ProtocolError as err:
                # The stream cannot be trusted after a bad frame: report it and stop.
                write_message(writer, Message("error", 0, "protocol", error={"type": "ProtocolError", "message": str(err), "traceback": traceback.format_exc()}))
                distributed.broadcast(None)
                return 2
            msg = distributed.broadcast(msg)
            if msg is None:
                return 0
            reply = self.handle(msg)
            write_message(writer, reply)
            if msg.op == "shutdown":
                return 0

    def follow(self) -> int:
        """Ranks > 0: execute what rank 0 broadcasts; replies are rank 0's to send."""
        while True:
            msg = distributed.broadcast(None)
            if msg is None or msg.op == "shutdown":
                return 0
            self.handle(msg)


def selftest(server: Server) -> int:
    """A tiny random Qwen3 through every op, on every rank (the multi-GPU smoke test)."""
    cfg = {"model_type": "qwen3", "vocab_size": 64, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
           "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "tie_word_embeddings": True, "eos_token_id": 1}
    e = server.engine
    e.load_model({"name": "tiny", "init": {"config": cfg, "seed": 0}}, {})
    e.add_policy({"id": "p", "model": "tiny", "copy": False})
    seqs = torch.tensor([3, 4, 5, 6, 7, 8, 9, 10, 11], dtype=torch.int32)
    payloads = {"tokens": seqs, "prompt_lengths": torch.tensor([2, 3], dtype=torch.int32), "completion_lengths": torch.tensor([2, 2], dtype=torch.int32),
                "old_logprobs": torch.full((4,), -4.0), "advantages": torch.tensor([1.0, -1.0])}
    metrics = e.train_step({"policy": "p", "loss": {}, "optimizer": {"lr": 1e-3}, "microBatchSize": 1}, payloads)
    gen, _ = e.generate({"policy": "p", "seeds": [1, 2], "sampling": {"maxTokens": 4}},
                        {"prompt_tokens": torch.tensor([3, 4, 5], dtype=torch.int32), "prompt_lengths": torch.tensor([1, 2], dtype=torch.int32)})
    print(f"rank {distributed.rank()}/{distributed.world_size()}: train {metrics} generate {gen}", file=sys.stderr)
    return 0
