"""straggler-rank0: rank 0 preprocesses for longer than the collective timeout.

Injected: before training, rank 0 (LAB_CULPRIT) "builds the dataset cache" (sleeps
~25 s while printing progress) while the other ranks wait in ``dist.barrier()``
with a 10 s process-group timeout.  The waiting ranks hit gloo's timeout first.
"""

import time

import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record

from _common import dump_fr, lab_culprits, log, setup


@record
def main():
    rank, world = setup(default_timeout=10)
    try:
        if rank in lab_culprits(0):
            total = 25
            for i in range(total):
                time.sleep(1.0)
                log.info("building dataset cache: %d/%d shards tokenized", i + 1, total)
        log.info("rank %d waiting for all ranks before training", rank)
        dist.barrier()
        log.info("rank %d: all ranks ready, starting training", rank)
    except BaseException:
        dump_fr("exception")
        raise


if __name__ == "__main__":
    main()
