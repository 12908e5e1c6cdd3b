"""The diagnosis: what every view (text, JSON, Markdown, HTML) renders."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

SCHEMA = "rankdoctor.diagnosis/v1"


@dataclass
class Evidence:
    source: str
    line: int
    rank: int | None
    time: str | None
    text: str
    signature: str
    role: str
    # not part of the JSON: how many other lines (and on which ranks) said the same thing
    repeats: int = 0
    repeat_ranks: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "line": self.line,
            "rank": self.rank,
            "time": self.time,
            "text": self.text,
            "signature": self.signature,
            "role": self.role,
        }


@dataclass
class Finding:
    entry: str
    klass: str
    title: str
    confidence: float
    initiating_rank: int | None
    collateral_ranks: list[int]
    evidence: list[Evidence]
    root_cause: str
    fix: list[str]
    verify: str
    missing: list[str]
    initiating_host: str | None = None
    notes: list[str] = field(default_factory=list)  # reasoning shown in the text view
    initiating_ranks: list[int] = field(default_factory=list)  # every rank that started it
    class_confidence: float = 0.0  # probability of the class (its entries together)
    entry_share: float = 0.0  # probability of this entry alone (the text view's "other candidates")
    reasoning: list[dict] = field(default_factory=list)  # score breakdown, winner and runner-up (-v)

    def to_json(self) -> dict[str, Any]:
        return {
            "entry": self.entry,
            "class": self.klass,
            "title": self.title,
            "confidence": round(self.confidence, 2),
            "initiating_rank": self.initiating_rank,
            "initiating_ranks": self.initiating_ranks,
            "collateral_ranks": self.collateral_ranks,
            "evidence": [e.to_json() for e in self.evidence],
            "root_cause": self.root_cause,
            "fix": self.fix,
            "verify": self.verify,
            "missing": self.missing,
        }


@dataclass
class InputInfo:
    path: str
    bytes: int
    lines: int


@dataclass
class Diagnosis:
    verdict: str  # diagnosed | inconclusive | no-failure-found
    diagnoses: list[Finding]
    ranks_count: int
    ranks_seen: list[int]
    inputs: list[InputInfo]
    warnings: list[str] = field(default_factory=list)
    table: Any = None  # the rank table the answer was read from (views; not in the JSON)
    weighing: Any = None  # every hypothesis with its features and probability (-v; not in the JSON)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "verdict": self.verdict,
            "diagnoses": [d.to_json() for d in self.diagnoses],
            "ranks": {"count": self.ranks_count, "seen": self.ranks_seen},
            "inputs": [asdict(i) for i in self.inputs],
        }

    @property
    def exit_code(self) -> int:
        return {"no-failure-found": 0, "diagnosed": 1, "inconclusive": 3}[self.verdict]
