"""Generation with a static KV cache and a fixed-shape decode step, optionally replayed as a CUDA graph.

The eager loop (generate.torch_generate) is the reference: every decode step there reads a growing
slice of the cache, cache[:, :, :P+t], so each step has new shapes and costs one Python pass plus
~15 kernel launches per layer. Here the shapes never change during a call:

    cache      K, V: [layers, B, kv_heads, S, head_dim], S = P + max_tokens (rounded up to `bucket`)
    prefill    the left-padded prompts [B, P] in one forward, writing slots [0, P) (as the eager path)
    decode t   token [B, 1] at position pos [B, 1] (pos = real tokens so far, padding not counted),
               written into slot s = P + t of every layer (index_copy_ with a device tensor s), then
               attention over ALL S slots under the additive mask
                   mask[b, s'] = 0     if valid[b, s'] and s' ≤ s     (valid: 0 on left padding)
                               = min   otherwise                      (the compute dtype's minimum)
               logits [B, V] = lm_head(RMSNorm(x))[:, -1]

Masked slots get softmax weight exp(min − max) = 0 exactly, so the step computes what the eager step
does (up to the summation order of a longer row: the float results may differ in the last bits).

`decode="graph"` (CUDA only): the decode step is captured once per (module, adapter, B, S, dtype) in a
torch.cuda.CUDAGraph and replayed with the new token/position/slot copied into its static input
buffers, so one step costs one graph launch instead of layers × ~15 kernel launches. The graph reads
the parameters' memory: in-place optimizer updates are seen, a replaced parameter tensor is not (the
graph cache is keyed on the parameters' data pointers and rebuilt when they change).

fp32 master weights under bf16 autocast (the trainer's default): autocast casts every Linear weight to
bf16 in every forward, and inside a CUDA graph that cast is replayed too (autocast's cast cache is off
during capture), so a step would read 4·N bytes and write and read 2·N more instead of reading 2·N.
The static paths therefore decode with a *shadow* of the model whose Linear weights and biases are
bf16 copies (refreshed from the masters at every call; embedding and norms shared). Autocast would
have cast exactly those tensors to exactly those values, so the tokens are the eager path's.

Sampling is shared with the eager path (sampling.sample, one uniform per request per step from the
request's own CPU generator), outside the graph, so seeds give the same tokens on both paths.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from typing import Any, Optional

import torch
from torch import nn

from .generate import DecodeOutputs, Generated, _null, left_pad
from .qwen import KVCache, QwenConfig, QwenForCausalLM, rope_cos_sin
from .sampling import SamplingConfig, draw_uniforms, request_generators, sample

#: the decode paths of the in-house model: "eager" (the reference), "static", "graph" (CUDA only),
#: "auto" (graph on CUDA with torch ≥ 2.0, eager elsewhere)
DECODE_MODES = ("auto", "eager", "static", "graph")


def graphs_supported(device: torch.device) -> tuple[bool, str]:
    """(whether the decode step can be captured as a CUDA graph here, why not)."""
    if device.type != "cuda":
        return False, f"CUDA graphs need a CUDA device (device is {device})"
    if not torch.cuda.is_available():
        return False, "torch.cuda.is_available() is False"
    major = int(torch.__version__.split(".")[0])
    if major < 2:
        return False, f"torch {torch.__version__} < 2.0"
    return True, ""


def resolve_decode(mode: str, device: torch.device) -> str:
    """The decode path a generate call runs: `auto` → graph where supported, else eager. Asking for
    `graph` where it is not supported is an error naming why."""
    if mode not in DECODE_MODES:
        raise ValueError(f"decode: expected one of {', '.join(DECODE_MODES)}, got {mode!r}")
    ok, why = graphs_supported(device)
    if mode == "auto":
        return "graph" if ok else "eager"
    if mode == "graph" and not ok:
        raise ValueError(f"decode=graph: {why}; use decode=static or eager")
    return mode


class StaticKVCache(KVCache):
    """One buffer per K and V, [layers, B, kv_heads, S, head_dim]; keys[i] / values[i] are views of layer i.

    Prefill (decode_slot is None) writes [length, length + T) and returns the filled views, exactly as
    KVCache. Decode (decode_slot a [1] long tensor on the device) writes the one new position into
    that slot with index_copy_ — no Python int in the shapes, so the step can be captured — and
    returns the whole buffer [B, kv_heads, S, head_dim]; the caller's mask hides unwritten slots."""

    def __init__(self, config: QwenConfig, batch: int, capacity: int, device: torch.device, dtype: torch.dtype) -> None:
        shape = (config.num_hidden_layers, batch, config.num_key_value_heads, capacity, config.head_dim)
        self.k_buffer = torch.zeros(shape, device=device, dtype=dtype)
        self.v_buffer = torch.zeros(shape, device=device, dtype=dtype)
        self.keys = list(self.k_buffer.unbind(0))
        self.values = list(self.v_buffer.unbind(0))
        self.length = 0
        self.capacity = capacity
        self.decode_slot: Optional[torch.Tensor] = None

    def update(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self.decode_slot is None:
            return super().update(layer, k, v)
        self.keys[layer].index_copy_(2, self.decode_slot, k.to(self.keys[layer].dtype))
        self.values[layer].index_copy_(2, self.decode_slot, v.to(self.values[layer].dtype))
        return self.keys[layer], self.values[layer]


class DecodeState:
    """The fixed-shape tensors of one decode loop: the graph's static inputs and output."""

    def __init__(self, model: QwenForCausalLM, batch: int, capacity: int, device: torch.device, dtype: torch.dtype) -> None:
        self.cache = StaticKVCache(model.config, batch, capacity, device, dtype)
        self.token = torch.zeros((batch, 1), dtype=torch.long, device=device)      # [B, 1] the token fed in
        self.position = torch.zeros((batch, 1), dtype=torch.long, device=device)   # [B, 1] its RoPE position
        self.slot = torch.zeros(1, dtype=torch.long, device=device)                # [1] the cache slot it fills
        self.valid = torch.zeros((batch, capacity), dtype=torch.bool, device=device)  # [B, S] False on left padding
        self.slots = torch.arange(capacity, device=device)                          # [S] 0..S-1
        self.cache.decode_slot = self.slot
        self.logits: Optional[torch.Tensor] = None  # [B, V] the step's output (compute dtype)
        self.graph: Any = None
        self.dtype = dtype


@torch.no_grad()
def decode_step(model: QwenForCausalLM, state: DecodeState) -> torch.Tensor:
    """One token per row at fixed shapes → next-token logits [B, V] in the compute dtype (see the
    module docstring). Not cast to float32 here: greedy decoding takes the argmax of these directly
    (the same token as the argmax of their exact float32 values), which saves writing and reading a
    [B, V] float32 tensor per step — 155 MB at B = 256 and Qwen's 151,936 ids."""
    cfg = model.config
    x = model.model.embed_tokens(state.token)                                        # [B, 1, H]
    cos, sin = rope_cos_sin(state.position, cfg.head_dim, cfg.rope_theta, x.dtype)   # [B, 1, head_dim]
    allowed = state.valid & (state.slots[None, :] <= state.slot)                     # [B, S]
    # additive mask [B, 1, 1, S]; attention() clamps it to the compute dtype's minimum
    mask = torch.zeros(allowed.shape, device=x.device, dtype=torch.float32).masked_fill(~allowed, torch.finfo(torch.float32).min)
    mask = mask[:, None, None, :]
    for i, layer in enumerate(model.model.layers):
        x, _ = layer(x, cos, sin, mask, (state.cache, i))
    return model.lm_head(model.model.norm(x))[:, -1, :]


class GraphCache:
    """Captured decode graphs with their static buffers, the `size` most recently used kept.
    Key: (id(module), id(adapter), B, S, dtype, the parameters' data pointers)."""

    def __init__(self, size: int = 2) -> None:
        self.size = size
        self.entries: "OrderedDict[tuple, tuple[DecodeState, Any]]" = OrderedDict()

    def get(self, key: tuple) -> Optional[DecodeState]:
        hit = self.entries.get(key)
        if hit is None:
            return None
        self.entries.move_to_end(key)
        return hit[0]

    def put(self, key: tuple, state: DecodeState, keep_alive: Any) -> None:
        """keep_alive: objects whose id() is in the key (the module, an adapter), held so that no other
        object gets the same id while the graph that bakes them in is cached."""
        self.entries[key] = (state, keep_alive)
        while len(self.entries) > self.size:
            self.entries.popitem(last=False)


GRAPHS = GraphCache()


class ShadowCache:
    """Low-precision shadows of fp32 models for decoding under autocast, the `size` most recent kept.

    shadow(model, dtype): a module tree sharing every parameter of `model` except the Linear weights
    and biases, which are `dtype` copies (a tied lm_head gets its own copy; the embedding stays
    shared). Each Linear of the shadow shares its forward-hook dict with the original, so LoRA hooks
    (lora.LoraHost), also ones attached later, run on the shadow too. The copies are refreshed in
    place at every call (their storage never moves, so a captured graph stays valid)."""

    def __init__(self, size: int = 2) -> None:
        self.size = size
        self.entries: "OrderedDict[tuple, tuple[nn.Module, nn.Module, list]]" = OrderedDict()

    def shadow(self, model: QwenForCausalLM, dtype: torch.dtype) -> QwenForCausalLM:
        key = (id(model), dtype)
        hit = self.entries.get(key)
        if hit is None:
            hit = (model, *_make_shadow(model, dtype))
            self.entries[key] = hit
            while len(self.entries) > self.size:
                self.entries.popitem(last=False)
        self.entries.move_to_end(key)
        _, shadow, pairs = hit
        with torch.no_grad():
            for low, master in pairs:
                low.copy_(master)
        return shadow  # type: ignore[return-value]


def _make_shadow(model: QwenForCausalLM, dtype: torch.dtype) -> tuple[nn.Module, list]:
    compiled, model.compiled_blocks = model.compiled_blocks, None
    try:
        memo = {id(p): p for p in model.parameters()}  # share every parameter: deepcopy copies the modules only
        shadow = copy.deepcopy(model, memo)
    finally:
        model.compiled_blocks = compiled
    pairs = []
    originals = dict(model.named_modules())
    for name, module in shadow.named_modules():
        if not isinstance(module, nn.Linear):
            continue
        original = originals[name]
        module._forward_hooks = original._forward_hooks  # the same dict: hooks attached later apply too
        for attr in ("weight", "bias"):
            master = getattr(original, attr)
            if master is None:
                continue
            low = nn.Parameter(master.detach().to(dtype), requires_grad=False)
            setattr(module, attr, low)
            pairs.append((low, master))
    return shadow, pairs


SHADOWS = ShadowCache()


def _capture(model: QwenForCausalLM, state: DecodeState, autocast: Any) -> None:
    """Warm up on a side stream (cuBLAS workspaces, lazy inits), then capture decode_step. The
    warm-up writes the current step's K/V into the current slot — the same values the real step
    writes — so it leaves the cache as the replay will."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            with autocast:
                decode_step(model, state)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        with autocast:
            state.logits = decode_step(model, state)
    state.graph = graph


def round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


@torch.no_grad()
def static_generate(model: QwenForCausalLM, prompts: list[list[int]], seeds: list[int], config: SamplingConfig,
                    pad_id: int, device: torch.device, autocast_dtype: "torch.dtype | None" = None,
                    use_graph: bool = False, graph_key: tuple = (), bucket: int = 64,
                    check_done_every: int = 8, shadow_weights: bool = True) -> list[Generated]:
    """Batched generation on a static cache (the semantics of generate.torch_generate: same positions,
    same sampler, same results). Knobs:
    - use_graph: replay the decode step as a CUDA graph (CUDA only; see resolve_decode);
    - graph_key: objects besides the shapes that select a captured graph, by identity (the engine
      passes the policy's LoRA adapter: a graph bakes in the adapter that was active at capture);
    - bucket: the cache length S is P + max_tokens rounded up to this, so calls with nearby prompt
      lengths reuse one captured graph;
    - check_done_every: decode steps between the host syncs that stop the loop once every row has
      finished (a finished row's later tokens are discarded, so this changes speed, not results);
    - shadow_weights: under autocast with fp32 weights, decode with bf16 copies of the Linear
      weights (ShadowCache: 2 bytes per Linear parameter more memory, the same tokens)."""
    if not isinstance(model, QwenForCausalLM):
        raise ValueError(f"decode=static/graph: needs the in-house model (troupe_worker.qwen), got {type(model).__name__}; use decode=eager")
    if bucket < 1 or check_done_every < 1:
        raise ValueError(f"static_generate: bucket and check_done_every must be ≥ 1, got {bucket}, {check_done_every}")
    B = len(prompts)
    generators = request_generators(seeds) if config.temperature > 0 else []
    ids, prompt_mask = left_pad(prompts, pad_id, device)
    P = ids.shape[1]
    S = round_up(P + config.max_tokens, bucket)
    use_autocast = autocast_dtype is not None and device.type == "cuda"
    dtype = autocast_dtype if use_autocast else next(model.parameters()).dtype
    autocast = torch.autocast("cuda", dtype=autocast_dtype) if use_autocast else _null()
    if use_autocast and shadow_weights and model.lm_head.weight.dtype != autocast_dtype:
        model = SHADOWS.shadow(model, autocast_dtype)  # type: ignore[arg-type]

    state: Optional[DecodeState] = None
    key: tuple = ()
    if use_graph:
        key = (id(model), *(id(o) for o in graph_key), B, S, dtype, tuple(p.data_ptr() for p in model.parameters()))
        state = GRAPHS.get(key)
    if state is None:
        state = DecodeState(model, B, S, device, dtype)
        fresh = True
    else:
        fresh = False
    cache = state.cache
    cache.length = 0
    # valid[b, s]: the prompt's real tokens, and every slot after the prompt (generated tokens)
    state.valid.zero_()
    state.valid[:, :P] = prompt_mask.bool()
    state.valid[:, P:] = True

    # prefill: the eager path's forward, writing slots [0, P) of the static cache
    cache.decode_slot = None
    positions = (prompt_mask.cumsum(-1) - 1).clamp(min=0)  # [B, P] real tokens before each slot
    with autocast:
        out = model(ids, attention_mask=prompt_mask, position_ids=positions, past_key_values=cache, use_cache=True)
    cache.decode_slot = state.slot
    logits = out.logits[:, -1, :]

    outputs = DecodeOutputs(B, config.max_tokens, config.stop_token_ids, pad_id, device)
    no_uniforms = torch.zeros(B, dtype=torch.float64)
    next_pos = positions[:, -1:] + 1  # [B, 1]
    for step in range(config.max_tokens):
        # temperature 0 is an argmax: exact on the compute dtype; sampling works on float32 as the eager path
        token, logprob = sample(logits if config.temperature == 0 else logits.float(), config,
                                draw_uniforms(generators) if generators else no_uniforms)
        outputs.record(step, token, logprob)
        if step == config.max_tokens - 1:
            break
        if (step + 1) % check_done_every == 0 and bool(outputs.done.all()):
            break
        # feed `token` at position next_pos into slot P + step
        state.token.copy_(token[:, None])
        state.position.copy_(next_pos)
        state.slot.fill_(P + step)
        next_pos = next_pos + 1
        if use_graph:
            if state.graph is None:
                _capture(model, state, autocast)
            state.graph.replay()
            logits = state.logits
        else:
            with autocast:
                logits = decode_step(model, state)
    if use_graph and fresh:
        GRAPHS.put(key, state, (model, graph_key))
    return outputs.results()
