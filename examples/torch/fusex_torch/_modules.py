"""Drop-in modules: the parameters and state dicts of torch's and litgpt's, the forward of fusex."""

from __future__ import annotations

import torch

from ._ops import gelu, layer_norm, rms_norm


class LayerNorm(torch.nn.LayerNorm):
    """torch.nn.LayerNorm over the last dimension, with weight and bias."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if len(self.normalized_shape) != 1 or self.weight is None or self.bias is None:
            return super().forward(x)
        return layer_norm(x, self.weight, self.bias, self.eps)


class RMSNorm(torch.nn.Module):
    """litgpt.model.RMSNorm (last dimension), same parameter and state-dict names."""

    def __init__(self, size: int, dim: int = -1, eps: float = 1e-6, add_unit_offset: bool = False) -> None:
        super().__init__()
        if dim not in (-1,):
            raise ValueError(f"fusex_torch.RMSNorm: normalises the last dimension only, got dim={dim}")
        self.weight = torch.nn.Parameter(torch.ones(size))
        self.eps = eps
        self.dim = dim
        self.add_unit_offset = add_unit_offset

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = 1 + self.weight if self.add_unit_offset else self.weight
        return rms_norm(x, weight.to(x.dtype), self.eps)

    def reset_parameters(self) -> None:
        torch.nn.init.ones_(self.weight)


class GeLU(torch.nn.Module):
    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return gelu(x, self.approximate)
