"""dataloader-worker-killed: a DataLoader worker process is SIGKILLed.

Injected: on rank 0 (LAB_CULPRIT) the dataset's ``__getitem__`` SIGKILLs its
own worker process for sample 37 (what the kernel OOM killer does to a
worker that balloons), so the main process raises "DataLoader worker (pid(s)
...) exited unexpectedly".  Rank 1 waits in DDP's gradient all_reduce.
"""

import os
import signal

import torch
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

from _common import TinyNet, dump_fr, lab_culprits, log, setup, train_step


class SyntheticDataset(Dataset):
    def __init__(self, rank, n=128):
        self.rank, self.n = rank, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.rank in lab_culprits(0) and i == 37:
            os.kill(os.getpid(), signal.SIGKILL)  # the OOM killer takes this worker
        g = torch.Generator().manual_seed(i)
        return torch.randn(16, generator=g), torch.randn(4, generator=g)


@record
def main():
    rank, world = setup()
    model = DDP(TinyNet())
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    loader = DataLoader(SyntheticDataset(rank), batch_size=8, num_workers=2)
    try:
        for step, (x, y) in enumerate(loader):
            loss = train_step(model, opt, x, y)
            log.info("rank %d step %d loss %.4f", rank, step, loss.item())
    except BaseException:
        dump_fr("exception")
        raise


if __name__ == "__main__":
    main()
