"""Similar past incidents: the saved diagnoses that look like this one, best first.

Similarity = 0.7 x Jaccard(fingerprint sets) + 0.2 if the top entry is the same
+ 0.1 if the incident has a recorded fix. The fix counts a little because it is what
one looks the past up for: between two about equally close incidents, the one that says
what worked comes first. An incident of the same entry is listed from MIN_SIMILARITY on (the
entry alone, 0.2, is enough); one of another entry only when at least OTHER_ENTRY_JACCARD of
the evidence is shared: on the lab's runs (bench/history_lab.md) a fault seen only once
otherwise drew an unrelated incident of another entry that shared half its fingerprints,
where "nothing similar" is the right answer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .fingerprints import fingerprints, jaccard
from .store import History, Incident

MIN_SIMILARITY = 0.2
OTHER_ENTRY_JACCARD = 0.7
SHOWN = 5


@dataclass
class Match:
    incident: Incident
    similarity: float
    shared: int  # fingerprints in common

    def to_json(self) -> dict[str, Any]:
        """One item of the report's optional ``similar_incidents``."""
        i = self.incident
        return {
            "id": i.id, "uid": i.uid, "saved_at": i.saved_at, "job": i.job, "entry": i.entry, "class": i.klass,
            "initiating_ranks": i.initiating_ranks, "similarity": round(self.similarity, 2),
            "shared_fingerprints": self.shared, "fix": i.fix, "fixed_at": i.fixed_at,
        }


def _score(j: float, same_entry: bool, fixed: bool) -> float:
    if not same_entry and j < OTHER_ENTRY_JACCARD:
        return 0.0
    s = 0.7 * j + (0.2 if same_entry else 0.0)
    return s + 0.1 if s and fixed else s


def _top_entry(report: dict[str, Any]) -> tuple[bool, str | None]:
    """Whether the report names a failure, and its top entry."""
    top = (report.get("diagnoses") or [None])[0]
    return top is not None, (top or {}).get("entry")


def _best(matches: list[Match], limit: int) -> list[Match]:
    kept = [m for m in matches if m.similarity >= MIN_SIMILARITY]
    kept.sort(key=lambda m: -round(m.similarity, 4))  # ties: newest first, as the incidents come
    return kept[:limit]


def similar(report: dict[str, Any], incidents: list[Incident], limit: int = SHOWN, exclude_uid: str | None = None) -> list[Match]:
    """The incidents (in memory) most like ``report`` (a rankdoctor.diagnosis/v1 document),
    best first; none for a report without a finding."""
    fps = fingerprints(report)
    failed, entry = _top_entry(report)
    if not fps and not failed:
        return []
    matches = []
    for past in incidents:
        if past.uid == exclude_uid or not past.entry:
            continue
        shared = len(set(fps) & set(past.fingerprints))
        s = _score(jaccard(fps, past.fingerprints), bool(entry) and entry == past.entry, bool(past.fix))
        matches.append(Match(past, s, shared))
    return _best(matches, limit)


def lookup(report: dict[str, Any], history: History, limit: int = SHOWN, exclude_uid: str | None = None) -> list[Match] | None:
    """What ``similar`` finds, from the history file: only the incidents that share a
    fingerprint or the entry are read, and of those only counts. None when there is no
    history to look in."""
    if not history.exists():
        return None
    fps = fingerprints(report)
    failed, entry = _top_entry(report)
    if not fps and not failed:
        return []
    matches = []
    for past, shared, count in history.candidates(fps, entry):
        if past.uid == exclude_uid or not past.entry:
            continue
        union = len(fps) + count - shared
        s = _score(shared / union if union else 0.0, bool(entry) and entry == past.entry, bool(past.fix))
        matches.append(Match(past, s, shared))
    return _best(matches, limit)
