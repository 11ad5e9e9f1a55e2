"""Frames, header checks, error replies, and the worker process over real pipes."""

import io
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from troupe_worker.protocol import PROTOCOL_VERSION, Message, ProtocolError, check_header, encode_message, read_message

ROOT = Path(__file__).resolve().parent.parent


def test_round_trip_keeps_payload_types() -> None:
    msg = Message("request", 3, "logprobs", {"policy": "p"}, {"tokens": torch.tensor([1, -2], dtype=torch.int32), "lp": torch.tensor([0.5]), "file:x": b"ab"})
    got = read_message(io.BytesIO(encode_message(msg)))
    assert (got.kind, got.id, got.op, got.body) == ("request", 3, "logprobs", {"policy": "p"})
    assert got.payloads["tokens"].dtype == torch.int32 and got.payloads["tokens"].tolist() == [1, -2]
    assert got.payloads["lp"].tolist() == [0.5]
    assert got.payloads["file:x"] == b"ab"


def test_prefix_layout() -> None:
    data = encode_message(Message("response", 1, "hello", {}, {"x": torch.tensor([7], dtype=torch.int32)}))
    magic, h, n = struct.unpack("<4sIQ", data[:16])
    assert magic == b"TRPW" and n == 4 and len(data) == 16 + h + n
    assert data[-4:] == bytes([7, 0, 0, 0])


def test_header_check_names_the_field() -> None:
    ok = {"v": PROTOCOL_VERSION, "id": 1, "kind": "request", "op": "hello", "args": {}, "payloads": []}
    check_header(ok)
    with pytest.raises(ProtocolError, match="protocol version mismatch: the frame says v=2, this worker speaks v=1"):
        check_header({**ok, "v": 2})
    with pytest.raises(ProtocolError, match=r"header.payloads\[0\]: float32 \[3\] needs 12 bytes, length is 8"):
        check_header({**ok, "payloads": [{"name": "x", "dtype": "float32", "shape": [3], "offset": 0, "length": 8}]})
    with pytest.raises(ProtocolError, match="header.kind"):
        check_header({**ok, "kind": "reply"})
    with pytest.raises(ProtocolError, match="bad frame magic"):
        read_message(io.BytesIO(b"hello world, not a frame"))


def run_worker(frames: bytes) -> list[Message]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "troupe_worker", "--device", "cpu", "--threads", "1"], input=frames,
                         capture_output=True, env=env, timeout=60, check=False).stdout
    stream, replies = io.BytesIO(out), []
    while (m := read_message(stream)) is not None:
        replies.append(m)
    return replies


def test_worker_process_over_pipes() -> None:
    frames = b"".join(encode_message(m) for m in [
        Message("request", 1, "hello", {"protocol": PROTOCOL_VERSION}),
        Message("request", 2, "logprobs", {"policy": "nobody"}, {}),
        Message("request", 3, "hello", {"protocol": 99}),
        Message("request", 4, "shutdown", {}),
    ])
    hello, missing, mismatch, bye = run_worker(frames)
    assert hello.kind == "response" and hello.body["protocol"] == PROTOCOL_VERSION and hello.body["device"] == "cpu"
    assert missing.kind == "error" and missing.error["type"] == "ValueError"
    assert "no policy 'nobody'" in missing.error["message"]
    assert "Traceback (most recent call last)" in missing.error["traceback"]
    assert mismatch.kind == "error" and "the controller speaks v99, this worker v1" in mismatch.error["message"]
    assert (bye.kind, bye.id) == ("response", 4)


def test_worker_reports_a_malformed_frame_and_stops() -> None:
    good = encode_message(Message("request", 1, "hello", {"protocol": PROTOCOL_VERSION}))
    replies = run_worker(good + b"TRPW" + struct.pack("<IQ", 2, 0) + b"{]")
    assert replies[0].kind == "response"
    assert replies[1].kind == "error" and replies[1].id == 0 and "header is not UTF-8 JSON" in replies[1].error["message"]


def test_bench_cpu_smoke_runs_and_refuses_without_cuda() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    smoke = subprocess.run([sys.executable, "bench/bench.py", "--cpu-smoke"], cwd=ROOT, capture_output=True, env=env, timeout=120, check=False)
    assert smoke.returncode == 0, smoke.stderr.decode()
    import json

    row = json.loads(smoke.stdout.decode().strip().splitlines()[-1])
    assert row["size"] == "smoke" and row["learner_tokens_per_s"] > 0 and row["gen_tokens_per_s"] > 0
    if not torch.cuda.is_available():
        refused = subprocess.run([sys.executable, "bench/bench.py"], cwd=ROOT, capture_output=True, env=env, timeout=60, check=False)
        assert refused.returncode == 2 and b"CUDA is not available" in refused.stderr
