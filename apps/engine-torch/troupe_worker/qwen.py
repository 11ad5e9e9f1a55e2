"""A self-contained Qwen2 / Qwen3 decoder in plain torch (nanoGPT-style), with the exact module and
parameter names of HF `transformers` (`Qwen2ForCausalLM`, `Qwen3ForCausalLM`), so `state_dict()`
keys are the HF tensor names (`model.layers.0.self_attn.q_proj.weight`, ...). Used when
`transformers` is not importable (Debian's python3-torch has none); on a GPU box the tests check it
against `transformers` logit for logit. The same model: the float64 reference the tests compare
against (libs/engine/src/qwen-reference.ts, `@troupe/engine/reference`) and the embedded engine's
ONNX graph nodes (libs/engine-onnx/src/model/, starting at decoder.ts).

    x₀ = E[tokens]
    per layer:  x = x + o_proj(attn(RoPE(qk_norm(q, k)), v))      on h = RMSNorm(x)
                x = x + down(silu(gate(h)) ⊙ up(h))                  on h = RMSNorm(x)
    logits = lm_head(RMSNorm(x))                                     (lm_head = E when tied)

qwen2: q/k/v biases, no o bias, head_dim = hidden / heads.  qwen3: biases iff attention_bias,
RMSNorm over head_dim on q and k before RoPE, head_dim its own field.

The attention takes an optional additive mask (left-padded generation) and an optional KV cache
(a list of (k, v) per layer, each [batch, kv_heads, time, head_dim]).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any, Optional

import torch
import torch.nn.functional as F
from torch import nn

# Fields that select a feature this implementation does not have: refused with the field named.
_UNSUPPORTED = {
    "rope_scaling": "RoPE scaling (YaRN, linear, dynamic, ...) is not supported",
    "quantization_config": "quantized checkpoints are not supported",
}


class ConfigError(ValueError):
    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(f"config.json: {field_name}: {message}")
        self.field = field_name


@dataclass
class QwenConfig:
    model_type: str
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    max_position_embeddings: int = 32768
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    initializer_range: float = 0.02
    bos_token_id: Optional[int] = None
    eos_token_id: Any = None
    pad_token_id: Optional[int] = None
    torch_dtype: str = "float32"
    extra: dict = field(default_factory=dict)

    @property
    def qkv_bias(self) -> bool:
        return self.model_type == "qwen2" or self.attention_bias

    @property
    def o_bias(self) -> bool:
        return self.model_type == "qwen3" and self.attention_bias

    @property
    def qk_norm(self) -> bool:
        return self.model_type == "qwen3"

    def eos_ids(self) -> list[int]:
        eos = self.eos_token_id
        if eos is None:
            return []
        return [eos] if isinstance(eos, int) else list(eos)

    def to_hf_json(self) -> dict:
        """config.json content that transformers loads (the same fields the TS side writes)."""
        out = {k: v for k, v in asdict(self).items() if k != "extra"}
        out = {**self.extra, **out}
        out["architectures"] = ["Qwen2ForCausalLM" if self.model_type == "qwen2" else "Qwen3ForCausalLM"]
        out.update(hidden_act="silu", attention_dropout=0.0, rope_scaling=None, use_sliding_window=False)
        if self.model_type == "qwen2":
            out.pop("attention_bias", None)
        return out


def parse_config(raw: dict) -> QwenConfig:
    """HF config.json → QwenConfig; a wrong or unsupported field raises ConfigError naming it."""
    if not isinstance(raw, dict):
        raise ConfigError("(root)", "expected a JSON object")
    model_type = raw.get("model_type")
    if model_type not in ("qwen2", "qwen3"):
        raise ConfigError("model_type", f'unsupported {json.dumps(model_type)} (supported: "qwen2", "qwen3")')
    for name, why in _UNSUPPORTED.items():
        if raw.get(name) is not None:
            raise ConfigError(name, why)
    if raw.get("hidden_act", "silu") != "silu":
        raise ConfigError("hidden_act", f'only "silu" is supported, got {json.dumps(raw["hidden_act"])}')
    if raw.get("use_sliding_window") is True:
        raise ConfigError("use_sliding_window", "sliding-window attention is not supported")

    def positive_int(name: str, default: Any = None) -> int:
        value = raw.get(name, default)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ConfigError(name, f"expected a positive integer, got {json.dumps(value)}")
        return value

    hidden = positive_int("hidden_size")
    heads = positive_int("num_attention_heads")
    kv_heads = positive_int("num_key_value_heads", heads)
    default_head_dim = hidden // heads if hidden % heads == 0 else None
    head_dim = positive_int("head_dim", default_head_dim) if model_type == "qwen3" else default_head_dim
    if head_dim is None:
        raise ConfigError("hidden_size", f"not divisible by num_attention_heads = {heads}")
    if heads % kv_heads != 0:
        raise ConfigError("num_key_value_heads", f"{kv_heads} does not divide num_attention_heads = {heads}")
    if head_dim % 2 != 0:
        raise ConfigError("head_dim", f"RoPE needs an even head_dim, got {head_dim}")
    rope = raw.get("rope_parameters") or {}
    known = set(QwenConfig.__dataclass_fields__) - {"extra"}
    return QwenConfig(
        model_type=model_type,
        vocab_size=positive_int("vocab_size"),
        hidden_size=hidden,
        intermediate_size=positive_int("intermediate_size"),
        num_hidden_layers=positive_int("num_hidden_layers"),
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=head_dim,
        rms_norm_eps=float(raw.get("rms_norm_eps", 1e-6)),
        rope_theta=float(raw.get("rope_theta", rope.get("rope_theta", 10000.0))),
        max_position_embeddings=positive_int("max_position_embeddings", 32768),
        tie_word_embeddings=bool(raw.get("tie_word_embeddings", False)),
        attention_bias=True if model_type == "qwen2" else bool(raw.get("attention_bias", False)),
        initializer_range=float(raw.get("initializer_range", 0.02)),
        bos_token_id=raw.get("bos_token_id"),
        eos_token_id=raw.get("eos_token_id"),
        pad_token_id=raw.get("pad_token_id"),
        torch_dtype=str(raw.get("torch_dtype", raw.get("dtype", "float32"))),
        extra={k: v for k, v in raw.items() if k not in known},
    )


class RMSNorm(nn.Module):
    """RMSNorm(x) = x / √(mean(x²) + eps) · w, computed in float32 as HF does."""

    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.variance_epsilon = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * x.to(dtype)


def rope_cos_sin(positions: torch.Tensor, head_dim: int, theta: float, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin [batch, time, head_dim] for integer positions [batch, time] (HF layout: angles repeated twice)."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=positions.device, dtype=torch.float32) / head_dim))
    angles = positions.float()[..., None] * inv_freq  # [B, T, D/2]
    emb = torch.cat([angles, angles], dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x [B, heads, T, D]; pairs (x_i, x_{i+D/2}) rotate by position · θ^(−2i/D)."""
    return x * cos[:, None] + rotate_half(x) * sin[:, None]


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: Optional[torch.Tensor]) -> torch.Tensor:
    """softmax(q kᵀ/√d + mask) v with q [B,H,T,D], k/v [B,KV,S,D] (H a multiple of KV: grouped-query
    attention), additive mask [B,1,T,S] or None for plain causal attention over T = S.

    The mask is clamped to the compute dtype's own minimum: float32's minimum becomes −∞ in bf16, and
    a padding query that may read nothing then gets softmax(−∞…) = NaN, which spreads."""
    group = q.shape[1] // k.shape[1]
    if mask is not None:
        mask = mask.clamp(min=torch.finfo(q.dtype).min).to(q.dtype)
    if mask is not None and group > 1 and q.shape[2] == 1:
        # Decoding one token: fold the query heads of a group into the time axis, so the cache is
        # read in place instead of copied `group` times (repeat_interleave) for every new token.
        B, H, _, D = q.shape
        out = _attend(q.reshape(B, k.shape[1], group, D), k, v, mask.expand(B, 1, group, mask.shape[-1]))
        return out.reshape(B, H, 1, D)
    if group > 1:
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
    return _attend(q, k, v, mask)


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: Optional[torch.Tensor]) -> torch.Tensor:
    if hasattr(F, "scaled_dot_product_attention"):  # torch ≥ 2.0: fused kernels
        if mask is None:
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    if mask is None:
        T = q.shape[2]
        mask = torch.zeros(T, T, dtype=q.dtype, device=q.device).masked_fill(
            ~torch.ones(T, T, dtype=torch.bool, device=q.device).tril(), torch.finfo(q.dtype).min)
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1]) + mask
    return torch.softmax(scores.float(), dim=-1).to(q.dtype) @ v


class KVCache:
    """A preallocated cache, [batch, kv_heads, capacity, head_dim] per layer: each step writes its new
    keys and values in place (no torch.cat of the whole cache per token). `length` positions are filled."""

    def __init__(self, config: "QwenConfig", batch: int, capacity: int, device: torch.device, dtype: torch.dtype) -> None:
        shape = (batch, config.num_key_value_heads, capacity, config.head_dim)
        self.keys = [torch.zeros(shape, device=device, dtype=dtype) for _ in range(config.num_hidden_layers)]
        self.values = [torch.zeros(shape, device=device, dtype=dtype) for _ in range(config.num_hidden_layers)]
        self.length = 0
        self.capacity = capacity

    def update(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Writes k/v [B, KV, T, D] after the filled part; returns every position so far (views)."""
        T = k.shape[2]
        end = self.length + T
        if end > self.capacity:
            raise ValueError(f"KV cache: {end} positions exceed its capacity {self.capacity}")
        self.keys[layer][:, :, self.length : end] = k
        self.values[layer][:, :, self.length : end] = v
        return self.keys[layer][:, :, :end], self.values[layer][:, :, :end]


class Qwen2Attention(nn.Module):
    def __init__(self, config: QwenConfig) -> None:
        super().__init__()
        D, H = config.head_dim, config.hidden_size
        self.heads, self.kv_heads, self.head_dim = config.num_attention_heads, config.num_key_value_heads, D
        self.q_proj = nn.Linear(H, self.heads * D, bias=config.qkv_bias)
        self.k_proj = nn.Linear(H, self.kv_heads * D, bias=config.qkv_bias)
        self.v_proj = nn.Linear(H, self.kv_heads * D, bias=config.qkv_bias)
        self.o_proj = nn.Linear(self.heads * D, H, bias=config.o_bias)
        if config.qk_norm:
            self.q_norm = RMSNorm(D, config.rms_norm_eps)
            self.k_norm = RMSNorm(D, config.rms_norm_eps)
        self.qk_norm = config.qk_norm

    def forward(self, h: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: Optional[torch.Tensor],
                cache: Any = None) -> tuple[torch.Tensor, Any]:
        """cache: None, a (k, v) pair of the earlier positions (returned extended), or
        (KVCache, layer index) — written in place."""
        B, T, _ = h.shape
        q = self.q_proj(h).view(B, T, self.heads, self.head_dim)
        k = self.k_proj(h).view(B, T, self.kv_heads, self.head_dim)
        v = self.v_proj(h).view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)
        if self.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        q = apply_rope(q.transpose(1, 2), cos, sin)
        k = apply_rope(k.transpose(1, 2), cos, sin)
        if isinstance(cache, tuple) and isinstance(cache[0], KVCache):
            k, v = cache[0].update(cache[1], k, v)
        elif cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        new_cache = (k, v)
        # query head j reads kv head ⌊j / group⌋ (grouped-query attention, inside `attention`)
        out = attention(q, k, v, mask).transpose(1, 2).reshape(B, T, self.heads * self.head_dim)
        return self.o_proj(out), new_cache


class Qwen2MLP(nn.Module):
    def __init__(self, config: QwenConfig) -> None:
        super().__init__()
        H, I = config.hidden_size, config.intermediate_size
        self.gate_proj = nn.Linear(H, I, bias=False)
        self.up_proj = nn.Linear(H, I, bias=False)
        self.down_proj = nn.Linear(I, H, bias=False)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class Qwen2DecoderLayer(nn.Module):
    def __init__(self, config: QwenConfig) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.self_attn = Qwen2Attention(config)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.mlp = Qwen2MLP(config)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: Optional[torch.Tensor],
                cache: Any = None) -> tuple[torch.Tensor, Any]:
        a, new_cache = self.self_attn(self.input_layernorm(x), cos, sin, mask, cache)
        x = x + a
        x = x + self.mlp(self.post_attention_layernorm(x))
        return x, new_cache


class Qwen2Model(nn.Module):
    def __init__(self, config: QwenConfig) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList([Qwen2DecoderLayer(config) for _ in range(config.num_hidden_layers)])
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)


class CausalLMOutput:
    """The two fields of HF's CausalLMOutputWithPast the engine reads."""

    def __init__(self, logits: torch.Tensor, past_key_values: Optional[list]) -> None:
        self.logits = logits
        self.past_key_values = past_key_values


class QwenForCausalLM(nn.Module):
    """Qwen2ForCausalLM / Qwen3ForCausalLM with HF parameter names and a minimal HF-like forward."""

    def __init__(self, config: QwenConfig) -> None:
        super().__init__()
        self.config = config
        self.model = Qwen2Model(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight
        self.gradient_checkpointing = False
        #: torch.compile'd wrappers of the decoder blocks (compile_blocks), used with gradients on only;
        #: a plain list, so state_dict keys stay the HF names
        self.compiled_blocks: Optional[list] = None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """HF's _init_weights: matrices ~ N(0, initializer_range²), biases 0, norms 1."""
        std = self.config.initializer_range
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, mean=0.0, std=std)
                if isinstance(m, nn.Linear) and m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, RMSNorm):
                nn.init.ones_(m.weight)

    def gradient_checkpointing_enable(self, gradient_checkpointing_kwargs: Optional[dict] = None) -> None:
        """Always non-reentrant (the kwargs are accepted for transformers' signature): reentrant
        checkpointing gives no gradient to a LoRA adapter on a frozen base, whose checkpointed
        inputs do not require grad."""
        self.gradient_checkpointing = True

    def compile_blocks(self) -> None:
        """torch.compile each decoder block for train steps (forward + backward): fuses the RMSNorm,
        RoPE and SwiGLU elementwise chains and the autocast casts. The blocks share one code object,
        so one compilation serves every layer. Passes without gradients (generation, log-probs) keep
        the plain blocks: their shapes change every call and would recompile."""
        if not hasattr(torch, "compile"):
            raise ValueError(f"compile_blocks: torch.compile needs torch ≥ 2.0, this is torch {torch.__version__}")
        self.compiled_blocks = [torch.compile(layer, dynamic=True) for layer in self.model.layers]

    def hidden_states(self, input_ids: torch.Tensor, attention_mask: Optional[torch.Tensor] = None,
                      position_ids: Optional[torch.Tensor] = None, past_key_values: Any = None,
                      use_cache: bool = False) -> tuple[torch.Tensor, Optional[list]]:
        """The final normed hidden states [B, T, H] (before lm_head) and the new cache."""
        B, T = input_ids.shape
        if isinstance(past_key_values, KVCache):
            past = past_key_values.length
        else:
            past = 0 if past_key_values is None else past_key_values[0][0].shape[2]
        device = input_ids.device
        if position_ids is None:
            position_ids = torch.arange(past, past + T, device=device).expand(B, T)
        x = self.model.embed_tokens(input_ids)
        cos, sin = rope_cos_sin(position_ids, self.config.head_dim, self.config.rope_theta, x.dtype)
        # Right-padded (or unpadded) batches without a cache need no mask: causal attention alone.
        plain = attention_mask is None and past == 0
        mask = None if plain else causal_mask(B, T, past, attention_mask, device, x.dtype)
        new_caches = []
        compiled = self.compiled_blocks if self.compiled_blocks is not None and torch.is_grad_enabled() and past_key_values is None else None
        for i, layer in enumerate(self.model.layers):
            if compiled is not None:
                layer = compiled[i]
            if isinstance(past_key_values, KVCache):
                cache: Any = (past_key_values, i)
            else:
                cache = None if past_key_values is None else past_key_values[i]
            if self.gradient_checkpointing and self.training and cache is None:
                from torch.utils.checkpoint import checkpoint

                x, kv = checkpoint(layer, x, cos, sin, mask, None, use_reentrant=False)
            else:
                x, kv = layer(x, cos, sin, mask, cache)
            if use_cache:
                new_caches.append(kv)
        if isinstance(past_key_values, KVCache):
            past_key_values.length += T
            return self.model.norm(x), past_key_values  # type: ignore[return-value]
        return self.model.norm(x), (new_caches if use_cache else None)

    def forward(self, input_ids: torch.Tensor, attention_mask: Optional[torch.Tensor] = None,
                position_ids: Optional[torch.Tensor] = None, past_key_values: Any = None,
                use_cache: bool = False) -> CausalLMOutput:
        """input_ids [B, T]; attention_mask [B, past + T] (1 = real token, 0 = padding) covers the cache
        too; position_ids [B, T] default to past..past+T−1; past_key_values: a list of (k, v) per
        layer, or a KVCache (updated in place). Returns logits [B, T, V]."""
        h, cache = self.hidden_states(input_ids, attention_mask, position_ids, past_key_values, use_cache)
        return CausalLMOutput(self.lm_head(h), cache)


def causal_mask(B: int, T: int, past: int, attention_mask: Optional[torch.Tensor], device: torch.device,
                dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Additive mask [B, 1, T, past+T]: 0 where query t may read key s (s ≤ past + t and s is not
    padding), the dtype's most negative finite number elsewhere. Finite rather than −inf (and the
    minimum of `dtype`, not float32's, which is −inf in bf16) so that a padding query that may read
    nothing gets a uniform (ignored) row instead of NaN."""
    S = past + T
    allowed = torch.ones(T, S, dtype=torch.bool, device=device).tril(diagonal=past)[None, None]
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :S].bool()
    return torch.zeros(allowed.shape, device=device, dtype=dtype).masked_fill(~allowed, torch.finfo(dtype).min)
