"""compile-desync: data-dependent control flow in a torch.compile'd step.

Injected: the compiled ``train_step`` contains ``if loss > SPIKE:`` and, on
a loss spike, all-reduces the loss so every rank can log the "global" spike.
The condition is evaluated on per-rank data, so only the rank whose batch
spikes (rank 1 at step 4, or LAB_CULPRIT at LAB_STEP: outliers) issues that
extra ``dist.all_reduce``; the other ranks go straight on to the gradient
all-reduces.  Dynamo graph-breaks on the data-dependent branch
(TORCH_LOGS=recompiles,graph_breaks shows it).  The collective sequences of
the ranks diverge and the job hangs until the gloo timeout.
"""

import os

import torch
import torch.distributed as dist
import torch.nn.functional as F

from _common import TinyNet, batches, dump_fr, lab_culprits, lab_int, log, setup

SPIKE = 100.0
BACKEND = os.environ.get("LAB_COMPILE_BACKEND", "aot_eager")


def main():
    rank, world = setup()
    model = TinyNet()
    for p in model.parameters():  # same start weights everywhere
        dist.broadcast(p.data, src=0)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    @torch.compile(backend=BACKEND)
    def train_step(x, y):
        loss = F.mse_loss(model(x), y)
        spike = None
        if loss > SPIKE:  # data-dependent: differs per rank
            spike = loss.detach().clone()
            dist.all_reduce(spike)  # "log the global spike"
            loss = loss * 0.5  # damp the spike
        return loss, spike

    try:
        for step, (x, y) in enumerate(batches(rank, 12)):
            if rank in lab_culprits(1) and step == lab_int("LAB_STEP", 4):
                y = y * 10.0  # outlier targets -> loss spike on this rank only
            loss, spike = train_step(x, y)
            if spike is not None:
                log.warning("rank %d step %d: loss spike, global spike sum %.2f", rank, step, spike.item())
            opt.zero_grad()
            loss.backward()
            for p in model.parameters():  # plain data-parallel gradient sync
                dist.all_reduce(p.grad)
                p.grad /= world
            opt.step()
            log.info("rank %d step %d loss %.4f", rank, step, loss.item())
        dist.barrier()
        log.info("rank %d done", rank)
    except BaseException:
        dump_fr("exception")
        raise


if __name__ == "__main__":
    main()
