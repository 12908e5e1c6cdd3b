"""Shared pieces of the engine: the candidate being weighed, scoring constants, and how
events are keyed, fingerprinted and matched to the entries that explain a finding."""

from __future__ import annotations

import math
from functools import lru_cache
import re
from dataclasses import dataclass, field

from ..events import Event
from ..kb.loader import KnowledgeBase
from ..kb.model import Entry

DIAGNOSED_AT = 0.5  # confidence from which a finding is reported as diagnosed


MAX_EVIDENCE = 12


COLLATERAL_EXITS = {-15, -6}  # SIGTERM from the launcher, SIGABRT from the NCCL watchdog


_MASK = re.compile(r"0x[0-9a-fA-F]+|\d+")


PREFIX_MASK = re.compile(r"^(?:\[[^\]]{0,80}\]:?\s*|\S+:\d+:\d+ \[\d+\] )+")


@dataclass
class Candidate:
    entry: Entry
    score: float
    initiating: int | None
    events: list[Event]
    notes: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    kind: str = "cause"  # cause | desync | absent | dead-peer | context | symptom


def event_key(e: Event) -> tuple:
    return (e.ts if e.ts is not None else math.inf, e.source, e.line)


@lru_cache(maxsize=1 << 16)  # each finding groups the same lines again
def fingerprint(text: str) -> str:
    """Mask what varies between ranks (numbers, addresses, prefixes) so the same message
    from many ranks groups into one (Drain-style)."""
    return _MASK.sub("#", PREFIX_MASK.sub("", text)).strip()


def sig_weight(kb: KnowledgeBase, ev: Event) -> float:
    try:
        return kb.get(ev.entry).signature(ev.signature).weight
    except KeyError:
        return 1.0


def explainers(kb: KnowledgeBase, finding: str) -> list[Entry]:
    return [e for e in kb if finding in {x.value for x in e.explains}]


def best_explainer(kb, finding: str, events: list[Event], fallback: str) -> tuple[Entry, list[Event]]:
    best: tuple[int, Entry, list[Event]] | None = None
    for entry in explainers(kb, finding):
        evs = [e for e in events if e.entry == entry.id]
        n = len({e.signature for e in evs})
        if n and (best is None or n > best[0]):
            best = (n, entry, evs)
    if best:
        return best[1], best[2]
    return kb.get(fallback), []


def weak(kb: KnowledgeBase, ev: Event) -> bool:
    return bool(ev.entry) and sig_weight(kb, ev) < 0.8
