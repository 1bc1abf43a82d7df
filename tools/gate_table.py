#!/usr/bin/env python3
"""Prints the machine-code gate's figures (the JSON lines sass_gate.py
--json-out wrote, e.g. build/tests/sass/gate_figures.jsonl) as the markdown
table of docs/performance.md.

Usage: gate_table.py FIGURES.jsonl
"""

import json
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    rows = {}
    with open(sys.argv[1]) as f:
        for line in f:
            r = json.loads(line)
            rows[(r["case"], r["kernel"], r["what"])] = r  # the latest run of each
    print("| case | kernel | lanes | registers | stack | LDG.128 / STG.128 / LDS.128 | F2FP | SASS | instructions per element | budget |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (case, kernel, what), r in sorted(rows.items()):
        print(f"| {case} | {kernel.replace('_kernel', '')}: {what} | {r['lanes']} | {r['registers']} | {r['stack']} | "
              f"{r['ldg128']} / {r['stg128']} / {r['lds128']} | {r['f2fp']} | {r['sass']} | {r['per_element']} | {r['budget']} |")


if __name__ == "__main__":
    main()
