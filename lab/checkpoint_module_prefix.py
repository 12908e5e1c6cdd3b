"""checkpoint-module-prefix: load a DDP-saved state_dict into a bare model.

Injected: rank 0 saves ``ddp_model.state_dict()`` (keys prefixed with
``module.``); then every rank builds a plain ``TinyNet`` for evaluation and
calls ``load_state_dict`` on it -> the real "Missing key(s) / Unexpected
key(s)" RuntimeError on every rank.
"""

import os
import tempfile

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel as DDP

from _common import TinyNet, batches, log, setup


@record
def main():
    rank, world = setup()
    model = DDP(TinyNet())
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step, (x, y) in enumerate(batches(rank, 5)):
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    ckpt_dir = os.environ.get("LAB_CKPT_DIR", tempfile.gettempdir())
    path = os.path.join(ckpt_dir, f"lab_ckpt_{os.environ.get('TORCHELASTIC_RUN_ID', 'run')}.pt")
    if rank == 0:
        torch.save({"model": model.state_dict(), "step": 5}, path)
        log.info("saved checkpoint to %s", path)
    dist.barrier()
    eval_model = TinyNet()
    ckpt = torch.load(path, map_location="cpu")
    eval_model.load_state_dict(ckpt["model"])  # BUG: keys carry the 'module.' prefix
    log.info("rank %d loaded checkpoint step %d", rank, ckpt["step"])


if __name__ == "__main__":
    main()
