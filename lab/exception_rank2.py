"""exception-rank2: rank 2 raises a Python exception mid-training.

Injected: rank 2's (LAB_CULPRIT) data loader indexes past the end of its shard
(``IndexError: list index out of range``) at step 5 (LAB_STEP, 0-based) while
the other ranks have already entered DDP's gradient all_reduce and wait for it.
The script uses torchelastic's ``@record`` so torchrun's summary carries the
traceback (error.json).
"""

import torch
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel as DDP

from _common import TinyNet, dump_fr, lab_culprits, lab_int, log, setup, train_step


class ShardedDataset:
    """Per-rank list of samples; the culprit's (rank 2's) shard is (wrongly) short."""

    def __init__(self, rank, n):
        g = torch.Generator().manual_seed(rank)
        self.samples = [(torch.randn(16, generator=g), torch.randn(4, generator=g)) for _ in range(n)]
        self.ids = list(range(n if rank not in lab_culprits(2) else lab_int("LAB_STEP", 5) * 8))  # short-shard bug

    def batch(self, step, bs=8):
        idx = [self.ids[step * bs + i] for i in range(bs)]
        x = torch.stack([self.samples[i][0] for i in idx])
        y = torch.stack([self.samples[i][1] for i in idx])
        return x, y


@record
def main():
    rank, world = setup()
    model = DDP(TinyNet())
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    data = ShardedDataset(rank, 20 * 8)
    try:
        for step in range(20):
            x, y = data.batch(step)
            loss = train_step(model, opt, x, y)
            log.info("rank %d step %d loss %.4f", rank, step, loss.item())
    except BaseException:
        dump_fr("exception")
        raise


if __name__ == "__main__":
    main()
