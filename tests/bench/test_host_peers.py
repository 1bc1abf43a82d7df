#!/usr/bin/env python3
"""bench_host_peers in --quick mode, as a test: every case (GeLU, LayerNorm,
RMSNorm, qkv split + RoPE) in both directions has its fusex, Eigen and
memcpy rows, each checked against the float64 reference before it was
timed; tools/host_peers_report.py makes the table from them."""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASES = ["gelu", "layer_norm", "rms_norm", "qkv_rope"]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    js = os.path.join(a.out, "fusex.json")
    subprocess.run([a.bench, "--quick", "--threads=2", "--benchmark_min_time=0.01", f"--benchmark_out={js}",
                    "--benchmark_out_format=json"], check=True, stdout=subprocess.DEVNULL)
    with open(js) as f:
        d = json.load(f)
    seen = {}
    for b in d["benchmarks"]:
        parts = b["name"].split("/")
        if b.get("error_occurred"):
            fail(f"{b['name']}: {b.get('error_message')}")
        if b.get("verified") != 1:
            fail(f"{b['name']}: timed without being verified")
        if parts[3] != "memcpy" and not 0 <= b.get("worst_error_over_tolerance", -1) <= 1:
            fail(f"{b['name']}: no error measure within the tolerance")
        seen.setdefault((parts[1].split("_bf16")[0], parts[2]), set()).add(parts[3])
    for c in CASES:
        for direction in ("forward", "backward"):
            got = seen.get((c, direction), set())
            if got != {"memcpy", "fusex_fused", "eigen"}:
                fail(f"{c}/{direction}: executors {sorted(got)}")
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "host_peers_report.py"), "--out", a.out, js], check=True,
                   stdout=subprocess.DEVNULL)
    with open(os.path.join(a.out, "report.md")) as f:
        rows = [l for l in f if l.startswith("| ") and "direction" not in l]
    if len(rows) != 2 * len(CASES):
        fail(f"report.md has {len(rows)} rows, not {2 * len(CASES)}")
    print("host peers pipeline: ok,", len(d["benchmarks"]), "rows")


if __name__ == "__main__":
    main()
