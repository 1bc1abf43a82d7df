"""Train a litgpt model and its fusex twin side by side: same seed, weights and batches.

    python3 examples/torch/train_litgpt.py --model pythia-14m --steps 10 --batch 4 --seq 128 [--json FILE]

The twin is litgpt's model with fusex_torch.litgpt.use_fusex applied (norms, qkv
split + RoPE and MLP activations on fusex operators). Each step runs forward,
backward and an AdamW update on both; the script prints each step's losses,
the largest gradient difference, and the median time per step of each."""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import time

import torch
import torch.nn.functional as F
from litgpt import GPT, Config

import fusex_torch.litgpt as fxl


def config(name: str) -> Config:
    if name == "tiny-llama":  # LLaMA's structure (RMSNorm, SwiGLU, GQA, full RoPE) at a test's size
        return Config.from_name("tiny-llama-1.1b", n_layer=2, n_embd=128, n_head=8, n_query_groups=2,
                                intermediate_size=256, vocab_size=1024, padded_vocab_size=1024, block_size=256)
    return Config.from_name(name)


def models(name: str, seed: int = 0):
    torch.manual_seed(seed)
    reference = GPT(config(name))
    twin = copy.deepcopy(reference)
    swapped = fxl.use_fusex(twin)
    return reference, twin, swapped


def batches(cfg: Config, steps: int, batch: int, seq: int, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        tokens = torch.randint(0, cfg.vocab_size, (batch, seq + 1), generator=g)
        yield tokens[:, :-1], tokens[:, 1:]


def loss_of(model, idx, targets):
    logits = model(idx)
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def step(model, opt, idx, targets):
    t0 = time.perf_counter()
    loss = loss_of(model, idx, targets)
    loss.backward()
    seconds = time.perf_counter() - t0
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss.item(), grads, seconds


def train(name: str, steps: int, batch: int, seq: int, lr: float = 1e-3, on_step=None, sync_weights=False):
    """sync_weights: after each step the fusex twin takes the reference's
    weights, so each step's gradients are compared at equal weights (AdamW's
    first, sign-like update would otherwise turn a rounding flip of a
    near-zero gradient into a weight difference of 2 lr)."""
    reference, twin, swapped = models(name)
    opts = [torch.optim.AdamW(m.parameters(), lr=lr) for m in (reference, twin)]
    rows = []
    for i, (idx, targets) in enumerate(batches(reference.config, steps, batch, seq)):
        # alternate which model goes first so that neither always runs on a warmer cache
        order = (0, 1) if i % 2 == 0 else (1, 0)
        out = [None, None]
        for k in order:
            out[k] = step((reference, twin)[k], opts[k], idx, targets)
        row = {"step": i, "loss_litgpt": out[0][0], "loss_fusex": out[1][0], "seconds_litgpt": out[0][2],
               "seconds_fusex": out[1][2], "grads_litgpt": out[0][1], "grads_fusex": out[1][1]}
        if on_step:
            on_step(row)
        rows.append(row)
        if sync_weights:
            ref = dict(reference.named_parameters())
            with torch.no_grad():
                for n, p in twin.named_parameters():
                    p.copy_(ref[n])
    return rows, swapped


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="pythia-14m")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--threads", type=int, default=0, help="torch's intra-op threads (0: torch's default)")
    ap.add_argument("--json", help="write the per-step rows (losses, times) here")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)

    def show(r):
        diff = max((r["grads_fusex"][n] - g).abs().max().item() for n, g in r["grads_litgpt"].items())
        r["max_grad_diff"] = diff
        print(f"step {r['step']}: loss litgpt {r['loss_litgpt']:.6f} fusex {r['loss_fusex']:.6f}  "
              f"max |grad diff| {diff:.2e}  ms litgpt {1e3 * r['seconds_litgpt']:.1f} fusex {1e3 * r['seconds_fusex']:.1f}")

    rows, swapped = train(a.model, a.steps, a.batch, a.seq, on_step=show)
    timed = rows[1:] if len(rows) > 1 else rows  # the first step includes one-time set-up
    med_l = statistics.median(r["seconds_litgpt"] for r in timed)
    med_f = statistics.median(r["seconds_fusex"] for r in timed)
    print(f"{a.model}, B={a.batch} T={a.seq}, {torch.get_num_threads()} threads, swapped {swapped}")
    print(f"median forward+backward per step: litgpt eager {1e3 * med_l:.1f} ms, fusex {1e3 * med_f:.1f} ms "
          f"(fusex / litgpt = {med_f / med_l:.2f})")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"model": a.model, "batch": a.batch, "seq": a.seq, "threads": torch.get_num_threads(),
                       "torch": torch.__version__, "swapped": swapped,
                       "median_seconds": {"litgpt": med_l, "fusex": med_f},
                       "steps": [{k: v for k, v in r.items() if not k.startswith("grads")} for r in rows]}, f, indent=1)


if __name__ == "__main__":
    main()
