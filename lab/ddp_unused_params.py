"""ddp-unused-params: a DDP model with a branch that is not used in forward.

Injected: the model has an auxiliary head that forward() only uses when
``use_aux`` is set (it never is); DDP is built with the default
find_unused_parameters=False, so the reducer never finishes the first
iteration's reduction and the second iteration raises
"Expected to have finished reduction in the prior iteration ...".
"""

import torch
import torch.nn as nn
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel as DDP

from _common import TinyNet, batches, log, setup


class NetWithAux(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = TinyNet()
        self.aux_head = nn.Linear(16, 4)
        self.use_aux = False

    def forward(self, x):
        out = self.body(x)
        if self.use_aux:
            out = out + self.aux_head(x)
        return out


@record
def main():
    rank, world = setup()
    model = DDP(NetWithAux())  # find_unused_parameters=False (default)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step, (x, y) in enumerate(batches(rank, 5)):
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        log.info("rank %d step %d loss %.4f", rank, step, loss.item())


if __name__ == "__main__":
    main()
