#!/usr/bin/env python3
"""The seed's benchmark, PyTorch rows: litgpt's qkv split + RoPE (and, in
training, k and v expanded to n_head heads) forward and backward in bf16,
over the LitGPT configs, at batch sizes 1 and 2, under PyTorch eager (litgpt's
own `apply_rope` and the split of `CausalSelfAttention`) and under
`torch.compile(dynamic=True)` of the same function.

Every executor's output is checked against a float64 run of the same code
before it is timed; one that is wrong is reported as an error, not timed.
Writes Google Benchmark's JSON schema (the fusex rows come from
bench_rope, in the same schema), with the compile time of torch.compile in
its own rows (`.../torch_compile/compile`).

  python3 tools/rope_bench_torch.py --out FILE [--quick] [--t-cap N]
      [--layout blocks|grouped] [--configs CSV] [--min-time S]
"""
import argparse
import csv
import datetime
import json
import os
import platform
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RTOL, ATOL = 1.6e-2, 1e-5  # torch.testing's bf16 tolerances


def read_configs(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    keys = ("head_size", "n_head", "n_query_groups", "rope_n_elem", "block_size")
    return [dict(name=r["name"], **{k: int(r[k]) for k in keys}) for r in rows]


def quick_subset(configs):
    """The configs bench_rope --quick takes: MHA full and partial rotary, GQA, MQA."""
    preds = [
        lambda c: c["n_query_groups"] == c["n_head"] and c["rope_n_elem"] == c["head_size"],
        lambda c: c["n_query_groups"] == c["n_head"] and c["rope_n_elem"] < c["head_size"],
        lambda c: 1 < c["n_query_groups"] < c["n_head"],
        lambda c: c["n_query_groups"] == 1,
    ]
    out = []
    for p in preds:
        for c in configs:
            if p(c):
                if c not in out:
                    out.append(c)
                break
    return out


def minimum_bytes(c, B, T):
    """As bench/rope_cases.hpp: qkv and the rope cache read once, q, k, v written once."""
    heads = 3 * B * c["n_head"] * T * c["head_size"]
    qkv = B * T * (c["n_head"] + 2 * c["n_query_groups"]) * c["head_size"]
    return 2.0 * (qkv + heads + 2 * T * c["rope_n_elem"])


def qkv_split_rope(torch, rope, qkv, cos, sin, nh, G, hs, n, grouped):
    """litgpt's CausalSelfAttention from qkv to the q, k, v attention reads, in
    training (k and v expanded when n_query_groups != n_head). The config comes
    in as ints, so that one torch.compile serves every config."""
    B, T, _ = qkv.shape
    q_per_kv = nh // G
    if not grouped:  # litgpt >= 0.5.5
        q, k, v = qkv.split((nh * hs, G * hs, G * hs), dim=-1)
        q = q.view(B, T, nh, hs).transpose(1, 2)
        k = k.view(B, T, G, hs).transpose(1, 2)
        v = v.view(B, T, G, hs).transpose(1, 2)
    else:  # litgpt 0.5.0 - 0.5.4: per query group, q_per_kv q heads, then k, then v
        g = qkv.view(B, T, G, q_per_kv + 2, hs).permute(0, 2, 3, 1, 4)
        q, k, v = g.split((q_per_kv, 1, 1), dim=2)
        q = q.reshape(B, nh, T, hs)
        k = k.reshape(B, G, T, hs)
        v = v.reshape(B, G, T, hs)
    cs, sn = cos.unsqueeze(0), sin.unsqueeze(0)  # litgpt 0.5.13's cache has a batch axis
    q = torch.cat((rope(q[..., :n], cs, sn), q[..., n:]), dim=-1)
    k = torch.cat((rope(k[..., :n], cs, sn), k[..., n:]), dim=-1)
    if G != nh:
        k = k.repeat_interleave(q_per_kv, dim=1)
        v = v.repeat_interleave(q_per_kv, dim=1)
    return q, k, v


def make_function(torch, apply_rope, c, layout, rotate=None, compiled=None):
    """f(qkv, cos, sin) for config c; `rotate` replaces apply_rope (the bound on
    rounding: every term taken positive); `compiled` is the torch.compile of
    qkv_split_rope to call instead."""
    cfg = (c["n_head"], c["n_query_groups"], c["head_size"], c["rope_n_elem"], layout == "grouped")
    if compiled is not None:
        return lambda qkv, cos, sin: compiled(qkv, cos, sin, *cfg)
    rope = rotate or apply_rope
    return lambda qkv, cos, sin: qkv_split_rope(torch, rope, qkv, cos, sin, *cfg)


def positive_rope(torch):
    def rope(x, cos, sin):  # |x cos| + |rotate_half(x) sin|: the sum of |terms|
        h = x.size(-1) // 2
        return x.abs() * cos.abs() + torch.cat((x[..., h:], x[..., :h]), dim=-1).abs() * sin.abs()
    return rope


def rope_cache(torch, T, n):
    i = torch.arange(n, dtype=torch.float64) % (n // 2)
    theta = torch.pow(10000.0, -2.0 * i / n)
    a = torch.arange(T, dtype=torch.float64)[:, None] * theta[None, :]
    return torch.cos(a).to(torch.bfloat16), torch.sin(a).to(torch.bfloat16)


def check(got, ref, scale):
    """Largest |got - ref| / (atol + rtol * max(|ref|, scale)) over tensors; <= 1 passes."""
    worst, bad = 0.0, 0
    for g, r, s in zip(got, ref, scale):
        e = (g.double() - r).abs()
        ratio = e / (ATOL + RTOL * torch_max(r.abs(), s))
        bad += int((~(ratio <= 1)).sum())
        worst = max(worst, float(ratio.max()))
    return worst, bad


def torch_max(a, b):
    import torch
    return torch.maximum(a, b)


def time_it(fn, min_time):
    fn()  # warm-up
    n, t0 = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        el = time.perf_counter() - t0
        if el >= min_time and n >= 3:
            return el / n * 1e3, n


def row(name, **kw):
    r = {"name": name, "run_name": name, "run_type": "iteration", "repetitions": 1, "repetition_index": 0,
         "threads": 1, "time_unit": "ms"}
    r.update(kw)
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--configs", default=os.path.join(ROOT, "bench", "data", "rope_bench_configs.csv"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--t-cap", type=int, default=2048)
    ap.add_argument("--layout", choices=("blocks", "grouped"), default="blocks")
    ap.add_argument("--min-time", type=float, default=0.2)
    ap.add_argument("--no-compile", action="store_true", help="eager only")
    a = ap.parse_args()
    import torch
    import litgpt
    from importlib.metadata import version
    from litgpt.model import apply_rope
    torch._dynamo.config.cache_size_limit = 1024  # a recompile per config class must not fall back to eager
    if a.quick:
        a.t_cap = min(a.t_cap, 128)
    configs = read_configs(a.configs)
    if a.quick:
        configs = quick_subset(configs)
    # one compiled function for every config: sizes and config ints are dynamic
    compiled = None if a.no_compile else torch.compile(
        lambda qkv, cos, sin, nh, G, hs, n, grouped: qkv_split_rope(torch, apply_rope, qkv, cos, sin, nh, G, hs, n, grouped),
        dynamic=True)
    gen = torch.Generator().manual_seed(1234)
    rows = []
    for c in configs:
        T = min(c["block_size"], a.t_cap)
        for B in (1, 2):
            width = (c["n_head"] + 2 * c["n_query_groups"]) * c["head_size"]
            qkv = (torch.rand((B, T, width), generator=gen, dtype=torch.float64) * 4 - 2).to(torch.bfloat16)
            cos, sin = rope_cache(torch, T, c["rope_n_elem"])
            heads = (B, c["n_head"], T, c["head_size"])
            cots = [(torch.rand(heads, generator=gen, dtype=torch.float64) * 4 - 2).to(torch.bfloat16) for _ in range(3)]
            f = make_function(torch, apply_rope, c, a.layout)
            fpos = make_function(torch, apply_rope, c, a.layout, positive_rope(torch))
            # float64 references and the bounds of their rounding
            q64 = qkv.double().requires_grad_()
            ref_out = f(q64, cos.double(), sin.double())
            ref_grad = torch.autograd.grad(ref_out, q64, [g.double() for g in cots])[0]
            p64 = qkv.double().abs().requires_grad_()
            pos_out = fpos(p64, cos.double(), sin.double())
            pos_grad = torch.autograd.grad(pos_out, p64, [g.double().abs() for g in cots])[0]
            ref_out = [r.detach() for r in ref_out]
            pos_out = [r.detach() for r in pos_out]
            mb = minimum_bytes(c, B, T)
            base = f"rope/{c['name']}/bs{B}"
            executors = [("torch_eager", f)]
            if compiled is not None:
                executors.append(("torch_compile", make_function(torch, apply_rope, c, a.layout, compiled=compiled)))
            for ex, fn in executors:
                counters = dict(min_bytes=mb, T=T, B=B)
                # forward: checked, then timed
                t0 = time.perf_counter()
                out = fn(qkv, cos, sin)
                first_fwd = time.perf_counter() - t0
                worst, bad = check(out, ref_out, pos_out)
                if bad:
                    rows.append(row(f"{base}/forward/{ex}", error_occurred=True,
                                    error_message=f"wrong against the float64 reference: {bad} elements outside bf16 tolerance ({worst:.3g} x the tolerance)"))
                else:
                    ms, n = time_it(lambda: fn(qkv, cos, sin), a.min_time)
                    rows.append(row(f"{base}/forward/{ex}", iterations=n, real_time=ms, cpu_time=ms, verified=1,
                                    worst_error_over_tolerance=worst, **counters))
                # backward of the same function, at the same point
                x = qkv.clone().requires_grad_()
                t0 = time.perf_counter()
                out = fn(x, cos, sin)
                g = torch.autograd.grad(out, x, cots, retain_graph=True)[0]
                first_bwd = time.perf_counter() - t0
                worst, bad = check([g], [ref_grad], [pos_grad])
                if bad:
                    rows.append(row(f"{base}/backward/{ex}", error_occurred=True,
                                    error_message=f"wrong against the float64 reference: {bad} elements outside bf16 tolerance ({worst:.3g} x the tolerance)"))
                else:
                    ms, n = time_it(lambda: torch.autograd.grad(out, x, cots, retain_graph=True), a.min_time)
                    rows.append(row(f"{base}/backward/{ex}", iterations=n, real_time=ms, cpu_time=ms, verified=1,
                                    worst_error_over_tolerance=worst, **counters))
                if ex == "torch_compile":  # first calls: tracing and code generation, or a cache hit
                    rows.append(row(f"{base}/forward/{ex}/compile", iterations=1, real_time=first_fwd * 1e3,
                                    cpu_time=first_fwd * 1e3, compile_only=1, **counters))
                    rows.append(row(f"{base}/backward/{ex}/compile", iterations=1, real_time=first_bwd * 1e3,
                                    cpu_time=first_bwd * 1e3, compile_only=1, **counters))
            print(f"{base}: done", file=sys.stderr, flush=True)
    context = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host_name": platform.node(),
        "executable": "tools/rope_bench_torch.py",
        "num_cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "machine": platform.processor() or platform.machine(),
        "fusex_device": "cpu",
        "qkv_layout": "blocks (litgpt >= 0.5.5)" if a.layout == "blocks" else "grouped (litgpt 0.5.0-0.5.4)",
        "t_cap": str(a.t_cap),
        "configs": f"{len(configs)}" + (" (quick subset)" if a.quick else ""),
        "library_versions": {"torch": torch.__version__, "litgpt": version("litgpt"), "python": platform.python_version()},
    }
    with open(a.out, "w") as f:
        json.dump({"context": context, "benchmarks": rows}, f, indent=1)


if __name__ == "__main__":
    main()
