"""From events to a ranked diagnosis.

The engine reasons across ranks in a few small steps, each over plain data:

1. attribute: launcher records give their lines a rank; local ranks become global ranks
   where the logs show the mapping;
2. candidates from causes: a rank's own failure (exception, OOM, assert, signal);
3. candidates from cross-rank findings: collective reports that disagree (desync), a rank
   absent from the timeouts (dead or straggling), peers naming a dead rank;
4. score, rank, and pick the initiating rank; everything else a rank printed about the
   failure is collateral;
5. say what is missing when the evidence is short.
"""


from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..events import ScanResult
from ..kb.loader import KnowledgeBase
from .attribution import dedupe, escalate_repeats, fact_events, map_local_ranks, world_of
from .candidates import accused_ranks, cause_candidates, cross_rank_candidates, fingerprint_candidate, refine, symptom_candidates
from .collectives import analyse
from .common import DIAGNOSED_AT, Candidate, event_key, fingerprint

__all__ = ["diagnose", "fingerprint"]
from .frcandidates import fr_candidates, fr_events
from .launcher import attribute_events, read_launcher
from .model import Diagnosis, InputInfo
from .present import to_finding

if TYPE_CHECKING:
    from ..flightrec.analyze import FRReport


def diagnose(kb: KnowledgeBase, scan: ScanResult, fr: "FRReport | None" = None) -> Diagnosis:
    events = dedupe(scan.events)
    escalate_repeats(kb, events)
    events += fact_events(scan)
    summary = read_launcher(scan.facts)
    attribute_events(events, summary)
    map_local_ranks(events, summary, scan)
    seen, world_size = world_of(scan, events, summary)
    inputs = [InputInfo(i.path, i.bytes, i.lines) for i in scan.inputs]
    warnings = [w for i in scan.inputs for w in i.warnings] + scan.warnings
    ranks_count = world_size or (max(seen) + 1 if seen else 0)

    events += fr_events(fr) if fr else []
    alarming = [e for e in events if e.role in ("cause", "symptom")]
    fr_says = fr is not None and fr.verdict in ("mismatch", "hang")
    if not alarming and not fr_says and not fingerprint_candidate(kb, events):
        return Diagnosis("no-failure-found", [], ranks_count, sorted(seen), inputs, warnings)

    expected: set[int] | None = None
    if world_size:
        expected = set(range(world_size))
    elif seen:
        expected = set(range(max(seen) + 1))

    coll = analyse(events, expected)
    accused = accused_ranks(events)
    exits = summary.by_rank()
    fr_culprits = set(fr.culprit_ranks()) if fr else set()
    cands = cause_candidates(kb, events, coll, accused, exits, fr_culprits)
    cands += cross_rank_candidates(kb, events, coll, accused, cands, exits, expected)
    if fr:
        cands += fr_candidates(kb, fr, events, cands)
    cands += symptom_candidates(kb, events, cands, coll)
    cands = [refine(kb, c, events) for c in cands]

    best: dict[str, Candidate] = {}
    for c in cands:
        if c.entry.id not in best or c.score > best[c.entry.id].score:
            best[c.entry.id] = c
    ranked = sorted(best.values(), key=lambda c: (-c.score, event_key(c.events[0]) if c.events else (math.inf,)))
    findings = [to_finding(kb, c, events, coll, exits, seen) for c in ranked[:3]]
    verdict = "diagnosed" if findings and findings[0].confidence >= DIAGNOSED_AT else "inconclusive"
    return Diagnosis(verdict, findings, ranks_count, sorted(seen), inputs, warnings)
