"""From a diagnosis to the lines an editor marks: plain data a worker process hands back.

Only the top diagnosis is marked. Its *initiating line* (the first evidence line of the rank
that started it, of each when ranks started it independently; without a known rank, the
first cause line; without one, the first line) is the error (a warning when the verdict is
inconclusive); every other evidence line is information that points back at it. The
evidence folds the same message from many ranks into one line ("+3 similar on ranks 1-3");
here those lines are found again among the scan's kept occurrences, so each rank's own
file shows its collateral line too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..diagnose.common import fingerprint

if TYPE_CHECKING:
    from ..diagnose.model import Diagnosis, Evidence
    from ..events import ScanResult
    from ..kb.loader import KnowledgeBase

ERROR, WARNING, INFORMATION = "error", "warning", "information"
MAX_SIMILAR = 256  # lines found again per folded evidence line
MAX_RELATED = 32  # collateral lines the initiating line links to
MAX_MEASURED = 256 << 20  # files longer than this are not read again to measure line lengths


@dataclass
class Line:
    path: str
    line: int  # 0-based, as LSP counts
    widths: tuple[int, int, int]  # the line's length in UTF-8 bytes, UTF-16 units, code points


@dataclass
class Mark:
    at: Line
    severity: str
    message: str
    role: str  # cause | symptom | context (the evidence's)
    rank: int | None
    initiating: bool
    related: list[tuple[Line, str]] = field(default_factory=list)


@dataclass
class FindingInfo:
    """What a hover and the code actions show of the top diagnosis."""

    entry: str
    title: str
    klass: str
    confidence: float
    verdict: str
    initiating_ranks: list[int]
    collateral_ranks: list[int]
    summary: str
    root_cause: str
    fix: list[tuple[str, str | None]]
    verify: tuple[str, str | None]
    missing: list[str]


@dataclass
class RunResult:
    key: str
    stamp: tuple
    verdict: str
    marks: list[Mark]
    finding: FindingInfo | None
    warnings: list[str] = field(default_factory=list)

    def paths(self) -> set[str]:
        return {m.at.path for m in self.marks}


def _sig(entry: str, signature: str) -> str:
    return f"{entry}/{signature}" if entry else signature


def _rank(rank: int | None) -> str:
    return f"rank {rank}" if rank is not None else "a line without a rank"


def _primaries(evidence: "list[Evidence]", initiating: list[int]) -> "list[Evidence]":
    """The initiating lines: the first evidence line of each rank that started it (several
    when ranks failed independently); without one, the first cause line, or the first line."""
    firsts = [next((e for e in evidence if e.rank == r), None) for r in initiating]
    found = [e for e in firsts if e is not None]
    if found:
        return found
    cause = next((e for e in evidence if e.role == "cause"), None)
    return [cause] if cause else evidence[:1]


def _where(e: "Evidence") -> str:
    return f"{_rank(e.rank)} ({os.path.basename(e.source)}:{e.line})"


def marks_of(kb: "KnowledgeBase", d: "Diagnosis", scan: "ScanResult", key: str, stamp: tuple) -> RunResult:
    """The marks of the top diagnosis of ``d`` (whose scan was ``scan``)."""
    if not d.diagnoses:
        return RunResult(key, stamp, d.verdict, [], None, list(d.warnings))
    top = d.diagnoses[0]
    summary = " ".join(kb.get(top.entry).summary.split()) if top.entry in kb else ""
    info = FindingInfo(
        top.entry, top.title, top.klass, top.confidence, d.verdict, list(top.initiating_ranks), list(top.collateral_ranks),
        summary, top.root_cause, [(s.text, s.command) for s in top.fix], (top.verify.text, top.verify.command), list(top.missing),
    )
    primaries = _primaries(top.evidence, top.initiating_ranks)
    if not primaries:
        return RunResult(key, stamp, d.verdict, [], info, list(d.warnings))
    first = primaries[0]
    # (source, line) -> (rank, role, initiating), every line once
    lines: dict[tuple[str, int], tuple[int | None, str, bool]] = {}
    for e in top.evidence:
        lines.setdefault((e.source, e.line), (e.rank, e.role, any(e is p for p in primaries)))
        if e.repeats:
            found = 0
            for ev in scan.events:
                if found >= MAX_SIMILAR:
                    break
                if _sig(ev.entry, ev.signature) == e.signature and fingerprint(ev.text) == fingerprint(e.text):
                    if (ev.source, ev.line) not in lines:
                        # the scan's own rank; a torchrun tree's file gives the local rank only
                        rank = ev.rank if ev.rank is not None else ev.local_rank if len(scan.hosts_seen) <= 1 else None
                        lines[(ev.source, ev.line)] = (rank, e.role, False)
                        found += 1
    widths = _measure(set(lines))
    diagnosed = d.verdict == "diagnosed"
    head = f"{top.title} [{top.entry}], confidence {top.confidence:.2f}"
    if not diagnosed:
        head = f"inconclusive: {head}"
    started = bool(top.initiating_ranks)
    marks: list[Mark] = []
    for e in primaries:
        here = Line(e.source, e.line - 1, widths.get((e.source, e.line), _fallback(e.text)))
        who = f"{_rank(e.rank)} started it" if started else f"first {e.role} line, {_rank(e.rank)}"
        marks.append(Mark(here, ERROR if diagnosed else WARNING, f"{who}: {head}", e.role, e.rank, True))
    origin = marks[0].at
    for (source, line), (rank, role, initiating) in lines.items():
        if initiating:
            continue
        at = Line(source, line - 1, widths.get((source, line), (0, 0, 0)))
        if rank is not None and (rank in top.initiating_ranks or rank == first.rank):
            own = next((p for p in primaries if p.rank == rank), first)
            msg = f"more evidence on {_rank(rank)} ({role}) of {top.entry}; the initiating line is {_where(own)}"
        elif started:
            msg = f"collateral on {_rank(rank)} ({role}): {top.entry} started at {_where(first)}"
        else:
            msg = f"the same failure on {_rank(rank)} ({role}): {top.entry}, first at {_where(first)}"
        marks.append(Mark(at, INFORMATION, msg, role, rank, False, [(origin, f"initiating line: {_rank(first.rank)}")]))
    rest = [m for m in marks if not m.initiating]
    for m in marks:
        if m.initiating:
            m.related = [(o.at, f"{'collateral' if started else 'the same failure'} on {_rank(o.rank)} ({o.role})") for o in rest[:MAX_RELATED]]
    return RunResult(key, stamp, d.verdict, marks, info, list(d.warnings))


def _fallback(text: str) -> tuple[int, int, int]:
    return (len(text.encode("utf-8", "surrogatepass")), len(text.encode("utf-16-le", "surrogatepass")) // 2, len(text))


def _measure(wanted: set[tuple[str, int]]) -> dict[tuple[str, int], tuple[int, int, int]]:
    """The lengths of the wanted lines (1-based numbers) of plain files: an editor's range
    must end inside the line in the encoding the client counts in."""
    by_file: dict[str, set[int]] = {}
    for source, line in wanted:
        by_file.setdefault(source, set()).add(line)
    out: dict[tuple[str, int], tuple[int, int, int]] = {}
    for source, numbers in by_file.items():
        try:
            if os.path.getsize(source) > MAX_MEASURED:
                continue
            last = max(numbers)
            with open(source, "rb") as f:
                for n, raw in enumerate(f, 1):
                    if n in numbers:
                        raw = raw.rstrip(b"\r\n")
                        text = raw.decode("utf-8", "replace")
                        out[(source, n)] = (len(raw), len(text.encode("utf-16-le", "surrogatepass")) // 2, len(text))
                    if n >= last:
                        break
        except OSError:  # an archive member, a file gone since: the range stays at the line's start
            continue
    return out
