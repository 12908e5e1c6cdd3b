"""Guard settings: enable() arguments, each with an environment variable for the wrapper."""

from __future__ import annotations

import os
from dataclasses import dataclass

ENV = {
    "interval": "RANKDOCTOR_GUARD_INTERVAL",  # seconds between polls (0.2)
    "stall": "RANKDOCTOR_GUARD_STALL",  # seconds a busy rank may not issue before "idle" (30)
    "abort": "RANKDOCTOR_GUARD_ABORT",  # 1: exit with abort_code after the report
    "dump_dir": "RANKDOCTOR_GUARD_DUMP_DIR",  # write fr_trace_rank_<r> there on a report
    "sites": "RANKDOCTOR_GUARD_SITES",  # 0: leave call sites out of the comparison
    "steps": "RANKDOCTOR_GUARD_STEPS",  # stop cleanly after N optimizer steps (rankdoctor check)
    "window": "RANKDOCTOR_GUARD_WINDOW",  # collectives per group each rank publishes (128)
}


@dataclass(frozen=True)
class GuardOptions:
    interval: float = 0.2
    stall: float = 30.0
    abort: bool = False
    abort_code: int = 70  # EX_SOFTWARE: distinct from a crash (1) or a signal (-N)
    dump_dir: str | None = None
    sites: bool = True
    steps: int | None = None
    window: int = 128

    @classmethod
    def from_env(cls, **overrides) -> GuardOptions:
        """Defaults, then the RANKDOCTOR_GUARD_* variables, then explicit arguments."""
        values = {}
        for field, var in ENV.items():
            raw = os.environ.get(var)
            if raw in (None, ""):
                continue
            if field in ("abort", "sites"):
                values[field] = raw.strip().lower() not in ("0", "false", "no", "off")
            elif field in ("steps", "window"):
                values[field] = int(raw)
            elif field == "dump_dir":
                values[field] = raw
            else:
                values[field] = float(raw)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)
