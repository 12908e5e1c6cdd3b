"""The per-rank timeline of a diagnosis, as plain data for the HTML views.

One lane per rank, events placed along one axis: wall-clock time when lines have
timestamps. A line without one takes the time of the last timestamped line above it in
the same file (or, above the file's first timestamp, that first one); glog's times, which
carry no year, take the year of the dated lines beside them. Only the lines still without
a time (a rank whose files print none) are placed by their position in their file, and
are marked so. When no line has a time, or the clocks disagree by days, the whole axis
is the position in each file. The initiating event is marked, and each collateral rank's
first failure line is linked to it.

With many ranks, lanes whose ranks logged the same thing (same signatures, same text
once numbers are masked) are merged: "ranks 0-511,513-1023 (1023 ranks)".
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime

from ..diagnose.collectives import compress_ranks
from ..diagnose.engine import fingerprint
from ..diagnose.model import Diagnosis, Finding
from ..events import Event, ScanResult

MAX_LANES = 24  # more rank lanes than this are grouped
SLOTS = 120  # marks per lane: points closer than 1/SLOTS of the axis are drawn as one
MAX_SPAN_S = 2 * 86400  # a longer "span" means clocks that disagree
YEARLESS_S = 366 * 86400  # glog prints no year: ingest parses its times into 1970
_STRENGTH = {"cause": 3, "symptom": 2, "last-seen": 1, "context": 0}


@dataclass
class Point:
    """One log line on the timeline."""

    source: str
    line: int
    rank: int | None
    time: str | None
    text: str
    signature: str
    role: str  # cause | symptom | context | last-seen
    ts: float | None = None
    x: float = 0.0  # 0..1 along the axis
    evidence: bool = False
    initiating: bool = False
    by_position: bool = False  # no time of its own or from its file: placed by line position

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}"


@dataclass
class Mark:
    """What is drawn: the points of one lane that fall into the same slot."""

    x: float
    points: list[Point]

    @property
    def role(self) -> str:
        return max((p.role for p in self.points), key=lambda r: _STRENGTH.get(r, 0))

    @property
    def initiating(self) -> bool:
        return any(p.initiating for p in self.points)

    @property
    def evidence(self) -> bool:
        return any(p.evidence for p in self.points)

    @property
    def first(self) -> Point:
        return next((p for p in self.points if p.initiating), self.points[0])

    @property
    def by_position(self) -> bool:
        return all(p.by_position for p in self.points)


@dataclass
class Lane:
    label: str
    ranks: list[int]
    marks: list[Mark] = field(default_factory=list)
    initiating: bool = False
    collateral: bool = False

    @property
    def silent(self) -> bool:
        return not self.marks

    @property
    def size(self) -> int:
        return len(self.ranks)

    @property
    def by_position(self) -> bool:
        """On a time axis, a lane none of whose lines has a time."""
        return bool(self.marks) and all(m.by_position for m in self.marks)


@dataclass
class Link:
    """A collateral lane's first failure line, drawn back to the initiating event."""

    lane: int
    mark: int


@dataclass
class Timeline:
    lanes: list[Lane]
    axis: str  # "time" or "position"
    start: str | None = None
    end: str | None = None
    span_s: float | None = None
    origin: tuple[int, int | None] | None = None  # (lane, mark); mark None: the lane is silent
    links: list[Link] = field(default_factory=list)
    n_points: int = 0
    n_ranks: int = 0
    grouped: bool = False

    @property
    def untimed_lanes(self) -> int:
        return sum(1 for lane in self.lanes if lane.by_position) if self.axis == "time" else 0

    @property
    def axis_title(self) -> str:
        return "time since the first line →" if self.axis == "time" else "position in each log →"

    def ticks(self, n: int = 5) -> list[tuple[float, str]]:
        """Axis labels as (x, text)."""
        if self.axis == "time" and self.span_s:
            return [(i / n, _fmt_offset(self.span_s * i / n)) for i in range(n + 1)]
        if self.axis == "time":
            return [(0.5, "all at the same second")]
        return [(0.0, "start of each log"), (0.5, "middle"), (1.0, "end of each log")]


def _fmt_offset(sec: float) -> str:
    if sec == 0:
        return "0"
    if sec < 10:
        return f"+{sec:.1f}s"
    if sec < 120:
        return f"+{sec:.0f}s"
    if sec < 7200:
        return f"+{sec / 60:.1f}min"
    return f"+{sec / 3600:.1f}h"


def rank_label(ranks: list[int]) -> str:
    if not ranks:
        return "no rank"
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    return f"ranks {compress_ranks(ranks)} ({len(ranks)} ranks)"


# -- points -------------------------------------------------------------------------------


def _year_for_glog(items: Iterable) -> Callable[[str | None, float | None], float | None]:
    """A function that gives a yearless (glog) time the year of the dated lines in the
    same logs, so that both clocks share one axis; the identity when there are none."""
    dated = sorted(i.ts for i in items if i.ts is not None and i.ts >= YEARLESS_S)
    if not dated:
        return lambda time, ts: ts
    ref = dated[len(dated) // 2]
    year = datetime.fromtimestamp(ref).year

    def fix(time: str | None, ts: float | None) -> float | None:
        if ts is None or ts >= YEARLESS_S or not time or not time.startswith("--"):
            return ts
        options = []
        for y in (year - 1, year, year + 1):  # a run across New Year
            try:
                options.append(datetime.fromisoformat(f"{y:04d}-{time[2:]}").timestamp())
            except ValueError:  # 29 February of a year without it
                continue
        return min(options, key=lambda t: abs(t - ref)) if options else ts

    return fix


def _points(scan: ScanResult, top: Finding | None, ranks: dict[tuple[str, int], int], clock: Callable) -> list[Point]:
    """The scanned lines, each with the rank the diagnosis gave it (``ranks``: the
    engine's attribution, which the scan itself does not carry)."""
    evidence = {(e.source, e.line): e for e in top.evidence} if top else {}
    fact_ts = {(f.source, f.line): clock(f.time, f.ts) for f in scan.facts if f.ts is not None}
    points: list[Point] = []
    # each line once, in the scan's order, with its strongest role where several entries name
    # it (an entry's cause over the catch-all entry that names every NCCL WARN line as context)
    best: dict[tuple[str, int], Event] = {}
    for ev in scan.events:
        key = (ev.source, ev.line)
        if key not in best or _STRENGTH.get(ev.role, 0) > _STRENGTH.get(best[key].role, 0):
            best[key] = ev
    for key, ev in best.items():
        evd = evidence.get(key)
        rank = ev.rank if ev.rank is not None else ranks.get(key, evd.rank if evd else None)
        sig = f"{ev.entry}/{ev.signature}" if ev.entry else ev.signature
        role = evd.role if evd else ev.role
        points.append(Point(ev.source, ev.line, rank, ev.time, ev.text, sig, role, clock(ev.time, ev.ts), evidence=evd is not None))
    for key, evd in evidence.items():  # evidence the engine derived from structural lines
        if key not in best:
            points.append(Point(evd.source, evd.line, evd.rank, evd.time, evd.text, evd.signature, evd.role, fact_ts.get(key), evidence=True))
    return points


def _anchor_times(points: list[Point], scan: ScanResult, clock: Callable) -> None:
    """A line without a timestamp happened when the last timestamped line above it did;
    one above its file's first timestamp is put at that first one."""
    anchors: dict[str, list[tuple[int, float]]] = {}
    for item in [*scan.events, *scan.facts, *scan.tails]:
        ts = clock(item.time, item.ts)
        if ts is not None:
            anchors.setdefault(item.source, []).append((item.line, ts))
    for rows in anchors.values():
        rows.sort()
    for p in points:
        if p.ts is not None:
            continue
        rows = anchors.get(p.source)
        if not rows:
            continue
        i = bisect.bisect_right(rows, (p.line, float("inf"))) - 1
        p.ts = rows[max(i, 0)][1]


def _by_position(points: list[Point], scan: ScanResult) -> None:
    """x from the line's position in its file (0: first line, 1: last)."""
    lines = {i.path: i.lines for i in scan.inputs}
    longest: dict[str, int] = {}
    for p in points:
        longest[p.source] = max(longest.get(p.source, 0), p.line)
    for p in points:
        total = max(lines.get(p.source, 0), longest[p.source], 1)
        p.x = (p.line - 1) / max(total - 1, 1)


def _place(points: list[Point], scan: ScanResult) -> tuple[str, float | None, float | None]:
    """Set each point's x; return the axis kind and the time span. Lines with a time are
    placed by it; those without (a rank whose files print no time) by position."""
    timed = [p for p in points if p.ts is not None]
    t0 = min((p.ts for p in timed), default=None)  # type: ignore[type-var]
    t1 = max((p.ts for p in timed), default=None)  # type: ignore[type-var]
    if not timed or t1 - t0 > MAX_SPAN_S:  # type: ignore[operator]
        for p in points:
            p.ts = None
        _by_position(points, scan)
        return "position", None, None
    for p in timed:
        p.x = (p.ts - t0) / (t1 - t0) if t1 > t0 else 0.5  # type: ignore[operator]
    untimed = [p for p in points if p.ts is None]
    _by_position(untimed, scan)
    for p in untimed:
        p.by_position = True
    return "time", t0, t1


def _initiating_point(points: list[Point], scan: ScanResult, rank: int | None, clock: Callable) -> Point | None:
    if rank is None:
        return None
    own = [p for p in points if p.rank == rank and p.role == "cause"]
    if own:
        return min(own, key=lambda p: (not p.evidence, p.ts if p.ts is not None else float("inf"), p.source, p.line))
    # no failure of its own: its last sign of life says more than what was done to it
    # afterwards (a SIGTERM from the launcher, a timeout it reported once the others gave up)
    tails = [t for t in scan.tails if t.rank == rank] or [t for t in scan.tails if t.rank is None and t.local_rank == rank]
    if not tails:
        rest = [p for p in points if p.rank == rank and p.role != "context"]
        return min(rest, key=lambda p: (-_STRENGTH.get(p.role, 0), p.ts if p.ts is not None else float("inf"), p.source, p.line)) if rest else None
    t = max(tails, key=lambda t: (clock(t.time, t.ts) or 0, t.line))
    return Point(t.source, t.line, rank, t.time, t.text, "last line from this rank", "last-seen", clock(t.time, t.ts))


# -- lanes --------------------------------------------------------------------------------


def _marks(points: list[Point]) -> list[Mark]:
    slots: dict[int, list[Point]] = {}
    for p in sorted(points, key=lambda p: (p.x, p.source, p.line)):
        slots.setdefault(round(p.x * (SLOTS - 1)), []).append(p)
    return [Mark(sum(p.x for p in ps) / len(ps), ps) for _, ps in sorted(slots.items())]


def _lane_key(points: list[Point], coarse: bool) -> tuple:
    if coarse:
        return tuple(sorted({(p.signature, p.role) for p in points}))
    return tuple((p.signature, p.role, fingerprint(p.text)) for p in sorted(points, key=lambda p: (p.x, p.line)))


def _group_ranks(by_rank: dict[int, list[Point]], keep_alone: set[int], collateral: set[int], max_lanes: int) -> list[list[int]]:
    """Ranks that logged the same thing share a lane; the initiating rank stays alone."""
    for coarse in (False, True):
        groups: dict[tuple, list[int]] = {}
        for r in sorted(by_rank):
            key = ("alone", r) if r in keep_alone else (r in collateral, _lane_key(by_rank[r], coarse))
            groups.setdefault(key, []).append(r)
        if len(groups) <= max_lanes:
            break
    out = sorted(groups.values(), key=lambda rs: rs[0])
    if len(out) > max_lanes:  # still too many: keep the largest groups, fold the rest together
        alone = [g for g in out if set(g) & keep_alone]
        rest = sorted((g for g in out if not set(g) & keep_alone), key=lambda g: (-len(g), g[0]))
        room = max_lanes - len(alone) - 1
        kept, folded = rest[:room], rest[room:]
        out = sorted(alone + kept + [sorted(r for g in folded for r in g)], key=lambda rs: rs[0])
    return out


def build_timeline(result: Diagnosis, scan: ScanResult, max_lanes: int = MAX_LANES) -> Timeline:
    top = result.diagnoses[0] if result.diagnoses else None
    att = getattr(result.weighing, "att", None)
    ranks = {(e.source, e.line): e.rank for e in att.events if e.rank is not None} if att is not None else {}
    clock = _year_for_glog([*scan.events, *scan.facts, *scan.tails])
    points = _points(scan, top, ranks, clock)
    _anchor_times(points, scan, clock)
    init_rank = top.initiating_rank if top else None
    init = _initiating_point(points, scan, init_rank, clock)
    if init is not None and init not in points:
        _anchor_times([init], scan, clock)
        points.append(init)
    axis, t0, t1 = _place(points, scan)
    if init is not None:
        init.initiating = True
    collateral = set(top.collateral_ranks) if top else set()

    by_rank: dict[int, list[Point]] = {}
    for r in set(result.ranks_seen) | collateral | ({init_rank} if init_rank is not None else set()):
        by_rank[r] = []
    loose: list[Point] = []
    for p in points:
        (by_rank.setdefault(p.rank, []) if p.rank is not None else loose).append(p)

    groups = [[r] for r in sorted(by_rank)]
    grouped = len(groups) > max_lanes
    if grouped:
        groups = _group_ranks(by_rank, {init_rank} if init_rank is not None else set(), collateral, max_lanes)
    lanes: list[Lane] = []
    for ranks in groups:
        shown = [p for r in ranks for p in by_rank[r]]  # a grouped lane shows all its ranks' lines
        lanes.append(
            Lane(
                rank_label(ranks),
                ranks,
                _marks(shown),
                initiating=init_rank in ranks,
                collateral=bool(collateral & set(ranks)) and init_rank not in ranks,
            )
        )
    if loose:
        lanes.append(Lane("no rank (launcher, system)", [], _marks(loose)))

    tl = Timeline(lanes, axis, n_points=len(points), n_ranks=len(by_rank), grouped=grouped)
    if axis == "time":
        tl.span_s = (t1 or 0) - (t0 or 0)
        tl.start = _shown_time(points, t0)
        tl.end = _shown_time(points, t1)
    _link(tl)
    return tl


def _shown_time(points: list[Point], ts: float | None) -> str | None:
    """The time of the first line at ``ts`` as it was printed; a glog time that took its
    year from the dated lines is shown with that year."""
    time = min((p for p in points if p.ts == ts), key=lambda p: p.line).time
    if ts is not None and ts >= YEARLESS_S and (time is None or time.startswith("--")):
        return datetime.fromtimestamp(ts).isoformat(timespec="milliseconds")
    return time


def _link(tl: Timeline) -> None:
    for i, lane in enumerate(tl.lanes):
        if lane.initiating:
            j = next((k for k, m in enumerate(lane.marks) if m.initiating), None)
            tl.origin = (i, j)
    if tl.origin is None:
        return
    for i, lane in enumerate(tl.lanes):
        if not lane.collateral:
            continue
        j = next((k for k, m in enumerate(lane.marks) if m.role in ("cause", "symptom")), None)
        if j is not None:
            tl.links.append(Link(i, j))
