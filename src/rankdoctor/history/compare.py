"""``rankdoctor compare A B``: is B the same failure as A?

Each side is a rankdoctor.diagnosis/v1 document (a run diagnosed now, or an incident from
the history). Same failure = the same verdict and the same top entry. Then what differs:
the fingerprints (templated evidence lines, fingerprints.py) only in A, only in B and in
both, and the ranks whose role changed (initiating, collateral, or not named). Ranks are
compared by number: rank 3 of one run is rank 3 of the other, whatever host it ran on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .fingerprints import fingerprints, jaccard

COMPARE_SCHEMA = "rankdoctor.compare/v1"
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
    def same_failure(self) -> bool:
        ta, tb = self.a.top, self.b.top
        return self.a.report["verdict"] == self.b.report["verdict"] and (ta or {}).get("entry") == (tb or {}).get("entry")

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
