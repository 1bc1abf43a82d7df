#!/usr/bin/env python3
"""Turns the CUDA benchmarks' Google Benchmark JSON into each fused kernel's
time as a percentage of a device-to-device copy of the same bytes measured
in the same run (report.md and report.json in --out).

A case `A/B/variant` is paired with the copy `A/B/copy_limit` (a
`.../backward_prim_vjp/...` case with `.../backward/copy_limit`): the copy
moves the fused plan's minimum bytes, so copy time / case time is the
fraction of copy speed the case reaches.

Usage: gpu_report.py --out DIR bench1.json [bench2.json ...]
"""

import argparse
import json
import os
import sys


def load(paths):
    rows, context = [], None
    for p in paths:
        if not os.path.exists(p):
            print(f"gpu_report: {p} is missing, skipped", file=sys.stderr)
            continue
        with open(p) as f:
            data = json.load(f)
        context = context or data.get("context")
        for b in data.get("benchmarks", []):
            if b.get("run_type", "iteration") == "iteration":
                rows.append(b)
    return rows, context


def seconds(b):
    unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b.get("time_unit", "ns")]
    return b["real_time"] * unit


def copy_name(name):
    parts = name.split("/")
    parts[-1] = "copy_limit"
    if len(parts) >= 2 and parts[-2].endswith("_prim_vjp"):
        parts[-2] = parts[-2][: -len("_prim_vjp")]
    return "/".join(parts)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("json", nargs="+")
    args = ap.parse_args()
    rows, context = load(args.json)
    by_name = {b["name"]: b for b in rows}
    table = []
    for b in rows:
        if b["name"].endswith("/copy_limit"):
            continue
        c = by_name.get(copy_name(b["name"]))
        t = seconds(b)
        entry = {
            "case": b["name"],
            "time_us": round(t * 1e6, 2),
            "kernels": b.get("kernels"),
            "min_bytes": b.get("min_bytes"),
            "bytes_over_min": round(b["bytes_over_min"], 3) if "bytes_over_min" in b else None,
            "gb_per_s": round(b["min_bytes"] / t / 1e9, 1) if b.get("min_bytes") else None,
        }
        if c:
            tc = seconds(c)
            entry["copy_us"] = round(tc * 1e6, 2)
            entry["copy_gb_per_s"] = round(c["min_bytes"] / tc / 1e9, 1) if c.get("min_bytes") else None
            entry["percent_of_copy"] = round(100 * tc / t, 1)
        table.append(entry)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "report.json"), "w") as f:
        json.dump({"context": context, "cases": table}, f, indent=1)
    lines = []
    if context:
        lines.append(f"Machine: {context.get('host_name', '?')}, {context.get('date', '?')}; "
                     f"{context.get('num_cpus', '?')} CPUs. Times per launch (means over samples of many launches, "
                     f"L2 flushed between samples).")
        lines.append("")
    lines.append("| case | kernels | time (us) | copy of the minimum bytes (us) | % of copy | GB/s (minimum bytes) | modelled / minimum bytes |")
    lines.append("|---|---|---|---|---|---|---|")
    for e in table:
        lines.append(f"| {e['case']} | {e['kernels'] if e['kernels'] is not None else ''} | {e['time_us']} | "
                     f"{e.get('copy_us', '')} | {e.get('percent_of_copy', '')} | {e.get('gb_per_s', '')} | "
                     f"{e.get('bytes_over_min', '')} |")
    with open(os.path.join(args.out, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"gpu_report: {len(table)} cases -> {args.out}/report.md, report.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
