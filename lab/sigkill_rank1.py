"""sigkill-rank1: rank 1 is SIGKILLed mid-training (what the kernel OOM killer does).

Injected: at step 5 (LAB_STEP) rank 1 (LAB_CULPRIT; LAB_CULPRITS=a,b for several)
allocates a few buffers (as if memory grew) and then sends itself SIGKILL - no
traceback, no cleanup, exactly like an OOM kill.  The other ranks are in DDP's
gradient all_reduce for that step.  torchrun reports the rank with ``exitcode: -9``.
"""

import os
import signal

import torch
from torch.nn.parallel import DistributedDataParallel as DDP

from _common import TinyNet, batches, dump_fr, lab_culprits, lab_int, log, setup, train_step


def main():
    rank, world = setup()
    model = DDP(TinyNet())
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    hoard = []
    try:
        for step, (x, y) in enumerate(batches(rank, 20)):
            if rank in lab_culprits(1) and step == lab_int("LAB_STEP", 5):
                hoard.append(torch.empty(64 * 2**20, dtype=torch.uint8))  # "leak"
                os.kill(os.getpid(), signal.SIGKILL)  # the OOM killer strikes
            loss = train_step(model, opt, x, y)
            log.info("rank %d step %d loss %.4f", rank, step, loss.item())
    except BaseException:
        dump_fr("exception")
        raise


if __name__ == "__main__":
    main()
