"""The torch Qwen implementation, generation, training and checkpoints of the engine, on CPU."""

import copy
import importlib.util
import json

import pytest
import torch
from conftest import make_engine, tiny_config

from troupe_worker import qwen
from troupe_worker.generate import torch_generate
from troupe_worker.safetensors_io import load_bytes, save_bytes
from troupe_worker.sampling import SamplingConfig


def hf_names(model_type: str, tied: bool, layers: int = 2) -> list[str]:
    names = ["model.embed_tokens.weight"]
    for i in range(layers):
        p = f"model.layers.{i}"
        names += [f"{p}.input_layernorm.weight", f"{p}.self_attn.q_proj.weight"]
        bias = model_type == "qwen2"
        if bias:
            names.append(f"{p}.self_attn.q_proj.bias")
        names.append(f"{p}.self_attn.k_proj.weight")
        if bias:
            names.append(f"{p}.self_attn.k_proj.bias")
        names.append(f"{p}.self_attn.v_proj.weight")
        if bias:
            names.append(f"{p}.self_attn.v_proj.bias")
        names.append(f"{p}.self_attn.o_proj.weight")
        if model_type == "qwen3":
            names += [f"{p}.self_attn.q_norm.weight", f"{p}.self_attn.k_norm.weight"]
        names += [f"{p}.post_attention_layernorm.weight", f"{p}.mlp.gate_proj.weight", f"{p}.mlp.up_proj.weight", f"{p}.mlp.down_proj.weight"]
    names.append("model.norm.weight")
    if not tied:
        names.append("lm_head.weight")
    return names


@pytest.mark.parametrize("model_type,tied", [("qwen2", False), ("qwen3", True)])
def test_parameter_names_are_hf_names(model_type: str, tied: bool) -> None:
    from troupe_worker.models import hf_state_dict

    cfg = qwen.parse_config(tiny_config(model_type, tied))
    model = qwen.QwenForCausalLM(cfg)
    assert list(hf_state_dict(model, cfg)) == hf_names(model_type, tied)


def test_config_errors_name_the_field() -> None:
    with pytest.raises(qwen.ConfigError, match="model_type"):
        qwen.parse_config({**tiny_config(), "model_type": "llama"})
    with pytest.raises(qwen.ConfigError, match="rope_scaling"):
        qwen.parse_config({**tiny_config(), "rope_scaling": {"type": "yarn"}})
    with pytest.raises(qwen.ConfigError, match="num_key_value_heads: 3 does not divide"):
        qwen.parse_config({**tiny_config(), "num_key_value_heads": 3})


def test_kv_cache_matches_full_forward_with_left_padding() -> None:
    torch.manual_seed(0)
    model = qwen.QwenForCausalLM(qwen.parse_config(tiny_config("qwen2", False))).eval()
    seq = torch.tensor([[5, 9, 3, 7, 11, 4]])
    full = model(seq).logits
    # prefill 3 tokens behind 2 pads, then 3 cached steps
    ids = torch.tensor([[0, 0, 5, 9, 3]])
    mask = torch.tensor([[0, 0, 1, 1, 1]])
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    out = model(ids, attention_mask=mask, position_ids=pos, use_cache=True)
    got = [out.logits[:, -1]]
    cache = out.past_key_values
    for k, tok in enumerate([7, 11, 4]):
        mask = torch.cat([mask, torch.ones(1, 1, dtype=mask.dtype)], dim=1)
        step = model(torch.tensor([[tok]]), attention_mask=mask, position_ids=torch.tensor([[3 + k]]), past_key_values=cache, use_cache=True)
        cache = step.past_key_values
        got.append(step.logits[:, -1])
    torch.testing.assert_close(torch.cat(got), full[0, 2:], rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="transformers is not installed (Debian's python3-torch image)")
@pytest.mark.parametrize("model_type,tied", [("qwen2", False), ("qwen3", True)])
def test_matches_transformers(model_type: str, tied: bool) -> None:
    import transformers

    cfg = qwen.parse_config(tiny_config(model_type, tied))
    ours = qwen.QwenForCausalLM(cfg).eval()
    hf = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**cfg.to_hf_json())).eval()
    missing, unexpected = hf.load_state_dict(ours.state_dict(), strict=False)
    assert not [m for m in missing if "rotary" not in m] and not unexpected
    ids = torch.randint(0, cfg.vocab_size, (2, 9))
    torch.testing.assert_close(ours(ids).logits, hf(ids).logits, rtol=1e-4, atol=1e-4)


def test_generation_loop_matches_greedy_recompute() -> None:
    engine = make_engine("qwen3")
    model = engine.models["m"].module
    prompts = [[5, 6, 7], [9]]
    greedy = SamplingConfig(temperature=0, max_tokens=5)
    results = torch_generate(model, prompts, [0, 1], greedy, 0, torch.device("cpu"))
    for prompt, r in zip(prompts, results):
        ids = list(prompt)
        for _ in range(5):  # the same tokens without any cache or padding
            ids.append(int(model(torch.tensor([ids])).logits[0, -1].argmax()))
        assert r.token_ids == ids[len(prompt) :]
        assert r.finish_reason == "length"


def test_stop_tokens_and_max_tokens() -> None:
    engine = make_engine("qwen3")
    model = engine.models["m"].module
    free = torch_generate(model, [[5, 6]], [3], SamplingConfig(max_tokens=8), 0, torch.device("cpu"))[0]
    stop = free.token_ids[3]
    first = free.token_ids.index(stop)
    cut = torch_generate(model, [[5, 6]], [3], SamplingConfig(max_tokens=8, stop_token_ids=(stop,)), 0, torch.device("cpu"))[0]
    assert cut.token_ids == free.token_ids[: first + 1]
    assert cut.finish_reason == "stop"
    assert len(free.token_ids) == 8


def batch_payloads(seqs: list[tuple[list[int], list[int]]], advantages: list[float]) -> dict:
    flat = [t for p, c in seqs for t in p + c]
    n = sum(len(c) for _, c in seqs)
    return {
        "tokens": torch.tensor(flat, dtype=torch.int32),
        "prompt_lengths": torch.tensor([len(p) for p, _ in seqs], dtype=torch.int32),
        "completion_lengths": torch.tensor([len(c) for _, c in seqs], dtype=torch.int32),
        "old_logprobs": torch.linspace(-4.0, -3.0, n),
        "advantages": torch.tensor(advantages),
    }


SEQS = [([3, 4, 5], [6, 7]), ([8], [9, 10, 11, 12]), ([13, 14], [15])]
STEP = {"loss": {"aggregation": "sequence-mean", "entropyCoef": 0.01}, "optimizer": {"lr": 1e-2, "eps": 1e-4, "maxGradNorm": 0.5}}


def one_step(**micro_batching: int) -> tuple[dict, dict[str, torch.Tensor]]:
    """One train_step of a fresh engine on SEQS with these micro-batch arguments: metrics and weights."""
    e = make_engine()
    e.add_policy({"id": "p", "model": "m", "copy": False})
    metrics = e.train_step({**STEP, "policy": "p", **micro_batching}, batch_payloads(SEQS, [1.0, -0.5, 2.0]))
    return metrics, {k: v.clone() for k, v in e.policies["p"].module.state_dict().items()}


def assert_same_update(a: tuple[dict, dict[str, torch.Tensor]], b: tuple[dict, dict[str, torch.Tensor]]) -> None:
    (ma, wa), (mb, wb) = a, b
    assert ma["loss"] == pytest.approx(mb["loss"], rel=1e-5)
    assert ma["gradNorm"] == pytest.approx(mb["gradNorm"], rel=1e-5)
    for k in wa:
        torch.testing.assert_close(wa[k], wb[k], rtol=1e-5, atol=1e-6)


def test_micro_batching_accumulates_to_the_full_batch_update() -> None:
    assert_same_update(one_step(microBatchSize=3), one_step(microBatchSize=1))


def test_a_token_budget_splits_micro_batches_and_keeps_the_update() -> None:
    # Rows sorted longest first: 5 (row 0), 5 (row 1), 3 (row 2) tokens. A budget of 6 padded tokens
    # holds one row per micro-batch; of 10, rows 0 + 1 then row 2.
    from troupe_worker import distributed
    lengths = [len(p) + len(c) for p, c in SEQS]
    rows = distributed.shard_rows(lengths, 1, 0)
    assert distributed.micro_batches(rows, lengths, 8, 6) == [[0], [1], [2]]
    assert distributed.micro_batches(rows, lengths, 8, 10) == [[0, 1], [2]]
    assert distributed.micro_batches(rows, lengths, 1, None) == [[0], [1], [2]]
    with pytest.raises(ValueError, match="sequence 0 has 5 tokens, more than maxTokensPerMicroBatch 4"):
        distributed.micro_batches(rows, lengths, 8, 4)
    # Two ranks: rank 0 gets rows 0 and 2, rank 1 row 1 and a padding row; both run as many passes.
    plans = [distributed.rank_micro_batches(lengths, 2, r, 8, 6) for r in (0, 1)]
    assert plans == [[[0], [2]], [[1], [None]]]
    assert_same_update(one_step(microBatchSize=8, maxTokensPerMicroBatch=6), one_step(microBatchSize=8))


def test_schedule_and_clipping_metrics() -> None:
    e = make_engine()
    e.add_policy({"id": "p", "model": "m", "copy": False})
    opt = {"lr": 1e-3, "warmupSteps": 2, "schedule": "cosine", "totalSteps": 4, "minLrRatio": 0.1}
    lrs = [e.train_step({"loss": {}, "optimizer": opt, "policy": "p", "microBatchSize": 8}, batch_payloads(SEQS, [1, 1, 1]))["lr"] for _ in range(4)]
    # warm-up 1/2, 2/2, then cosine from the peak: progress 0 → 1.0, progress 1/2 → 0.1 + 0.9·0.5
    assert lrs == pytest.approx([5e-4, 1e-3, 1e-3, 1e-3 * 0.55])


def test_save_load_round_trip_continues_identically() -> None:
    e = make_engine()
    e.add_policy({"id": "p", "model": "m", "copy": False})
    args = {**STEP, "policy": "p", "microBatchSize": 2}
    e.train_step(args, batch_payloads(SEQS, [1.0, -0.5, 2.0]))
    files = e.save({"policy": "p"})["bytes"]
    assert json.loads(files["trainer_state.json"]) == {"format_version": 1, "optimizer_step": 1}
    tensors, meta = load_bytes(files["optimizer.safetensors"])
    assert meta == {"format": "troupe-adamw", "step": "1"}
    assert "model.embed_tokens.weight.exp_avg_sq" in tensors and "lm_head.weight.exp_avg" not in tensors
    # continue in place vs. in a fresh engine loaded from the files
    e.train_step(args, batch_payloads(SEQS, [0.3, 0.3, -1.0]))
    f = make_engine(seed=99)
    f.add_policy({"id": "p", "model": "m", "copy": False})
    f.load({"policy": "p"}, {f"file:{k}": v for k, v in files.items()})
    f.train_step(args, batch_payloads(SEQS, [0.3, 0.3, -1.0]))
    for (k, a), b in zip(e.policies["p"].module.state_dict().items(), f.policies["p"].module.state_dict().values()):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7, msg=k)


def test_load_names_the_wrong_tensor() -> None:
    e = make_engine()
    e.add_policy({"id": "p", "model": "m", "copy": False})
    files = e.save({"policy": "p"})["bytes"]
    tensors, _ = load_bytes(files["model.safetensors"])
    tensors["model.layers.0.mlp.up_proj.weight"] = tensors["model.layers.0.mlp.up_proj.weight"].t().contiguous()
    del tensors["model.norm.weight"]
    files["model.safetensors"] = save_bytes(tensors)
    with pytest.raises(ValueError) as err:
        e.load({"policy": "p"}, {f"file:{k}": v for k, v in files.items()})
    assert "model.layers.0.mlp.up_proj.weight: expected [48, 32], got [32, 48]" in str(err.value)
    assert "model.norm.weight: missing" in str(err.value)


def test_lora_adapter_merge_equals_hooked_forward() -> None:
    e = make_engine()
    e.add_policy({"id": "a", "model": "m", "lora": {"r": 2, "alpha": 4}})
    payloads = batch_payloads(SEQS, [1.0, -1.0, 0.5])
    before = e.logprobs({"policy": "a"}, payloads)[1]["logprobs"]
    e.train_step({**STEP, "policy": "a", "microBatchSize": 2}, payloads)
    after = e.logprobs({"policy": "a"}, payloads)[1]["logprobs"]
    assert not torch.allclose(before, after)
    # the merged export, loaded as a plain model, scores like base + adapter
    exported = e.export({"policy": "a"})["bytes"]
    g = make_engine(seed=5)
    g.add_policy({"id": "p", "model": "m", "copy": False})
    g.load({"policy": "p"}, {f"file:{k}": v for k, v in exported.items()})
    torch.testing.assert_close(g.logprobs({"policy": "p"}, payloads)[1]["logprobs"], after, rtol=1e-5, atol=1e-5)


def test_safetensors_bytes_by_hand() -> None:
    data = save_bytes({"x": torch.tensor([1.0, -2.0])}, {"format": "pt"})
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + n])
    assert header == {"__metadata__": {"format": "pt"}, "x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}
    assert (8 + n) % 8 == 0
    assert data[8 + n :] == bytes.fromhex("0000803f000000c0")  # 1.0, −2.0 little-endian
    bf = load_bytes(save_bytes({"b": torch.tensor([1.5, -0.25]).bfloat16()}))[0]["b"]
    assert bf.dtype == torch.bfloat16 and bf.float().tolist() == [1.5, -0.25]


def test_seeded_adapters_start_the_same_in_every_process() -> None:
    from troupe_worker.lora import Adapter, LoraConfig

    base = make_engine().models["m"].module
    cfg = LoraConfig.from_json({"r": 4})
    state = torch.random.get_rng_state()
    a, b, c = Adapter(base, cfg, seed=7), Adapter(base, cfg, seed=7), Adapter(base, cfg, seed=8)
    assert torch.equal(torch.random.get_rng_state(), state)  # the global stream is left alone
    for key in a.lora_A:
        assert torch.equal(a.lora_A[key], b.lora_A[key])
        assert not torch.equal(a.lora_A[key], c.lora_A[key])
        assert a.lora_B[key].abs().sum() == 0
    engine = make_engine()
    engine.add_policy({"id": "x", "model": "m", "lora": {"r": 4}, "seed": 7})
    assert all(torch.equal(engine.policy("x").adapter.lora_A[k], a.lora_A[k]) for k in a.lora_A)
