"""The same scan as ``scan_sources``, spread over one process per core.

Work items are whole sources, or byte ranges of a large plain file. A range starts and
ends where the single-process chunk reader (``ingest.sources.iter_file_chunks``) would start
and end a chunk — right after the last newline before a multiple of the chunk size — so
every chunk a worker scans is byte-for-byte a chunk ``scan_sources`` scans: the same hits,
the same rank samples, the same traceback context (a worker reads the bytes just before
its range itself). Line numbers are counted per range and shifted by the newlines of the
ranges before it when the results are put back together, in input order.

Workers are forked from the process that built the scanner, so they share its compiled
hyperscan database and regexes as they are (no recompiling, nothing serialized); results
(the first and last hit lines of each kind, and counts: ``events.Sample``) come back
pickled. Small inputs never start a pool. Where ``fork`` is not
available the scan runs in one process.
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
import signal
import sys
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .events import InputStats, ScanResult
from .ingest import sources as _sources
from .ingest.sources import CHUNK, Source, iter_file_chunks, looks_binary
from .scan import CONTEXT_BYTES, Cursor, Scanner, scan_sources, sniff_chunk, vector_count

if TYPE_CHECKING:
    from .kb.loader import KnowledgeBase

SMALL_TOTAL = 8 << 20  # below this many bytes in all, one process (no pool start-up)...
MANY_SOURCES = 256  # ...unless there are this many sources: each costs its own opens and set-up
BATCH_BYTES = 8 << 20  # whole sources go to a worker in batches of about this many bytes...
BATCHES_PER_JOB = 8  # ...or fewer, so that every worker gets several batches
PROGRESS_MIN = 50 << 20  # a progress bar only for inputs at least this large
MAX_RANGE = 64 << 20  # byte ranges of a split file are at most this long
# from this many bytes on, newlines are counted with numpy (below, its import costs more
# than it saves: measured in bench/README.md)
VECTOR_COUNT_MIN = 512 << 20

Progress = Callable[[int, int], None]  # (bytes done, bytes in all)


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _plain_path(source: Source) -> Path | None:
    """The file behind a source when it is an uncompressed regular file (splittable): a
    Path, or an object in storage (``ingest.storage``)."""
    path = getattr(source, "path", None)
    if path is None or source.warnings:
        return None
    return path


# -- byte ranges ---------------------------------------------------------------------------


def chunk_boundary(f, at: int, chunk_size: int) -> int:
    """Where ``iter_chunks`` ends the chunk that holds the block ending at ``at`` (a
    multiple of ``chunk_size``): after the last newline in [at - chunk_size, at), or ``at``
    when that block has none (a line longer than ``MAX_LINE`` is cut there)."""
    lo = at - chunk_size
    f.seek(lo)
    block = f.read(chunk_size)
    nl = block.rfind(b"\n")
    return at if nl < 0 else lo + nl + 1


@dataclass(frozen=True)
class _Range:
    index: int  # of the source in the input list
    path: Path
    name: str
    start: int
    end: int
    tail_from: int  # where the chunk before this range starts (its last bytes are context)
    last: bool


def split_file(path: Path, size: int, range_bytes: int, chunk_size: int) -> list[tuple[int, int, int]]:
    """[(start, end, start of the previous chunk)] covering the file, cut at chunk boundaries."""
    step = max(chunk_size, range_bytes - range_bytes % chunk_size)
    cuts = [0]
    prev_chunk = [0]
    with _sources.open_plain(path) as f:
        at = step
        while at < size:
            b = chunk_boundary(f, at, chunk_size)
            if b > cuts[-1]:
                pb = chunk_boundary(f, at - chunk_size, chunk_size) if at - chunk_size > 0 else 0
                cuts.append(b)
                prev_chunk.append(pb)
            at += step
    cuts.append(size)
    return [(cuts[i], cuts[i + 1], prev_chunk[i]) for i in range(len(cuts) - 1) if cuts[i + 1] > cuts[i]]


# -- what a worker does -------------------------------------------------------------------

_STATE: dict = {}  # set in the parent before the pool forks: the scanner, the sources


def _init_worker() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    # What the fork copied from the parent is never collected here: a collection could run the
    # weakref callback of an executor the parent left for its own collector, whose lock a
    # parent thread held at the fork (the worker then waits forever), and it would touch pages
    # that copy-on-write otherwise shares (gc.freeze's documented use after fork)
    gc.freeze()


def _scan_whole(indexes: list[int], chunk_size: int) -> ScanResult:
    """Whole sources, one after the other: a batch costs one task however many small files
    it holds (a task per file cost more to dispatch and collect than to scan)."""
    sources = _STATE["sources"]
    return scan_sources(None, [sources[i] for i in indexes], _STATE["scanner"], chunk_size=chunk_size)


@dataclass
class _RangeResult:
    result: ScanResult
    stats: InputStats
    newlines: int


def _scan_range(r: _Range, dialect, chunk_size: int, scanner: Scanner | None = None) -> _RangeResult:
    scanner = scanner or _STATE["scanner"]
    result = ScanResult()
    stats = InputStats(path=r.name)
    base = scanner.note_name(r.name, result)
    cur = Cursor(dialect=dialect)
    try:
        if r.start:
            with _sources.open_plain(r.path) as f:
                # context: the chunk before this range's last bytes; for the source's last range,
                # also its bytes before the range (its tail, when the range is one short line)
                context_from = max(r.tail_from, r.start - CONTEXT_BYTES)
                lo = max(0, r.start - CONTEXT_BYTES) if r.last else context_from
                f.seek(lo)
                cur.end = f.read(r.start - lo)
                cur.tail = cur.end[context_from - lo:]
        scanner.scan_chunks(iter_file_chunks(r.path, r.start, r.end, chunk_size), r.name, base, result, stats, cur)
    except (OSError, EOFError, ValueError) as exc:
        stats.warnings.append(f"{r.name}: input ends early ({exc}); read what was intact")
    newlines = cur.line_base
    if r.last:
        scanner.finish(r.name, base, result, stats, cur)
    return _RangeResult(result, stats, newlines)


def _shift(result: ScanResult, lines: int) -> None:
    if lines:
        for ev in result.events:
            ev.line += lines
        for f in result.facts:
            f.line += lines
        for f in result.tails:
            f.line += lines


# -- the parent ----------------------------------------------------------------------------


def scan_parallel(
    kb: "KnowledgeBase | None",
    sources: Iterable[Source],
    jobs: int | None = None,
    progress: Progress | None = None,
    *,
    scanner: Scanner | None = None,
    chunk_size: int = CHUNK,
    range_bytes: int | None = None,
    min_parallel_bytes: int = SMALL_TOTAL,
    meanwhile: Callable[[], object] | None = None,
) -> ScanResult:
    """``scan_sources(kb, sources)``, computed by ``jobs`` processes (default: one per core).

    The result is identical: the same events and facts in the same order, the same input
    statistics, tails and ranks seen. ``progress(done, total)`` is called in this process
    as work items finish. ``range_bytes`` (default: adaptive, at most 64 MiB) is the length
    of the byte ranges large plain files are split into; ``min_parallel_bytes`` is the
    total below which no pool is started. ``meanwhile()`` is called in this process once
    the workers have their work (the CLI parses the knowledge base then), not at all for
    small inputs.
    """
    sources = list(sources)
    jobs = default_jobs() if jobs is None else max(1, jobs)
    sizes = [s.size or 0 for s in sources]
    total = sum(sizes)
    few = total < min_parallel_bytes and len(sources) < MANY_SOURCES
    if jobs == 1 or few or len(sources) == 0 or "fork" not in mp.get_all_start_methods():
        result = scan_sources(kb, sources, scanner, chunk_size=chunk_size)
        if progress:
            progress(total, total)
        return result
    scanner = scanner or Scanner(kb)
    if total >= VECTOR_COUNT_MIN:
        vector_count()  # imported here, once, before the workers fork
    plan = plan_scan(sources, jobs, chunk_size, range_bytes)
    _STATE.clear()
    _STATE.update(scanner=scanner, sources=sources)
    ctx = mp.get_context("fork")
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_init_worker)
    ok = False
    try:
        futures = submit_plan(
            plan, lambda indexes: pool.submit(_scan_whole, indexes, chunk_size),
            lambda r, dialect: pool.submit(_scan_range, r, dialect, chunk_size))
        # the pool has forked its workers now; a progress bar may start its thread
        if meanwhile is not None:
            meanwhile()
        out = merge_plan(scanner, sources, plan, futures, Future.result, chunk_size, progress)
        ok = True
        return out
    finally:
        if ok:
            pool.shutdown(wait=True)
        else:  # Ctrl-C or an error: do not wait for queued work
            _abort(pool)
        _STATE.clear()


# -- planning and merging (this pool's, and any other engine's: remote/ray_engine.py) --------


def plan_scan(sources: list[Source], jobs: int, chunk_size: int = CHUNK, range_bytes: int | None = None) -> list:
    """The work items for ``jobs`` workers: batches of whole sources, the byte ranges of
    each large plain file (its dialect read here, once), and what only this process can
    read (stdin). Items: ``["whole", [index], size]``, ``("split", index, [_Range], dialect,
    size)``, ``("here", index, size)``, in input order."""
    sizes = [s.size or 0 for s in sources]
    total = sum(sizes)
    if range_bytes is None:
        range_bytes = min(MAX_RANGE, max(2 * chunk_size, total // (jobs * 4)))

    # plan: batches of whole sources, or the ranges of a split file (its dialect read here, once)
    plan: list = []
    batch_bytes = min(BATCH_BYTES, max(1, total // (jobs * BATCHES_PER_JOB)))
    batch_count = max(1, len(sources) // (jobs * BATCHES_PER_JOB))
    for i, src in enumerate(sources):
        path = _plain_path(src)
        if src.name == "<stdin>" or src.size is None:
            plan.append(("here", i, sizes[i]))
            continue
        # (ranges are exact only when a chunk is longer than the longest uncut line)
        if path is None or chunk_size <= _sources.MAX_LINE or sizes[i] < max(range_bytes + range_bytes // 2, 2 * chunk_size):
            last = plan[-1] if plan else None
            if last and last[0] == "whole" and last[2] + sizes[i] <= batch_bytes and len(last[1]) < batch_count:
                last[1].append(i)
                last[2] += sizes[i]
            else:
                plan.append(["whole", [i], sizes[i]])
            continue
        try:
            data, n = next(iter_file_chunks(path, 0, None, chunk_size), (b"", 0))
            if not n or looks_binary(data[:65536]):
                raise ValueError("not splittable")
            dialect = sniff_chunk(data[: min(n, 65536)])
            del data
            cuts = split_file(path, sizes[i], range_bytes, chunk_size)
        except (OSError, ValueError):
            plan.append(["whole", [i], sizes[i]])
            continue
        ranges = [_Range(i, path, src.name, a, b, pc, k == len(cuts) - 1) for k, (a, b, pc) in enumerate(cuts)]
        plan.append(("split", i, ranges, dialect, sizes[i]))

    return plan


def submit_plan(plan: list, whole: Callable[[list[int]], object], split: Callable[[_Range, object], object]) -> list:
    """Hand each item of ``plan`` to an engine: ``whole(indexes)`` and ``split(range,
    dialect)`` return a handle for the result (a future, an object reference)."""
    handles: list = []
    for item in plan:
        if item[0] == "whole":
            handles.append(whole(item[1]))
        elif item[0] == "split":
            handles.append([split(r, item[3]) for r in item[2]])
        else:
            handles.append(None)
    return handles


def merge_plan(scanner: Scanner, sources: list[Source], plan: list, handles: list, get: Callable[[object], object],
               chunk_size: int = CHUNK, progress: Progress | None = None) -> ScanResult:
    """The scan's result from the items' results (``get(handle)``), in input order: what
    ``scan_sources`` gives for the same sources."""
    total = sum(s.size or 0 for s in sources)
    done = 0
    out = ScanResult()
    for item, handle in zip(plan, handles):
        kind, index = item[0], item[1]
        if kind == "here":
            part = scanner.scan_source(sources[index], chunk_size)
            done += part.inputs[0].bytes if part.inputs else 0
        elif kind == "whole":
            part = get(handle)
            done += item[2]
        else:
            part = _merge_ranges(scanner, sources[index], handle, item[2], progress, done, total, get)
            done += item[4]
        out.extend(part)
        if progress:
            progress(min(done, total) if total else done, total)
    return out


def _merge_ranges(scanner: Scanner, src: Source, futs: list, ranges: list[_Range], progress, done: int, total: int,
                  get: Callable[[object], object] = Future.result) -> ScanResult:
    """One source's result from the results of its ranges, in order, lines shifted: each
    kind of line keeps its first occurrences from the earliest ranges and its last from
    the latest, and counts them all (``ScanResult.extend``)."""
    part = ScanResult()
    stats = InputStats(path=src.name, warnings=list(src.warnings))
    part.inputs.append(stats)
    scanner.note_name(src.name, part)
    lines = 0
    for r, fut in zip(ranges, futs):
        rr: _RangeResult = get(fut)  # type: ignore[assignment]
        _shift(rr.result, lines)
        part.extend(rr.result)
        stats.bytes += rr.stats.bytes
        stats.warnings.extend(rr.stats.warnings)
        if r.last:
            stats.lines = rr.stats.lines + lines
        lines += rr.newlines
        if progress:
            progress(min(done + r.end, total), total)
    return part


def _abort(pool: ProcessPoolExecutor) -> None:
    """Stop at once (Ctrl-C, an error): cancel what is queued, end the workers."""
    try:
        pool.shutdown(wait=False, cancel_futures=True)
    except Exception:  # pragma: no cover
        pass
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(timeout=2)
        if p.is_alive():  # pragma: no cover
            p.kill()


# -- progress bar --------------------------------------------------------------------------


class RichProgress:
    """A Rich progress bar on stderr, drawn only when the caller reports progress (no
    refresh thread, so it is safe next to forked workers). Use as a context manager."""

    def __init__(self, description: str = "scanning"):
        self._description = description
        self._progress = None
        self._task = None

    def __call__(self, done: int, total: int) -> None:
        if self._progress is None:
            from rich.console import Console
            from rich.progress import BarColumn, DownloadColumn, Progress, TimeElapsedColumn, TransferSpeedColumn

            self._progress = Progress(
                "[progress.description]{task.description}",
                BarColumn(),
                DownloadColumn(),
                TransferSpeedColumn(),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                auto_refresh=False,
                transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task(self._description, total=total)
        self._progress.update(self._task, completed=done, total=total, refresh=True)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def __enter__(self) -> "RichProgress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def progress_for(sources: list[Source], quiet: bool = False, stream=None) -> RichProgress | None:
    """A progress bar when the inputs are large (>= 50 MB), stderr is a terminal and not
    ``--quiet``; else None."""
    stream = stream or sys.stderr
    if quiet or not getattr(stream, "isatty", lambda: False)():
        return None
    if sum(s.size or 0 for s in sources) < PROGRESS_MIN:
        return None
    return RichProgress()


__all__ = ["scan_parallel", "default_jobs", "progress_for", "RichProgress", "split_file", "chunk_boundary"]
