"""What runs in the diagnosis worker processes (``pool.py``), and what they are given.

A diagnosis runs in a process of its own so that the server's event loop never waits
for one, two can use two cores, and one that runs past its time budget can really be
stopped: the process is killed and replaced (a thread cannot be killed). A worker gets
the uploaded files' paths (the server streamed them to disk), never their bytes, and
hands back finished text: the JSON document and, for a kept report, its two HTML pages.
"""

from __future__ import annotations

import bisect
import json
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from ..events import ScanResult
from ..ingest.sources import Source, _decompressing

if TYPE_CHECKING:
    from ..kb.loader import KnowledgeBase

_GZ = b"\x1f\x8b"
_ZST = b"\x28\xb5\x2f\xfd"


class Refused(Exception):
    """A request the worker cannot diagnose: its HTTP status and one line of reason."""

    def __init__(self, status: int, detail: str):
        super().__init__(status, detail)
        self.status = status
        self.detail = detail


@dataclass
class LineMap:
    runs: list[tuple[int, int]]
    lines: int | None = None
    bytes: int | None = None
    _starts: list[int] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        sent = 0
        for _first, count in self.runs:
            self._starts.append(sent)
            sent += count

    def original(self, sent_line: int) -> int:
        """The original line number of the ``sent_line``-th line sent (1-based)."""
        if not self.runs:
            return sent_line
        i = max(bisect.bisect_right(self._starts, sent_line - 1) - 1, 0)
        return self.runs[i][0] + (sent_line - 1 - self._starts[i])


class Inflation:
    """The bytes one request's compressed parts have inflated to so far; 413 past the
    limit. Decompression happens only in the workers, so the pool size times this limit
    bounds all inflated bytes in flight."""

    def __init__(self, limit: int):
        self.limit = limit
        self.used = 0

    def add(self, n: int) -> None:
        self.used += n
        if self.used > self.limit:
            mb = self.limit >> 20
            raise Refused(413, f"the compressed upload inflates to more than {mb} MB (the server's --max-inflated-mb)")


class _Inflating:
    """A decompressing stream that counts what it hands out against an ``Inflation``."""

    def __init__(self, stream: BinaryIO, budget: Inflation):
        self.stream, self.budget = stream, budget

    def _counted(self, data: bytes) -> bytes:
        self.budget.add(len(data))
        return data

    def read(self, n: int | None = -1) -> bytes:
        if n is None or n < 0:  # never inflate everything at once before counting
            parts = []
            while part := self.read(1 << 20):
                parts.append(part)
            return b"".join(parts)
        return self._counted(self.stream.read(n))

    def read1(self, n: int = -1) -> bytes:
        read1 = getattr(self.stream, "read1", None)
        if read1 is None or n is None or n < 0:
            return self.read(n)
        return self._counted(read1(n))

    def close(self) -> None:
        self.stream.close()  # and the file under it

    def __enter__(self) -> "_Inflating":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class Upload:
    name: str  # shown in the report, read for rank hints; never opened
    path: Path  # where the server streamed it
    size: int
    linemap: LineMap | None = None

    def source(self, budget: Inflation) -> Source:
        with open(self.path, "rb") as f:
            head = f.read(4)
        if not head.startswith((_GZ, _ZST)):
            return Source(self.name, lambda: open(self.path, "rb"), self.size, path=self.path)

        def opener() -> BinaryIO:
            return _Inflating(_decompressing(open(self.path, "rb"), head), budget)  # type: ignore[return-value]

        return Source(self.name, opener, self.size)


def apply_line_maps(scan: ScanResult, uploads: list[Upload]) -> None:
    """Put original line numbers (and sizes) back on everything the scanner found."""
    maps = {u.name: u.linemap for u in uploads if u.linemap is not None}
    if not maps:
        return
    for item in [*scan.events, *scan.facts, *scan.tails]:
        lm = maps.get(item.source)
        if lm is not None:
            item.line = lm.original(item.line)
    for stats in scan.inputs:
        lm = maps.get(stats.path)
        if lm is not None:
            stats.lines = max(stats.lines, lm.lines or 0)
            stats.bytes = max(stats.bytes, lm.bytes or 0)


@dataclass
class Outcome:
    json: bytes  # the rankdoctor.diagnosis/v1 document
    page: str | None = None  # the report page (/report/<id>), when the report is kept
    download: str | None = None  # the self-contained HTML report


_worker: dict = {}  # this process's knowledge base, scanner and templates (set by init)


def _die_with_parent() -> None:
    """Linux: a worker is killed when the process that started it goes, so a server
    killed with SIGKILL leaves no diagnosis running."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def init(kb: "KnowledgeBase") -> None:
    """Run once in each worker process."""
    from jinja2 import PackageLoader
    from markupsafe import Markup

    from ..report.html import asset, make_env
    from ..scan import Scanner

    # the pool stops an overrunning worker with SIGTERM: the default action ends it at
    # once, where a Python handler would wait for a regex stuck in C to return
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with_parent()
    # templates compiled once here: compiling them is most of what rendering a report costs
    _worker.update(
        kb=kb,
        scanner=Scanner(kb),
        page=make_env(PackageLoader("rankdoctor.web", "templates")).get_template("report.html"),
        standalone=make_env().get_template("standalone.html"),
        assets={"css": Markup(asset("report.css")), "js": Markup(asset("report.js"))},
    )


def diagnose_uploads(uploads: list[Upload], max_inflated: int, report_id: str | None, history: str | None = None,
                     hung: bool = False) -> Outcome:
    """Scan and diagnose; ``Refused`` (400) when nothing in the uploads is a text log.
    ``history``: the incident history file whose similar incidents the report lists."""
    from ..diagnose.engine import diagnose
    from ..ingest.stacks import stacks_among
    from ..report.html import diagnosis_json, report_context
    from ..scan import scan_sources

    kb = _worker["kb"]
    budget = Inflation(max_inflated)
    sources = [u.source(budget) for u in uploads]
    stacks, pure = stacks_among(sources)  # py-spy / faulthandler dumps: evidence, not logs
    scan = scan_sources(kb, [s for s in sources if s.name not in pure], _worker["scanner"])
    scan.stacks = stacks
    apply_line_maps(scan, uploads)
    text_inputs = [i for i in scan.inputs if i.bytes and not any("not a text log" in w for w in i.warnings)]
    if not text_inputs and not stacks:
        reasons = [w for i in scan.inputs for w in i.warnings]
        raise Refused(400, reasons[0] if reasons else "empty input, nothing to diagnose")
    result = diagnose(kb, scan, hung=hung)
    if history is not None:
        _similar(result, history)
    doc = json.dumps(result.to_json(), ensure_ascii=False, separators=(",", ":")).encode()
    if report_id is None:
        return Outcome(doc)
    # what report/html.py's render_html does, with the templates compiled once
    ctx = {**report_context(result, scan, kb), "doc": diagnosis_json(result)}
    download = _worker["standalone"].render(**_worker["assets"], **ctx)
    page = _worker["page"].render(rid=report_id, **{**ctx, "href": lambda i: f"/kb/entries/{i}.html",
                                                    "history_href": lambda i: f"/history/{i}"})
    return Outcome(doc, page, download)


def _similar(result, history: str) -> None:
    """The history's incidents like this one, as `rankdoctor diagnose` lists them; a
    history that cannot be read leaves them out (a warning on the report)."""
    from ..history.similar import lookup
    from ..history.store import History, HistoryError

    try:
        found = lookup(result.to_json(), History(history))
    except HistoryError as exc:
        result.warnings.append(f"similar past incidents left out: {exc}")
        return
    result.similar = None if found is None else [m.to_json() for m in found]


def warm() -> int:
    """Nothing: scheduled when the pool is made, so that pebble starts the workers then
    rather than at the first request."""
    return len(_worker)
