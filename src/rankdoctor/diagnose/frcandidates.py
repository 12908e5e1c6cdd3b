"""Flight Recorder findings as evidence and as candidate explanations."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..events import Event
from ..kb.loader import KnowledgeBase
from .candidates import crashed_with_exception
from .common import DIAGNOSED_AT, Candidate, best_explainer

if TYPE_CHECKING:
    from ..flightrec.analyze import FRReport

_FR_ROLE = {"type-mismatch": "cause", "size-mismatch": "cause", "dtype-mismatch": "cause", "extra-collective": "cause"}


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


def fr_candidates(kb: KnowledgeBase, fr: "FRReport", events: list[Event], cause_cands: list[Candidate]) -> list[Candidate]:
    """What the collective histories say, weighed against the logs."""
    out = []
    fr_evs = [e for e in events if e.role in ("fr", "fr-culprit")]
    for f in fr.findings:
        culprit = f.culprit_ranks[0] if len(f.culprit_ranks) == 1 else None
        evs = [e for e in fr_evs if e.captures.get("finding") == f.kind]
        if f.kind in _FR_ROLE:
            entry, ctx = best_explainer(kb, "desync", events, "collective-sequence-mismatch")
            score = 0.92 if culprit is not None else 0.8
            out.append(Candidate(entry, score, culprit, evs + ctx, [f"Flight Recorder: {f.detail}"], kind="fr-desync"))
        elif f.kind in ("lagging", "stuck") and f.culprit_ranks:
            if any(c.initiating in f.culprit_ranks and c.score >= DIAGNOSED_AT for c in cause_cands):
                continue  # the logs already name what happened to that rank; FR corroborates it
            if culprit is not None and (crashed := crashed_with_exception(kb, culprit, events, evs, f"Flight Recorder: {f.detail}")):
                out.append(crashed)
                continue
            finding = "straggler" if f.kind == "lagging" else "dead-peer"
            entry, ctx = best_explainer(kb, finding, events, "rank-zero-straggler" if finding == "straggler" else "worker-python-exception")
            out.append(Candidate(entry, 0.7 if culprit is not None else 0.55, culprit, evs + ctx, [f"Flight Recorder: {f.detail}"], kind="fr-hang"))
    return out
