"""Flight Recorder findings as evidence lines (the analysis itself is ``flightrec/``; the
ranks it singles out enter the rank table)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..events import Event

if TYPE_CHECKING:
    from ..flightrec.analyze import FRReport

def fr_events(fr: "FRReport") -> list[Event]:
    """Flight Recorder findings as evidence lines: one per rank and finding (role fr-...)."""
    out = []
    for f in fr.findings:
        for rank, v in sorted(f.per_rank.items()):
            text = (
                f"[flight recorder] pg {f.process_group} seq {f.seq}: {v.get('op') or '-'} sizes={v.get('sizes')} "
                f"dtypes={v.get('dtypes')} at {v.get('call_site') or '?'} ({v.get('state')})"
            )
            role = "fr-culprit" if rank in f.culprit_ranks else "fr"
            path = next((p for p in fr.dumps if p.endswith(str(rank))), fr.dumps[0] if fr.dumps else "flight-recorder")
            line = int(v["record"]) + 1 if isinstance(v.get("record"), int) else (f.seq or 0) + 1
            out.append(Event("", f"flight-recorder/{f.kind}", role, path, line, text, rank, captures={"finding": f.kind}))
    return out
