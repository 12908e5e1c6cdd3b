"""ddp-model-mismatch: ranks build different models and wrap them in DDP.

Injected: the hidden size is read from a per-rank config (rank 1, or
LAB_CULPRIT, gets 64 instead of 32), so the DDP constructor's cross-rank
parameter-shape check fails ("DDP expects same model across all ranks ...").
"""

import torch
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel as DDP

from _common import TinyNet, lab_culprits, log, setup


@record
def main():
    rank, world = setup()
    hidden = 64 if rank in lab_culprits(1) else 32  # stale config on that node
    log.info("rank %d building TinyNet(d_hidden=%d)", rank, hidden)
    model = DDP(TinyNet(d_hidden=hidden))
    log.info("rank %d DDP ready: %s", rank, model.module)


if __name__ == "__main__":
    main()
