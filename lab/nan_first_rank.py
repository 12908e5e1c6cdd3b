"""nan-first-rank: one rank's bad batch makes ITS loss non-finite first; DDP
spreads the damage to every rank one step later.

Injected: at step LAB_STEP (default 5) rank LAB_CULPRIT (default 1) reads a
batch whose features were stored without normalisation (x * 1e25, a corrupt
shard).  Its local loss overflows to inf.  Like many training loops, this one
only stops on nan (``if math.isnan(loss)``) and merely warns on inf, so that
rank still runs backward: DDP's gradient all_reduce sums its inf/nan
gradients into every rank's gradients, the optimizer step turns the weights
non-finite, and at step LAB_STEP+1 every rank's loss is nan -> each rank logs
"Loss is nan, stopping training" and exits 1.  The log timestamps show the
culprit's inf loss first.
"""

import math
import sys
import time

import torch
from torch.nn.parallel import DistributedDataParallel as DDP

from _common import TinyNet, batches, lab_culprits, lab_int, log, setup


def main():
    rank, world = setup()
    model = DDP(TinyNet())
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step, (x, y) in enumerate(batches(rank, 50)):
        if rank in lab_culprits(1) and step == lab_int("LAB_STEP", 5):
            x = x * 1e25  # corrupt shard: raw, unnormalised feature values
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss_value = loss.item()
        if math.isnan(loss_value):
            log.error("Loss is %s, stopping training", loss_value)
            sys.exit(1)
        if math.isinf(loss_value):
            log.warning("rank %d step %d: loss is %s (overflow), continuing", rank, step, loss_value)
        opt.zero_grad()
        loss.backward()  # DDP all_reduces the gradients here
        opt.step()
        log.info("rank %d step %d loss %.4g", rank, step, loss_value)
        time.sleep(0.1)  # pretend the step takes a while


if __name__ == "__main__":
    main()
