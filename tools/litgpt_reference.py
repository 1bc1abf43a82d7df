#!/usr/bin/env python3
"""Reference data for fusex's transformer blocks, written by litgpt itself.

Builds litgpt's own `Block` for each case below, runs it forward and
backward in float64 on inputs and weights from a counter-based generator
that tests/litgpt/litgpt_data.hpp reproduces bit for bit, and writes the
output and every gradient (x and each parameter) to DIR/<case>.bin (float32,
little endian) with an index DIR/<case>.idx (text). It also runs the same
block in float32 and bfloat16 and records, per tensor, how far litgpt's own
result in that precision is from the float64 one: the tests hold fusex to
the same standard.

    python3 tools/litgpt_reference.py --out tests/data/litgpt            # the committed files
    python3 tools/litgpt_reference.py --out build/litgpt-live            # regenerate elsewhere

Cases named `*-grouped` come from litgpt 0.5.4, the last release with the
per-query-group qkv layout: the script fetches that wheel from PyPI
(`pip download litgpt==0.5.4 --no-deps`) and runs itself again with it first
on the path, so one run writes both layouts.
"""

import argparse
import datetime
import importlib.metadata
import inspect
import os
import platform
import subprocess
import sys
import tempfile
import zipfile

MASK64 = (1 << 64) - 1
CURRENT_CASES = ["pythia-14m", "pythia-70m", "llama-gqa"]
GROUPED_CASES = ["pythia-14m-grouped", "llama-gqa-grouped"]
B, T = 2, 37
LEGACY_LITGPT = "0.5.4"


def splitmix64(z):
    import numpy as np

    z = (z + np.uint64(0x9E3779B97F4A7C15)) & np.uint64(MASK64)
    z = ((z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)) & np.uint64(MASK64)
    z = ((z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)) & np.uint64(MASK64)
    return z ^ (z >> np.uint64(31))


def generated(stream, shape, scale, offset=0.0):
    """offset + scale * u, u uniform in [-1, 1) on a 2^-23 grid, rounded to float32:
    element i (row-major) of stream s hashes (s << 40) | i."""
    import numpy as np

    n = int(np.prod(shape))
    with np.errstate(over="ignore"):
        i = (np.uint64(stream) << np.uint64(40)) | np.arange(n, dtype=np.uint64)
        k = (splitmix64(i) >> np.uint64(40)).astype(np.float64)
    u = (k - 8388608.0) / 8388608.0
    return (offset + scale * u).astype(np.float32).reshape(shape)


def weight_scale(fan_in):
    """The largest power of two not above 1 / sqrt(fan_in)."""
    s = 1.0
    while s * s * fan_in > 1.0:
        s /= 2.0
    return s


def config_of(case):
    from litgpt.config import Config

    base = case.replace("-grouped", "")
    if base == "llama-gqa":
        # a small LLaMA-family block: RMSNorm, GQA (6 heads in 2 groups), full RoPE, SwiGLU
        return Config(name="llama-gqa", block_size=64, vocab_size=64, n_layer=1, n_embd=96, n_head=6,
                      n_query_groups=2, head_size=16, rotary_percentage=1.0, parallel_residual=False, bias=False,
                      norm_class_name="RMSNorm", norm_eps=1e-5, mlp_class_name="LLaMAMLP", intermediate_size=256)
    return Config.from_name(base)


def parameter_names(block):
    """litgpt's parameter names, with 0.5.4's `attn.attn` called `attn.qkv` as in current litgpt."""
    return [(n, n.replace("attn.attn.", "attn.qkv.")) for n, _ in block.named_parameters()]


def run_block(block, x, cos, sin, dy):
    import torch

    block.zero_grad(set_to_none=True)
    x = x.detach().clone().requires_grad_(True)
    if "cos.dim() != 3" in inspect.getsource(sys.modules[type(block).__module__].apply_rope):
        cos, sin = cos.unsqueeze(0), sin.unsqueeze(0)  # litgpt >= 0.5.5 passes (1, T, n_elem)
    y = block(x, cos, sin)
    y.backward(dy)
    out = {"y": y.detach(), "dx": x.grad.detach()}
    for name, canonical in parameter_names(block):
        out["d." + canonical] = dict(block.named_parameters())[name].grad.detach()
    return out


def write_case(case, out_dir):
    import numpy as np
    import torch
    import litgpt
    from litgpt.model import Block, build_rope_cache

    torch.manual_seed(0)
    cfg = config_of(case)
    block = Block(cfg, 0).double()
    # inputs and parameters from the shared generator: stream 0 is x, 1 is dy, 2 + k the k-th parameter
    inputs = {"x": generated(0, (B, T, cfg.n_embd), 1.0), "dy": generated(1, (B, T, cfg.n_embd), 1.0)}
    params = {}
    for k, (name, canonical) in enumerate(parameter_names(block)):
        p = dict(block.named_parameters())[name]
        if canonical.endswith("norm_1.weight") or canonical.endswith("norm_2.weight"):
            v = generated(2 + k, tuple(p.shape), 0.25, offset=1.0)
        elif p.dim() == 2:
            v = generated(2 + k, tuple(p.shape), weight_scale(p.shape[1]))
        else:
            v = generated(2 + k, tuple(p.shape), 0.125)
        params[canonical] = v
        with torch.no_grad():
            p.copy_(torch.from_numpy(v.astype(np.float64)))
    cos, sin = build_rope_cache(T, cfg.rope_n_elem, base=cfg.rope_base)
    cos = cos.to(torch.float32)
    sin = sin.to(torch.float32)

    def tensors(dtype):
        return (torch.from_numpy(inputs["x"]).to(dtype), cos.to(dtype), sin.to(dtype),
                torch.from_numpy(inputs["dy"]).to(dtype))

    ref = run_block(block, *tensors(torch.float64))
    errors = {}
    for label, dtype in (("f32", torch.float32), ("bf16", torch.bfloat16)):
        low = Block(cfg, 0).to(dtype)
        with torch.no_grad():
            for name, canonical in parameter_names(low):
                dict(low.named_parameters())[name].copy_(torch.from_numpy(params[canonical]).to(dtype))
        got = run_block(low, *tensors(dtype))
        for key, r in ref.items():
            scale = float(r.abs().max())
            errors.setdefault(key, {})[label] = float((got[key].double() - r).abs().max()) / max(scale, 1e-30)

    os.makedirs(out_dir, exist_ok=True)
    offset = 0
    lines = [
        f"# written by tools/litgpt_reference.py from litgpt {litgpt_version()} and torch {torch.__version__}",
        f"case {case}",
        f"litgpt {litgpt_version()}",
        f"layout {'grouped' if case.endswith('-grouped') else 'blocks'}",
        f"shape {B} {T}",
        f"config n_embd {cfg.n_embd} n_head {cfg.n_head} n_query_groups {cfg.n_query_groups} head_size "
        f"{cfg.head_size} rope_n_elem {cfg.rope_n_elem} intermediate_size {cfg.intermediate_size} norm_eps "
        f"{cfg.norm_eps} parallel_residual {int(cfg.parallel_residual)} norm {cfg.norm_class_name} mlp "
        f"{cfg.mlp_class_name} bias {int(cfg.bias)}",
        "# params: name, then the torch shape; values from the generator (stream = 2 + position)",
    ]
    for k, (canonical, v) in enumerate(params.items()):
        lines.append(f"param {canonical} {' '.join(map(str, v.shape))}")
    lines.append("# tensors: name, offset in floats, shape; then litgpt's own f32 and bf16 error against float64")
    blob = []
    stored = {"cos": cos.double(), "sin": sin.double(), **ref}
    for key, value in stored.items():
        a = value.numpy().astype(np.float32)
        e = errors.get(key, {"f32": 0.0, "bf16": 0.0})
        lines.append(f"tensor {key} {offset} {' '.join(map(str, a.shape))} | {e['f32']:.3e} {e['bf16']:.3e}")
        blob.append(a.reshape(-1))
        offset += a.size
    np.concatenate(blob).astype("<f4").tofile(os.path.join(out_dir, case + ".bin"))
    with open(os.path.join(out_dir, case + ".idx"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{case}: {offset * 4 / 1e6:.2f} MB, largest litgpt bf16 error {max(e['bf16'] for e in errors.values()):.2e}")


def litgpt_version():
    import litgpt

    here = os.path.dirname(litgpt.__file__)
    for d in os.listdir(os.path.dirname(here)):
        if d.startswith("litgpt-") and d.endswith(".dist-info"):
            return d[len("litgpt-"):-len(".dist-info")]
    return importlib.metadata.version("litgpt")


def grouped_run(out_dir):
    """Runs this script with litgpt 0.5.4 first on the path, for the grouped cases."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", f"litgpt=={LEGACY_LITGPT}", "--no-deps", "-q",
                        "-d", tmp], check=True)
        wheel = [f for f in os.listdir(tmp) if f.endswith(".whl")][0]
        root = os.path.join(tmp, "site")
        with zipfile.ZipFile(os.path.join(tmp, wheel)) as z:
            z.extractall(root)
        env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
        subprocess.run([sys.executable, os.path.abspath(__file__), "--out", out_dir, "--cases", *GROUPED_CASES,
                        "--no-grouped"], check=True, env=env)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder for the .bin and .idx files")
    ap.add_argument("--cases", nargs="*", default=CURRENT_CASES)
    ap.add_argument("--no-grouped", action="store_true", help=f"skip the litgpt {LEGACY_LITGPT} (grouped) cases")
    args = ap.parse_args()
    try:
        import torch  # noqa: F401
        import litgpt  # noqa: F401
    except ImportError as e:
        print(f"litgpt_reference: needs torch and litgpt ({e})", file=sys.stderr)
        return 77
    for case in args.cases:
        write_case(case, args.out)
    if not args.no_grouped:
        grouped_run(args.out)
        import torch

        with open(os.path.join(args.out, "VERSIONS"), "w") as f:
            f.write(f"litgpt {litgpt_version()} (blocks layout cases), {LEGACY_LITGPT} (grouped cases)\n")
            f.write(f"torch {torch.__version__}\npython {platform.python_version()}\n")
            f.write(f"date {datetime.date.today().isoformat()}\n")
            f.write(f"cases {' '.join(CURRENT_CASES + GROUPED_CASES)} at B {B}, T {T}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
