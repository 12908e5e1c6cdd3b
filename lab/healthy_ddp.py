"""Healthy baseline: a small, successful DDP training run.

Injects nothing.  It exists to produce the ordinary noise of a real job that a
diagnoser must NOT flag: torchrun's OMP_NUM_THREADS banner, c10d/DDP INFO
logging (TORCH_DISTRIBUTED_DEBUG=INFO, TORCH_CPP_LOG_LEVEL=INFO), a tqdm
progress bar on rank 0, periodic step/loss lines, torch's own FutureWarning
and UserWarning for ``torch.cuda.amp.GradScaler`` on a CPU-only host, and a
DeprecationWarning from a legacy helper in the script.
"""

import os
import time
import warnings

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from _common import TinyNet, batches, log, setup

try:
    from tqdm import tqdm
except ImportError:  # pragma: no cover - tqdm is optional
    tqdm = None

STEPS = int(os.environ.get("LAB_STEPS", "40"))


def legacy_lr_schedule(step, base_lr):
    warnings.warn(
        "legacy_lr_schedule() is deprecated, use torch.optim.lr_scheduler instead",
        DeprecationWarning,
        stacklevel=2,
    )
    return base_lr


def main():
    rank, world = setup()
    model = DDP(TinyNet())
    opt = torch.optim.SGD(model.parameters(), lr=legacy_lr_schedule(0, 0.05))
    scaler = torch.cuda.amp.GradScaler()  # no-op on CPU; warns like real code
    loss_fn = torch.nn.MSELoss()

    it = batches(rank, STEPS)
    bar = tqdm(total=STEPS, desc="train", disable=rank != 0, mininterval=0) if tqdm else None
    t0 = time.time()
    for step, (x, y) in enumerate(it, start=1):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        time.sleep(0.05)  # pretend the step takes a while
        if bar:
            bar.update(1)
            bar.set_postfix(loss=f"{loss.item():.4f}")
        if step % 10 == 0:
            avg = loss.detach().clone()
            dist.all_reduce(avg)
            avg /= world
            if rank == 0:
                log.info("step %3d/%d | loss %.4f | %.1f steps/s", step, STEPS,
                         avg.item(), step / (time.time() - t0))
    if bar:
        bar.close()
    dist.barrier()
    if rank == 0:
        log.info("training finished: %d steps, final loss %.4f", STEPS, loss.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
