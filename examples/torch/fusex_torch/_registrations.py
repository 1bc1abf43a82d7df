"""Autograd (the fusex backward plans) and fake kernels for torch.ops.fusex.

Each forward returns its outputs and then what its backward needs; the
backward op takes the forward's arguments, everything the forward returned
and the outputs' cotangents, as fx::vjp's backward program does. The fake
kernels give what the C++ kernels give: new contiguous tensors."""

from __future__ import annotations

import torch

lib = torch.library
fusex = torch.ops.fusex


def _rows_stat(x: torch.Tensor) -> torch.Tensor:
    # the per-row statistics (mean, rstd) stay in float32 for 16-bit inputs
    dt = torch.float64 if x.dtype == torch.float64 else torch.float32
    return x.new_empty((*x.shape[:-1], 1), dtype=dt)


# ---- fake kernels ------------------------------------------------------------

@lib.register_fake("fusex::gelu")
def _(x, approximate="none"):
    return x.new_empty(x.shape)


@lib.register_fake("fusex::gelu_backward")
def _(x, y, dy, approximate="none"):
    return x.new_empty(x.shape)


@lib.register_fake("fusex::swiglu")
def _(a, b):
    return a.new_empty(a.shape)


@lib.register_fake("fusex::swiglu_backward")
def _(a, b, y, dy):
    return a.new_empty(a.shape), b.new_empty(b.shape)


@lib.register_fake("fusex::layer_norm")
def _(x, weight, bias, eps):
    return x.new_empty(x.shape), _rows_stat(x), _rows_stat(x)


@lib.register_fake("fusex::layer_norm_backward")
def _(x, weight, bias, eps, y, mean, rstd, dy):
    return x.new_empty(x.shape), weight.new_empty(weight.shape), bias.new_empty(bias.shape)


@lib.register_fake("fusex::rms_norm")
def _(x, weight, eps):
    return x.new_empty(x.shape), _rows_stat(x)


@lib.register_fake("fusex::rms_norm_backward")
def _(x, weight, eps, y, rstd, dy):
    return x.new_empty(x.shape), weight.new_empty(weight.shape)


@lib.register_fake("fusex::qkv_split_rope")
def _(qkv, cos, sin, n_head, n_query_groups, head_size, n_elem):
    B, T, _ = qkv.shape
    return tuple(qkv.new_empty((B, n_head, T, head_size)) for _ in range(3))


@lib.register_fake("fusex::qkv_split_rope_backward")
def _(qkv, cos, sin, n_head, n_query_groups, head_size, n_elem, q, k, v, dq, dk, dv):
    return qkv.new_empty(qkv.shape)


# ---- autograd ----------------------------------------------------------------

def _gelu_setup(ctx, inputs, output):
    x, approximate = inputs
    ctx.approximate = approximate
    ctx.save_for_backward(x, output)


def _gelu_backward(ctx, dy):
    x, y = ctx.saved_tensors
    return fusex.gelu_backward(x, y, dy, ctx.approximate), None


lib.register_autograd("fusex::gelu", _gelu_backward, setup_context=_gelu_setup)


def _swiglu_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs, output)


def _swiglu_backward(ctx, dy):
    a, b, y = ctx.saved_tensors
    return fusex.swiglu_backward(a, b, y, dy)


lib.register_autograd("fusex::swiglu", _swiglu_backward, setup_context=_swiglu_setup)


def _layer_norm_setup(ctx, inputs, output):
    x, weight, bias, eps = inputs
    y, mean, rstd = output
    ctx.eps = eps
    ctx.mark_non_differentiable(mean, rstd)  # statistics for the backward, not results
    ctx.save_for_backward(x, weight, bias, y, mean, rstd)


def _layer_norm_backward(ctx, dy, _dmean, _drstd):
    x, weight, bias, y, mean, rstd = ctx.saved_tensors
    dx, dw, db = fusex.layer_norm_backward(x, weight, bias, ctx.eps, y, mean, rstd, dy)
    return dx, dw, db, None


lib.register_autograd("fusex::layer_norm", _layer_norm_backward, setup_context=_layer_norm_setup)


def _rms_norm_setup(ctx, inputs, output):
    x, weight, eps = inputs
    y, rstd = output
    ctx.eps = eps
    ctx.mark_non_differentiable(rstd)
    ctx.save_for_backward(x, weight, y, rstd)


def _rms_norm_backward(ctx, dy, _drstd):
    x, weight, y, rstd = ctx.saved_tensors
    dx, dw = fusex.rms_norm_backward(x, weight, ctx.eps, y, rstd, dy)
    return dx, dw, None


lib.register_autograd("fusex::rms_norm", _rms_norm_backward, setup_context=_rms_norm_setup)


def _qkv_setup(ctx, inputs, output):
    qkv, cos, sin, *config = inputs
    ctx.config = config
    ctx.save_for_backward(qkv, cos, sin, *output)


def _qkv_backward(ctx, dq, dk, dv):
    qkv, cos, sin, q, k, v = ctx.saved_tensors
    dqkv = fusex.qkv_split_rope_backward(qkv, cos, sin, *ctx.config, q, k, v, dq, dk, dv)
    # cos and sin are buffers (litgpt's rope cache): no gradient
    return (dqkv, None, None) + (None,) * len(ctx.config)


lib.register_autograd("fusex::qkv_split_rope", _qkv_backward, setup_context=_qkv_setup)
