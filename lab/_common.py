"""Shared helpers for the failure-lab case scripts.

Every case script is an ordinary (small) torchrun training script.  The
helpers here keep the boilerplate in one place:

* ``setup()``       - logging, seeds, ``init_process_group("gloo")`` with the
                      collective timeout taken from ``LAB_PG_TIMEOUT`` (seconds).
* ``dump_fr()``     - writes this rank's Flight Recorder buffer (pickle, the
                      format of ``torch._C._distributed_c10d._dump_fr_trace``)
                      to ``$TORCH_FR_DUMP_TEMP_FILE<rank>``.  Gloo never dumps
                      by itself, so the case scripts call it from their
                      exception handler; a SIGTERM watcher (installed by
                      ``setup()``) calls it when torchrun tears the job down.
* ``TinyNet`` / ``batches()`` - a tiny deterministic model and data stream.

Nothing here fabricates log text: whatever ends up in the captured logs is
printed by torch, torchrun or the case scripts themselves while running.
"""

from __future__ import annotations

import ctypes
import logging
import os
import random
import signal
import sys
import threading
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn

log = logging.getLogger("train")

# RLock + state: the main thread's SIGTERM handler can run *inside* dump_fr()
# (the signal lands while the exception path is writing the dump); a plain Lock
# deadlocked there, the rank then ignored SIGTERM and torchrun SIGKILLed it
# after 30 s ("Unable to shutdown process ... via 15, forcefully exiting via 9").
_dump_lock = threading.RLock()
_dump_state = "none"  # "dumping" while a thread writes the dump, then "done"


def setup(seed: int = 1234, default_timeout: float = 15.0) -> tuple[int, int]:
    """Initialise logging, seeds and the default (gloo) process group."""
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stdout,
    )
    timeout = float(os.environ.get("LAB_PG_TIMEOUT", default_timeout))
    dist.init_process_group("gloo", timeout=timedelta(seconds=timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    random.seed(seed + rank)
    torch.manual_seed(seed)  # same init weights on every rank
    _install_sigterm_dump()
    log.info("rank %d/%d initialised (gloo, timeout=%ss)", rank, world, timeout)
    return rank, world


def fr_enabled() -> bool:
    size = os.environ.get("TORCH_FR_BUFFER_SIZE") or os.environ.get(
        "TORCH_NCCL_TRACE_BUFFER_SIZE", "0"
    )
    return int(size) > 0 and bool(os.environ.get("TORCH_FR_DUMP_TEMP_FILE"))


def dump_fr(reason: str) -> None:
    """Write this rank's Flight Recorder trace once (no-op if FR is disabled)."""
    global _dump_state
    if not fr_enabled() or not dist.is_initialized():
        return
    with _dump_lock:
        if _dump_state != "none":
            return
        _dump_state = "dumping"
        from torch._C._distributed_c10d import _dump_fr_trace

        path = f"{os.environ['TORCH_FR_DUMP_TEMP_FILE']}{dist.get_rank()}"
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        data = _dump_fr_trace()
        with open(path + ".tmp", "wb") as f:
            f.write(data)
        os.replace(path + ".tmp", path)
        _dump_state = "done"


def _die_by_sigterm_from_thread() -> None:
    # Restore the default disposition with libc directly (signal.signal only
    # works on the main thread) and re-deliver SIGTERM, so the process exits
    # exactly as an unhandled SIGTERM would (torchrun sees exitcode -15).
    libc = ctypes.CDLL(None, use_errno=True)
    libc.signal(signal.SIGTERM, ctypes.c_void_p(0))  # SIG_DFL
    os.kill(os.getpid(), signal.SIGTERM)


def _install_sigterm_dump() -> None:
    """On SIGTERM (torchrun tearing the job down): dump FR, then die by SIGTERM.

    The main thread is usually blocked inside a gloo wait, where Python signal
    handlers cannot run, so a watcher thread reads the wakeup fd instead.
    """
    if not fr_enabled():
        return
    r, w = os.pipe()
    os.set_blocking(w, False)

    def on_main_thread(signum, frame):
        if _dump_state == "dumping":
            # SIGTERM landed while a dump is being written (on this thread, from
            # the exception path, or on the watcher): let it finish; the watcher
            # thread then takes the lock, finds the dump done and dies by SIGTERM.
            return
        dump_fr("SIGTERM")
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    signal.signal(signal.SIGTERM, on_main_thread)
    signal.set_wakeup_fd(w, warn_on_full_buffer=False)

    def watcher():
        while True:
            b = os.read(r, 1)
            if b and b[0] == signal.SIGTERM:
                dump_fr("SIGTERM")
                _die_by_sigterm_from_thread()

    threading.Thread(target=watcher, name="fr-sigterm-watcher", daemon=True).start()


class TinyNet(nn.Module):
    def __init__(self, d_in: int = 16, d_hidden: int = 32, d_out: int = 4):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(d_hidden, d_out)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def train_step(model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """One plain optimizer step on an MSE loss (DDP's gradient all_reduce runs in backward)."""
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss


def batches(rank: int, n: int, bs: int = 8, d_in: int = 16, d_out: int = 4):
    """Deterministic per-rank synthetic regression batches."""
    g = torch.Generator().manual_seed(1000 + rank)
    w = torch.randn(d_in, d_out, generator=torch.Generator().manual_seed(7))
    for _ in range(n):
        x = torch.randn(bs, d_in, generator=g)
        y = x @ w + 0.1 * torch.randn(bs, d_out, generator=g)
        yield x, y


# --------------------------------------------------------------------------
# Variant knobs for the fault matrix (lab/run.py --matrix).  Each case script
# reads them where it injects its fault; the defaults are the single cases'
# fixed values, so without these env vars a script behaves as it always did.
#   LAB_CULPRIT=2      the rank that misbehaves
#   LAB_CULPRITS=1,3   several ranks misbehave at once (wins over LAB_CULPRIT)
#   LAB_STEP=5         the step at which it misbehaves
def lab_culprits(default: int) -> tuple[int, ...]:
    """The misbehaving rank(s): ``$LAB_CULPRITS`` or ``$LAB_CULPRIT``, else ``default``."""
    value = os.environ.get("LAB_CULPRITS") or os.environ.get("LAB_CULPRIT")
    if not value:
        return (default,)
    return tuple(int(r) for r in value.split(","))


def lab_int(name: str, default: int) -> int:
    """An integer knob such as ``LAB_STEP`` (``default`` when unset)."""
    return int(os.environ.get(name, default))


def backward_step(model: nn.Module, opt: torch.optim.Optimizer, loss: torch.Tensor, world: int | None = None) -> None:
    """Backward and one optimizer step; with ``world``, the gradients are averaged over the
    ranks by hand (an all_reduce per parameter: a job without DDP)."""
    opt.zero_grad()
    loss.backward()
    if world:
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
    opt.step()
