#!/usr/bin/env python3
"""Summary of the seed's benchmark (qkv split + RoPE over the LitGPT configs)
from Google Benchmark JSON files (bench_rope, tools/rope_bench_torch.py):
markdown and PNGs in an output folder.

  python3 scripts/rope_report.py --out DIR FILE.json [FILE.json ...]

Writes DIR/report.md (the seed's summary table for bs 1 and bs 2, forward
and backward; a per-config table; the fraction of copy speed per executor;
executors that were wrong) and DIR/time_per_config_{forward,backward}.png,
DIR/copy_fraction.png. Exits non-zero when a timed row was not verified
against the float64 reference.
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

OWN = "fusex_fused"  # the project's own executor
ORDER = ["fusex_fused", "fusex_fused_prim_vjp", "fusex_greedy_cat", "fusex_unfused", "torch_eager", "torch_compile"]


def load(paths):
    rows, contexts = [], []
    for p in paths:
        with open(p) as f:
            d = json.load(f)
        contexts.append((os.path.basename(p), d.get("context", {})))
        for b in d.get("benchmarks", []):
            if b.get("run_type", "iteration") != "iteration":
                continue
            parts = b["name"].split("/")
            if len(parts) < 5 or parts[0] != "rope":
                continue
            # rope/<config>/bs<B>/<direction>/<executor>[/compile][/real_time|/manual_time]
            extra = [x for x in parts[5:] if x not in ("real_time", "manual_time")]
            unit = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b.get("time_unit", "ms")]
            rows.append(dict(
                config=parts[1], B=int(parts[2][2:]), direction=parts[3], executor=parts[4],
                compile="compile" in extra,
                ms=b.get("real_time", float("nan")) * unit if not b.get("error_occurred") else float("nan"),
                error=b.get("error_message", "") if b.get("error_occurred") else "",
                verified=b.get("verified", 0), min_bytes=b.get("min_bytes", float("nan")), seq=b.get("T", float("nan")),
                source=os.path.basename(p)))
    return pd.DataFrame(rows), contexts


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(x) for x in r) + " |" for r in rows]
    return "\n".join(out)


def fmt_ms(x):
    return "—" if pd.isna(x) else (f"{x:.3f}" if x < 10 else f"{x:.1f}")


def pct(x):
    return "—" if pd.isna(x) else f"{x:.1f}%"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    df, contexts = load(a.files)
    if df.empty:
        sys.exit("rope_report: no rope/... rows in the input files")

    runs = df[~df.compile]
    unverified = runs[(runs.error == "") & (runs.verified != 1)]
    wrong = runs[runs.error != ""]
    timed = runs[(runs.error == "") & (runs.verified == 1)]
    copy = timed[timed.executor == "copy"].set_index(["config", "B", "direction"]).ms
    execs = [e for e in ORDER if e in set(timed.executor)] + sorted(set(timed.executor) - set(ORDER) - {"copy"})
    wide = timed[timed.executor != "copy"].pivot_table(index=["config", "B", "direction"], columns="executor",
                                                        values="ms", aggfunc="min")
    wide = wide.reindex(columns=execs)
    best = wide.idxmin(axis=1)
    best_ms = wide.min(axis=1)

    lines = ["# qkv split + RoPE over the LitGPT configs", ""]
    lines.append("Inputs: " + ", ".join(f"`{n}`" for n, _ in contexts) + ".")
    lines.append("")
    ctx_rows = []
    for n, c in contexts:
        v = c.get("library_versions", {})
        versions = ", ".join(f"{k} {x}" for k, x in v.items()) if isinstance(v, dict) else str(v)
        ctx_rows.append([n, c.get("date", "?"), c.get("host_name", "?"), c.get("num_cpus", "?"),
                         c.get("fusex_device", "?"), c.get("qkv_layout", "?"), c.get("t_cap", "?"),
                         c.get("configs", "?"), versions or "—"])
    lines += [md_table(["file", "date", "host", "CPUs", "device", "qkv layout", "T cap", "configs", "versions"], ctx_rows), ""]
    lines.append("T = min(block_size, T cap); bf16; k and v expanded to n_head heads as litgpt does in training. "
                 "Every timed row was checked against a float64 reference first.")
    lines.append("")

    # the seed's summary: top executor, % of configs where each is best, gap of the project's own to the top
    lines.append("## Summary")
    for direction in ("forward", "backward"):
        lines += ["", f"### {direction}", ""]
        header = ["", "bs 1", "bs 2"]
        rows = []
        sub = {B: best[best.index.get_level_values("direction") == direction] for B in (1, 2)}
        sub = {B: s[s.index.get_level_values("B") == B] for B, s in sub.items()}
        rows.append(["top executor"] + [s.value_counts().idxmax() if len(s) else "—" for s in sub.values()])
        for e in execs:
            rows.append([f"best on (% of configs): {e}"] +
                        [pct(100.0 * (s == e).sum() / len(s)) if len(s) else "—" for s in sub.values()])
        for stat in ("max", "min", "mean", "median"):
            vals = []
            for B in (1, 2):
                m = (wide.index.get_level_values("direction") == direction) & (wide.index.get_level_values("B") == B)
                if OWN not in wide.columns or not m.any():
                    vals.append("—")
                    continue
                gap = 100.0 * (wide[m][OWN] / best_ms[m] - 1.0)
                vals.append(pct(getattr(gap, stat)()))
            rows.append([f"gap of {OWN} to the top executor, {stat}"] + vals)
        rows.append(["configs"] + [str(len(s)) for s in sub.values()])
        lines.append(md_table(header, rows))

    # fraction of copy speed
    lines += ["", "## Fraction of copy speed", "",
              "Copy time of the case's minimum bytes over the executor's time (100% = copy speed), median over configs.", ""]
    frac = wide.div(copy.reindex(wide.index), axis=0).rdiv(1.0) * 100.0
    rows = []
    for direction in ("forward", "backward"):
        for B in (1, 2):
            m = (frac.index.get_level_values("direction") == direction) & (frac.index.get_level_values("B") == B)
            rows.append([direction, B] + [pct(frac[m][e].median()) if m.any() else "—" for e in execs])
    lines.append(md_table(["direction", "bs"] + execs, rows))

    # compile time of torch.compile
    comp = df[df.compile & (df.error == "")]
    if not comp.empty:
        lines += ["", "## torch.compile compile time", "",
                  "Wall time of the first call (tracing, code generation, or a cache hit), in seconds.", ""]
        rows = []
        for direction in ("forward", "backward"):
            s = comp[comp.direction == direction].ms / 1e3
            rows.append([direction, f"{s.sum():.1f}", f"{s.max():.1f}", f"{s.median():.2f}", len(s)])
        lines.append(md_table(["direction", "total", "max", "median", "calls"], rows))

    # per config
    lines += ["", "## Per config", "", "Time in ms; gap: fusex_fused over the best, in %.", ""]
    rows = []
    order = timed[timed.executor == "copy"].groupby(["config"]).min_bytes.max().sort_values().index
    for direction in ("forward", "backward"):
        for cfg in order:
            for B in (1, 2):
                key = (cfg, B, direction)
                if key not in wide.index:
                    continue
                r = wide.loc[key]
                gap = 100.0 * (r[OWN] / best_ms[key] - 1.0) if OWN in r else float("nan")
                T = timed[(timed.config == cfg) & (timed.B == B)].seq.max()
                rows.append([direction, cfg, B, int(T) if not pd.isna(T) else "—", fmt_ms(copy.get(key))] +
                            [fmt_ms(r[e]) for e in execs] + [best[key], pct(gap)])
    lines.append(md_table(["direction", "config", "bs", "T", "copy"] + execs + ["best", "gap"], rows))

    if not wrong.empty:
        lines += ["", "## Wrong (not timed)", ""]
        lines.append(md_table(["config", "bs", "direction", "executor", "error"],
                              [[r.config, r.B, r.direction, r.executor, r.error] for r in wrong.itertuples()]))
    if not unverified.empty:
        lines += ["", "## Timed but not verified", ""]
        lines.append(md_table(["config", "bs", "direction", "executor"],
                              [[r.config, r.B, r.direction, r.executor] for r in unverified.itertuples()]))

    # plots
    for direction in ("forward", "backward"):
        fig, ax = plt.subplots(figsize=(11, 5))
        for B, marker in ((1, "o"), (2, "s")):
            m = (wide.index.get_level_values("direction") == direction) & (wide.index.get_level_values("B") == B)
            sub = wide[m].copy()
            sub["bytes"] = [copy_bytes for copy_bytes in
                            timed[timed.executor == "copy"].set_index(["config", "B", "direction"]).min_bytes.reindex(sub.index)]
            sub = sub.sort_values("bytes")
            for e in execs:
                ax.plot(sub["bytes"] / 1e6, sub[e], marker=marker, linestyle="", markersize=3, label=f"{e} bs{B}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("minimum MB moved (qkv, cache, q k v)")
        ax.set_ylabel("ms")
        ax.set_title(f"qkv split + RoPE {direction}: time per config")
        ax.legend(fontsize=7, ncol=2)
        fig.tight_layout()
        fig.savefig(os.path.join(a.out, f"time_per_config_{direction}.png"), dpi=110)
        plt.close(fig)
    fig, ax = plt.subplots(figsize=(9, 4.5))
    labels, data = [], []
    for direction in ("forward", "backward"):
        for e in execs:
            v = frac[frac.index.get_level_values("direction") == direction][e].dropna()
            if len(v):
                labels.append(f"{e}\n{direction}")
                data.append(v.values)
    if data:
        try:
            ax.boxplot(data, tick_labels=labels)  # matplotlib >= 3.9
        except TypeError:
            ax.boxplot(data, labels=labels)
    ax.set_ylabel("% of copy speed")
    ax.tick_params(axis="x", labelsize=6)
    ax.set_title("qkv split + RoPE: fraction of copy speed per executor (all configs, bs 1 and 2)")
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "copy_fraction.png"), dpi=110)
    plt.close(fig)
    lines += ["", "![time per config, forward](time_per_config_forward.png)",
              "![time per config, backward](time_per_config_backward.png)", "![fraction of copy](copy_fraction.png)", ""]
    with open(os.path.join(a.out, "report.md"), "w") as f:
        f.write("\n".join(lines))
    print(f"rope_report: {len(timed)} timed rows, {len(wrong)} wrong, {len(unverified)} unverified; {a.out}/report.md")
    sys.exit(1 if not unverified.empty else 0)


if __name__ == "__main__":
    main()
