"""The same decoder step in PyTorch (CPU), for the ratio the ONNX bench reports.

A Qwen3-style decoder (RMSNorm, RoPE, GQA with q/k-norm, SwiGLU, tied embeddings) built from
torch primitives, timed for forward+backward of a token-mean policy-gradient loss and one AdamW
step. Usage: python3 torch_step.py '<json config>' -> prints one JSON line.
"""
import json
import sys
import time

import torch
import torch.nn.functional as F

cfg = json.loads(sys.argv[1])
torch.set_num_threads(cfg.get("threads", 2))
torch.manual_seed(0)
V, d, L = cfg["vocab_size"], cfg["hidden_size"], cfg["num_hidden_layers"]
H, KV, D, I = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"], cfg["intermediate_size"]
B, T, eps = cfg["batch"], cfg["time"], cfg["rms_norm_eps"]


def rms(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


class Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.n1, self.n2 = torch.nn.Parameter(torch.ones(d)), torch.nn.Parameter(torch.ones(d))
        self.qn, self.kn = torch.nn.Parameter(torch.ones(D)), torch.nn.Parameter(torch.ones(D))
        self.q = torch.nn.Linear(d, H * D, bias=False)
        self.k = torch.nn.Linear(d, KV * D, bias=False)
        self.v = torch.nn.Linear(d, KV * D, bias=False)
        self.o = torch.nn.Linear(H * D, d, bias=False)
        self.gate = torch.nn.Linear(d, I, bias=False)
        self.up = torch.nn.Linear(d, I, bias=False)
        self.down = torch.nn.Linear(I, d, bias=False)

    def forward(self, x, cos, sin):
        h = rms(x, self.n1)
        q = rms(self.q(h).view(B, T, H, D), self.qn).transpose(1, 2)
        k = rms(self.k(h).view(B, T, KV, D), self.kn).transpose(1, 2)
        v = self.v(h).view(B, T, KV, D).transpose(1, 2)
        rot = lambda t: torch.cat([-t[..., D // 2 :], t[..., : D // 2]], -1)
        q, k = q * cos + rot(q) * sin, k * cos + rot(k) * sin
        k, v = k.repeat_interleave(H // KV, 1), v.repeat_interleave(H // KV, 1)
        # torch 1.13 has no scaled_dot_product_attention: explicit causal softmax attention.
        scores = (q @ k.transpose(-1, -2)) / D**0.5 + causal
        a = scores.softmax(-1) @ v
        x = x + self.o(a.transpose(1, 2).reshape(B, T, H * D))
        h = rms(x, self.n2)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(V, d)
        self.layers = torch.nn.ModuleList([Layer() for _ in range(L)])
        self.norm = torch.nn.Parameter(torch.ones(d))

    def forward(self, ids, cos, sin):
        x = self.emb(ids)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return rms(x, self.norm) @ self.emb.weight.t()


model = Model()
opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
ids = torch.randint(0, V, (B, T))
pos = torch.arange(T, dtype=torch.float32)
inv = 1.0 / cfg["rope_theta"] ** (torch.arange(0, D, 2, dtype=torch.float32) / D)
ang = torch.cat([pos[:, None] * inv, pos[:, None] * inv], -1)
cos, sin = ang.cos(), ang.sin()
causal = torch.full((T, T), float("-inf")).triu(1)
old = torch.randn(B, T) * 0.1 - 6
adv = torch.randn(B, 1)


def step():
    logp = model(ids, cos, sin).log_softmax(-1).gather(-1, ids[..., None]).squeeze(-1)
    ratio = (logp - old).exp()
    loss = torch.max(-adv * ratio, -adv * ratio.clamp(0.8, 1.2)).mean()
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()


def forward():
    with torch.no_grad():
        model(ids, cos, sin)


for _ in range(2):
    step()


def timed(fn):
    """Median wall and process-CPU milliseconds (all threads) of `repeats` runs, as bench.ts times."""
    wall, cpu = [], []
    for _ in range(cfg.get("repeats", 5)):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    wall.sort()
    cpu.sort()
    return wall[len(wall) // 2], cpu[len(cpu) // 2]


train_ms, train_cpu_ms = timed(step)
forward_ms, forward_cpu_ms = timed(forward)
print(
    json.dumps(
        {
            "torch": torch.__version__,
            "train_step_ms": train_ms,
            "train_step_cpu_ms": train_cpu_ms,
            "forward_ms": forward_ms,
            "forward_cpu_ms": forward_cpu_ms,
        }
    )
)
