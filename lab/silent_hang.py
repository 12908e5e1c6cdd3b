"""silent-hang: one rank stops making progress without printing anything.

Injected: gradient accumulation over ACCUM=8 micro-steps (DDP ``no_sync``), so
the ranks only meet in a collective (DDP's gradient all_reduce) every 8th
step.  At step LAB_STEP (default 10) rank LAB_CULPRIT (default 1; LAB_CULPRITS=
a,b for several) blocks reading its next shard from a stalled shared
filesystem: a plain blocking wait - no log line, no exception.  The other
ranks keep logging their step progress until the next gradient sync (step
15), then wait in the all_reduce until the gloo timeout (LAB_PG_TIMEOUT,
default 10 s) fires and they raise; torchrun then SIGTERMs the silent rank.
"""

import contextlib
import time

import torch
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel as DDP

from _common import TinyNet, batches, dump_fr, lab_culprits, lab_int, log, setup

ACCUM = 8


def read_shard(rank, step, x, y):
    if rank in lab_culprits(1) and step == lab_int("LAB_STEP", 10):
        time.sleep(3600)  # the read never returns: the NFS mount has stalled
    return x, y


@record
def main():
    rank, world = setup(default_timeout=10)
    model = DDP(TinyNet())
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    try:
        for step, (x, y) in enumerate(batches(rank, 4 * ACCUM)):
            x, y = read_shard(rank, step, x, y)
            sync = (step + 1) % ACCUM == 0
            with contextlib.nullcontext() if sync else model.no_sync():
                loss = torch.nn.functional.mse_loss(model(x), y) / ACCUM
                loss.backward()  # all_reduce of the gradients only when sync
            if sync:
                opt.step()
                opt.zero_grad()
            log.info("rank %d step %d loss %.4f%s", rank, step, loss.item() * ACCUM,
                     " (optimizer step)" if sync else "")
            time.sleep(0.1)  # pretend the step takes a while
    except BaseException:
        dump_fr("exception")
        raise


if __name__ == "__main__":
    main()
