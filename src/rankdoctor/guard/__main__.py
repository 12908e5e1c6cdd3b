"""``python -m rankdoctor.guard train.py args...`` (or ``-m pkg.train args...``): run a training
script with the guard on.

The guard starts right after the script's own init_process_group() returns (the wrapper
wraps torch.distributed.init_process_group before the script runs). Usable as
``torchrun ... -m rankdoctor.guard train.py`` or ``torchrun ... --no-python python -m
rankdoctor.guard train.py``. RANKDOCTOR_GUARD=0 runs the script unguarded.
"""

from __future__ import annotations

import os
import runpy
import sys


def _wrap_init() -> None:
    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d

    import rankdoctor.guard as guard

    original = c10d.init_process_group

    def init_process_group(*args, **kwargs):
        result = original(*args, **kwargs)
        guard.enable()
        return result

    init_process_group.__doc__ = original.__doc__
    c10d.init_process_group = init_process_group
    dist.init_process_group = init_process_group


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    module = argv[1] if argv[0] == "-m" and len(argv) > 1 else None
    script = argv[0]
    if module is None and not os.path.isfile(script):
        print(f"rankdoctor guard: no such script: {script}", file=sys.stderr)
        return 2
    if os.environ.get("RANKDOCTOR_GUARD", "1").strip().lower() not in ("0", "false", "no", "off"):
        import rankdoctor.guard as guard

        guard._ensure_flight_recorder()  # before torch creates the recorder
        _wrap_init()
        if os.environ.get("RANKDOCTOR_GUARD_UNEVEN", "") not in ("", "0"):
            from rankdoctor.guard import uneven

            uneven.install()
    if module is not None:
        sys.argv = [module] + list(argv[2:])
        sys.path[0] = os.getcwd()
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        return 0
    sys.argv = list(argv)
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
