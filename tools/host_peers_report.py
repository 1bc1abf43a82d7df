#!/usr/bin/env python3
"""The table of the host executor beside its peers, from the JSON of
bench_host_peers (fusex, Eigen, memcpy) and tools/host_peers_torch.py
(PyTorch eager and torch.compile), one file per round of each: per op and
direction, the median time over the rounds of every executor, its GB/s (the
case's minimum bytes over the wall time) and its % of memcpy, and fusex
fused against the best peer. Writes report.md and summary.json.

  python3 tools/host_peers_report.py --out DIR FILE.json [FILE.json ...]
"""
import argparse
import json
import os
import statistics
import sys

EXECUTORS = ["memcpy", "fusex_fused", "eigen", "torch_eager", "torch_compile"]
PEERS = ["eigen", "torch_eager", "torch_compile"]
LABEL = {"memcpy": "memcpy", "fusex_fused": "fusex fused", "eigen": "Eigen Tensor", "torch_eager": "torch eager",
         "torch_compile": "torch.compile"}


def load(files):
    """{(case, direction): {executor: [ms, ...]}}, minimum bytes per case, errors, contexts"""
    times, bytes_, errors, contexts = {}, {}, [], []
    for f in files:
        with open(f) as fo:
            d = json.load(fo)
        contexts.append(d.get("context", {}))
        for b in d["benchmarks"]:
            if b.get("run_type") == "aggregate":
                continue
            parts = b["name"].split("/")
            if len(parts) < 4 or parts[0] != "host" or parts[2] not in ("forward", "backward"):
                continue
            case, direction, ex = parts[1], parts[2], parts[3]
            if b.get("error_occurred"):
                errors.append(f"{b['name']}: {b.get('error_message')}")
                continue
            if b.get("verified") != 1:
                errors.append(f"{b['name']}: timed without being verified")
                continue
            ms = b["real_time"] * {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b.get("time_unit", "ms")]
            times.setdefault((case, direction), {}).setdefault(ex, []).append(ms)
            if "min_bytes" in b:
                bytes_[case, direction] = b["min_bytes"]
    return times, bytes_, errors, contexts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    times, nbytes, errors, contexts = load(a.files)
    if not times:
        sys.exit("host_peers_report: no host/<op>/<direction>/<executor> rows in " + " ".join(a.files))
    os.makedirs(a.out, exist_ok=True)
    rows, summary = [], []
    for (case, direction), by_ex in sorted(times.items(), key=lambda kv: (kv[0][0], kv[0][1] != "forward")):
        med = {ex: statistics.median(v) for ex, v in by_ex.items()}
        rounds = {ex: len(v) for ex, v in by_ex.items()}
        mb = nbytes.get((case, direction))
        peers = {ex: med[ex] for ex in PEERS if ex in med}
        best = min(peers, key=peers.get) if peers else None
        fx = med.get("fusex_fused")
        entry = {"case": case, "direction": direction, "min_bytes": mb, "median_ms": med, "rounds": rounds,
                 "best_peer": best, "fusex_over_best": (fx / peers[best]) if (fx and best) else None,
                 "percent_of_memcpy": {ex: 100 * med["memcpy"] / t for ex, t in med.items()} if "memcpy" in med else {}}
        summary.append(entry)
        cells = []
        for ex in EXECUTORS:
            if ex not in med:
                cells.append("—")
                continue
            gbs = f", {mb / med[ex] / 1e6:.1f} GB/s" if mb else ""
            pct = f", {entry['percent_of_memcpy'][ex]:.0f}%" if ex != "memcpy" and entry["percent_of_memcpy"] else ""
            cells.append(f"{med[ex]:.3g} ms{gbs}{pct}")
        ratio = f"{entry['fusex_over_best']:.2f}× ({LABEL[best]})" if entry["fusex_over_best"] else "—"
        rows.append(f"| {case} | {direction} | " + " | ".join(cells) + f" | {ratio} |")
    ctx = {}
    for c in contexts:
        ctx.update({k: v for k, v in c.items() if isinstance(v, (str, int, float))})
    nround = max((max(e["rounds"].values()) for e in summary), default=0)
    lines = [
        "# The host executor beside its peers",
        "",
        f"Median wall time over {nround} round(s) of each executor; GB/s is the case's minimum bytes (the fused "
        "plan's: every input read once, every output written once) over the time; % is of memcpy of the same "
        "bytes on the same threads. Every executor was checked against a float64 reference before it was timed.",
        "",
        f"Machine: {ctx.get('host_name', '?')}, {ctx.get('num_cpus', '?')} CPUs"
        f"{', ' + str(ctx.get('mhz_per_cpu')) + ' MHz' if ctx.get('mhz_per_cpu') else ''}; threads: {ctx.get('threads', '?')}; "
        f"Eigen {ctx.get('eigen', '?')}; torch {ctx.get('torch', '—')}; date {ctx.get('date', '?')}.",
        "",
        "| op | direction | " + " | ".join(LABEL[e] for e in EXECUTORS) + " | fusex ÷ best peer |",
        "|---|---|" + "---|" * len(EXECUTORS) + "---|",
        *rows,
        "",
    ]
    if errors:
        lines += ["## Not timed", ""] + [f"- {e}" for e in errors] + [""]
    with open(os.path.join(a.out, "report.md"), "w") as fo:
        fo.write("\n".join(lines))
    with open(os.path.join(a.out, "summary.json"), "w") as fo:
        json.dump({"context": ctx, "cases": summary, "errors": errors}, fo, indent=1)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
