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

    @property
    def repeats_note(self) -> str:
        """"(+5 similar on ranks 1-3,7)", "(+1 similar on rank 2)", or "" when the line stands alone."""
        if not self.repeats:
            return ""
        from .collectives import compress_ranks

        where = ""
        if self.repeat_ranks:
            where = f" on rank{'s' if len(self.repeat_ranks) > 1 else ''} {compress_ranks(self.repeat_ranks)}"
        return f"(+{self.repeats} similar{where})"

    @property
    def shown_time(self) -> str | None:
        """The time as the views show it: "2026-12-02 00:16:10.765"; a glog time without a
        year (E1202 00:08:28.533000, kept in the JSON as ISO's --12-02T00:08:28.533) as
        "12-02 00:08:28.533"."""
        t = self.time
        if not t:
            return None
        if t.startswith("--"):
            return t[2:].replace("T", " ")[:18]
        return t.replace("T", " ")[:23]

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
class Step:
    """One thing to do: what, and the command for it (None where the step is not a command)."""

    text: str
    command: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "command": self.command}

    def __str__(self) -> str:
        if self.command is None:
            return self.text
        return f"{self.text} — `{self.command}`" if self.text else f"`{self.command}`"

    def as_line(self) -> str:
        """A command line with what to look for as its comment (text views, CI output)."""
        if self.command is None:
            return self.text
        return f"{self.command}  # {self.text}" if self.text else self.command

    @classmethod
    def from_verify(cls, verify: str) -> "Step":
        """An entry's ``verify`` line: a command, with what to look for after ``#``."""
        command, sep, comment = verify.partition("  # ")
        return cls(comment.strip() if sep else "", command.strip())


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
    fix: list[Step]
    verify: Step
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
            "fix": [f.to_json() for f in self.fix],
            "verify": self.verify.to_json(),
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
    # similar past incidents from the local history (history/similar.py, their to_json()
    # dicts); None when no history was consulted, and then the JSON has no such key
    similar: list[dict[str, Any]] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "verdict": self.verdict,
            "diagnoses": [d.to_json() for d in self.diagnoses],
            "ranks": {"count": self.ranks_count, "seen": self.ranks_seen},
            "inputs": [asdict(i) for i in self.inputs],
            **({"similar_incidents": self.similar} if self.similar is not None else {}),
            # optional, added in place like similar_incidents: what the text report says
            # besides its findings (inputs skipped or cut short, failures the program got
            # past, teardown, restarts, why a hang was assumed); absent when there is none
            **({"notes": list(self.warnings)} if self.warnings else {}),
        }

    @property
    def exit_code(self) -> int:
        return {"no-failure-found": 0, "diagnosed": 1, "inconclusive": 3}[self.verdict]
