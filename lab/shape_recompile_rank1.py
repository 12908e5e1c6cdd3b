"""shape-recompile-rank1: one rank sees a different input shape, recompiles,
and its new graph issues a collective the other ranks' graphs do not.

Injected: rank 1's (LAB_CULPRIT) shard ends with a partial batch (7 samples
instead of 8, ``drop_last=False``) at step 3 (LAB_STEP).  The compiled step
contains a *shape*-based branch (``if x.shape[0] < BATCH:`` -> all-reduce the
number of valid samples so the loss can be re-weighted).  Dynamo's shape guard
fails on rank 1 ("Recompiling function ... size mismatch"), the recompiled graph
contains the extra all_reduce, the other ranks never issue it -> desync / hang.
"""

import os

import torch
import torch.distributed as dist
import torch.nn.functional as F

from _common import TinyNet, backward_step, batches, dump_fr, lab_culprits, lab_int, log, setup

BATCH = 8
BACKEND = os.environ.get("LAB_COMPILE_BACKEND", "aot_eager")


def main():
    rank, world = setup()
    model = TinyNet()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    @torch.compile(backend=BACKEND)
    def train_step(x, y):
        loss = F.mse_loss(model(x), y, reduction="sum")
        n = torch.tensor([float(x.shape[0])])
        if x.shape[0] < BATCH:  # partial batch: re-weight by the global count
            dist.all_reduce(n)
            return loss / n * world
        return loss / n

    try:
        for step, (x, y) in enumerate(batches(rank, 10)):
            if rank in lab_culprits(1) and step == lab_int("LAB_STEP", 3):
                x, y = x[:7], y[:7]  # this rank's shard ends with a partial batch
            loss = train_step(x, y)
            backward_step(model, opt, loss, world)
            log.info("rank %d step %d batch %d loss %.4f", rank, step, x.shape[0], loss.item())
        dist.barrier()
    except BaseException:
        dump_fr("exception")
        raise


if __name__ == "__main__":
    main()
