"""A litgpt model on fusex operators under DDP or FSDP, checked against one process.

    python3 examples/torch/ddp_litgpt.py --model pythia-14m --world 2 --batch 2 --seq 64 --steps 2 [--engine fsdp]

Starts `world` processes on this machine (gloo on CPU; nccl when every rank has
a GPU and --backend nccl is given). Every rank builds the same fusex model
(same seed), wraps it in DistributedDataParallel (--engine ddp) or shards
each block and the model with FSDP2's fully_shard (--engine fsdp), takes its
slice of the same global batch and trains `steps` steps with AdamW; rank 0
writes the reduced (for FSDP, gathered) gradients of each step. The
parent then trains one undistributed copy on the whole global batch and
compares the gradients step by step (the loss is a mean over equal slices,
so DDP's average of the ranks' gradients is the full batch's gradient)."""

from __future__ import annotations

import argparse
import os
import socket
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_litgpt as tl  # noqa: E402


def _full(grad):
    # FSDP's gradients are sharded DTensors: gather the whole tensor
    return grad.full_tensor() if hasattr(grad, "full_tensor") else grad.detach().clone()


def _wrap(model, engine):
    if engine == "ddp":
        return DistributedDataParallel(model)
    from torch.distributed.fsdp import fully_shard
    for block in model.transformer.h:
        fully_shard(block)
    fully_shard(model)
    return model


def _worker(rank, world, backend, port, name, batch, seq, steps, out, engine):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group(backend, rank=rank, world_size=world)
    try:
        _, model, _ = tl.models(name)
        ddp = _wrap(model, engine)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        per_step = []
        for idx, targets in tl.batches(model.config, steps, batch * world, seq):
            mine = slice(rank * batch, (rank + 1) * batch)
            loss = tl.loss_of(ddp, idx[mine], targets[mine])
            loss.backward()
            per_step.append({n: _full(p.grad) for n, p in model.named_parameters()})
            opt.step()
            opt.zero_grad(set_to_none=True)
        if rank == 0:
            torch.save(per_step, out)
    finally:
        dist.destroy_process_group()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def distributed_grads(name, world, batch, seq, steps, backend="gloo", engine="ddp"):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "grads.pt")
        mp.spawn(_worker, args=(world, backend, free_port(), name, batch, seq, steps, out, engine), nprocs=world, join=True)
        return torch.load(out)


def single_process_grads(name, world, batch, seq, steps):
    _, model, _ = tl.models(name)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    per_step = []
    for idx, targets in tl.batches(model.config, steps, batch * world, seq):
        tl.loss_of(model, idx, targets).backward()
        per_step.append({n: p.grad.detach().clone() for n, p in model.named_parameters()})
        opt.step()
        opt.zero_grad(set_to_none=True)
    return per_step


def compare(ddp, single, rtol, atol):
    """The largest difference per step, after asserting closeness of every gradient."""
    worst = []
    for s, (a, b) in enumerate(zip(ddp, single)):
        assert a.keys() == b.keys(), f"step {s}: different parameters"
        for n in a:
            torch.testing.assert_close(a[n], b[n], rtol=rtol, atol=atol, msg=lambda m: f"step {s}, {n}: {m}")
        worst.append(max((a[n] - b[n]).abs().max().item() for n in a))
    return worst


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="pythia-14m")
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--batch", type=int, default=2, help="sequences per rank")
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--backend", default="gloo")
    ap.add_argument("--engine", choices=("ddp", "fsdp"), default="ddp")
    a = ap.parse_args()
    ddp = distributed_grads(a.model, a.world, a.batch, a.seq, a.steps, a.backend, a.engine)
    single = single_process_grads(a.model, a.world, a.batch, a.seq, a.steps)
    worst = compare(ddp, single, rtol=1e-4, atol=1e-6)
    print(f"{a.model}: {a.engine}, {a.world} ranks ({a.backend}) x {a.batch} sequences vs one process x {a.world * a.batch}: "
          f"gradients equal within rtol 1e-4, atol 1e-6; largest difference per step {', '.join(f'{w:.2e}' for w in worst)}")


if __name__ == "__main__":
    main()
