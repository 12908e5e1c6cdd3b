"""hang-killed: a job with a long collective timeout hangs and is killed from outside.

Injected: the process-group timeout is 600 s (LAB_PG_TIMEOUT).  At step 3
(LAB_STEP) rank 3 (LAB_CULPRIT) gets stuck in a pure-Python retry loop (it
keeps "re-fetching" a sample that never validates) and never reaches the
gradient all_reduce; ranks 0-2 wait in it.  Nothing times out within the
run: after ~15 s the lab driver sends SIGTERM to torchrun (what a
scheduler's cancel does), and torchrun forwards it to the workers.
"""

import time

import torch
from torch.nn.parallel import DistributedDataParallel as DDP

from _common import TinyNet, batches, dump_fr, lab_culprits, lab_int, log, setup, train_step


def fetch_sample(step, attempt):
    time.sleep(0.5)
    return None  # the remote sample never validates


def main():
    rank, world = setup(default_timeout=600)
    model = DDP(TinyNet())
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    try:
        for step, (x, y) in enumerate(batches(rank, 20)):
            if rank in lab_culprits(3) and step == lab_int("LAB_STEP", 3):
                attempt = 0
                while fetch_sample(step, attempt) is None:  # stuck forever
                    attempt += 1
                    if attempt % 10 == 0:
                        log.warning("rank %d: sample for step %d still invalid after %d retries",
                                    rank, step, attempt)
            loss = train_step(model, opt, x, y)
            log.info("rank %d step %d loss %.4f", rank, step, loss.item())
    except BaseException:
        dump_fr("exception")
        raise


if __name__ == "__main__":
    main()
