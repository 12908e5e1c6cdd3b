"""nan-loss: training diverges to inf/nan after a bad learning rate.

Injected: SGD with lr=5.0 (a typo for 5e-3) on a tiny regression model; the
loss explodes within a few steps and becomes nan.  Like many real training
loops (DETR/DeiT-style), the script stops with ``Loss is nan, stopping
training`` and exits 1 on every rank.
"""

import math
import sys

import torch
from torch.nn.parallel import DistributedDataParallel as DDP

from _common import TinyNet, batches, log, setup


def main():
    rank, world = setup()
    model = DDP(TinyNet())
    opt = torch.optim.SGD(model.parameters(), lr=5.0)  # meant 5e-3
    for step, (x, y) in enumerate(batches(rank, 50)):
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss_value = loss.item()
        if not math.isfinite(loss_value):
            print(f"Loss is {loss_value}, stopping training", flush=True)
            sys.exit(1)
        opt.zero_grad()
        loss.backward()
        opt.step()
        log.info("rank %d step %d loss %.4g", rank, step, loss_value)


if __name__ == "__main__":
    main()
