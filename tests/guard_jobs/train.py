"""Small torchrun training jobs for the guard's tests: one healthy run and five asymmetric ones.

    torchrun --nproc-per-node 3 -m rankdoctor.guard tests/guard_jobs/train.py SCENARIO

Each faulty scenario prints ``injecting <what> at <unix time>`` on the rank that strays, just
before the divergent collective, so a test can time the guard's report against it.

``COMPUTE_S`` sleeps stand in for a step's backward / evaluation compute. They matter on gloo
only: there a collective whose peers sent a different number of bytes aborts the receiving
rank within milliseconds, before any out-of-band check can look (NCCL just hangs, which is the
case the guard is for). With a real step's compute between the mismatched pair and the next
differently-sized collective, the guard gets its window, as it does in real jobs.
"""

import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

COMPUTE_S = float(os.environ.get("GUARD_JOB_COMPUTE_S", "0.6"))
BATCH = 8


def log(msg):
    print(f"rank {dist.get_rank()}: {msg}", flush=True)


def inject(what):
    log(f"injecting {what} at {time.time():.3f}")


def data(rank, steps, bs=BATCH):
    g = torch.Generator().manual_seed(100 + rank)
    for _ in range(steps):
        yield torch.randn(bs, 16, generator=g), torch.randn(bs, 4, generator=g)


def mean_loss(loss):
    """Every rank all-reduces its loss for logging (a float32[1] collective each step)."""
    value = loss.detach().reshape(1).clone()
    dist.all_reduce(value)
    return value.item() / dist.get_world_size()


def compile_branch(rank, world):
    """torch.compile'd step with a data-dependent branch that all-reduces on a loss spike."""
    model = torch.nn.Linear(16, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    @torch.compile(backend="eager")
    def step(x, y):
        loss = F.mse_loss(model(x), y)
        if loss > 100.0:  # data-dependent: only the rank whose batch spikes goes here
            spike = loss.detach().reshape(1).clone()
            dist.all_reduce(spike)
        return loss

    for i, (x, y) in enumerate(data(rank, 8)):
        if rank == 1 and i == 4:
            y = y * 100.0
            inject("a loss spike (compiled branch)")
        loss = step(x, y)
        mean_loss(loss)
        opt.zero_grad()
        loss.backward()
        time.sleep(COMPUTE_S if i == 4 else 0.0)
        for p in model.parameters():
            dist.all_reduce(p.grad)
        opt.step()


def shape_recompile(rank, world):
    """A partial batch on one rank recompiles the step; the new graph has an extra all_reduce."""
    model = torch.nn.Linear(16, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    @torch.compile(backend="eager")
    def step(x, y):
        loss = F.mse_loss(model(x), y, reduction="sum")
        n = torch.tensor([float(x.shape[0])])
        if x.shape[0] < BATCH:  # partial batch: re-weight by the global sample count
            dist.all_reduce(n)
        return loss / n

    for i, (x, y) in enumerate(data(rank, 8)):
        if rank == 1 and i == 3:
            x, y = x[:7], y[:7]
            inject("a partial batch (recompile)")
        loss = step(x, y)
        mean_loss(loss)
        opt.zero_grad()
        loss.backward()
        time.sleep(COMPUTE_S if i == 3 else 0.0)
        for p in model.parameters():
            dist.all_reduce(p.grad)
        opt.step()


def uneven(rank, world):
    """DDP with uneven shards: the last rank runs out of batches and leaves the loop early."""
    model = DDP(torch.nn.Linear(16, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    steps = 4 if rank == world - 1 else 6
    for i, (x, y) in enumerate(data(rank, steps)):
        loss = F.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    if rank == world - 1:
        inject("an early end of data")
    log("done")
    dist.destroy_process_group()


def extra_same_shape(rank, world):
    """One rank calls its metrics hook twice: an extra float32[16] all_reduce, same shape."""
    w = torch.zeros(16)
    target = torch.linspace(-1, 1, 16)
    hooks = [lambda m: dist.all_reduce(m)]
    for i in range(8):
        grad = 2 * (w - target)
        dist.all_reduce(grad)
        w -= 0.1 * grad / world
        metrics = (w - target).abs()
        if rank == 1 and i == 3:
            hooks = hooks * 2  # bug: the hook registered twice on this rank
            inject("a second metrics hook")
        for h in hooks:
            h(metrics)
        time.sleep(0.05)
    log("done")
    dist.destroy_process_group()


def rank0_only(rank, world):
    """``if rank == 0: dist.all_reduce(val_loss)`` after each epoch of a DDP run."""
    model = DDP(torch.nn.Linear(16, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(3):
        for x, y in data(rank + 10 * epoch, 3):
            loss = F.mse_loss(model(x), y)
            mean_loss(loss)
            opt.zero_grad()
            loss.backward()
            opt.step()
        val = loss.detach().reshape(1).clone()
        if rank == 0:
            inject("a rank-0-only validation all_reduce")
            dist.all_reduce(val)  # BUG: collective on one rank only
        time.sleep(COMPUTE_S)  # evaluation compute on every rank


def healthy(rank, world):
    """200 DDP steps, a compiled loss, a rank-0 checkpoint while the others wait at a barrier."""
    model = DDP(torch.nn.Linear(16, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.compile(F.mse_loss, backend="eager")
    steps = int(os.environ.get("GUARD_JOB_STEPS", "200"))
    for i, (x, y) in enumerate(data(rank, steps)):
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i % 50 == 0:
            mean_loss(loss)
        if i == steps // 2:
            if rank == 0:  # slow checkpoint write: the others wait at the barrier meanwhile
                time.sleep(2 * COMPUTE_S)
            dist.barrier()
    log("done")
    dist.destroy_process_group()


SCENARIOS = {f.__name__: f for f in (compile_branch, shape_recompile, uneven, extra_same_shape,
                                     rank0_only, healthy)}

if __name__ == "__main__":
    dist.init_process_group("gloo")
    torch.manual_seed(0)  # same initial weights on every rank
    SCENARIOS[sys.argv[1]](dist.get_rank(), dist.get_world_size())
