"""rankdoctor.guard: catch asymmetric collectives while the job runs, in seconds.

    import rankdoctor.guard
    dist.init_process_group(...)
    rankdoctor.guard.enable()

or without touching the script: ``torchrun ... -m rankdoctor.guard train.py args...``.
Each rank folds every collective it issues (read from its own Flight Recorder record, so DDP,
FSDP and compiled-graph collectives count too) into a running hash per process group; a side
thread publishes it to the c10d store and compares the ranks out of band. On the first
divergence one rank prints one line starting ``rankdoctor guard:`` that names both sides.
Settings: see options.py (enable() arguments or RANKDOCTOR_GUARD_* variables).
"""

from __future__ import annotations

import os

from rankdoctor.guard.options import ENV, GuardOptions

__all__ = ["ENV", "GuardOptions", "enable", "FR_BUFFER"]

# The Flight Recorder is the guard's only source; torch dumps the whole ring on every read,
# so the guard asks for a small one (a poll costs ~1 ms at 256 entries, ~25 ms at 2000).
FR_BUFFER = "256"
_guard = None


def _ensure_flight_recorder() -> None:
    if not (os.environ.get("TORCH_FR_BUFFER_SIZE") or os.environ.get("TORCH_NCCL_TRACE_BUFFER_SIZE")):
        os.environ["TORCH_FR_BUFFER_SIZE"] = FR_BUFFER


def enable(group=None, *, interval: float | None = None, stall: float | None = None,
           abort: bool | None = None, dump_dir: str | None = None, sites: bool | None = None,
           steps: int | None = None, window: int | None = None, timeout: float = 120.0):
    """Start the guard on this rank (after init_process_group; call it on every rank).

    ``group``: compare only this process group's collectives (default: every group).
    ``steps``: stop the job cleanly after that many optimizer steps, once every rank agrees
    (``rankdoctor check``); ``timeout`` bounds that final wait. Returns the Guard, or None
    (with a one-line note on stderr) when the Flight Recorder was off for this rank.
    """
    global _guard
    if _guard is not None:
        return _guard
    import torch.distributed as dist

    if not dist.is_initialized():
        raise RuntimeError("rankdoctor.guard.enable() needs init_process_group() first")
    _ensure_flight_recorder()
    from rankdoctor.guard.core import Guard
    from rankdoctor.guard.record import recorder_is_off

    if recorder_is_off():
        import sys

        print("rankdoctor guard: not started: the Flight Recorder is off (TORCH_FR_BUFFER_SIZE was unset "
              "when this rank's first collective ran); set TORCH_FR_BUFFER_SIZE=256 before it",
              file=sys.stderr, flush=True)
        return None

    opts = GuardOptions.from_env(interval=interval, stall=stall, abort=abort, dump_dir=dump_dir,
                                 sites=sites, steps=steps, window=window)
    _guard = Guard(opts, group)
    _poll_before_destroy(_guard)
    if opts.steps:
        _stop_after_steps(_guard, opts.steps, timeout)
    return _guard


def _poll_before_destroy(guard) -> None:
    """destroy_process_group() clears the Flight Recorder: fold and publish before it does."""
    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d

    original = c10d.destroy_process_group

    def destroy_process_group(group=None):
        if group is None:
            guard.close("exited")
        return original(group)

    destroy_process_group.__doc__ = original.__doc__
    c10d.destroy_process_group = destroy_process_group
    dist.destroy_process_group = destroy_process_group


def _stop_after_steps(guard, steps: int, timeout: float) -> None:
    from torch.optim.optimizer import register_optimizer_step_post_hook

    done = [0]

    def after_step(_optimizer, _args, _kwargs):
        done[0] += 1
        if done[0] < steps:
            return
        import torch.distributed as dist

        ok = guard.finish(steps, timeout)
        guard.close("final")
        if ok:
            dist.destroy_process_group()
        raise SystemExit(0 if ok else guard.opts.abort_code)

    register_optimizer_step_post_hook(after_step)
