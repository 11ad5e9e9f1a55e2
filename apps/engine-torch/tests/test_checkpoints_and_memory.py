"""Real-checkpoint loading, the bf16 mask, chunked log-probs, LoRA under checkpointing and
checkpoint folders — on CPU with the in-house Qwen twin."""

import json
import os

import pytest
import torch
from conftest import make_engine, tiny_config
from test_model_and_engine import SEQS, STEP, batch_payloads

from troupe_worker import qwen
from troupe_worker.models import model_from_path
from troupe_worker.safetensors_io import load_file, save_file


def write_folder(folder: str, config: dict, tensors: dict[str, torch.Tensor], shards: int = 1) -> None:
    """An HF model folder as the hub ships it: config.json, one or several model*.safetensors."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f)
    names = list(tensors)
    if shards == 1:
        save_file(tensors, os.path.join(folder, "model.safetensors"))
        return
    index = {}
    for i in range(shards):
        name = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        part = {k: tensors[k] for k in names[i::shards]}
        save_file(part, os.path.join(folder, name))
        index.update({k: name for k in part})
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"weight_map": index}, f)


def test_a_tied_qwen3_checkpoint_that_ships_lm_head_loads(tmp_path) -> None:
    """Qwen3-0.6B / 1.7B: tie_word_embeddings true and an lm_head.weight in the file (a copy of the
    embedding), here over two shards."""
    cfg = tiny_config("qwen3", tied=True)
    torch.manual_seed(3)
    reference = qwen.QwenForCausalLM(qwen.parse_config(cfg))
    tensors = {k: v.detach().clone() for k, v in reference.state_dict().items()}
    assert "lm_head.weight" in tensors  # state_dict() lists the tied head too, as HF's save did
    write_folder(str(tmp_path / "m"), cfg, tensors, shards=2)
    loaded = model_from_path("m", str(tmp_path / "m"), backend="troupe")
    ids = torch.tensor([[3, 4, 5, 6]])
    torch.testing.assert_close(loaded.module(ids).logits, reference(ids).logits, rtol=0, atol=0)
    assert loaded.module.lm_head.weight.data_ptr() == loaded.module.model.embed_tokens.weight.data_ptr()


def test_a_head_only_tied_file_gives_the_embedding(tmp_path) -> None:
    cfg = tiny_config("qwen3", tied=True)
    reference = qwen.QwenForCausalLM(qwen.parse_config(cfg))
    tensors = {k: v.detach().clone() for k, v in reference.state_dict().items() if k != "model.embed_tokens.weight"}
    write_folder(str(tmp_path / "m"), cfg, tensors)
    loaded = model_from_path("m", str(tmp_path / "m"), backend="troupe")
    torch.testing.assert_close(loaded.module.model.embed_tokens.weight, reference.lm_head.weight, rtol=0, atol=0)


def test_bf16_left_padded_forward_has_no_nan() -> None:
    """A padding query that may read nothing: float32's minimum is −inf in bf16 and used to give NaN."""
    torch.manual_seed(0)
    model = qwen.QwenForCausalLM(qwen.parse_config(tiny_config("qwen3"))).to(torch.bfloat16)
    ids = torch.tensor([[0, 0, 0, 5, 6], [3, 4, 5, 6, 7]])
    mask = torch.tensor([[0, 0, 0, 1, 1], [1, 1, 1, 1, 1]])
    logits = model(ids, attention_mask=mask).logits
    assert not torch.isnan(logits).any()
    # the real positions of the padded row match the row run alone
    alone = model(torch.tensor([[5, 6]])).logits
    torch.testing.assert_close(logits[0, 3:].float(), alone[0].float(), rtol=0.05, atol=0.05)
    assert qwen.causal_mask(1, 2, 0, torch.tensor([[0, 1]]), torch.device("cpu"), torch.bfloat16).isfinite().all()


def test_chunked_logprobs_equal_the_full_computation() -> None:
    e = make_engine(logprob_chunk=3)
    e.add_policy({"id": "p", "model": "m", "copy": False})
    policy = e.policy("p")
    seqs = [p + c for p, c in SEQS]
    P, C = [len(p) for p, _ in SEQS], [len(c) for _, c in SEQS]
    with torch.no_grad():
        lp, ent = e.completion_logprobs(policy, seqs, P, C, entropy="detached")
        full = []
        full_ent = []
        for s, p, c in zip(seqs, P, C):
            logp = torch.log_softmax(policy.module(torch.tensor([s])).logits[0].float(), -1)
            for i in range(c):
                full.append(logp[p - 1 + i, s[p + i]])
                full_ent.append(-(logp[p - 1 + i].exp() * logp[p - 1 + i]).sum())
    assert lp.shape == (sum(C),)
    torch.testing.assert_close(lp, torch.stack(full), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(ent, torch.stack(full_ent), rtol=1e-6, atol=1e-6)
    # and with gradients, the chunks (checkpointed) give the same gradient as one chunk
    grads = []
    for chunk in (2, 1000):
        e.options.logprob_chunk = chunk
        policy.module.zero_grad()
        lp, ent = e.completion_logprobs(policy, seqs, P, C, entropy="grad")
        (lp.sum() + 0.1 * ent.sum()).backward()
        grads.append(policy.module.model.layers[0].mlp.up_proj.weight.grad.clone())
    torch.testing.assert_close(grads[0], grads[1], rtol=1e-4, atol=1e-6)


def test_lora_with_gradient_checkpointing_gets_a_gradient() -> None:
    """Non-reentrant checkpointing: the frozen base's checkpointed layers still pass a gradient to
    the adapter (reentrant checkpointing gives none when no input requires grad)."""
    e = make_engine(gradient_checkpointing=True)
    assert e.models["m"].module.gradient_checkpointing
    e.add_policy({"id": "a", "model": "m", "lora": {"r": 2}, "seed": 1})
    adapter = e.policy("a").adapter
    key = next(iter(adapter.lora_B))
    before = adapter.lora_B[key].detach().clone()
    assert before.abs().sum() == 0
    e.train_step({**STEP, "policy": "a", "microBatchSize": 2}, batch_payloads(SEQS, [1.0, -0.5, 2.0]))
    assert adapter.lora_B[key].abs().sum() > 0


def test_checkpoint_folders_round_trip_and_use_the_peft_layout(tmp_path) -> None:
    e = make_engine()
    e.add_policy({"id": "a", "model": "m", "lora": {"r": 2, "alpha": 4}, "seed": 1})
    e.add_policy({"id": "f", "model": "m"})
    payloads = batch_payloads(SEQS, [1.0, -0.5, 2.0])
    for pid in ("a", "f"):
        e.train_step({**STEP, "policy": pid, "microBatchSize": 2}, payloads)
    out = e.save({"policy": "a", "dir": str(tmp_path / "a")})
    assert out == {"files": ["adapter_config.json", "adapter_model.safetensors", "config.json", "optimizer.safetensors", "trainer_state.json"],
                   "dir": str(tmp_path / "a")}
    adapter_cfg = json.loads((tmp_path / "a" / "adapter_config.json").read_text())
    assert adapter_cfg["peft_type"] == "LORA" and adapter_cfg["r"] == 2 and adapter_cfg["lora_alpha"] == 4
    keys = load_file(str(tmp_path / "a" / "adapter_model.safetensors"))[0]
    assert "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight" in keys
    e.save({"policy": "f", "dir": str(tmp_path / "f")})
    g = make_engine(seed=9)
    g.add_policy({"id": "a", "model": "m", "lora": {"r": 2, "alpha": 4}})
    g.add_policy({"id": "f", "model": "m"})
    for pid in ("a", "f"):
        assert g.load({"policy": pid, "dir": str(tmp_path / pid)}, {})["optimizerStep"] == 1
    torch.testing.assert_close(g.logprobs({"policy": "f"}, payloads)[1]["logprobs"], e.logprobs({"policy": "f"}, payloads)[1]["logprobs"])


def test_load_of_a_missing_folder_names_it(tmp_path) -> None:
    e = make_engine()
    e.add_policy({"id": "p", "model": "m"})
    with pytest.raises(ValueError, match="is not a directory"):
        e.load({"policy": "p", "dir": str(tmp_path / "nope")}, {})
