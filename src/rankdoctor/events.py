"""Plain data passed between stages: what the scanner found, line by line."""

from __future__ import annotations

from dataclasses import dataclass, field, replace


@dataclass
class Event:
    """One signature (of one entry) matched on one log line."""

    entry: str
    signature: str
    role: str  # cause | symptom | context
    source: str
    line: int
    text: str  # the cleaned line (ANSI codes removed), cut to a readable length
    rank: int | None = None
    local_rank: int | None = None
    host: str | None = None
    pid: int | None = None
    device: int | None = None
    time: str | None = None
    ts: float | None = None
    captures: dict[str, str] = field(default_factory=dict)
    context: list[str] = field(default_factory=list)  # preceding lines (tracebacks)

    def cap_int(self, name: str) -> int | None:
        v = self.captures.get(name)
        try:
            return int(v) if v is not None else None
        except ValueError:
            return None

    def copy(self, **changes) -> "Event":
        """A copy that later stages may change without touching what the scanner produced."""
        changes.setdefault("captures", dict(self.captures))
        return replace(self, **changes)

    @property
    def where(self) -> tuple[str, int]:
        return (self.source, self.line)


@dataclass
class Fact:
    """A structural line (launcher summary field, world-size hint)."""

    fact: str
    source: str
    line: int
    text: str
    rank: int | None = None
    local_rank: int | None = None
    host: str | None = None
    time: str | None = None
    ts: float | None = None
    captures: dict[str, str] = field(default_factory=dict)
    context: list[str] = field(default_factory=list)


@dataclass
class InputStats:
    path: str
    bytes: int = 0
    lines: int = 0
    warnings: list[str] = field(default_factory=list)


@dataclass
class ScanResult:
    events: list[Event] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    inputs: list[InputStats] = field(default_factory=list)
    ranks_seen: set[int] = field(default_factory=set)
    local_ranks_seen: set[int] = field(default_factory=set)
    hosts_seen: set[str] = field(default_factory=set)
    warnings: list[str] = field(default_factory=list)
    tails: list[Fact] = field(default_factory=list)  # each source's last lines: last signs of life
    stacks: list = field(default_factory=list)  # stack dumps among the inputs (ingest.stacks.StackDump)

    def extend(self, other: "ScanResult") -> None:
        self.events.extend(other.events)
        self.facts.extend(other.facts)
        self.inputs.extend(other.inputs)
        self.ranks_seen |= other.ranks_seen
        self.local_ranks_seen |= other.local_ranks_seen
        self.hosts_seen |= other.hosts_seen
        self.warnings.extend(other.warnings)
        self.tails.extend(other.tails)
