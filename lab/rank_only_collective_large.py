"""rank-only-collective-large: one rank issues an extra collective that is
LARGER than the op the other ranks are in.

Injected: after each epoch only the reporting rank (LAB_CULPRIT, default 0)
all-reduces a 4096-bin histogram of its predictions (float32[4096], 16 KiB)
for the epoch report; the other ranks go straight on to the next epoch's DDP
gradient all_reduce (one bucket of 676 float32 = 2704 bytes).  gloo pairs
the two ops.  This is the mirror image of rank0_only_collective.py, whose
extra op (a scalar) is SMALLER than the peers' op.
"""

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from _common import TinyNet, batches, dump_fr, lab_culprits, log, setup

BINS = 4096


def main():
    rank, world = setup()
    model = DDP(TinyNet())
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    try:
        for epoch in range(3):
            preds = []
            for step, (x, y) in enumerate(batches(rank + 10 * epoch, 4)):
                out = model(x)
                loss = torch.nn.functional.mse_loss(out, y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                preds.append(out.detach().flatten())
            if rank in lab_culprits(0):
                hist = torch.histc(torch.cat(preds), bins=BINS, min=-4.0, max=4.0)
                dist.all_reduce(hist)  # BUG: collective called on one rank only
                log.info("epoch %d prediction histogram: %d samples", epoch, int(hist.sum().item()))
            log.info("rank %d epoch %d loss %.4f", rank, epoch, loss.item())
        dist.barrier()
    except BaseException:
        dump_fr("exception")
        raise


if __name__ == "__main__":
    main()
