"""Following growing logs: what was appended to each file since the last read, whole lines
only, across rotation and truncation.

A ``FileFollow`` keeps the file open and remembers how far it has read (``offset``, always
the end of a complete line) and the last bytes it read. Each ``poll`` reads from there to
the end of the file, at most ``MAX_READ`` bytes, and hands over the complete lines:

- rotation (``mv rank3.log rank3.log.1`` and a new ``rank3.log``): the open file is read to
  its end first, then the new file under the same name is read from its start;
- truncation (logrotate's ``copytruncate``: copy, then empty the file in place): the file is
  shorter than the offset, or its bytes before the offset are no longer the ones read. The
  lines written after the last read and before the truncation are in the copy beside it
  (``rank3.log.1``): they are read from there, then the file from its start;
- a last line without its newline waits for it; after ``PARTIAL_WAIT`` seconds without any
  change (a process killed mid-line) it is taken as a line.

Nothing here parses lines; ``core.Watcher`` scans what the polls return.
"""

from __future__ import annotations

import os
import re
import stat
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..ingest.sources import MAX_LINE, walk_files

MAX_READ = 2 << 20  # bytes one poll reads from one file (the rest comes with the next poll)
PARTIAL_WAIT = 2.0  # seconds a last line without its newline waits for it
RETIRE_AFTER = 5.0  # seconds a rotated-away file is still read after it last grew
_CHECK = 64  # bytes before the offset compared on each poll (a file rewritten in place)
# the names logrotate, RotatingFileHandler and friends give old copies: rank3.log.1,
# rank3.log.2.gz, rank3.log-20260501, rank3.log.old
ROTATED = re.compile(r"^(?P<stem>.+?)(?:\.\d{1,3}|[-.]\d{8}(?:[-_]?\d{2,6})?|\.old|\.bak)(?:\.(?:gz|zst|xz|bz2|lz4))?$")
COMPRESSED = (".gz", ".zst", ".xz", ".bz2", ".lz4", ".zip", ".tar", ".tgz")


@dataclass
class Read:
    """What one poll brought: complete lines (``data`` ends with a newline, or is empty),
    whether more is already waiting, and what happened to the file on the way."""

    data: bytes = b""
    more: bool = False
    notes: list[str] = field(default_factory=list)


def _ident(st: os.stat_result) -> tuple[int, int]:
    return (st.st_dev, st.st_ino)


def _pread_all(fd: int, offset: int, limit: int) -> bytes:
    parts, got = [], 0
    while got < limit:
        part = os.pread(fd, min(limit - got, 1 << 20), offset + got)
        if not part:
            break
        parts.append(part)
        got += len(part)
    return b"".join(parts)


class _Handle:
    """One open file and how far it has been read."""

    __slots__ = ("fd", "ident", "offset", "last", "partial", "quiet_since")

    def __init__(self, fd: int, ident: tuple[int, int]):
        self.fd, self.ident, self.offset = fd, ident, 0
        self.last = b""  # the last bytes read before ``offset``
        self.partial = (0, 0.0)  # length of the unfinished last line, and since when it is so
        self.quiet_since = 0.0  # (a rotated-away file) when it last grew


class FileFollow:
    """One followed file (see the module's docstring). ``name`` is what reports show."""

    def __init__(self, path: str, name: str):
        self.path, self.name = path, name
        self.cur: _Handle | None = None
        self.old: list[_Handle] = []  # rotated away, still read while their writer may append
        self.retired: set[tuple[int, int]] = set()  # every file this one was before a rotation
        self._open()

    @property
    def ident(self) -> tuple[int, int] | None:
        return self.cur.ident if self.cur else None

    @property
    def offset(self) -> int:
        return self.cur.offset if self.cur else 0

    def _open(self) -> bool:
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            return False
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            return False
        self.cur = _Handle(fd, _ident(st))
        return True

    def close(self) -> None:
        for h in [*self.old, *([self.cur] if self.cur else [])]:
            os.close(h.fd)
        self.cur, self.old = None, []

    def poll(self, now: float | None = None, final: bool = False) -> Read:
        """The complete lines appended since the last poll. ``final``: the watch is ending,
        so an unfinished last line is taken as it is."""
        now = time.time() if now is None else now
        out = Read()
        chunks: list[bytes] = []
        budget = MAX_READ
        # files rotated away: their writer may not have reopened yet
        for h in list(self.old):
            got = self._take(h, chunks, out, budget, now, final or now - h.quiet_since >= PARTIAL_WAIT)
            budget -= got
            if got:
                h.quiet_since = now
            elif now - h.quiet_since >= RETIRE_AFTER or final:
                os.close(h.fd)
                self.old.remove(h)
        if self.cur is None and not self._open():
            out.data = b"".join(chunks)
            return out
        h = self.cur
        assert h is not None
        # the file in place: rewritten (truncated) since the last read?
        if h.offset and self._rewritten(h):
            budget -= self._from_copy(h, chunks, out, budget)
            out.notes.append(f"{self.name}: truncated in place (copytruncate); reading it again from its start")
            h.offset, h.last, h.partial = 0, b"", (0, 0.0)
        budget -= self._take(h, chunks, out, budget, now, final)
        # renamed away and a new file under the name: go on with the new one from its start
        # (the old one is still read while its writer may append to it)
        try:
            st = os.stat(self.path)
        except OSError:
            st = None
        if st is not None and stat.S_ISREG(st.st_mode) and _ident(st) != h.ident and self._open():
            h.quiet_since = now
            self.old.append(h)
            self.retired.add(h.ident)
            out.notes.append(f"{self.name}: rotated (a new file under this name); reading the new file from its start")
            assert self.cur is not None
            self._take(self.cur, chunks, out, budget, now, final)
        out.data = b"".join(chunks)
        return out

    def _take(self, h: _Handle, chunks: list[bytes], out: Read, budget: int, now: float, final: bool) -> int:
        """Read the complete lines after ``h.offset`` (at most ``budget`` bytes) into
        ``chunks``; how many bytes were taken."""
        if budget <= 0:
            out.more = True
            return 0
        data = _pread_all(h.fd, h.offset, budget + 1)
        if len(data) > budget:
            data, out.more = data[:budget], True
        cut = data.rfind(b"\n") + 1
        rest = len(data) - cut
        if rest:
            since = h.partial[1] if h.partial[0] == rest else now
            h.partial = (rest, since)
            if final or rest >= MAX_LINE or out.more and cut == 0 or now - since >= PARTIAL_WAIT:
                cut = len(data)  # taken as a line; what may still follow is another line
        if not cut:
            return 0
        taken = data[:cut]
        h.offset += cut
        h.last = (h.last + taken)[-_CHECK:]
        if cut == len(data):
            h.partial = (0, 0.0)
            if rest:
                taken += b"\n"
        chunks.append(taken)
        return cut

    @staticmethod
    def _rewritten(h: _Handle) -> bool:
        try:
            size = os.fstat(h.fd).st_size
        except OSError:
            return False
        if size < h.offset:
            return True
        k = len(h.last)
        return bool(k) and os.pread(h.fd, k, h.offset - k) != h.last

    def _from_copy(self, h: _Handle, chunks: list[bytes], out: Read, budget: int) -> int:
        """After a truncation: what the copy beside the file holds past ``h.offset`` (lines
        written after the last read, before the truncation); bytes taken."""
        folder, base = os.path.split(self.path)
        best: tuple[float, str] | None = None
        try:
            names = os.listdir(folder or ".")
        except OSError:
            names = []
        k = len(h.last)
        for n in names:
            m = ROTATED.match(n)
            if not m or m["stem"] != base or n.endswith(COMPRESSED):
                continue
            p = os.path.join(folder, n)
            try:
                st = os.stat(p)
                if st.st_size < h.offset or _ident(st) == h.ident:
                    continue
                with open(p, "rb") as f:
                    f.seek(h.offset - k)
                    if f.read(k) != h.last:
                        continue
            except OSError:
                continue
            if best is None or st.st_mtime > best[0]:
                best = (st.st_mtime, p)
        if best is None:
            out.notes.append(f"{self.name}: its copy was not found beside it; lines written after the last read, if any, are not read")
            return 0
        with open(best[1], "rb") as f:
            f.seek(h.offset)
            data = f.read(budget)
        if data and not data.endswith(b"\n"):
            data += b"\n"
        if data:
            chunks.append(data)
            lines = data.count(b"\n")
            out.notes.append(f"{self.name}: {lines} line(s) written before the truncation read from {os.path.basename(best[1])}")
        return len(data)


class StdinFollow:
    """A pipe (``kubectl logs -f ... | rankdoctor watch -``): a thread reads it as data comes
    and ``poll`` hands over the complete lines read so far."""

    name = "<stdin>"

    def __init__(self, fd: int, on_data: "Callable[[StdinFollow], None] | None" = None):
        self.fd = fd
        self.eof = False
        self._buf = bytearray()
        self._lock = threading.Lock()
        self._on_data = on_data
        self._partial = (0, 0.0)
        self._thread = threading.Thread(target=self._pump, name="rankdoctor-watch-stdin", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        while True:
            try:
                part = os.read(self.fd, 1 << 16)
            except OSError:
                part = b""
            with self._lock:
                if part:
                    self._buf += part
                else:
                    self.eof = True
            if self._on_data is not None:
                self._on_data(self)
            if not part:
                return
            while len(self._buf) > 4 * MAX_READ and not self.eof:  # the scan is behind: let the pipe wait
                time.sleep(0.05)

    def poll(self, now: float | None = None, final: bool = False) -> Read:
        now = time.time() if now is None else now
        with self._lock:
            data = bytes(self._buf[:MAX_READ])
            more = len(self._buf) > MAX_READ
            cut = data.rfind(b"\n") + 1
            rest = len(data) - cut
            if rest:
                since = self._partial[1] if self._partial[0] == rest else now
                self._partial = (rest, since)
                if final or self.eof or rest >= MAX_LINE or more and cut == 0 or now - since >= PARTIAL_WAIT:
                    cut = len(data)
            if cut == len(data):
                self._partial = (0, 0.0)
            del self._buf[:cut]
        taken = data[:cut]
        if taken and not taken.endswith(b"\n"):
            taken += b"\n"
        return Read(taken, more)


def walk(folder: str) -> Iterator[str]:
    """The regular files under ``folder``, as the one-shot reader finds them
    (``ingest.sources.walk_files``: sorted, depth first, code files, .git and the like
    skipped, links to folders not followed)."""
    return (path for path, _, why in walk_files(folder) if why is None)


def is_rotated_copy(path: str, followed: set[str]) -> bool:
    """``rank3.log.1`` beside a followed ``rank3.log``: an old copy whose lines were read
    live (a rename) or are read from it on truncation (a copy), not a new rank."""
    m = ROTATED.match(os.path.basename(path))
    return bool(m) and os.path.join(os.path.dirname(path), m["stem"]) in followed


def file_ident(path: str | Path) -> tuple[int, int] | None:
    try:
        return _ident(os.stat(path))
    except OSError:
        return None
