#!/usr/bin/env python3
"""The seed's benchmark pipeline in --quick mode, as a test: bench_rope (the
fusex rows), tools/rope_bench_torch.py (with --torch; exit 77, skipped, when
torch or litgpt cannot be imported), then scripts/rope_report.py. Checks
that every executor of every case was verified before it was timed (or is
reported wrong), and the report's structure."""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FUSEX = ["fusex_fused", "fusex_fused_prim_vjp", "fusex_greedy_cat", "fusex_unfused"]
TORCH = ["torch_eager", "torch_compile"]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def check_json(path, executors):
    with open(path) as f:
        d = json.load(f)
    cases = {}
    for b in d["benchmarks"]:
        parts = b["name"].split("/")
        if len(parts) < 5 or "compile" in parts[5:]:
            continue
        key = tuple(parts[1:4])
        cases.setdefault(key, set()).add(parts[4])
        if b.get("error_occurred"):
            if "wrong against the float64 reference" not in b.get("error_message", ""):
                fail(f"{b['name']}: an error that is not a failed check: {b.get('error_message')}")
        elif b.get("verified") != 1:
            fail(f"{b['name']}: timed without being verified")
    if not cases:
        fail(f"{path}: no cases")
    for key, got in cases.items():
        missing = set(executors) - got
        if missing:
            fail(f"{path}: {'/'.join(key)} lacks {sorted(missing)}")
    dirs = {k[2] for k in cases}
    if dirs != {"forward", "backward"}:
        fail(f"{path}: directions {sorted(dirs)}")
    if {k[1] for k in cases} != {"bs1", "bs2"}:
        fail(f"{path}: batch sizes {sorted({k[1] for k in cases})}")
    return d, cases


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--torch", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    files = []
    if a.torch:
        try:
            import torch  # noqa: F401
            import litgpt  # noqa: F401
        except ImportError as e:
            print(f"skipped: {e}")
            sys.exit(77)
        tj = os.path.join(a.out, "torch.json")
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "rope_bench_torch.py"), "--quick", "--min-time", "0.02",
                        "--out", tj], check=True)
        check_json(tj, TORCH)
        files.append(tj)
    fj = os.path.join(a.out, "fusex.json")
    subprocess.run([a.bench, "--quick", "--benchmark_min_time=0.01", f"--benchmark_out={fj}",
                    "--benchmark_out_format=json"], check=True, stdout=subprocess.DEVNULL)
    d, cases = check_json(fj, FUSEX + ["copy"])
    if len(cases) != 4 * 2 * 2:
        fail(f"quick mode: {len(cases)} cases, expected 4 configs x 2 batch sizes x 2 directions")
    files.append(fj)
    rep = os.path.join(a.out, "report")
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "rope_report.py"), "--out", rep] + files, check=True)
    text = open(os.path.join(rep, "report.md")).read()
    for s in ["## Summary", "### forward", "### backward", "| top executor |", "gap of fusex_fused to the top executor, median",
              "## Fraction of copy speed", "## Per config"]:
        if s not in text:
            fail(f"report.md lacks {s!r}")
    if "## Timed but not verified" in text:
        fail("report.md lists rows timed without a check")
    for e in FUSEX + (TORCH if a.torch else []):
        if f"best on (% of configs): {e}" not in text:
            fail(f"report.md has no row for {e}")
    for png in ["time_per_config_forward.png", "time_per_config_backward.png", "copy_fraction.png"]:
        p = os.path.join(rep, png)
        if not os.path.exists(p) or os.path.getsize(p) < 1000:
            fail(f"{png} missing or empty")
    print(f"ok: {len(cases)} fusex cases verified and reported" + (" with torch rows" if a.torch else ""))


if __name__ == "__main__":
    main()
