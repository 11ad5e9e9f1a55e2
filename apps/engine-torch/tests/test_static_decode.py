"""The static-KV-cache decode path (static_decode.py) against the eager loop (generate.torch_generate),
the reference: same tokens at temperature 0, same sampled tokens for the same seeds, ragged prompts in
one batch, Qwen2 and Qwen3. The CUDA-graph path is checked the same way where CUDA is available."""

import pytest
import torch
from conftest import make_engine

from troupe_worker import static_decode
from troupe_worker.engine import Engine, EngineOptions
from troupe_worker.generate import torch_generate
from troupe_worker.sampling import SamplingConfig
from troupe_worker.static_decode import resolve_decode, static_generate

CPU = torch.device("cpu")
# ragged: lengths 1..7 in one batch, so rows carry different amounts of left padding
PROMPTS = [[5, 6, 7], [9], [3, 4, 5, 6, 7, 8, 9], [10, 11], [12, 13, 14, 15, 16]]
SEEDS = [11, 12, 13, 14, 15]
HAS_CUDA_GRAPHS = static_decode.graphs_supported(torch.device("cuda"))[0]


def model_of(model_type: str, seed: int = 0) -> torch.nn.Module:
    return make_engine(model_type, seed=seed).models["m"].module


def assert_same(eager: list, static: list) -> None:
    for b, (e, s) in enumerate(zip(eager, static)):
        assert s.token_ids == e.token_ids, f"row {b}"
        assert s.finish_reason == e.finish_reason, f"row {b}"
        assert s.logprobs == pytest.approx(e.logprobs, abs=1e-5), f"row {b}"


@pytest.mark.parametrize("model_type", ["qwen2", "qwen3"])
@pytest.mark.parametrize("bucket", [1, 64])
def test_static_greedy_matches_eager_on_ragged_prompts(model_type: str, bucket: int) -> None:
    model = model_of(model_type)
    cfg = SamplingConfig(temperature=0, max_tokens=12)
    eager = torch_generate(model, PROMPTS, SEEDS, cfg, 0, CPU)
    static = static_generate(model, PROMPTS, SEEDS, cfg, 0, CPU, bucket=bucket)
    assert_same(eager, static)
    assert all(len(r.token_ids) == 12 for r in static)


@pytest.mark.parametrize("model_type", ["qwen2", "qwen3"])
def test_static_sampling_matches_eager_for_the_same_seeds(model_type: str) -> None:
    model = model_of(model_type, seed=3)
    cfg = SamplingConfig(temperature=1.0, top_p=0.9, top_k=20, max_tokens=10)
    eager = torch_generate(model, PROMPTS, SEEDS, cfg, 0, CPU)
    static = static_generate(model, PROMPTS, SEEDS, cfg, 0, CPU)
    assert_same(eager, static)
    other = static_generate(model, PROMPTS, [s + 100 for s in SEEDS], cfg, 0, CPU)
    assert [r.token_ids for r in other] != [r.token_ids for r in static]  # the seeds do matter


def test_static_stops_like_eager() -> None:
    model = model_of("qwen3")
    free = torch_generate(model, PROMPTS, SEEDS, SamplingConfig(max_tokens=10), 0, CPU)
    stop = free[0].token_ids[2]
    cfg = SamplingConfig(max_tokens=10, stop_token_ids=(stop,))
    eager = torch_generate(model, PROMPTS, SEEDS, cfg, 0, CPU)
    # check_done_every=1 and 3: when the loop notices that every row stopped changes nothing
    for every in (1, 3):
        assert_same(eager, static_generate(model, PROMPTS, SEEDS, cfg, 0, CPU, check_done_every=every))
    assert eager[0].finish_reason == "stop"


def test_engine_option_selects_the_path_and_refuses_bad_input() -> None:
    eager = make_engine("qwen2", decode="eager")
    static = make_engine("qwen2", decode="static")
    for e in (eager, static):
        e.add_policy({"id": "p", "model": "m", "copy": False})
    prompts = torch.tensor([t for p in PROMPTS for t in p], dtype=torch.int32)
    payloads = {"prompt_tokens": prompts, "prompt_lengths": torch.tensor([len(p) for p in PROMPTS], dtype=torch.int32)}
    args = {"policy": "p", "seeds": SEEDS, "sampling": {"temperature": 0.7, "maxTokens": 6}}
    a = eager.generate(args, payloads)[1]
    b = static.generate(args, payloads)[1]
    assert torch.equal(a["tokens"], b["tokens"]) and torch.equal(a["lengths"], b["lengths"])
    assert static._decode_path(static.policy("p")) == "static"
    # auto is eager without CUDA graphs
    assert resolve_decode("auto", CPU) == "eager"
    with pytest.raises(ValueError, match="decode: expected one of auto, eager, static, graph, got 'fast'"):
        Engine(EngineOptions(device="cpu", decode="fast"))
    with pytest.raises(ValueError, match="decode=graph: CUDA graphs need a CUDA device"):
        Engine(EngineOptions(device="cpu", decode="graph"))


def test_static_path_with_a_lora_adapter_matches_eager() -> None:
    e = make_engine("qwen3", decode="static")
    e.add_policy({"id": "a", "model": "m", "lora": {"r": 4}, "seed": 1})
    with torch.no_grad():
        for b in e.policy("a").adapter.lora_B.values():
            b.normal_(0, 0.5)  # a non-zero update, so the adapter changes the tokens
    policy = e.policy("a")
    cfg = SamplingConfig(temperature=0, max_tokens=8)
    with policy.active():
        eager = torch_generate(policy.module, PROMPTS, SEEDS, cfg, 0, CPU)
        static = static_generate(policy.module, PROMPTS, SEEDS, cfg, 0, CPU)
    assert_same(eager, static)
    base = torch_generate(policy.module, PROMPTS, SEEDS, cfg, 0, CPU)
    assert [r.token_ids for r in base] != [r.token_ids for r in eager]


@pytest.mark.skipif(not HAS_CUDA_GRAPHS, reason=f"CUDA-graph decode: {static_decode.graphs_supported(torch.device('cuda'))[1]}")
@pytest.mark.parametrize("model_type", ["qwen2", "qwen3"])
@pytest.mark.parametrize("precision", ["fp32", "bf16", "fp32+autocast"])
def test_graph_decode_matches_eager_on_cuda(model_type: str, precision: str) -> None:
    """fp32+autocast: the trainer's default (fp32 master weights); the graph decodes with the bf16 shadow."""
    cuda = torch.device("cuda")
    model = model_of(model_type).to(cuda, torch.bfloat16 if precision == "bf16" else torch.float32)
    autocast = torch.bfloat16 if precision == "fp32+autocast" else None
    for cfg in (SamplingConfig(temperature=0, max_tokens=12), SamplingConfig(temperature=1.0, max_tokens=12)):
        eager = torch_generate(model, PROMPTS, SEEDS, cfg, 0, cuda, autocast)
        graph = static_generate(model, PROMPTS, SEEDS, cfg, 0, cuda, autocast, use_graph=True)
        assert_same(eager, graph)
        again = static_generate(model, PROMPTS, SEEDS, cfg, 0, cuda, autocast, use_graph=True)  # the cached graph, replayed
        assert_same(eager, again)


@pytest.mark.skipif(not hasattr(torch, "compile") or not torch.cuda.is_available(),
                    reason=f"compile_blocks needs torch ≥ 2.0 and CUDA (torch {torch.__version__}, CUDA {torch.cuda.is_available()})")
@pytest.mark.parametrize("autocast", [False, True])
def test_compiled_blocks_train_step_matches_plain(autocast: bool) -> None:
    """Two train steps, plain blocks against compiled ones: the second step's loss shows that the first
    step's gradients and update agree too. In fp32 the fused kernels round like the eager ones (1e-4);
    under bf16 autocast (the trainer's default on CUDA) Inductor keeps fused intermediates in fp32 where
    eager rounds each op to bf16 (8-bit mantissa, 0.4% a rounding), so the losses agree to 1%."""
    from conftest import tiny_config

    engines = [Engine(EngineOptions(device="cuda", model_backend="troupe", generator="torch", autocast=autocast,
                                    compile_blocks=compiled)) for compiled in (False, True)]
    for e in engines:
        e.load_model({"name": "m", "init": {"config": tiny_config("qwen3"), "seed": 0}}, {})
        e.add_policy({"id": "p", "model": "m", "copy": False})
    seq = [5, 6, 7, 8, 9, 10]
    payloads = {"tokens": torch.tensor(seq * 2, dtype=torch.int32), "prompt_lengths": torch.tensor([2, 2], dtype=torch.int32),
                "completion_lengths": torch.tensor([4, 4], dtype=torch.int32), "old_logprobs": torch.full((8,), -3.0),
                "advantages": torch.tensor([1.0, -1.0])}
    step = {"policy": "p", "loss": {}, "optimizer": {"lr": 1e-3}, "microBatchSize": 2}
    plain, fast = ([e.train_step(step, payloads)["loss"] for _ in range(2)] for e in engines)
    assert fast == pytest.approx(plain, rel=1e-2 if autocast else 1e-4, abs=1e-5)


def test_compile_blocks_is_refused_without_torch_compile() -> None:
    if hasattr(torch, "compile"):
        pytest.skip(f"torch {torch.__version__} has torch.compile")
    with pytest.raises(ValueError, match="compile_blocks: torch.compile needs torch ≥ 2.0"):
        Engine(EngineOptions(device="cpu", compile_blocks=True))


def test_device_check_cpu_smoke_prints_one_table(tmp_path) -> None:
    """bench/device-check.sh end to end on CPU (tiny models, eager vs static): rows, no crash, $OUT written."""
    import os
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "OUT": str(tmp_path), "TROUPE_PYTHON": __import__("sys").executable}
    out = subprocess.run(["bash", "bench/device-check.sh", "--cpu-smoke", "--skip", "pytest,trainer"], cwd=root, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    table = (tmp_path / "device-check.md").read_text()
    assert "gen smoke b4 static = eager tokens" in table and "4/4 rows identical" in table
    assert "learner smoke" in table


def test_graph_loop_logic_with_a_fake_capture_on_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """The graph path's bookkeeping without CUDA: a fake capture whose replay re-runs decode_step into
    the same output buffer (what a CUDA graph does). Checks the capture-on-first-step, the reuse of a
    cached graph by a later call with other prompts of the same shape bucket, and the results."""
    captures = []

    class Replay:
        def __init__(self, model, state) -> None:
            self.model, self.state = model, state

        def replay(self) -> None:
            self.state.logits.copy_(static_decode.decode_step(self.model, self.state))

    def fake_capture(model, state, autocast) -> None:
        for _ in range(2):  # the warm-up writes the current slot, as the real capture does
            static_decode.decode_step(model, state)
        state.logits = static_decode.decode_step(model, state).clone()
        state.graph = Replay(model, state)
        captures.append(state)

    monkeypatch.setattr(static_decode, "_capture", fake_capture)
    monkeypatch.setattr(static_decode, "GRAPHS", static_decode.GraphCache(size=2))
    model = model_of("qwen3")
    cfg = SamplingConfig(temperature=0, max_tokens=9)
    other = [[p[0] + 1] + p[1:] for p in PROMPTS]  # other tokens, same lengths
    for prompts in (PROMPTS, other, PROMPTS):
        eager = torch_generate(model, prompts, SEEDS, cfg, 0, CPU)
        assert_same(eager, static_generate(model, prompts, SEEDS, cfg, 0, CPU, use_graph=True, graph_key=(None,)))
    assert len(captures) == 1  # one capture, replayed by the two later calls
    static_generate(model, PROMPTS[:2], SEEDS[:2], cfg, 0, CPU, use_graph=True)  # another batch size: a second graph
    static_generate(model, PROMPTS[:3], SEEDS[:3], cfg, 0, CPU, use_graph=True)  # a third: the oldest is evicted
    assert len(captures) == 3 and len(static_decode.GRAPHS.entries) == 2


def test_shadow_shares_all_but_the_linear_weights_and_follows_the_masters() -> None:
    """ShadowCache on CPU (the dtype float32, so outputs must match exactly): structure, refresh after an
    in-place update of the masters, and LoRA hooks running on the shadow."""
    e = make_engine("qwen3", tied=True)
    e.add_policy({"id": "a", "model": "m", "lora": {"r": 4}, "seed": 1})
    model = e.models["m"].module
    cache = static_decode.ShadowCache()
    shadow = cache.shadow(model, torch.float32)
    assert shadow.model.embed_tokens.weight is model.model.embed_tokens.weight
    assert shadow.model.norm.weight is model.model.norm.weight
    assert shadow.lm_head.weight is not model.lm_head.weight  # the tied head gets its own copy
    q, q0 = shadow.model.layers[0].self_attn.q_proj, model.model.layers[0].self_attn.q_proj
    assert q.weight is not q0.weight and torch.equal(q.weight, q0.weight)
    ids = torch.tensor([[5, 6, 7, 8]])
    with torch.no_grad():
        q0.weight.add_(0.5)  # an optimizer step, in place
        for b in e.policy("a").adapter.lora_B.values():
            b.normal_(0, 0.5)
        assert cache.shadow(model, torch.float32) is shadow  # cached, and refreshed
        torch.testing.assert_close(shadow(ids).logits, model(ids).logits, rtol=0, atol=0)
        plain = shadow(ids).logits
        with e.policy("a").active():
            torch.testing.assert_close(shadow(ids).logits, model(ids).logits, rtol=0, atol=0)
            assert not torch.equal(shadow(ids).logits, plain)  # the adapter's hooks ran on the shadow
