"""From a diagnosis to the lines an editor marks: plain data a worker process hands back.

Only the top diagnosis is marked. Its *initiating line* (the first evidence line of the rank
that started it; without a known rank, the first cause line; without one, the first line)
is the error; every other evidence line is information that points back at it. The
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


def _primary(evidence: "list[Evidence]", initiating: list[int]) -> "Evidence | None":
    for r in initiating:
        for e in evidence:
            if e.rank == r:
                return e
    for e in evidence:
        if e.role == "cause":
            return e
    return evidence[0] if evidence else None


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
    first = _primary(top.evidence, top.initiating_ranks)
    if first is None:
        return RunResult(key, stamp, d.verdict, [], info, list(d.warnings))
    # (source, line, rank, role, is the initiating line), every line once
    lines: dict[tuple[str, int], tuple[int | None, str, bool]] = {}
    for e in top.evidence:
        lines.setdefault((e.source, e.line), (e.rank, e.role, e is first))
        if e.repeats:
            found = 0
            for ev in scan.events:
                if found >= MAX_SIMILAR:
                    break
                if _sig(ev.entry, ev.signature) == e.signature and fingerprint(ev.text) == fingerprint(e.text):
                    if (ev.source, ev.line) not in lines:
                        lines[(ev.source, ev.line)] = (ev.rank, e.role, False)
                        found += 1
    widths = _measure({(s, n) for (s, n) in lines})
    here = Line(first.source, first.line - 1, widths.get((first.source, first.line), _fallback(first.text)))
    started = f"{_rank(first.rank)} ({os.path.basename(first.source)}:{first.line})"
    diagnosed = d.verdict == "diagnosed"
    head = f"{top.title} [{top.entry}], confidence {top.confidence:.2f}"
    if not diagnosed:
        head = f"inconclusive: {head}"
    who = f"{_rank(first.rank)} started it" if first.rank in top.initiating_ranks else f"{first.role} on {_rank(first.rank)}"
    marks = [Mark(here, ERROR if diagnosed else WARNING, f"{who}: {head}", first.role, first.rank, True)]
    for (source, line), (rank, role, is_first) in lines.items():
        if is_first:
            continue
        at = Line(source, line - 1, widths.get((source, line), (0, 0, 0)))
        if rank is not None and rank == first.rank:
            msg = f"more evidence on {_rank(rank)} ({role}) of {top.entry}; the initiating line is {started}"
        else:
            msg = f"collateral on {_rank(rank)} ({role}): {top.entry} started at {started}"
        marks.append(Mark(at, INFORMATION, msg, role, rank, False, [(here, f"initiating line: {_rank(first.rank)}")]))
    marks[0].related = [(m.at, f"collateral on {_rank(m.rank)} ({m.role})") for m in marks[1 : MAX_RELATED + 1]]
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
