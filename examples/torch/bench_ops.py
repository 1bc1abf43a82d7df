"""fusex operators beside PyTorch eager, forward + backward, in one run.

    python3 examples/torch/bench_ops.py [--rows 4096] [--cols 2048] [--dtype bfloat16] [--json FILE]

Each op runs forward and backward (autograd, a fixed cotangent) at (rows, cols)
activations; the PyTorch column is what litgpt runs for it (F.layer_norm,
litgpt's RMSNorm formula, F.gelu, F.silu(a) * b, litgpt's qkv split + RoPE
with repeat_interleave). Both are first compared with the PyTorch function in
float64 (err: the largest error over outputs and gradients, relative to each
one's largest magnitude; fusex must be within the dtype's rounding); times are medians of torch.utils.benchmark's blocked runs,
interleaved op by op."""

from __future__ import annotations

import argparse
import json
import platform

import torch
import torch.nn.functional as F
import torch.utils.benchmark as tb
from litgpt.model import apply_rope

import fusex_torch as fxt


def litgpt_rms_norm(x, w, eps=1e-6):
    dt = x.dtype
    x = x.float()
    return (x * torch.rsqrt(torch.mean(x * x, dim=-1, keepdim=True) + eps) * w.float()).to(dt)


def litgpt_qkv_rope(qkv, cos, sin, nh, g, hs, n):
    B, T, _ = qkv.shape
    q, k, v = qkv.split((nh * hs, g * hs, g * hs), dim=-1)
    q, k, v = (t.view(B, T, -1, hs).transpose(1, 2) for t in (q, k, v))
    q = torch.cat((apply_rope(q[..., :n], cos, sin), q[..., n:]), dim=-1)
    k = torch.cat((apply_rope(k[..., :n], cos, sin), k[..., n:]), dim=-1)
    if g != nh:
        k, v = k.repeat_interleave(nh // g, dim=1), v.repeat_interleave(nh // g, dim=1)
    return q, k, v


def cases(rows, cols, dt):
    x = torch.randn(1, rows, cols, dtype=dt)
    w, b = torch.randn(cols, dtype=dt), torch.randn(cols, dtype=dt)
    a2 = torch.randn(1, rows, cols, dtype=dt)
    nh, g, hs, n = 16, 4, 128, 32  # the seed's RoPE shape: GQA, a quarter of the head rotated
    T = rows
    qkv = torch.randn(1, T, (nh + 2 * g) * hs, dtype=dt)
    ang = torch.randn(T, n, dtype=torch.float64)
    cos, sin = ang.cos().to(dt)[None], ang.sin().to(dt)[None]
    return {
        "layer_norm": ((x, w, b), lambda x, w, b: fxt.layer_norm(x, w, b, 1e-5),
                       lambda x, w, b: F.layer_norm(x, (cols,), w, b, 1e-5)),
        "rms_norm": ((x, w), lambda x, w: fxt.rms_norm(x, w, 1e-6), litgpt_rms_norm),
        "gelu": ((x,), fxt.gelu, F.gelu),
        "gelu_tanh": ((x,), lambda x: fxt.gelu(x, "tanh"), lambda x: F.gelu(x, approximate="tanh")),
        "swiglu": ((x, a2), fxt.swiglu, lambda a, b: F.silu(a) * b),
        f"qkv_rope_T{T}": ((qkv,), lambda q: fxt.qkv_split_rope(q, cos, sin, nh, g, hs, n),
                           lambda q: litgpt_qkv_rope(q, cos, sin, nh, g, hs, n)),
    }


def fwd_bwd(fn, args):
    leaves = [a.detach().requires_grad_(True) for a in args]
    outs = fn(*leaves)
    outs = outs if isinstance(outs, tuple) else (outs,)
    cots = [torch.ones_like(o) for o in outs]

    def once():
        o = fn(*leaves)
        o = o if isinstance(o, tuple) else (o,)
        return torch.autograd.grad(o, leaves, cots)

    return once, (outs, once())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--cols", type=int, default=2048)
    ap.add_argument("--dtype", default="bfloat16", choices=("float32", "bfloat16"))
    ap.add_argument("--min-run-time", type=float, default=1.0)
    ap.add_argument("--json")
    a = ap.parse_args()
    dt = getattr(torch, a.dtype)
    torch.manual_seed(0)
    rows = []
    print(f"{a.dtype}, activations {a.rows}x{a.cols}, {torch.get_num_threads()} threads, torch {torch.__version__}")
    print(f"{'op':<16} {'torch ms':>9} {'fusex ms':>9} {'fusex/torch':>12} {'torch err':>12} {'fusex err':>12}")
    for name, (args, fx_fn, torch_fn) in cases(a.rows, a.cols, dt).items():
        fx_once, (fx_out, fx_grads) = fwd_bwd(fx_fn, args)
        t_once, (t_out, t_grads) = fwd_bwd(torch_fn, args)
        _, (r_out, r_grads) = fwd_bwd(torch_fn, [x.double() for x in args])

        def error(vals):  # largest error against float64, relative to each result's largest magnitude
            return max(((v.double() - r).abs().max() / r.abs().max().clamp_min(1e-30)).item()
                       for v, r in zip(vals, r_out + r_grads))

        fx_err, t_err = error(fx_out + fx_grads), error(t_out + t_grads)
        # fusex must be right; PyTorch's error is reported (its bf16 CPU LayerNorm backward sums in bf16)
        if fx_err > (2 ** -7 if dt == torch.bfloat16 else 1e-5):
            raise SystemExit(f"{name}: fusex's error {fx_err:.2e} against float64 exceeds the dtype's bound")
        t_t = tb.Timer("f()", globals={"f": t_once}, num_threads=torch.get_num_threads()).blocked_autorange(min_run_time=a.min_run_time).median
        t_f = tb.Timer("f()", globals={"f": fx_once}, num_threads=torch.get_num_threads()).blocked_autorange(min_run_time=a.min_run_time).median
        rows.append({"op": name, "torch_ms": 1e3 * t_t, "fusex_ms": 1e3 * t_f, "torch_error": t_err,
                     "fusex_error": fx_err})
        print(f"{name:<16} {1e3 * t_t:9.2f} {1e3 * t_f:9.2f} {t_f / t_t:12.2f} {t_err:12.1e} {fx_err:12.1e}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"dtype": a.dtype, "rows": a.rows, "cols": a.cols, "threads": torch.get_num_threads(),
                       "torch": torch.__version__, "machine": platform.processor() or platform.machine(),
                       "results": rows}, f, indent=1)


if __name__ == "__main__":
    main()
