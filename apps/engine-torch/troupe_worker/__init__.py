"""Troupe's GPU engine worker: the tensor work of the Engine interface (generate, logprobs,
train_step, save/load/export) for Qwen2/Qwen3 policies, driven by @troupe/engine-torch."""

__version__ = "0.1.0"
