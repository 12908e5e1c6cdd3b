"""Prometheus metrics of a watched run (``rankdoctor watch --metrics-port PORT``).

The series (``rankdoctor rules --format prometheus`` writes alerting rules over them):

- ``rankdoctor_fingerprint_hits_total{entry, class, role, rank}``: lines that matched a
  signature of an entry, by the signature's role (cause, symptom, context) and the rank
  that printed them (``unknown`` when the line names none). The scanner's true counts,
  repeated lines included.
- ``rankdoctor_rank_seconds_since_last_line{rank}``: seconds since the watch last read a
  line of that rank (worked out when Prometheus scrapes).
- ``rankdoctor_rank_silent{rank}``: 1 while the rank is silent (no line for
  ``--silent-after`` seconds while at least half of the others write), else 0.
- ``rankdoctor_silent_ranks``, ``rankdoctor_stalled`` (1 when every rank is silent),
  ``rankdoctor_ranks_seen``, ``rankdoctor_lines_read_total``, ``rankdoctor_bytes_read_total``.
- ``rankdoctor_diagnosis_info{verdict, entry, class, initiating_ranks}``: the current
  diagnosis (one series, value 1; its labels change when the diagnosis does), with
  ``rankdoctor_diagnosis_confidence`` and ``rankdoctor_diagnosis_changes_total``.
- the watch process's own ``process_*`` series (CPU, memory, open files).

Cardinality is bounded by the run, not by time: one series per rank for the per-rank
gauges, and one per entry, role and rank that actually matched for the hits (entries that
fire on every rank of a large job, such as the watchdog timeout, give one series per rank).
Ranks as labels are fine up to a few thousand ranks; a larger job is better watched per
node or per group of ranks (one watch each).

The numbers are taken in the watching thread (``Watcher.on_round``, at most twice a
second, and with every update) and handed to the scrape thread as one immutable snapshot.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily
from prometheus_client.process_collector import ProcessCollector

from ..events import Event

if TYPE_CHECKING:
    from ..kb.loader import KnowledgeBase
    from .core import Update, Watcher

REFRESH = 0.5  # seconds between two snapshots taken between updates


@dataclass(frozen=True)
class Snapshot:
    """What a scrape reports (never changed once made)."""

    hits: dict[tuple[str, str, str, str], int] = field(default_factory=dict)  # (entry, class, role, rank) -> lines
    last_line: dict[int, float] = field(default_factory=dict)  # rank -> wall-clock time of its last line
    silent: frozenset[int] = frozenset()
    stalled: bool = False
    ranks_seen: int = 0
    lines: int = 0
    bytes: int = 0
    diagnosis: dict[str, str] = field(default_factory=dict)  # the info metric's labels
    confidence: float = 0.0
    changes: int = 0


def hit_counts(watcher: "Watcher", classes: dict[str, str]) -> dict[tuple[str, str, str, str], int]:
    """Lines matched per entry, class, role and rank so far: each kind of line's kept
    occurrences and the ones folded between them."""
    counts: dict[tuple[str, str, str, str], int] = {}
    for sample in list(watcher.result.samples.values()):
        n = 0
        ev = None
        for _, item in sample.items():
            if not isinstance(item, Event):
                break
            ev = item
            n += 1 + item.folded
        if ev is None:
            continue
        rank = ev.rank if ev.rank is not None else ev.local_rank
        key = (ev.entry, classes.get(ev.entry, ""), ev.role, "unknown" if rank is None else str(rank))
        counts[key] = counts.get(key, 0) + n
    return counts


class WatchMetrics:
    """Keeps the snapshot current from a watcher's rounds and updates; serves it."""

    def __init__(self, kb: "KnowledgeBase"):
        self.classes = {e.id: e.class_ for e in kb}
        self.snapshot = Snapshot()
        self._taken = 0.0
        self._added = -1
        self._hits: dict[tuple[str, str, str, str], int] = {}
        self._update: Update | None = None
        self._changes = 0
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(_Collector(self))
        ProcessCollector(registry=self.registry)
        self.server = None

    def attach(self, watcher: "Watcher") -> None:
        watcher.on_round(self.on_round)
        watcher.subscribe(self.on_update)

    def serve(self, port: int, addr: str = "0.0.0.0") -> int:
        """Serve /metrics on ``addr:port`` from a daemon thread; the port (``port`` 0: a free one)."""
        self.server, _thread = start_http_server(port, addr=addr, registry=self.registry)
        return self.server.server_port

    def close(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    # -- in the watching thread -----------------------------------------------------------
    def on_round(self, watcher: "Watcher") -> None:
        now = time.monotonic()
        if now - self._taken >= REFRESH:
            self._take(watcher)

    def on_update(self, update: "Update") -> None:
        if update.previous is not None and update.diagnosis_changed:
            self._changes += 1
        self._update = update
        self._take(None)

    def _take(self, watcher: "Watcher | None") -> None:
        self._taken = time.monotonic()
        u = self._update
        last = dict(self.snapshot.last_line)
        lines = self.snapshot.lines
        size = self.snapshot.bytes
        ranks_seen = self.snapshot.ranks_seen
        if watcher is not None:
            if watcher.result.added != self._added:
                self._added = watcher.result.added
                self._hits = hit_counts(watcher, self.classes)
            last = watcher.last_lines()
            lines = sum(i.lines for i in watcher.result.inputs)
            size = sum(i.bytes for i in watcher.result.inputs)
            ranks_seen = len(watcher.result.ranks_seen)
        info: dict[str, str] = {}
        confidence = 0.0
        silent: frozenset[int] = frozenset()
        stalled = False
        if u is not None:
            doc = u.document
            top = doc["diagnoses"][0] if doc["diagnoses"] else None
            info = {
                "verdict": doc["verdict"],
                "entry": top["entry"] if top else "",
                "class": top["class"] if top else "",
                "initiating_ranks": ",".join(str(r) for r in top["initiating_ranks"]) if top else "",
            }
            confidence = float(top["confidence"]) if top else 0.0
            silent, stalled = frozenset(u.silent), u.stalled
            last.update({r: life.seen_at for r, life in u.ranks.items() if r not in last})
            lines = max(lines, sum(i["lines"] for i in doc["inputs"]))
            size = max(size, sum(i["bytes"] for i in doc["inputs"]))
            ranks_seen = max(ranks_seen, len(doc["ranks"]["seen"]))
        self.snapshot = Snapshot(dict(self._hits), last, silent, stalled, ranks_seen, lines, size, info, confidence, self._changes)


class _Collector:
    """Turns the current snapshot into metric families at scrape time."""

    def __init__(self, metrics: WatchMetrics):
        self.metrics = metrics

    def collect(self):
        s = self.metrics.snapshot
        now = time.time()
        hits = CounterMetricFamily(
            "rankdoctor_fingerprint_hits", "Log lines that matched a signature of a failure-encyclopedia entry.",
            labels=["entry", "class", "role", "rank"],
        )
        for key, n in sorted(s.hits.items()):
            hits.add_metric(list(key), n)
        yield hits
        age = GaugeMetricFamily("rankdoctor_rank_seconds_since_last_line", "Seconds since the watch read a line of this rank.", labels=["rank"])
        silent = GaugeMetricFamily(
            "rankdoctor_rank_silent", "1 while this rank writes nothing and at least half of the other ranks write.", labels=["rank"]
        )
        for r in sorted(s.last_line):
            age.add_metric([str(r)], max(0.0, now - s.last_line[r]))
            silent.add_metric([str(r)], 1.0 if r in s.silent else 0.0)
        yield age
        yield silent
        yield GaugeMetricFamily("rankdoctor_silent_ranks", "Ranks silent while the others write.", value=len(s.silent))
        yield GaugeMetricFamily("rankdoctor_stalled", "1 when every rank has been silent for --silent-after seconds.", value=1.0 if s.stalled else 0.0)
        yield GaugeMetricFamily("rankdoctor_ranks_seen", "Ranks the logs named so far.", value=s.ranks_seen)
        yield CounterMetricFamily("rankdoctor_lines_read", "Log lines read.", value=s.lines)
        yield CounterMetricFamily("rankdoctor_bytes_read", "Log bytes read.", value=s.bytes)
        if s.diagnosis:
            info = InfoMetricFamily("rankdoctor_diagnosis", "The watch's current diagnosis (rankdoctor.diagnosis/v1, its first entry).")
            info.add_metric([], s.diagnosis)
            yield info
            yield GaugeMetricFamily("rankdoctor_diagnosis_confidence", "Confidence of the current diagnosis (0 when none).", value=s.confidence)
        yield CounterMetricFamily("rankdoctor_diagnosis_changes", "Times the diagnosis changed since the watch began.", value=s.changes)
