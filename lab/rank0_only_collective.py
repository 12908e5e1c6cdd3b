"""rank0-only-collective: the classic ``if rank == 0: dist.all_reduce(...)`` bug.

Injected: after each epoch, only rank 0 (LAB_CULPRIT) all-reduces the validation
loss before logging it ("only the main process logs").  Ranks 1-3 go straight to
the next epoch's DDP gradient all_reduce.  Rank 0's scalar all_reduce is matched
against the others' gradient bucket -> whatever gloo does with it.
"""

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from _common import TinyNet, batches, dump_fr, lab_culprits, log, setup


def main():
    rank, world = setup()
    model = DDP(TinyNet())
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    try:
        for epoch in range(3):
            for step, (x, y) in enumerate(batches(rank + 10 * epoch, 4)):
                loss = torch.nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
            val_loss = loss.detach().clone()
            if rank in lab_culprits(0):
                dist.all_reduce(val_loss)  # BUG: collective called on one rank only
                log.info("epoch %d val_loss %.4f", epoch, val_loss.item() / world)
        dist.barrier()
    except BaseException:
        dump_fr("exception")
        raise


if __name__ == "__main__":
    main()
