#!/usr/bin/env python3
"""The machine-code gate: checks compiled CUDA kernels without running them.

For each kernel of a cubin, from `ptxas -v` and the SASS (nvdisasm):
  - no stack frame, no spills, no local memory (LDL/STL) anywhere;
  - on the fast path, 16-bit tensors move as vectors: no 16-bit scalar
    global or shared access, and at least the expected 128-bit loads/stores;
  - kernels that write 16-bit floats round them in hardware (F2FP), and no
    kernel rounds them in integer code (the 0x7fff rounding bias);
  - fast-path SASS instructions per element within the issue budget at copy
    speed: SMs x schedulers x clock x 32 / (copy bandwidth / bytes per element).

The fast path: the blocks of each loop that no cold-path marker dominates
(the kernels mark gathers and value-by-value fallbacks with PMTRIG). Per
element = sum over innermost loops of (longest fast path through one
iteration) / elements per iteration, plus the same for each enclosing loop
divided by the elements of one of its iterations (the spec's reference
launch). Straight-line code outside loops is per launch, not per element.

Usage: sass_gate.py --cubin K.cubin --ptxas-log K.log --spec cases.json --case NAME [--nvdisasm PATH]
                    [--json-out FIGURES.jsonl] [--expect-fail REGEX ...]
       sass_gate.py --describe K.cubin   (prints the analysis of every kernel)
Exit status 0 when every check passes, 1 otherwise.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys

# H200 (sm_90): the budget of docs/performance.md.
SMS, SCHEDULERS, CLOCK_HZ, LANES = 132, 4, 1.98e9, 32
COPY_BYTES_PER_S = 4.3e12


def budget(bytes_per_element):
    return SMS * SCHEDULERS * CLOCK_HZ * LANES / (COPY_BYTES_PER_S / bytes_per_element)


def find_tool(name, given=None):
    if given:
        return given
    path = shutil.which(name)
    if path:
        return path
    try:  # the PyPI wheels (nvidia-cuda-nvdisasm, nvidia-cuda-cuobjdump)
        import nvidia  # noqa: F401
        for base in nvidia.__path__:
            for sub in ("cu13", "cuda_nvdisasm", "cuda_cuobjdump"):
                cand = os.path.join(base, sub, "bin", name)
                if os.path.exists(cand):
                    return cand
    except ImportError:
        pass
    sys.exit(f"sass_gate: {name} not found (pip install nvidia-cuda-nvdisasm nvidia-cuda-cuobjdump)")


INSTR = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;\s*(?:/\*.*\*/)?\s*$")
LABEL = re.compile(r"^(\.L_x_\d+):")
SECTION = re.compile(r"^\s*\.section\s+\.text\.([^,\s]+)")
TARGET = re.compile(r"`\((\.L_x_\d+)\)")


class Instr:
    def __init__(self, addr, text):
        self.addr = addr
        self.text = text
        m = re.match(r"^(@!?U?P[T0-9]+\s+)?(\S+)(.*)$", text)
        self.pred = (m.group(1) or "").strip()
        self.op = m.group(2)
        self.args = m.group(3)
        self.base = self.op.split(".")[0]
        t = TARGET.search(text)
        self.target = t.group(1) if t else None

    def conditional(self):
        if self.pred and self.pred not in ("@PT",):
            return True
        # BRA P1, target: a branch with its own predicate operand
        return self.base == "BRA" and re.match(r"^\s*!?P[0-6],", self.args) is not None


def parse_functions(sass_text):
    """Kernel name -> list of (labels, Instr) in address order."""
    funcs = {}
    current = None
    pending = []
    for line in sass_text.splitlines():
        m = SECTION.match(line)
        if m:
            current = m.group(1)
            funcs[current] = []
            pending = []
            continue
        if current is None:
            continue
        m = LABEL.match(line.strip())
        if m:
            pending.append(m.group(1))
            continue
        m = INSTR.match(line)
        if m:
            ins = Instr(int(m.group(1), 16), m.group(2))
            funcs[current].append((pending, ins))
            pending = []
    return funcs


class CFG:
    def __init__(self, body):
        self.instrs = [ins for _, ins in body]
        label_at = {}
        for i, (labels, _) in enumerate(body):
            for lab in labels:
                label_at[lab] = i
        leaders = {0}
        for i, (labels, ins) in enumerate(body):
            if labels:
                leaders.add(i)
            if ins.base in ("BRA", "EXIT", "RET", "BRX", "JMP", "JMX", "BPT") and i + 1 < len(body):
                leaders.add(i + 1)
        starts = sorted(leaders)
        self.blocks = []
        self.block_of = {}
        for k, s in enumerate(starts):
            e = starts[k + 1] if k + 1 < len(starts) else len(body)
            self.blocks.append(list(range(s, e)))
            self.block_of[s] = k
        self.succ = [[] for _ in self.blocks]
        for k, idxs in enumerate(self.blocks):
            last = self.instrs[idxs[-1]]
            nxt = k + 1 if k + 1 < len(self.blocks) else None
            if last.base == "BRA" and last.target in label_at:
                self.succ[k].append(self.block_of[label_at[last.target]])
                if last.conditional() and nxt is not None:
                    self.succ[k].append(nxt)
            elif last.base in ("EXIT", "RET", "BPT", "BRX", "JMX"):
                if last.conditional() and nxt is not None:
                    self.succ[k].append(nxt)
            elif nxt is not None:
                self.succ[k].append(nxt)
        # reachable from the entry (internal subroutines after the kernel are not)
        seen, stack = {0}, [0]
        while stack:
            b = stack.pop()
            for s in self.succ[b]:
                if s not in seen:
                    seen.add(s)
                    stack.append(s)
        self.reach = seen
        self.pred = [[] for _ in self.blocks]
        for b in self.reach:
            for s in self.succ[b]:
                self.pred[s].append(b)
        self.dom = self._dominators()

    def _dominators(self):
        nodes = sorted(self.reach)
        dom = {b: set(nodes) for b in nodes}
        dom[0] = {0}
        changed = True
        while changed:
            changed = False
            for b in nodes:
                if b == 0:
                    continue
                ps = [p for p in self.pred[b] if p in self.reach]
                new = set.intersection(*(dom[p] for p in ps)) if ps else set()
                new = new | {b}
                if new != dom[b]:
                    dom[b] = new
                    changed = True
        return dom

    def size(self, b):
        return sum(1 for i in self.blocks[b] if self.instrs[i].base != "NOP")

    def loops(self):
        """header -> set of blocks of its natural loop(s)."""
        loops = {}
        for u in self.reach:
            for h in self.succ[u]:
                if h in self.dom[u]:  # back edge u -> h
                    body = loops.setdefault(h, {h})
                    stack = [u]
                    while stack:
                        x = stack.pop()
                        if x not in body:
                            body.add(x)
                            stack.extend(p for p in self.pred[x] if p in self.reach)
        return loops


def analyse(body):
    g = CFG(body)
    marker = {b for b in g.reach if any(g.instrs[i].base == "PMTRIG" for i in g.blocks[b])}
    cold = {b for b in g.reach if g.dom[b] & marker}
    loops = g.loops()
    # nesting: a loop's inner loops are the other loops whose header it contains
    inner = {h: [h2 for h2 in loops if h2 != h and h2 in loops[h] and loops[h2] <= loops[h] and h2 not in cold]
             for h in loops}

    def longest(h):
        # longest fast path from h through one iteration of loop h, inner loops skipped
        body_l = loops[h]
        nested = set()
        for h2 in inner[h]:
            nested |= loops[h2]
        memo = {}

        nxt = {}

        def visit(b, depth=0):
            if b in memo:
                return memo[b]
            memo[b] = 0  # guards against cycles left in the graph
            best, arg = 0, None
            cands = []
            for s in g.succ[b]:
                if s == h or s not in body_l or s in cold:
                    continue
                if s in nested:
                    # skip over the inner loop: continue at its exits
                    h2 = next(x for x in inner[h] if s in loops[x])
                    cands += [e for x in loops[h2] for e in g.succ[x]
                              if e not in loops[h2] and e in body_l and e != h and e not in cold]
                else:
                    cands.append(s)
            for s in cands:
                v = visit(s)
                if v > best:
                    best, arg = v, s
            nxt[b] = arg
            cost = (0 if b in nested else g.size(b)) + best
            memo[b] = cost
            return cost

        total = visit(h)
        path, b = [], h
        while b is not None and len(path) < 10000:
            path.append(b)
            b = nxt.get(b)
        paths[h] = path
        return total

    paths = {}
    result = {"loops": []}
    for h in sorted(loops, key=lambda x: g.instrs[g.blocks[x][0]].addr):
        depth = sum(1 for h2 in loops if h2 != h and h in loops[h2] and loops[h] <= loops[h2])
        nested = set()
        for h2 in inner[h]:
            nested |= loops[h2]
        hist = {}
        for b in loops[h]:
            if b in cold or b in nested:
                continue
            for i in g.blocks[b]:
                hist[g.instrs[i].base] = hist.get(g.instrs[i].base, 0) + 1
        result["loops"].append({
            "ops": dict(sorted(hist.items(), key=lambda kv: -kv[1])),
            "header": hex(g.instrs[g.blocks[h][0]].addr),
            "depth": depth,
            "innermost": not inner[h],
            "fast_cost": longest(h) if h not in cold else 0,
            "cold": h in cold,
        })
    result["paths"] = {hex(g.instrs[g.blocks[h][0]].addr): [g.instrs[i] for b in p for i in g.blocks[b]]
                       for h, p in paths.items()}
    fast_instrs = [g.instrs[i] for b in g.reach if b not in cold for i in g.blocks[b]]
    all_instrs = [g.instrs[i] for b in g.reach for i in g.blocks[b]]
    result["fast_instrs"] = fast_instrs
    result["all_instrs"] = all_instrs
    result["total"] = sum(1 for i in g.instrs if i.base != "NOP")
    return result


def ptxas_properties(log_text):
    """Mangled kernel name -> dict(stack, spill_stores, spill_loads, registers)."""
    props = {}
    current = None
    for line in log_text.splitlines():
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            current = m.group(1)
            props[current] = {}
            continue
        if current is None:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            props[current].update(stack=int(m.group(1)), spill_stores=int(m.group(2)), spill_loads=int(m.group(3)))
        m = re.search(r"Used (\d+) registers", line)
        if m:
            props[current]["registers"] = int(m.group(1))
    return props


def kernel_kind(name):
    for kind in ("pointwise_kernel", "row_kernel", "row_split_kernel", "column_tile_kernel", "column_merge_kernel",
                 "gate_bad_kernel", "copy_kernel"):
        if kind in name:
            return kind
    return None


def count(instrs, pattern):
    r = re.compile(pattern)
    return sum(1 for i in instrs if r.search(i.op))


def check_kernel(name, a, props, spec, report):
    ok = True

    def fail(msg):
        nonlocal ok
        ok = False
        report.append(f"  FAIL {msg}")

    p = props.get(name, {})
    if not p:
        fail("no ptxas -v properties for the kernel")
    for key in ("stack", "spill_stores", "spill_loads"):
        if p.get(key, 0) != 0:
            fail(f"ptxas: {p[key]} bytes of {'stack frame' if key == 'stack' else key.replace('_', ' ')}")
    local = count(a["all_instrs"], r"^(LDL|STL)(\.|$)")
    if local:
        fail(f"{local} local-memory instructions (LDL/STL)")
    scalar16 = [i for i in a["fast_instrs"] if re.match(r"^(LDG|STG|LDS|STS)\.[A-Z.]*(U16|S16)", i.op)]
    if scalar16:
        fail(f"{len(scalar16)} 16-bit scalar accesses on the fast path (first: {scalar16[0].op} at {hex(scalar16[0].addr)})")
    ldg128 = count(a["fast_instrs"], r"^LDG\.E\.128")
    stg128 = count(a["fast_instrs"], r"^STG\.E\.128")
    lds128 = count(a["fast_instrs"], r"^LDS\.128")
    if ldg128 < spec.get("min_ldg128", 0):
        fail(f"{ldg128} 128-bit global loads on the fast path, expected at least {spec['min_ldg128']}")
    if stg128 < spec.get("min_stg128", 0):
        fail(f"{stg128} 128-bit global stores on the fast path, expected at least {spec['min_stg128']}")
    if lds128 < spec.get("min_lds128", 0):
        fail(f"{lds128} 128-bit shared loads on the fast path, expected at least {spec['min_lds128']}")
    f2fp = count(a["all_instrs"], r"^F2FP")
    if spec.get("writes16") and f2fp == 0:
        fail("writes 16-bit floats but has no F2FP (hardware rounding) instruction")
    if any("0x7fff" in i.args for i in a["all_instrs"] if i.base in ("IADD3", "VIADD", "IMAD", "LOP3")):
        fail("rounds 16-bit floats in integer code (0x7fff bias)")
    # lanes per thread: the kernel's W template argument (fusex kernels are
    # template <class Code, int W>), unless the spec says otherwise
    m = re.search(r"Li(\d+)EEEv", name)
    lanes = spec.get("elements_per_iteration") or (int(m.group(1)) if m else None)
    per_elem = 0.0
    parts = []
    for lp in a["loops"]:
        if lp["cold"] or lp["fast_cost"] == 0:
            continue
        elems = lanes if lp["innermost"] else spec.get("elements_per_outer_iteration")
        if not elems:
            fail(f"loop at {lp['header']} (depth {lp['depth']}) has no elements per iteration in the spec")
            continue
        per_elem += lp["fast_cost"] / elems
        parts.append(f"{lp['fast_cost']}/{elems}")
    limit = budget(spec["bytes_per_element"])
    report.append(f"  lanes {lanes}, registers {p.get('registers', '?')}, stack {p.get('stack', '?')}, spills "
                  f"{p.get('spill_stores', '?')}/{p.get('spill_loads', '?')}, SASS {a['total']} instructions, "
                  f"LDG.128 {ldg128}, STG.128 {stg128}, LDS.128 {lds128}, F2FP {f2fp}")
    report.append(f"  fast path: {per_elem:.1f} instructions per element ({' + '.join(parts) or 'no loop'}), "
                  f"budget {limit:.1f} at {spec['bytes_per_element']} bytes per element")
    if per_elem > limit:
        fail(f"{per_elem:.1f} instructions per element exceed the budget of {limit:.1f}")
    if per_elem == 0:
        fail("no fast-path loop found")
    return ok, {"registers": p.get("registers"), "stack": p.get("stack"), "lanes": lanes, "per_element": round(per_elem, 2),
                "budget": round(limit, 1), "ldg128": ldg128, "stg128": stg128, "lds128": lds128, "f2fp": f2fp,
                "sass": a["total"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cubin")
    ap.add_argument("--ptxas-log")
    ap.add_argument("--spec")
    ap.add_argument("--case")
    ap.add_argument("--nvdisasm")
    ap.add_argument("--json-out", help="append this case's figures to a JSON lines file")
    ap.add_argument("--describe", metavar="CUBIN")
    ap.add_argument("--path", action="store_true", help="with --describe: print each loop's longest fast path")
    ap.add_argument("--expect-fail", action="append", default=[], metavar="REGEX",
                    help="succeed only if the gate fails with a message matching each REGEX (tests the gate itself)")
    args = ap.parse_args()
    nvdisasm = find_tool("nvdisasm", args.nvdisasm)
    cubin = args.describe or args.cubin
    sass = subprocess.run([nvdisasm, "-c", cubin], check=True, capture_output=True, text=True).stdout
    funcs = parse_functions(sass)
    if args.describe:
        for name, body in funcs.items():
            a = analyse(body)
            print(name[:120], "total", a["total"])
            for lp in a["loops"]:
                print("   loop", lp)
                if args.path and lp["header"] in a["paths"] and not lp["cold"]:
                    for ins in a["paths"][lp["header"]]:
                        print(f"      {ins.addr:05x} {ins.text}")
        return 0
    with open(args.spec) as f:
        spec = json.load(f)[args.case]
    with open(args.ptxas_log) as f:
        props = ptxas_properties(f.read())
    kernels = [(n, b) for n, b in funcs.items() if kernel_kind(n)]
    report = [f"case {args.case}"]
    ok = True
    figures = []
    expected = spec["kernels"]
    by_kind = {}
    for n, b in kernels:
        by_kind.setdefault(kernel_kind(n), []).append((n, b))
    for k, ks in enumerate(expected):
        cands = by_kind.get(ks["kind"], [])
        index = ks.get("index", 0)
        if index >= len(cands):
            report.append(f" kernel {ks['kind']}[{index}]: FAIL not in the cubin")
            ok = False
            continue
        name, body = cands[index]
        report.append(f" kernel {ks['kind']}[{index}] ({ks.get('what', '')})")
        good, fig = check_kernel(name, analyse(body), props, ks, report)
        ok = ok and good
        fig.update(case=args.case, kernel=ks["kind"], what=ks.get("what", ""))
        figures.append(fig)
    print("\n".join(report))
    if args.json_out:
        with open(args.json_out, "a") as f:
            for fig in figures:
                f.write(json.dumps(fig) + "\n")
    print("PASS" if ok else "FAIL")
    if args.expect_fail:
        failures = "\n".join(line for line in report if "FAIL" in line)
        missing = [rx for rx in args.expect_fail if not re.search(rx, failures)]
        if ok or missing:
            print(f"the gate was expected to fail with {args.expect_fail}; missing: {missing or 'it passed'}")
            return 1
        print("the gate failed as expected")
        return 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
