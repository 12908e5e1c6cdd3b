"""``rankdoctor compare A B``: is B the same failure as A?

Each side is a rankdoctor.diagnosis/v1 document (a run diagnosed now, or an incident from
the history). Same failure = the same top entry (none on both sides: neither failed) and
evidence at least SAME_EVIDENCE alike (Jaccard of the fingerprint sets). The entry alone is
too coarse: one entry, collective-sequence-mismatch, is the answer for five of the lab's
fault kinds (dtype, shape, extra collective, ...), whose Flight Recorder lines differ. The
verdict is not compared: the same failure can be diagnosed in one run and inconclusive in
the next, when its evidence is shorter. On the lab's 107 real runs (bench/history_lab.md)
this says "same" of 327 of 376 pairs of one fault family and of 97 of 5,295 pairs of two.
Then what differs:
the fingerprints (templated evidence lines, fingerprints.py) only in A, only in B and in
both, and the ranks whose role changed (initiating, collateral, or not named). Ranks are
compared by number: rank 3 of one run is rank 3 of the other, whatever host it ran on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .fingerprints import fingerprints, jaccard

COMPARE_SCHEMA = "rankdoctor.compare/v1"
SAME_EVIDENCE = 0.5
INITIATING, COLLATERAL, NAMED_NOT = "initiating", "collateral", "-"


@dataclass
class Side:
    label: str  # what the user gave: a path or "#12"
    report: dict[str, Any]
    job: str | None = None
    incident_id: int | None = None

    @property
    def top(self) -> dict[str, Any] | None:
        return (self.report.get("diagnoses") or [None])[0]

    def role(self, rank: int) -> str:
        top = self.top or {}
        if rank in (top.get("initiating_ranks") or []):
            return INITIATING
        if rank in (top.get("collateral_ranks") or []):
            return COLLATERAL
        return NAMED_NOT

    def summary(self) -> dict[str, Any]:
        top = self.top or {}
        return {
            "label": self.label, "incident": self.incident_id, "job": self.job, "verdict": self.report["verdict"],
            "entry": top.get("entry"), "class": top.get("class"),
            "initiating_ranks": top.get("initiating_ranks") or [], "collateral_ranks": top.get("collateral_ranks") or [],
            "world_size": (self.report.get("ranks") or {}).get("count", 0),
        }


@dataclass
class Comparison:
    a: Side
    b: Side

    @property
    def same_entry(self) -> bool:
        return (self.a.top or {}).get("entry") == (self.b.top or {}).get("entry")

    @property
    def similarity(self) -> float:
        return jaccard(fingerprints(self.a.report), fingerprints(self.b.report))

    @property
    def same_failure(self) -> bool:
        if not self.same_entry:
            return False
        if self.a.top is None:  # neither found a failure
            return True
        return self.similarity >= SAME_EVIDENCE

    @property
    def same_class(self) -> bool:
        return (self.a.top or {}).get("class") == (self.b.top or {}).get("class")

    def rank_changes(self) -> list[dict[str, Any]]:
        """Each rank named by either side whose role differs between them."""
        ranks = set()
        for side in (self.a, self.b):
            top = side.top or {}
            ranks.update(top.get("initiating_ranks") or [], top.get("collateral_ranks") or [])
        out = []
        for r in sorted(ranks):
            ra, rb = self.a.role(r), self.b.role(r)
            if ra != rb:
                out.append({"rank": r, "a": ra, "b": rb})
        return out

    def to_json(self) -> dict[str, Any]:
        fa, fb = set(fingerprints(self.a.report)), set(fingerprints(self.b.report))
        return {
            "schema": COMPARE_SCHEMA,
            "same_failure": self.same_failure,
            "same_entry": self.same_entry,
            "same_class": self.same_class,
            "similarity": round(jaccard(fa, fb), 2),
            "a": self.a.summary(),
            "b": self.b.summary(),
            "fingerprints": {"only_a": sorted(fa - fb), "only_b": sorted(fb - fa), "shared": sorted(fa & fb)},
            "rank_changes": self.rank_changes(),
        }

    @property
    def exit_code(self) -> int:
        return 0 if self.same_failure else 1
