"""The watch core: follow live logs, scan only what was appended, keep the diagnosis current.

    from rankdoctor.watch import Watcher

    w = Watcher(["logs/"], silent_after=60)
    w.subscribe(lambda u: print(u.changes))   # called with every Update
    for update in w:                          # or iterate; w.stop() (any thread) ends it
        print(update.document["verdict"], update.silent)

One running ``ScanResult`` holds what the scanner found in every followed source. Each
source keeps the scanner's ``Cursor`` (lines so far, the bytes before the next read as
traceback context, its prefix dialect), so appended bytes are scanned as the next chunk of
the same source and old bytes are never read again; the scanner folds repeated lines, so
memory stays flat however long the run. The engine (``diagnose``) is re-run on that result
when a new kind of line matched (a signature or fact on a source and rank where it had not),
when ranks or files appear, when a rank goes silent or writes again, and every
``rediagnose`` seconds while lines arrive (repeats of a kind, the ranks' last activity);
an ``Update`` goes to the subscribers when the diagnosis changed, when silence changed, or
when something happened to an input (a new file, a rotation, a truncation).

A rank's last sign of life is the wall-clock time its last line was read: a rank is silent
when it wrote nothing for ``silent_after`` seconds while at least half of the others wrote
(the engine's quiet-gap reasoning, with "now" the wall clock); when every rank is silent
that long the run is ``stalled`` (hung, or finished).
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from ..events import InputStats, ScanResult
from ..ingest.prefix import Attribution, Dialect, clean, parse_prefix, subject_rank
from ..ingest.sources import InputError, expand_inputs, looks_binary, shown
from ..scan import CONTEXT_BYTES, Cursor, Scanner, scanner_for, sniff_chunk
from .follow import COMPRESSED, FileFollow, StdinFollow, file_ident, is_rotated_copy, walk

if TYPE_CHECKING:
    from ..diagnose.model import Diagnosis
    from ..kb.loader import KnowledgeBase

DEBOUNCE_MS = 200  # watchfiles: the longest it groups changes before handing them over
STEP_MS = 20  # ... and the quiet time after a change that ends a group
_HEAD = 64 << 10  # bytes of a source its prefix dialect is sniffed from (as the whole-file scan)
_LIFE_LINES = 200  # last lines of each read looked at for ranks' last signs of life
_ARCHIVE_MAGIC = (b"\x1f\x8b", b"\x28\xb5\x2f\xfd", b"PK\x03\x04")


class Reason(str, Enum):
    """Why an update was made."""

    start = "start"  # what the inputs held when the watch began
    evidence = "evidence"  # new lines changed the diagnosis
    silence = "silence"  # a rank went silent or wrote again, or the run stalled
    inputs = "inputs"  # a file appeared, was rotated or truncated
    final = "final"  # the watch ends (signal, end of the pipe): everything read


@dataclass(frozen=True)
class RankLife:
    """A rank's last sign of life: the last line read from it."""

    rank: int
    seen_at: float  # wall-clock time (time.time()) the line was read
    text: str  # the line (cut to 300 characters)
    time: str | None  # the line's own timestamp, when it has one
    silent_for: float  # seconds from ``seen_at`` to the update


@dataclass
class Update:
    """One change of what the watch knows. ``document`` is the diagnosis as
    ``rankdoctor diagnose --format json`` prints it (rankdoctor.diagnosis/v1)."""

    at: float  # wall-clock time it was made
    reason: Reason
    diagnosis: "Diagnosis"
    document: dict[str, Any]
    previous: dict[str, Any] | None  # the document of the update before (None for the first)
    changes: list[str]  # what changed, in words ("verdict: no-failure-found -> diagnosed")
    ranks: dict[int, RankLife]  # every rank with a line read, by rank
    silent: dict[int, float]  # rank -> seconds silent, for ranks silent while others write
    stalled: bool  # every rank silent for ``silent_after`` seconds
    notes: list[str] = field(default_factory=list)  # what happened to the inputs since the last update
    read_at: float | None = None  # when the first bytes that led to this update were read

    @property
    def diagnosis_changed(self) -> bool:
        """The document differs from the one before in more than the inputs' sizes."""
        return self.previous is None or _key(self.document) != _key(self.previous)


def _key(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k != "inputs"}


class _Source:
    """What the watch keeps per source: the scanner's cursor, the input's counts, its
    head while the dialect is still being sniffed, the tail facts of its last lines."""

    def __init__(self, name: str, base: Attribution, reader: FileFollow | StdinFollow):
        self.name, self.base, self.reader = name, base, reader
        self.cur = Cursor()
        self.stats = InputStats(path=name)
        self.head = b""  # the first bytes, until _HEAD of them (the dialect is sniffed again as it grows)
        self.binary = False
        self.tails: list = []
        self.tails_stale = False


class Watcher:
    """Follow ``paths`` (files, folders, ``-`` for stdin) and make ``Update`` objects.

    ``kb``: the knowledge base (default: the installed one, or ``entries``);
    ``silent_after``: seconds without a line after which a rank counts as silent;
    ``tick``: how often the files are checked without a notification (silence timing, file
    systems without notifications); ``rediagnose``: how often the diagnosis is re-run while
    lines arrive that matched nothing new (its last-activity reasoning); ``stdin``: the
    file descriptor ``-`` reads (default 0); ``hung_after``: seconds without a line in any input
    after which the job is taken to have hung (the diagnosis is then ``diagnose --hung``'s;
    None: never, a silent job may also have finished). Raises ``InputError`` for a path that
    does not exist or cannot be read."""

    def __init__(
        self,
        paths: list[str],
        *,
        kb: "KnowledgeBase | None" = None,
        entries: "os.PathLike[str] | str | None" = None,
        silent_after: float = 60.0,
        tick: float = 1.0,
        rediagnose: float = 5.0,
        stdin: int = 0,
        hung_after: float | None = None,
    ):
        if not paths:
            raise InputError("no input paths given")
        from pathlib import Path

        self.paths = list(paths)
        self.silent_after, self.tick, self.rediagnose = silent_after, tick, rediagnose
        self.hung_after = hung_after
        self._last_line_at: float | None = None  # when the last line of any input arrived
        self._entries = Path(entries) if entries is not None else None
        self._kb = kb
        self._stdin_fd = stdin
        self._subscribers: list[Callable[[Update], None]] = []
        self._rounds: list[Callable[["Watcher"], None]] = []
        self._stop = threading.Event()
        self._queue: queue.Queue = queue.Queue()
        self._sources: dict[str, _Source] = {}
        self._follows: dict[str, FileFollow] = {}  # path -> follower
        self._folders: list[str] = []  # folders given: a new file under them is a new source
        self._files: set[str] = set()  # files given
        self._life: dict[int, RankLife] = {}
        self._notes: list[str] = []
        self._threads: list[threading.Thread] = []
        self.result = ScanResult()
        self._check_paths()

    # -- the interface ----------------------------------------------------------------
    def subscribe(self, callback: Callable[[Update], None]) -> None:
        """Call ``callback`` with every update (in the watching thread, before the
        iterator yields it)."""
        self._subscribers.append(callback)

    def on_round(self, callback: Callable[["Watcher"], None]) -> None:
        """Call ``callback(watcher)`` in the watching thread after every round of reading
        (at least every ``tick``), between updates too: for outputs that show running
        numbers (the Prometheus metrics read ``result`` and ``last_lines()`` there)."""
        self._rounds.append(callback)

    def last_lines(self) -> dict[int, float]:
        """Each rank's wall-clock time of its last line read so far (a copy)."""
        return {r: life.seen_at for r, life in self._life.copy().items()}

    def stop(self) -> None:
        """End the watch (from any thread or a signal handler): the files are read to
        their end once more and a last update (``Reason.final``) is made."""
        self._stop.set()
        # (a signal handler may run while this thread holds the queue's lock: wake the
        # loop from another thread)
        threading.Thread(target=self._queue.put, args=(("stop", None),), daemon=True).start()

    def run(self) -> "Update | None":
        """Watch until stopped; the last update."""
        last = None
        for last in self:
            pass
        return last

    def __iter__(self) -> Iterator[Update]:
        self._start()
        try:
            yield from self._loop()
        finally:
            self._stop.set()
            for t in self._threads:
                t.join(timeout=2)
            for f in self._follows.values():
                f.close()

    # -- inputs -----------------------------------------------------------------------
    def _check_paths(self) -> None:
        for p in self.paths:
            if p == "-":
                continue
            if not os.path.exists(p):
                raise InputError(f"{shown(p)}: no such file or directory")
            if not os.access(p, os.R_OK):
                raise InputError(f"{shown(p)}: cannot read: permission denied")
            if not (os.path.isdir(p) or os.path.isfile(p)):
                raise InputError(f"{shown(p)}: not a regular file or folder")

    def _start(self) -> None:
        if self._kb is None:
            from ..kb.loader import load_kb

            self._kb = load_kb(self._entries, check=False)
        kb = self._kb
        self._scanner: Scanner = scanner_for(self._entries, lambda: kb)
        file_parents: set[str] = set()
        for p in self.paths:
            if p == "-":
                reader = StdinFollow(self._stdin_fd, on_data=lambda _r: self._queue.put(("stdin", None)))
                self._add_source("<stdin>", Attribution(), reader)
            elif os.path.isdir(p):
                self._folders.append(os.path.normpath(p))
                for f in walk(p):
                    self._add_file(f, at_start=True)
            else:
                self._files.add(os.path.normpath(p))
                file_parents.add(os.path.dirname(os.path.abspath(p)))
                self._add_file(p, at_start=True)
        for roots, recursive in ((self._folders, True), (sorted(file_parents), False)):
            if roots:
                t = threading.Thread(target=self._notify, args=(list(roots), recursive), name="rankdoctor-watch-notify", daemon=True)
                t.start()
                self._threads.append(t)

    def _notify(self, roots: list[str], recursive: bool) -> None:
        """File-system notifications (inotify through watchfiles) onto the queue."""
        import watchfiles

        try:
            for changes in watchfiles.watch(
                *roots, watch_filter=None, debounce=DEBOUNCE_MS, step=STEP_MS, stop_event=self._stop,
                rust_timeout=500, recursive=recursive, raise_interrupt=False, ignore_permission_denied=True,
            ):
                self._queue.put(("fs", changes))
        except Exception as exc:  # noqa: BLE001 - any failure of the notifier: the tick still polls
            self._queue.put(("note", f"file notifications stopped ({exc}); the files are checked every {self.tick:g} s"))

    def _add_file(self, path: str, at_start: bool = False) -> None:
        path = os.path.normpath(path)
        if path in self._follows:
            return
        ident = file_ident(path)
        if ident is None:
            return
        name = shown(path)
        if not at_start:
            known = {f.ident for f in self._follows.values()} | {i for f in self._follows.values() for i in f.retired}
            if ident in known or is_rotated_copy(path, set(self._follows)):
                return  # a rotated copy of a followed file: its lines are read (or were)
            if path.endswith(COMPRESSED):
                self._notes.append(f"{name}: a compressed file appeared (a rotated archive?); not read")
                return
        try:
            with open(path, "rb") as f:
                head = f.read(4)
        except OSError as exc:
            self._notes.append(f"{name}: cannot read: {exc.strerror or exc}")
            return
        if head.startswith(_ARCHIVE_MAGIC):
            if at_start:
                self._read_once(path)
            else:
                self._notes.append(f"{name}: a compressed file appeared (a rotated archive?); not read")
            return
        follow = FileFollow(path, name)
        self._follows[path] = follow
        if not at_start:
            self._notes.append(f"{name}: new file")
        self._add_source(name, self._scanner.note_name(name, self.result), follow)

    def _read_once(self, path: str) -> None:
        """A compressed log or an archive: read whole once (it does not grow)."""
        try:
            for src in expand_inputs([path]):
                self.result.extend(self._scanner.scan_source(src))
        except InputError as exc:
            self._notes.append(str(exc))

    def _add_source(self, name: str, base: Attribution, reader: FileFollow | StdinFollow) -> None:
        src = _Source(name, base, reader)
        self._sources[name] = src
        self.result.inputs.append(src.stats)

    # -- the loop ---------------------------------------------------------------------
    def _loop(self) -> Iterator[Update]:
        from ..diagnose.engine import diagnose

        kb = self._kb
        assert kb is not None
        previous: dict[str, Any] | None = None
        last_silent: tuple[frozenset[int], bool] = (frozenset(), False)
        was_hung = False  # the last diagnosis was made as a stated hang (hung_after)
        read_at: float | None = None
        self._poll(self._sources.values(), final=False)
        diag_at, cost, pending = 0.0, 0.0, False
        kinds, ranks, nsources = -1, -1, -1
        next_tick = time.monotonic() + self.tick
        reason = Reason.start
        final = False
        while True:
            wait = max(0.0, next_tick - time.monotonic())
            dirty: set[str] = set()
            try:
                item = self._queue.get(timeout=wait) if reason is not Reason.start else None
            except queue.Empty:
                item = None
            items = [item] if item is not None else []
            while True:  # everything queued meanwhile goes into this round
                try:
                    items.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            for kind, payload in items:
                if kind == "fs":
                    dirty |= self._on_changes(payload)
                elif kind == "stdin":
                    dirty.add("<stdin>")
                elif kind == "note":
                    self._notes.append(payload)
            final = self._stop.is_set() or self._stdin_done()
            now_mono = time.monotonic()
            if now_mono >= next_tick or final:
                dirty = set(self._sources)  # the periodic check (and the last read)
                next_tick = now_mono + self.tick
            if dirty:
                got = self._poll([self._sources[n] for n in dirty if n in self._sources], final=final)
                if got:
                    read_at = read_at or time.time()
                    pending = True
            now = time.time()
            silent, stalled = self._silence(now)
            hung = self._hung(now)
            silence_changed = (frozenset(silent), stalled) != last_silent or hung != was_hung
            for fn in self._rounds:
                fn(self)
            grew = len(self.result.samples) != kinds or len(self.result.ranks_seen) != ranks or len(self._sources) != nsources
            timer = pending and now - diag_at >= self.rediagnose
            due = reason is Reason.start or final or silence_changed or self._notes or (grew and now - diag_at >= cost) or timer
            if not due:
                continue
            t0 = time.perf_counter()
            self._refresh_tails()
            d = diagnose(kb, self.result, hung=hung)
            was_hung = hung
            cost = time.perf_counter() - t0
            diag_at = time.time()
            kinds, ranks, nsources = len(self.result.samples), len(self.result.ranks_seen), len(self._sources)
            pending = False
            doc = d.to_json()
            changes = _changes(previous, doc)
            notes, self._notes = self._notes, []
            changes += _silence_changes(last_silent, silent, stalled, self._life, self.silent_after)
            last_silent = (frozenset(silent), stalled)
            if final:
                reason = Reason.final
            elif previous is not None:
                if _key(doc) != _key(previous):
                    reason = Reason.evidence
                elif silence_changed:
                    reason = Reason.silence
                elif notes:
                    reason = Reason.inputs
                else:
                    continue  # nothing a subscriber would see has changed
            update = Update(now, reason, d, doc, previous, changes, dict(self._lives(now)), silent, stalled, notes, read_at)
            previous, read_at = doc, None
            for fn in self._subscribers:
                fn(update)
            yield update
            if final:
                return
            reason = Reason.evidence

    def _stdin_done(self) -> bool:
        """Only a pipe is watched and it has ended."""
        readers = [s.reader for s in self._sources.values()]
        return bool(readers) and not self._folders and not self._files and all(isinstance(r, StdinFollow) and r.eof for r in readers)

    def _on_changes(self, changes: set) -> set[str]:
        """Sources to read after these notifications; new files become sources."""
        import watchfiles

        dirty: set[str] = set()
        rotated_away = False
        for change, path in changes:
            path = os.path.abspath(path)
            rel = self._given_form(path)
            if rel is None:
                continue
            follow = self._follows.get(rel)
            if follow is not None:
                dirty.add(follow.name)
                continue
            if change == watchfiles.Change.added:
                if os.path.isdir(rel):
                    if self._under_folder(rel):
                        for f in walk(rel):
                            self._add_file(f)
                elif self._under_folder(rel) or rel in self._files:
                    self._add_file(rel)
            rotated_away = True  # (a write to a rotated copy, still read through the old file)
        if rotated_away:
            dirty |= {f.name for f in self._follows.values() if f.old}
        return dirty

    def _given_form(self, path: str) -> str | None:
        """An absolute path from the notifier in the form the paths were given (relative
        paths stay relative, so names read as ``diagnose`` shows them)."""
        for root in [*self._folders, *(os.path.dirname(f) or "." for f in self._files)]:
            absroot = os.path.abspath(root)
            if path == absroot or path.startswith(absroot + os.sep):
                return os.path.normpath(os.path.join(root, os.path.relpath(path, absroot)))
        return None

    def _under_folder(self, path: str) -> bool:
        return any(path == f or path.startswith(f + os.sep) for f in self._folders)

    def _poll(self, sources, final: bool) -> int:
        """Read and scan what was appended to these sources; bytes read."""
        total = 0
        now = time.time()
        for src in list(sources):
            if src.binary:
                continue
            while True:
                r = src.reader.poll(now, final)
                for n in r.notes:
                    self._notes.append(n)
                if r.data:
                    self._scan(src, r.data, now)
                    total += len(r.data)
                if not r.more:
                    break
        return total

    def _scan(self, src: _Source, data: bytes, now: float) -> None:
        cur = src.cur
        if len(src.head) < _HEAD:
            src.head += data[: _HEAD - len(src.head)]
            if cur.dialect is None and looks_binary(src.head[:65536]):
                src.binary = True
                src.stats.warnings.append(f"{src.name}: not a text log (binary data); skipped")
                src.stats.bytes += len(data)
                if isinstance(src.reader, FileFollow):
                    src.reader.close()
                return
            cur.dialect = sniff_chunk(src.head)  # again while the head grows: three lines tell more than one
        before = cur.tail
        self._scanner.scan_chunks([(data, len(data))], src.name, src.base, self.result, src.stats, cur)
        cur.tail = (before + data[-CONTEXT_BYTES:])[-CONTEXT_BYTES:]
        src.stats.lines = cur.line_base
        src.tails_stale = True
        self._note_life(src, data, now)

    def _note_life(self, src: _Source, data: bytes, now: float) -> None:
        """Each rank's latest line among the last lines just read."""
        if data.strip():
            self._last_line_at = now
        dialect = src.cur.dialect or Dialect()
        one_rank = (src.base.rank is not None or src.base.local_rank is not None) and not (dialect.srun or dialect.hosts)
        lines = data[-(_LIFE_LINES * 400) :].split(b"\n")
        if lines and not lines[-1]:
            lines.pop()
        lines = lines[-1:] if one_rank else lines[-_LIFE_LINES:]
        done: set[int] = set()
        for raw in reversed(lines):
            text = clean(raw.decode("utf-8", "replace"))
            if not text.strip():
                continue
            a, at = parse_prefix(text, dialect)
            a = a.merged_over(src.base)
            rank = a.rank if a.rank is not None else a.local_rank  # one node's log dir: local rank = rank
            if rank is None:
                rank = subject_rank(text[at:].strip())  # "rank 3 step 120" (as the scanner's tail reading)
            if rank is None or rank in done:
                continue
            done.add(rank)
            self._life[rank] = RankLife(rank, now, text[:300], a.time, 0.0)

    def _refresh_tails(self) -> None:
        """Each source's last signs of life (the scanner's tail facts) for the engine,
        from the last bytes of the sources that grew."""
        changed = False
        for src in self._sources.values():
            if not src.tails_stale or src.cur.dialect is None:
                continue
            tmp = ScanResult()
            Scanner._note_tail(src.cur.tail, src.stats.lines, src.name, src.base, src.cur.dialect, tmp)
            # a live source's last line is only its latest so far: watch does not read an error
            # line there as how the source ended (diagnose of the finished logs does)
            src.tails, src.tails_stale, changed = [f for f in tmp.tails if f.fact != "end-error"], False, True
            self.result.ranks_seen |= tmp.ranks_seen
        if changed:
            self.result.tails = [f for s in self._sources.values() for f in s.tails]

    def _lives(self, now: float) -> Iterator[tuple[int, RankLife]]:
        for r in sorted(self._life):
            life = self._life[r]
            yield r, RankLife(r, life.seen_at, life.text, life.time, max(0.0, now - life.seen_at))

    def _hung(self, now: float) -> bool:
        """No line in any input for ``hung_after`` seconds (when it is set), after some."""
        if self.hung_after is None or self._last_line_at is None:
            return False
        return now - self._last_line_at >= self.hung_after

    def _silence(self, now: float) -> tuple[dict[int, float], bool]:
        """Ranks silent while at least half of the others write, and whether all are."""
        if not self._life:
            return {}, False
        gaps = {r: now - life.seen_at for r, life in self._life.items()}
        quiet = {r for r, g in gaps.items() if g >= self.silent_after}
        if len(quiet) == len(gaps):
            return {}, len(gaps) > 0
        writing = len(gaps) - len(quiet)
        silent = {r: round(gaps[r], 1) for r in quiet if writing >= max(1, (len(gaps) - 1) / 2)}
        return silent, False


def _ranks(rs: list[int] | set[int]) -> str:
    from ..diagnose.collectives import compress_ranks

    return compress_ranks(rs)


def _headline(doc: dict[str, Any]) -> str:
    if not doc["diagnoses"]:
        return doc["verdict"]
    top = doc["diagnoses"][0]
    where = f" at rank {_ranks(top['initiating_ranks'])}" if top["initiating_ranks"] else ""
    return f"{doc['verdict']}: {top['entry']} ({top['class']}){where}, confidence {top['confidence']:.2f}"


def _changes(before: dict[str, Any] | None, after: dict[str, Any]) -> list[str]:
    """What differs between two diagnosis documents, in words."""
    if before is None:
        return [_headline(after)]
    out: list[str] = []
    b_top = before["diagnoses"][0] if before["diagnoses"] else None
    a_top = after["diagnoses"][0] if after["diagnoses"] else None
    same = (b_top and b_top["entry"], b_top and b_top["initiating_ranks"]) == (a_top and a_top["entry"], a_top and a_top["initiating_ranks"])
    if before["verdict"] != after["verdict"] or not same:
        out.append(f"{_headline(after)} (was {_headline(before)})")
    elif a_top is not None and b_top is not None:
        if abs(a_top["confidence"] - b_top["confidence"]) >= 0.05:
            out.append(f"confidence {b_top['confidence']:.2f} -> {a_top['confidence']:.2f}")
        if a_top["collateral_ranks"] != b_top["collateral_ranks"]:
            out.append(f"collateral ranks: {_ranks(a_top['collateral_ranks'])}")
    new_ranks = set(after["ranks"]["seen"]) - set(before["ranks"]["seen"])
    if new_ranks:
        out.append(f"new rank(s) {_ranks(new_ranks)} ({after['ranks']['count']} in all)")
    if not out and _key(before) != _key(after):
        out.append("more evidence: " + _headline(after))
    return out


def _silence_changes(last: tuple[frozenset[int], bool], silent: dict[int, float], stalled: bool, life: dict[int, RankLife], after: float) -> list[str]:
    was, was_stalled = last
    out = []
    for r in sorted(set(silent) - was):
        writing = len(life) - len(silent)
        out.append(f"rank {r} silent for {silent[r]:.0f} s while {writing} other rank(s) write (last line: {life[r].text[:120]})")
    back = sorted(was - set(silent))
    if back and not stalled:
        out.append(f"rank(s) {_ranks(back)} write again")
    if stalled and not was_stalled:
        out.append(f"all {len(life)} rank(s) silent for {after:g} s or more (hung, or finished)")
    elif was_stalled and not stalled:
        out.append("ranks write again")
    return out
