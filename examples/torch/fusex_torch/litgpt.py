"""A litgpt model on fusex operators: its norms, qkv split + RoPE and MLP activations.

    model = litgpt.GPT(litgpt.Config.from_name("pythia-14m"))
    fusex_torch.litgpt.use_fusex(model)      # in place; parameters and state dict unchanged

Each module keeps its parameters and only its forward changes (the module's
class is swapped for a subclass), so checkpoints, optimizers, DDP and FSDP
see the same model. Paths fusex does not cover fall back to litgpt's own
forward: the kv-cache (inference) path, qk-norm, interleaved RoPE, sliding
windows, and norms other than LayerNorm with bias and litgpt's RMSNorm.
"""

from __future__ import annotations

import torch
import litgpt.model as lm

from ._ops import gelu, layer_norm, qkv_split_rope, rms_norm, swiglu


class CausalSelfAttention(lm.CausalSelfAttention):
    def forward(self, x, cos, sin, mask=None, input_pos=None, input_pos_maxp1=None):
        c = self.config
        if (input_pos is not None or c.norm_qk or c.rope_interleave or self.apply_sliding_window_attention
                or c.rope_n_elem == 0):
            return super().forward(x, cos, sin, mask, input_pos, input_pos_maxp1)
        B, T, _ = x.shape
        q, k, v = qkv_split_rope(self.qkv(x), cos, sin, c.n_head, c.n_query_groups, c.head_size, c.rope_n_elem)
        y = self.scaled_dot_product_attention(q, k, v, mask)
        return self.proj(y.reshape(B, T, c.head_size * c.n_head))


class GptNeoxMLP(lm.GptNeoxMLP):
    def forward(self, x):
        return self.proj(gelu(self.fc(x), self.config.gelu_approximate))


class LLaMAMLP(lm.LLaMAMLP):
    def forward(self, x):
        return self.proj(swiglu(self.fc_1(x), self.fc_2(x)))


class LayerNorm(torch.nn.LayerNorm):
    def forward(self, x):
        if len(self.normalized_shape) != 1 or self.weight is None or self.bias is None:
            return super().forward(x)
        return layer_norm(x, self.weight, self.bias, self.eps)


class RMSNorm(lm.RMSNorm):
    def forward(self, x):
        if self.dim not in (-1, x.dim() - 1):
            return super().forward(x)
        weight = 1 + self.weight if self.add_unit_offset else self.weight
        return rms_norm(x, weight.to(x.dtype), self.eps)


_SWAPS = {
    lm.CausalSelfAttention: CausalSelfAttention,
    lm.GptNeoxMLP: GptNeoxMLP,
    lm.LLaMAMLP: LLaMAMLP,
    torch.nn.LayerNorm: LayerNorm,
    lm.RMSNorm: RMSNorm,
}


def use_fusex(model: torch.nn.Module) -> dict[str, int]:
    """Swaps, in place, every module of model whose exact class fusex covers; returns the count per class."""
    swapped: dict[str, int] = {}
    for m in model.modules():
        to = _SWAPS.get(type(m))
        if to is not None:
            m.__class__ = to
            swapped[to.__name__] = swapped.get(to.__name__, 0) + 1
    return swapped
