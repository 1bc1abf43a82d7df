"""The fusex operators as functions with PyTorch's conventions."""

from __future__ import annotations

import torch

fusex = torch.ops.fusex


def gelu(x: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    """torch.nn.functional.gelu, exact ('none') or 'tanh', as one fused kernel each way."""
    return fusex.gelu(x, approximate)


def swiglu(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """silu(a) * b, LLaMA's MLP gate, computed in float32 and rounded once."""
    return fusex.swiglu(a, b)


def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """LayerNorm over the last dimension (weight and bias of its length)."""
    return fusex.layer_norm(x, weight, bias, eps)[0]


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """litgpt's RMSNorm: x * rsqrt(mean(x^2) + eps) * weight, in float32 for 16-bit x."""
    return fusex.rms_norm(x, weight, eps)[0]


def qkv_split_rope(qkv: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, n_head: int, n_query_groups: int,
                   head_size: int, n_elem: int):
    """litgpt's qkv split (current layout: q | k | v blocks) and RoPE on the first n_elem dims of q and k.

    qkv: (B, T, (n_head + 2 * n_query_groups) * head_size); cos, sin: (T, n_elem) or litgpt's (1, T, n_elem).
    Returns q, k, v of shape (B, n_head, T, head_size), k and v expanded over each group's heads."""
    if cos.dim() == 3 and cos.shape[0] == 1:
        cos, sin = cos[0], sin[0]  # litgpt's (1, T, n_elem): a view, no copy
    return fusex.qkv_split_rope(qkv, cos, sin, n_head, n_query_groups, head_size, n_elem)
