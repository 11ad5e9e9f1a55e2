"""safetensors from and to bytes. The `safetensors` package is used when importable; Debian's
python3-torch image has none, so the format (8-byte little-endian header length, JSON header with
dtype/shape/data_offsets, raw little-endian data) is also written out here — it is ~50 lines.
"""

from __future__ import annotations

import json
import struct
from typing import Optional

import torch

_DTYPES = {
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "F64": torch.float64,
    "I32": torch.int32,
    "I64": torch.int64,
}
_NAMES = {v: k for k, v in _DTYPES.items()}


class SafetensorsError(ValueError):
    pass


def save_bytes(tensors: dict[str, torch.Tensor], metadata: Optional[dict[str, str]] = None) -> bytes:
    """Tensors (any device, contiguous or not) → safetensors bytes, in the dict's order."""
    header: dict = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    chunks = []
    offset = 0
    for name, t in tensors.items():
        if t.dtype not in _NAMES:
            raise SafetensorsError(f'tensor "{name}": unsupported dtype {t.dtype}')
        t = t.detach().to("cpu").contiguous()
        # bf16 has no numpy dtype: view its bits as int16 to get the bytes.
        raw = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes()
        header[name] = {"dtype": _NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":"))
    text += " " * ((8 - (8 + len(text.encode())) % 8) % 8)  # data starts 8-byte aligned
    head = text.encode()
    return struct.pack("<Q", len(head)) + head + b"".join(chunks)


def save_file(tensors: dict[str, torch.Tensor], path: str, metadata: Optional[dict[str, str]] = None) -> None:
    """Tensors → a safetensors file, written tensor by tensor (only one tensor's bytes in memory at a
    time, on top of the tensors themselves)."""
    header: dict = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    offset = 0
    for name, t in tensors.items():
        if t.dtype not in _NAMES:
            raise SafetensorsError(f'tensor "{name}": unsupported dtype {t.dtype}')
        n = t.numel() * t.element_size()
        header[name] = {"dtype": _NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header, separators=(",", ":"))
    text += " " * ((8 - (8 + len(text.encode())) % 8) % 8)
    head = text.encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head)
        for t in tensors.values():
            t = t.detach().to("cpu").contiguous()
            f.write((t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes())


def load_file(path: str) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """A safetensors file → (tensors on CPU, metadata); the `safetensors` package's memory-mapped
    reader when importable."""
    try:
        from safetensors import safe_open
    except ImportError:
        with open(path, "rb") as f:
            return load_bytes(f.read())
    out = {}
    with safe_open(path, framework="pt") as f:
        meta = f.metadata() or {}
        for k in f.keys():
            out[k] = f.get_tensor(k)
    return out, meta


def load_bytes(data: bytes) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """safetensors bytes → (tensors on CPU, metadata); a malformed file raises naming the tensor."""
    if len(data) < 8:
        raise SafetensorsError(f"file is {len(data)} bytes, shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8:
        raise SafetensorsError(f"header length {n} exceeds the file ({len(data)} bytes)")
    try:
        header = json.loads(data[8 : 8 + n])
    except ValueError as e:
        raise SafetensorsError(f"header is not valid JSON: {e}") from None
    metadata = header.pop("__metadata__", {}) or {}
    body = memoryview(data)[8 + n :]
    out: dict[str, torch.Tensor] = {}
    for name, info in header.items():
        dtype = _DTYPES.get(info.get("dtype"))
        if dtype is None:
            raise SafetensorsError(f'tensor "{name}": unsupported dtype {info.get("dtype")!r}')
        begin, end = info["data_offsets"]
        shape = info["shape"]
        numel = 1
        for d in shape:
            numel *= d
        itemsize = torch.tensor([], dtype=dtype).element_size()
        if end - begin != numel * itemsize or end > len(body):
            raise SafetensorsError(f'tensor "{name}": data_offsets [{begin},{end}] do not fit {info["dtype"]} {shape}')
        buf = bytearray(body[begin:end])  # writable copy: torch.frombuffer warns on read-only memory
        if numel == 0:
            out[name] = torch.zeros(shape, dtype=dtype)
        elif dtype == torch.bfloat16:
            out[name] = torch.frombuffer(buf, dtype=torch.int16).view(torch.bfloat16).reshape(shape)
        else:
            out[name] = torch.frombuffer(buf, dtype=dtype).reshape(shape)
    return out, metadata
