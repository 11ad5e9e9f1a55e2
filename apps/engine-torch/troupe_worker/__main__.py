"""`python -m troupe_worker`: the worker process.

    python -m troupe_worker [--socket PATH] [--device cuda] [--param-dtype float32] [...]
    torchrun --nproc-per-node 8 -m troupe_worker --socket /tmp/troupe.sock --controller-pid 1234

Transport: stdin/stdout by default. The real stdout is kept for frames and fd 1 is pointed at
stderr, so a stray print (ours or a library's) cannot corrupt the frame stream. With --socket, rank 0
connects to the controller's unix socket instead (what torchrun launches use).

Lifetime: the worker exits when the controller closes the stream, when the `shutdown` op arrives,
or when the controller dies (PR_SET_PDEATHSIG on Linux, plus a thread polling the controller's pid).
An exception inside an op is answered with an error frame carrying the Python traceback; the worker
keeps serving.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import signal
import socket
import sys
import threading
import time
from typing import BinaryIO, Optional

from . import __version__


def watch_parent(controller_pid: Optional[int]) -> None:
    """Die with the controller. PR_SET_PDEATHSIG covers a direct parent on Linux; the polling thread
    covers everything else (torchrun in between, macOS): if the watched pid is gone, exit."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass
    original_parent = os.getppid()

    def alive(pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def poll() -> None:
        while True:
            time.sleep(1.0)
            gone = (controller_pid is not None and not alive(controller_pid)) or (controller_pid is None and os.getppid() != original_parent)
            if gone:
                os._exit(3)

    threading.Thread(target=poll, name="parent-watch", daemon=True).start()


#: flags every rank takes from rank 0 (the device stays each rank's own GPU)
RANK0_FLAGS = ("param_dtype", "no_autocast", "generator", "model_backend", "logprob_batch_size", "logprob_chunk", "gradient_checkpointing", "threads", "decode", "compile_blocks")


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="troupe_worker", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--socket", help="connect to this unix socket instead of using stdin/stdout")
    ap.add_argument("--controller-pid", type=int, help="exit when this process is gone (default: when the parent changes)")
    ap.add_argument("--device", default=None, help="cpu | cuda | cuda:N (default: cuda when available)")
    ap.add_argument("--param-dtype", default="float32", choices=["float32", "bfloat16"], help="dtype of the weights on the device")
    ap.add_argument("--no-autocast", action="store_true", help="no bf16 autocast on CUDA")
    ap.add_argument("--generator", default="auto", choices=["auto", "torch", "hf"])
    ap.add_argument("--model-backend", default="auto", choices=["auto", "transformers", "troupe"])
    ap.add_argument("--logprob-batch-size", type=int, default=8)
    ap.add_argument("--logprob-chunk", type=int, default=1024, help="completion positions per lm_head chunk (peak: chunk × vocab fp32 logits)")
    ap.add_argument("--gradient-checkpointing", action="store_true")
    ap.add_argument("--decode", default="eager", choices=["auto", "eager", "static", "graph"],
                    help="the own loop's decode path for the in-house model: eager (reference), static (static KV cache), "
                         "graph (static + CUDA graph; CUDA, torch ≥ 2.0), auto (graph where supported, else eager)")
    ap.add_argument("--compile-blocks", action="store_true", help="torch.compile the decoder blocks for train steps (torch ≥ 2.0)")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    ap.add_argument("--selftest", action="store_true", help="run a tiny model through every op on every rank and exit")
    return ap.parse_args(argv)


def open_transport(args: argparse.Namespace) -> tuple[BinaryIO, BinaryIO]:
    if args.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(args.socket)
        except OSError as e:
            raise SystemExit(f"troupe_worker: rank 0 cannot reach the controller's socket {args.socket} ({e}); "
                             "rank 0 must run on the controller's node (torchrun --node_rank 0 there)") from None
        return sock.makefile("rb"), sock.makefile("wb")
    frames_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # stray prints go to stderr
    sys.stdout = sys.stderr
    return sys.stdin.buffer, frames_out


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    import torch

    from . import distributed
    from .server import Server, selftest

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    watch_parent(args.controller_pid)
    dist_device = distributed.init()
    # Ranks on other boxes are started by hand (infra/gpu) with a bare `-m troupe_worker`: rank 0's
    # engine flags — the controller's, from the recipe — apply on every rank (FSDP needs one dtype).
    shared = distributed.broadcast({k: getattr(args, k) for k in RANK0_FLAGS})
    for k, v in shared.items():
        setattr(args, k, v)
    device = args.device or (str(dist_device) if dist_device is not None else ("cuda" if torch.cuda.is_available() else "cpu"))
    try:
        server = Server(args, device)
    except ValueError as e:  # a flag that does not fit this machine (--decode graph on CPU, ...): one line
        raise SystemExit(f"troupe_worker: {e}") from None
    if args.selftest:
        return selftest(server)
    if distributed.rank() != 0:
        return server.follow()
    reader, writer = open_transport(args)
    return server.serve(reader, writer)


if __name__ == "__main__":
    sys.exit(main())
