"""ddp-mark-ready-twice: reentrant activation checkpointing + DDP(find_unused_parameters=True).

Injected: the same block is run twice per forward under
``torch.utils.checkpoint.checkpoint(..., use_reentrant=True)`` inside a DDP
model built with find_unused_parameters=True; the block's parameters get
their autograd hooks fired twice in one backward -> "Expected to mark a
variable ready only once".
"""

import torch
import torch.nn as nn
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.checkpoint import checkpoint

from _common import batches, log, setup


class SharedBlockNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.Sequential(nn.Linear(16, 16), nn.ReLU())
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        x = checkpoint(self.block, x, use_reentrant=True)
        x = checkpoint(self.block, x, use_reentrant=True)  # same weights used twice
        return self.head(x)


@record
def main():
    rank, world = setup()
    model = DDP(SharedBlockNet(), find_unused_parameters=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step, (x, y) in enumerate(batches(rank, 5)):
        x.requires_grad_(True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        log.info("rank %d step %d loss %.4f", rank, step, loss.item())


if __name__ == "__main__":
    main()
