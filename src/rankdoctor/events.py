"""Plain data passed between stages: what the scanner found, line by line.

A log where one watchdog or NCCL WARN line repeats millions of times is common in real
incidents, so the scanner never holds one object per matching line: each kind of line (one
signature on one rank of one source) keeps its first ``FIRST`` and last ``LAST`` occurrences
(``Sample``), and the occurrence right after a gap carries how many were left out there
(``folded``). Memory is flat in the number of hits; the true counts are kept.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Union

FIRST = 64  # occurrences kept from the start of each kind of line
LAST = 16  # ... and from its end (the last signs of a rank, a traceback's last frames)
FRAME_FIRST = 256  # ... of a Python traceback frame (a real log of four ranks' interleaved tracebacks has 84 of one kind; entries read frames)
# a launcher summary has one record of several lines per failed worker: keep the records
# of a large job whole (a record's lines are different facts, folded at the same count)
LAUNCHER_FIRST = 4096
# captures that tell one process, launcher record or communicator from another: facts that
# differ in them are never folded together (the SIGTERM'd pids, NCCL's rank -> device map)
FACT_IDENTITY = ("rank", "local_rank", "pid", "host", "device", "prefix_device", "prefix_pid", "src", "dst", "dir",
                 "world_size")


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
    folded: int = 0  # lines of the same kind just before this one that the scan counted but did not keep

    def cap_int(self, name: str) -> int | None:
        v = self.captures.get(name)
        try:
            return int(v) if v is not None else None
        except ValueError:
            return None

    def copy(self, **changes) -> "Event":
        """A copy that later stages may change without touching what the scanner produced
        (its own ``captures``; ``context`` is shared, as ``dataclasses.replace`` shares it).
        Attributes copied directly: ``replace`` costs ~25 us an event, and the engine copies
        every event of a noisy run once or twice."""
        if changes:
            unknown = [k for k in changes if k not in self.__dict__]
            if unknown:
                raise TypeError(f"Event has no field(s) {sorted(unknown)}")
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.captures = dict(self.captures)
        new.__dict__.update(changes)
        return new

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
    folded: int = 0  # as Event.folded


Item = Union[Event, Fact]


@dataclass
class Sample:
    """One kind of line: its first ``cap`` occurrences and its last ``LAST``, each with the
    number it had in the scan (input order). An occurrence pushed out of ``last`` adds
    itself and what it carried to the one after it, so nothing is lost from the count."""

    cap: int = FIRST
    first: list[tuple[int, Item]] = field(default_factory=list)
    last: deque = field(default_factory=deque)  # of (number, item)

    def push(self, seq: int, item: Item) -> None:
        """Add the next occurrence."""
        if len(self.first) < self.cap:
            self.first.append((seq, item))
            return
        self.last.append((seq, item))
        if len(self.last) > LAST:
            _, gone = self.last.popleft()
            self.last[0][1].folded += 1 + gone.folded

    def items(self) -> Iterator[tuple[int, Item]]:
        yield from self.first
        yield from self.last


@dataclass
class InputStats:
    path: str
    bytes: int = 0
    lines: int = 0
    warnings: list[str] = field(default_factory=list)


@dataclass
class ScanResult:
    """What the scan found. ``events`` and ``facts`` are the occurrences kept (see
    ``Sample``), in input order; add to them with ``add_event`` / ``add_fact``."""

    inputs: list[InputStats] = field(default_factory=list)
    ranks_seen: set[int] = field(default_factory=set)
    local_ranks_seen: set[int] = field(default_factory=set)
    hosts_seen: set[str] = field(default_factory=set)
    warnings: list[str] = field(default_factory=list)
    tails: list[Fact] = field(default_factory=list)  # each source's last lines: last signs of life
    stacks: list = field(default_factory=list)  # stack dumps among the inputs (ingest.stacks.StackDump)
    ras: list = field(default_factory=list)  # NCCL RAS reports among the inputs (ingest.ncclras.Report)
    samples: dict[tuple, Sample] = field(default_factory=dict, repr=False)  # kind of line -> its occurrences
    added: int = 0  # occurrences added so far (numbers them in input order)
    _views: dict[str, list] = field(default_factory=dict, repr=False, compare=False)

    def add_event(self, ev: Event) -> Sample:
        """Count an event; the sample of its kind of line (it is kept for good when it is
        the last of ``first``; else later ones may still push it out)."""
        return self._push((ev.source, ev.rank, ev.local_rank, ev.host, ev.device, ev.entry, ev.signature), ev, FIRST)

    def add_fact(self, f: Fact) -> Sample:
        """Count a fact; as ``add_event``."""
        identity = tuple(f.captures.get(k) for k in FACT_IDENTITY)
        cap = LAUNCHER_FIRST if f.fact.startswith(("tr-", "ds-")) else FRAME_FIRST if f.fact == "py-frame" else FIRST
        return self._push((f.source, f.rank, f.local_rank, f.host, None, None, f.fact, *identity), f, cap)

    def _push(self, key: tuple, item: Item, cap: int) -> Sample:
        self._views.clear()
        sample = self.samples.get(key)
        if sample is None:
            sample = self.samples[key] = Sample(cap)
        self.added += 1
        sample.push(self.added, item)
        return sample

    @property
    def events(self) -> list[Event]:
        """The events kept, in input order (the same list until something is added)."""
        return self._view("events", Event)

    @property
    def facts(self) -> list[Fact]:
        """The facts kept, in input order."""
        return self._view("facts", Fact)

    def _view(self, name: str, kind: type) -> list:
        view = self._views.get(name)
        if view is None:
            kept = [pair for s in self.samples.values() for pair in s.items() if isinstance(pair[1], kind)]
            kept.sort(key=itemgetter(0))
            view = self._views[name] = [item for _, item in kept]
        return view

    def extend(self, other: "ScanResult") -> None:
        """Add what ``other`` found after what this result holds (the next source, the
        next byte range of the same source: its occurrences follow these)."""
        self._views.clear()
        for key, theirs in other.samples.items():
            mine = self.samples.get(key)
            if mine is None:
                mine = self.samples[key] = Sample(theirs.cap)
            for seq, item in theirs.items():
                mine.push(self.added + seq, item)
        self.added += other.added
        self.inputs.extend(other.inputs)
        self.ranks_seen |= other.ranks_seen
        self.local_ranks_seen |= other.local_ranks_seen
        self.hosts_seen |= other.hosts_seen
        self.warnings.extend(other.warnings)
        self.tails.extend(other.tails)
