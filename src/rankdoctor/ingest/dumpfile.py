"""Reading one dump file that anyone may have crafted, at a bounded cost.

Flight Recorder dumps and py-spy JSON dumps are small, plain data, but a file named like one
can be anything: a FIFO that never delivers, a link to ``/dev/zero``, JSON nested a hundred
thousand deep, or a few hundred bytes of pickle whose lists share one list a billion times
over (a ``repr()`` of it never ends). Every reader of such files goes through here:

- :func:`read_regular` and :func:`read_head` read regular files only, ``read_regular`` at
  most ``limit`` bytes. Anything else is refused after a ``stat``, without being opened
  (opening a FIFO blocks until a writer comes).
- :func:`loads_json` refuses JSON with more items than a dump has before parsing it (the
  count of ``,``, ``[`` and ``{`` is an upper bound), and turns the parser's
  ``RecursionError``/``MemoryError``/``ValueError`` (huge integers) into one line.
- :class:`Meter` measures what a structure costs once written out with every shared
  reference as a copy (what ``repr``, ``json.dumps`` or any walk pays), so a structure can be
  refused before anyone walks it.
"""

from __future__ import annotations

import json
import os
import stat
from typing import Any

from .sources import file_kind


MAX_JSON_ITEMS = 1_000_000  # json keeps at most ~200 bytes a value: ~200 MB
MAX_DEPTH = 32  # dumps nest 6 or 7 levels (dump, entries, entry, frames, frame, value)


class Unusable(ValueError):
    """Why a file cannot be read as a dump; the message is one line, without the path."""


class NotRegular(Unusable):
    """A FIFO, a device, a socket, a folder: skipped, never opened."""


def _not_regular(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    return f"not a regular file ({file_kind(mode)}); skipped without opening it"


def _stat_problem(path: str) -> str | None:
    """None for a regular file (links followed), else why it is skipped; nothing is opened."""
    try:
        return _not_regular(os.stat(path).st_mode)
    except OSError as exc:
        return f"cannot read ({exc.strerror or exc})"


def _open(path: str) -> tuple[int, os.stat_result]:
    """A regular file's descriptor, open for reading, and its ``fstat``: checked by ``stat``
    before it is opened, and by ``fstat`` once open (non-blocking, in case it became a FIFO
    in between)."""
    if (problem := _stat_problem(path)) is not None:
        raise NotRegular(problem)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise Unusable(f"cannot read ({exc.strerror or exc})") from exc
    st = os.fstat(fd)
    if (problem := _not_regular(st.st_mode)) is not None:
        os.close(fd)
        raise NotRegular(problem)
    return fd, st


def read_head(path: str, n: int) -> bytes:
    """The first ``n`` bytes (or fewer) of a regular file, else :class:`Unusable`. Plain
    system calls: a folder of 100,000 small files is looked at in a few seconds."""
    fd, _ = _open(path)
    try:
        return os.read(fd, n)
    except OSError as exc:
        raise Unusable(f"cannot read ({exc.strerror or exc})") from exc
    finally:
        os.close(fd)


def read_regular(path: str, limit: int) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes, else :class:`Unusable`. The
    read stops at ``limit + 1`` bytes whatever size the file claims."""
    fd, st = _open(path)
    with open(fd, "rb", closefd=True) as f:
        if st.st_size > limit:
            raise Unusable(f"{st.st_size:,} bytes, larger than a dump can be ({limit >> 20} MB)")
        try:
            data = f.read(limit + 1)
        except OSError as exc:
            raise Unusable(f"cannot read ({exc.strerror or exc})") from exc
    if len(data) > limit:
        raise Unusable(f"larger than a dump can be ({limit >> 20} MB)")
    return data


def loads_json(data: bytes | str, max_items: int = MAX_JSON_ITEMS) -> Any:
    """``json.loads`` of at most ``max_items`` values, else :class:`Unusable`.

    Every value after the first in an array or object follows a comma and every array or
    object opens with a bracket, so commas plus brackets (those inside strings included)
    bound the number of values; one value costs at most about 200 bytes once parsed. The
    parser recurses once per level and stops with ``RecursionError`` near Python's
    recursion limit; integers of more than 4,300 digits stop it with ``ValueError``."""
    comma, square, curly = (b",", b"[", b"{") if isinstance(data, bytes) else (",", "[", "{")
    items = data.count(comma) + data.count(square) + data.count(curly)
    if items > max_items:
        raise Unusable(f"more than {max_items:,} JSON values")
    try:
        return json.loads(data)
    except RecursionError as exc:
        raise Unusable("JSON nested too deeply") from exc
    except MemoryError as exc:
        raise Unusable("JSON too large to hold in memory") from exc
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, an integer too long to convert
        raise Unusable(f"not valid JSON ({str(exc).splitlines()[0][:100]})") from exc


_MAX_INT_BITS = 128  # dumps hold 64-bit counters and nanosecond times


class Meter:
    """What structures cost written out in full, every shared reference as a copy.

    The cost of an object is about the length of its ``repr``. Containers listed in
    ``shared`` (the ones a pickle refers to more than once) are measured once and
    remembered with their height, so measuring takes time linear in the distinct objects
    while the cost still counts each reference in full: a list that holds one list ten
    times, nine levels deep, costs ten to the ninth. A measure stops as soon as it passes
    its limit, nests containers more than ``max_depth`` levels deep or finds a container
    inside itself, and raises :class:`Unusable`."""

    def __init__(self, max_depth: int = MAX_DEPTH, shared: set[int] | frozenset[int] = frozenset()) -> None:
        self.max_depth = max_depth
        self.shared = shared
        self._known: dict[int, tuple[int, int]] = {}  # id -> (cost, height in levels)
        self._open: set[int] = set()  # shared containers being measured: met again, a cycle
        self._limit = 0
        self._reach = 0  # the deepest level reached in the current measure

    def cost(self, obj: Any, limit: int, remember: bool = False) -> int:
        """The cost of ``obj``, or :class:`Unusable` once it passes ``limit``.
        ``remember``: keep it, so measuring a structure that holds ``obj`` reuses it."""
        self._limit, self._reach = limit, 0
        n = self._cost(obj, 0)
        if remember:
            self._known[id(obj)] = (n, self._reach)
        return n

    def _cost(self, o: Any, depth: int) -> int:
        t = type(o)
        if t is str or t is bytes or t is bytearray:
            return len(o) + 3
        if t is int:
            bits = o.bit_length()
            if bits > _MAX_INT_BITS:
                raise Unusable(f"holds a number of {bits} bits; a dump's numbers fit in 64")
            return bits // 3 + 2
        if t is bool or t is float or o is None:
            return 5
        if t is not list and t is not dict and t is not tuple:
            raise Unusable(f"holds a {t.__name__}")
        key = id(o)
        if (known := self._known.get(key)) is not None:
            n, height = known
            if depth + height > self.max_depth:
                raise Unusable(f"containers nested more than {self.max_depth} levels deep")
            self._reach = max(self._reach, depth + height)
            return n
        if depth >= self.max_depth:
            raise Unusable(f"containers nested more than {self.max_depth} levels deep")
        if key in self._open:
            raise Unusable("a container holds itself")
        shared = key in self.shared
        if shared:
            self._open.add(key)
        outer, self._reach = self._reach, depth + 1
        n = 2
        for x in (o.values() if t is dict else o):  # strings inline: they are most of a dump
            n += len(x) + 5 if type(x) is str else self._cost(x, depth + 1) + 2
            if n > self._limit:
                raise Unusable(f"more than {self._limit:,} bytes written out, shared parts as copies")
        if t is dict:
            for k in o:
                n += len(k) + 5 if type(k) is str else self._cost(k, depth + 1) + 2
            if n > self._limit:
                raise Unusable(f"more than {self._limit:,} bytes written out, shared parts as copies")
        if shared:
            self._open.discard(key)
            self._known[key] = (n, self._reach - depth)
        self._reach = max(outer, self._reach)
        return n
