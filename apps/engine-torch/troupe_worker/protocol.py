"""The controller ↔ worker message protocol (the TypeScript side is libs/engine-torch/src/protocol.ts;
the two must change together, and PROTOCOL_VERSION with them).

A frame, all integers little-endian:

    offset 0   4 bytes   magic b"TRPW"
           4   u32       H = header length in bytes
           8   u64       N = body length in bytes
          16   H bytes   header, UTF-8 JSON (schema below)
        16+H   N bytes   body: the payloads, back to back

Header:
    {"v": PROTOCOL_VERSION, "id": int ≥ 0, "kind": "request" | "response" | "error",
     "op": str,                                   # request: the operation; response/error: echoed
     "args" | "result": {...},                    # request args / response result (JSON, small)
     "error": {"type", "message", "traceback"},   # kind "error" only
     "payloads": [{"name": str, "dtype": "int32" | "float32" | "bytes",
                   "shape": [int, ...], "offset": int, "length": int}]}

Large arrays (token ids, log-probs, advantages, file bytes) are payloads — little-endian int32 or
float32 buffers, or raw bytes — never JSON number arrays. The controller validates headers with
zod; `check_header` is the equivalent hand-written check here.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Optional

import torch

PROTOCOL_VERSION = 1
MAGIC = b"TRPW"
PREFIX = struct.Struct("<4sIQ")  # magic, header length, body length
MAX_HEADER_BYTES = 16 * 1024 * 1024
KINDS = ("request", "response", "error")
DTYPES = {"int32": (torch.int32, 4), "float32": (torch.float32, 4), "bytes": (torch.uint8, 1)}


class ProtocolError(ValueError):
    """A malformed frame: the message names the field that is wrong."""


@dataclass
class Message:
    kind: str
    id: int
    op: str
    body: dict = field(default_factory=dict)  # args (request) or result (response)
    payloads: dict[str, Any] = field(default_factory=dict)  # name → torch.Tensor or bytes
    error: Optional[dict] = None


def check_header(header: Any) -> None:
    """Raises ProtocolError naming the first wrong field (mirrors FrameHeaderSchema in protocol.ts)."""
    if not isinstance(header, dict):
        raise ProtocolError("header: expected a JSON object")
    v = header.get("v")
    if v != PROTOCOL_VERSION:
        raise ProtocolError(
            f"protocol version mismatch: the frame says v={v!r}, this worker speaks v={PROTOCOL_VERSION} "
            "(update apps/engine-torch and @troupe/engine-torch together)"
        )
    if not isinstance(header.get("id"), int) or isinstance(header.get("id"), bool) or header["id"] < 0:
        raise ProtocolError(f"header.id: expected an integer ≥ 0, got {header.get('id')!r}")
    if header.get("kind") not in KINDS:
        raise ProtocolError(f"header.kind: expected one of {KINDS}, got {header.get('kind')!r}")
    if not isinstance(header.get("op"), str) or not header["op"]:
        raise ProtocolError(f"header.op: expected a non-empty string, got {header.get('op')!r}")
    for key in ("args", "result"):
        if key in header and not isinstance(header[key], dict):
            raise ProtocolError(f"header.{key}: expected an object")
    if header["kind"] == "error":
        err = header.get("error")
        if not isinstance(err, dict) or not all(isinstance(err.get(k), str) for k in ("type", "message", "traceback")):
            raise ProtocolError("header.error: expected {type, message, traceback} strings")
    payloads = header.get("payloads", [])
    if not isinstance(payloads, list):
        raise ProtocolError("header.payloads: expected a list")
    for i, p in enumerate(payloads):
        where = f"header.payloads[{i}]"
        if not isinstance(p, dict) or not isinstance(p.get("name"), str):
            raise ProtocolError(f"{where}.name: expected a string")
        if p.get("dtype") not in DTYPES:
            raise ProtocolError(f"{where}.dtype: expected one of {tuple(DTYPES)}, got {p.get('dtype')!r}")
        shape = p.get("shape")
        if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
            raise ProtocolError(f"{where}.shape: expected a list of integers ≥ 0, got {shape!r}")
        for k in ("offset", "length"):
            if not isinstance(p.get(k), int) or p[k] < 0:
                raise ProtocolError(f"{where}.{k}: expected an integer ≥ 0, got {p.get(k)!r}")
        numel = 1
        for d in shape:
            numel *= d
        if numel * DTYPES[p["dtype"]][1] != p["length"]:
            raise ProtocolError(f"{where}: {p['dtype']} {shape} needs {numel * DTYPES[p['dtype']][1]} bytes, length is {p['length']}")


def _read_exact(stream: BinaryIO, n: int) -> Optional[bytes]:
    chunks = []
    got = 0
    while got < n:
        chunk = stream.read(n - got)
        if not chunk:
            if got == 0:
                return None
            raise ProtocolError(f"stream ended inside a frame ({got} of {n} bytes)")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_message(stream: BinaryIO) -> Optional[Message]:
    """The next frame, or None at a clean end of stream (the controller closed the pipe)."""
    prefix = _read_exact(stream, PREFIX.size)
    if prefix is None:
        return None
    magic, header_len, body_len = PREFIX.unpack(prefix)
    if magic != MAGIC:
        raise ProtocolError(f"bad frame magic {magic!r}, expected {MAGIC!r} (is something else writing to the pipe?)")
    if header_len > MAX_HEADER_BYTES:
        raise ProtocolError(f"header of {header_len} bytes exceeds {MAX_HEADER_BYTES}")
    raw = _read_exact(stream, header_len) or b""
    body = (_read_exact(stream, body_len) or b"") if body_len else b""
    try:
        header = json.loads(raw.decode("utf-8"))
    except ValueError as e:
        raise ProtocolError(f"header is not UTF-8 JSON: {e}") from None
    check_header(header)
    payloads: dict[str, Any] = {}
    for p in header.get("payloads", []):
        end = p["offset"] + p["length"]
        if end > len(body):
            raise ProtocolError(f"payload {p['name']!r} runs past the body ({end} > {len(body)})")
        chunk = body[p["offset"] : end]
        if p["dtype"] == "bytes":
            payloads[p["name"]] = bytes(chunk)
        else:
            dtype = DTYPES[p["dtype"]][0]
            t = torch.frombuffer(bytearray(chunk), dtype=dtype) if chunk else torch.zeros(0, dtype=dtype)
            payloads[p["name"]] = t.reshape(p["shape"])
    body_key = "args" if header["kind"] == "request" else "result"
    return Message(kind=header["kind"], id=header["id"], op=header["op"], body=header.get(body_key, {}),
                   payloads=payloads, error=header.get("error"))


def encode_message(msg: Message) -> bytes:
    descriptors = []
    chunks = []
    offset = 0
    for name, value in msg.payloads.items():
        if isinstance(value, (bytes, bytearray)):
            raw, dtype, shape = bytes(value), "bytes", [len(value)]
        else:
            t = value.detach().to("cpu").contiguous()
            if t.dtype.is_floating_point:
                t, dtype = t.to(torch.float32), "float32"
            else:
                t, dtype = t.to(torch.int32), "int32"
            raw, shape = t.numpy().tobytes(), list(t.shape)
        descriptors.append({"name": name, "dtype": dtype, "shape": shape, "offset": offset, "length": len(raw)})
        chunks.append(raw)
        offset += len(raw)
    header: dict[str, Any] = {"v": PROTOCOL_VERSION, "id": msg.id, "kind": msg.kind, "op": msg.op, "payloads": descriptors}
    if msg.kind == "request":
        header["args"] = msg.body
    elif msg.kind == "response":
        header["result"] = msg.body
    else:
        header["error"] = msg.error
    head = json.dumps(header, separators=(",", ":"), allow_nan=False).encode("utf-8")
    return PREFIX.pack(MAGIC, len(head), offset) + head + b"".join(chunks)


def write_message(stream: BinaryIO, msg: Message) -> None:
    stream.write(encode_message(msg))
    stream.flush()
