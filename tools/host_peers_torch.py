#!/usr/bin/env python3
"""The host executor's peers, PyTorch rows: the forward and backward of GeLU,
LayerNorm, RMSNorm and litgpt's qkv split + RoPE in bf16 on the CPU, under
PyTorch eager and under torch.compile, at the shapes and thread count of
bench_host_peers (which times fusex, Eigen and memcpy in the same schema).

The forward runs as in training (inputs that require grad, so the norms save
their statistics); the backward is torch.autograd.grad through the graph of
one forward (retain_graph), which is what a training step runs. Every
executor's outputs and gradients are checked against a float64 run of the
same function before they are timed; one that is wrong is reported as an
error, not timed.

  python3 tools/host_peers_torch.py --out FILE [--quick] [--threads N]
      [--min-time S] [--no-compile]
"""
import argparse
import datetime
import json
import os
import platform
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from rope_bench_torch import row, time_it  # noqa: E402 (the seed benchmark's timing and JSON rows)

ATOL = 1e-5


def check(torch, got, ref, terms, rtol):
    """Largest |got - ref| / (atol + rtol * max(|ref|, terms)) over the tensors,
    terms the sum of |terms| that make each value (as bench_host_peers: bf16
    kernels may round intermediates and partial sums); <= 1 passes."""
    worst, bad = 0.0, 0
    for g, r, t in zip(got, ref, terms):
        ratio = (g.double() - r).abs() / (ATOL + rtol * torch.maximum(r.abs(), t))
        bad += int((~(ratio <= 1)).sum())
        worst = max(worst, float(ratio.max()))
    return worst, bad


def cases(torch, F, quick, gen):
    """(name, f, inputs, cotangents, wrt, rtol of the backward, terms(inputs64, cots64, outs64, grads64))"""
    import rope_bench_torch as rbt
    from litgpt.model import apply_rope

    def rnd(*shape):
        return (torch.rand(shape, generator=gen, dtype=torch.float64) * 4 - 2).to(torch.bfloat16)

    def gelu_terms(i, c, o, g):
        x64 = i[0]
        cdf = 0.5 * (1 + torch.erf(x64 * 0.7071067811865476))
        xpdf = x64 * torch.exp(-0.5 * x64 * x64) * 0.3989422804014327
        return [o[0].abs()], [c[0].abs() * (cdf + xpdf.abs())]

    out = []
    R, C = (64, 256) if quick else (2048, 4096)
    x = rnd(R, C)
    out.append((f"gelu_bf16_{R}x{C}", lambda x: F.gelu(x), [x], [rnd(R, C)], [0], 1.6e-2,
                gelu_terms))
    R, C = (96, 256) if quick else (4096, 2048)
    x, w, b, dy = rnd(R, C), rnd(C), rnd(C), rnd(R, C)

    def norm_terms(rms):
        def terms(i, c, o, g):
            x64, w64 = i[0], i[1]
            xc = x64 if rms else x64 - x64.mean(-1, keepdim=True)
            s = torch.rsqrt(xc.pow(2).mean(-1, keepdim=True) + 1e-5)
            xh, gg = xc * s, c[0] * w64
            dx_terms = s * (gg.abs() + (0 if rms else gg.abs().mean(-1, keepdim=True)) +
                            xh.abs() * (gg * xh).abs().mean(-1, keepdim=True))
            fwd = [(xh * w64).abs() + (0 if rms else i[2].abs())]
            bwd = [dx_terms, (c[0] * xh).abs().sum(0)] + ([] if rms else [c[0].abs().sum(0)])
            return fwd, bwd
        return terms

    out.append((f"layer_norm_bf16_{R}x{C}", lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b, 1e-5), [x, w, b], [dy],
                [0, 1, 2], 2e-2, norm_terms(False)))
    out.append((f"rms_norm_bf16_{R}x{C}", lambda x, w: F.rms_norm(x, (x.shape[-1],), w, 1e-5), [x, w], [dy], [0, 1], 2e-2,
                norm_terms(True)))
    nh, G, hs, n = 16, 4, 128, 32
    T = 64 if quick else 2048
    qkv = rnd(1, T, (nh + 2 * G) * hs)
    cos, sin = rbt.rope_cache(torch, T, n)
    cots = [rnd(1, nh, T, hs) for _ in range(3)]

    def rope_terms(i, c, o, g):
        # the sum of |terms| of each value: the same function over |inputs|
        p = i[0].abs().requires_grad_()
        po = rbt.qkv_split_rope(torch, rbt.positive_rope(torch), p, i[1].abs(), i[2].abs(), nh, G, hs, n, False)
        pg = torch.autograd.grad(po, p, [t.abs() for t in c])[0]
        return [t.detach() for t in po], [pg]

    out.append((f"qkv_rope_bf16_T{T}_h{nh}_g{G}_hs{hs}_n{n}",
                lambda qkv, cos, sin: rbt.qkv_split_rope(torch, apply_rope, qkv, cos, sin, nh, G, hs, n, False),
                [qkv, cos, sin], cots, [0], 1.6e-2, rope_terms))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--min-time", type=float, default=0.5)
    ap.add_argument("--no-compile", action="store_true", help="eager only")
    a = ap.parse_args()
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(a.threads)
    gen = torch.Generator().manual_seed(4321)
    rows = []
    for name, f, ins, cots, wrt, rtol, terms in cases(torch, F, a.quick, gen):
        # float64 reference: outputs and the gradients wrt `wrt`
        i64 = [t.double().requires_grad_(k in wrt) for k, t in enumerate(ins)]
        o64 = f(*i64)
        o64 = list(o64) if isinstance(o64, tuple) else [o64]
        g64 = torch.autograd.grad(o64, [i64[k] for k in wrt], [c.double() for c in cots])
        i64d = [t.detach() for t in i64]
        c64 = [c.double() for c in cots]
        o64 = [t.detach() for t in o64]
        fwd_terms, bwd_terms = terms(i64d, c64, o64, g64)
        executors = [("torch_eager", f)]
        if not a.no_compile:
            executors.append(("torch_compile", torch.compile(f)))
        base = f"host/{name}"
        for ex, fn in executors:
            counters = dict(threads=a.threads)
            leaves = [t.clone().requires_grad_(k in wrt) for k, t in enumerate(ins)]
            t0 = time.perf_counter()
            out = fn(*leaves)  # for torch.compile: compiles the forward (and backward graph)
            out = list(out) if isinstance(out, tuple) else [out]
            grads = torch.autograd.grad(out, [leaves[k] for k in wrt], cots, retain_graph=True)
            compile_s = time.perf_counter() - t0
            fw, fbad = check(torch, [o.detach() for o in out], o64, fwd_terms, 1.6e-2)
            bw, bbad = check(torch, grads, list(g64), bwd_terms, rtol)
            for direction, worst, bad, body in (
                    ("forward", fw, fbad, lambda: fn(*leaves)),
                    ("backward", bw, bbad, lambda: torch.autograd.grad(out, [leaves[k] for k in wrt], cots,
                                                                        retain_graph=True))):
                nm = f"{base}/{direction}/{ex}"
                if bad:
                    rows.append(row(nm, error_occurred=True, error_message=(
                        f"wrong against the float64 reference: {bad} elements outside bf16 tolerance "
                        f"({worst:.3g} x the tolerance)"), iterations=0, real_time=0, cpu_time=0, **counters))
                    continue
                ms, it = time_it(body, a.min_time)
                rows.append(row(nm, iterations=it, real_time=ms, cpu_time=ms, verified=1,
                                worst_error_over_tolerance=worst, **counters))
            if ex == "torch_compile":
                rows.append(row(f"{base}/compile/{ex}", iterations=1, real_time=compile_s * 1e3, cpu_time=compile_s * 1e3,
                                **counters))
            print(f"{base} {ex}: done", file=sys.stderr)
    import litgpt  # noqa: F401 (version recorded)
    from importlib.metadata import version
    doc = {"context": {"date": datetime.datetime.now().isoformat(timespec="seconds"), "host_name": platform.node(),
                       "executable": "tools/host_peers_torch.py", "num_cpus": os.cpu_count(),
                       "torch": torch.__version__, "litgpt": version("litgpt"), "threads": str(a.threads),
                       "library_build_type": "release"},
           "benchmarks": rows}
    with open(a.out, "w") as fo:
        json.dump(doc, fo, indent=1)


if __name__ == "__main__":
    try:
        import torch  # noqa: F401
        import litgpt  # noqa: F401
    except ImportError as e:
        print(f"host_peers_torch: {e}; install torch and litgpt (PyPI) for the PyTorch rows", file=sys.stderr)
        sys.exit(77)
    main()
