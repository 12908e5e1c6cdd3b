"""Read Flight Recorder dumps (pickle or JSON) without ever executing them, at a bounded cost.

A dump is written by ``torch._C._distributed_c10d._dump_fr_trace`` (pickle) or
``_dump_fr_trace_json`` (JSON), usually one file per rank named ``<prefix><rank>``. A file
named like one may be anything, so reading one is bounded (``ingest/dumpfile.py``):

- regular files of at most ``MAX_DUMP_BYTES`` only; a FIFO or a device is never opened;
- pickles are read by :class:`_PlainUnpickler`: it builds only plain containers and scalars
  (a pickle that asks for any class or function, the way a crafted pickle runs code, is
  refused), stops after ``MAX_PICKLE_OPS`` opcodes and keeps its memo in a dict (pickle's C
  unpickler grows an array to the largest memo index it is given: 19 bytes can ask for 4 GB);
- JSON of at most ``MAX_JSON_ITEMS`` values;
- then the whole dump and each entry are measured as if written out with every shared
  reference as a copy (``repr`` of an op, or the JSON report, pays that), nested at most
  ``MAX_DEPTH`` levels: a few hundred bytes of pickle can share one list a billion times over.

The bounds are far above what torch writes: its 2,000-entry ring (``TORCH_FR_BUFFER_SIZE``)
with 40-frame stacks is about 210,000 opcodes and 9 MB written out (frames shared), and its
JSON dump is about 30 values an entry. Anything over them is "not a usable dump", one line.

A thousand ranks' dumps go through a fast lane first (:func:`_fast_unpickle`): a pickle of
at most ``MAX_PICKLE_OPS`` bytes (so at most that many opcodes) whose opcodes a scan shows
to be only those torch's pickler writes, memo indexes included, with few floats and tuples
(the values that can be made to share one hash), is read by pickle's C unpickler with every
class lookup refused; its entries are then checked field by field while they are summarized
(``tracks.summarize``). Anything else, or anything that fails there, is read the guarded
way above: the answers and the error messages are the guarded reader's.
"""

from __future__ import annotations

import gc
import io
import os
import pickle
import pickletools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..ingest.dumpfile import (
    MAX_DEPTH,
    MAX_JSON_ITEMS,
    Meter,
    NotRegular,
    Unusable,
    loads_json,
    read_head,
    read_regular,
)
from ..ingest.sources import walk_files
from .tracks import NotTorchShaped, Summary, summarize

MAX_DUMP_BYTES = 32 << 20
MAX_PICKLE_OPS = 2_000_000  # the pure-Python unpickler keeps at most ~75 bytes an opcode
MAX_DUMP_COST = 64 << 20  # bytes written out, shared references as copies
MAX_ENTRY_COST = 1 << 20  # one entry: what analyze's repr() of its sizes may produce
_HEAD = 4096
_RANK_SUFFIX = re.compile(r"^(?P<prefix>.*?)(?P<rank>\d+)(?:\.(?:json|pkl|pickle))?$")


class DumpError(Exception):
    """A dump that cannot be read; the message is one line."""


class UnsafePickle(DumpError):
    pass


class _PlainUnpickler(pickle._Unpickler):  # type: ignore[name-defined]  # the pure-Python one
    """Builds dicts (string keys), lists, tuples, strings, bytes, numbers, booleans and None only.

    It is pickle's pure-Python unpickler with its own dispatch table: the
    opcodes of plain data, each counted; the ones that look up a class or function go to
    :meth:`find_class`, which refuses; every other opcode is refused. It notes the
    containers a pickle refers to again (memo gets, DUP) for :class:`Meter`."""

    def __init__(self, data: bytes) -> None:
        super().__init__(io.BytesIO(data))
        self.ops = 0
        self.shared: set[int] = set()

    def find_class(self, module: str, name: str) -> Any:  # noqa: D401
        raise UnsafePickle(f"refused: the pickle asks for {module}.{name}; a Flight Recorder dump holds only plain data")

    def persistent_load(self, pid: Any) -> Any:
        raise UnsafePickle("refused: the pickle uses persistent ids; a Flight Recorder dump holds only plain data")


_PLAIN = {
    "PROTO", "FRAME", "STOP", "MARK", "POP", "POP_MARK", "DUP", "NONE", "NEWTRUE", "NEWFALSE",
    "INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4", "FLOAT", "BINFLOAT",
    "STRING", "BINSTRING", "SHORT_BINSTRING", "BINBYTES", "SHORT_BINBYTES", "BINBYTES8", "BYTEARRAY8",
    "UNICODE", "SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8",
    "EMPTY_LIST", "APPEND", "APPENDS", "LIST", "EMPTY_TUPLE", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3",
    "EMPTY_DICT", "DICT", "SETITEM", "SETITEMS",
    "GET", "BINGET", "LONG_BINGET", "PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE",
    "GLOBAL", "STACK_GLOBAL", "INST",  # these call find_class, which refuses naming the class
}
_NOT_IN_DUMPS = {"EMPTY_SET", "ADDITEMS", "FROZENSET", "NEXT_BUFFER", "READONLY_BUFFER"}  # plain, but torch writes none
_CONTAINERS = (list, dict, tuple)


def _counted(load: Callable[[Any], None]) -> Callable[[Any], None]:
    def op(self: _PlainUnpickler) -> None:
        self.ops += 1
        if self.ops > MAX_PICKLE_OPS:
            raise Unusable(f"more than {MAX_PICKLE_OPS:,} pickle opcodes")
        load(self)

    return op


def _check_keys(keys: Callable[[list[Any]], list[Any]], load: Callable[[Any], None]) -> Callable[[Any], None]:
    def op(self: _PlainUnpickler) -> None:
        _string_keys(keys(self.stack))
        load(self)

    return op


def _note_sharing(load: Callable[[Any], None]) -> Callable[[Any], None]:
    def op(self: _PlainUnpickler) -> None:
        load(self)
        if type(self.stack[-1]) in _CONTAINERS:
            self.shared.add(id(self.stack[-1]))

    return op


def _since_mark(stack: list[Any]) -> list[Any]:
    return stack[0::2]  # after a MARK the stack holds key, value, key, value, ...


_GUARDS: dict[str, Callable[[Callable[[Any], None]], Callable[[Any], None]]] = {
    "SETITEMS": lambda load: _check_keys(_since_mark, load),
    "DICT": lambda load: _check_keys(_since_mark, load),
    "SETITEM": lambda load: _check_keys(lambda stack: stack[-2:-1], load),
    **dict.fromkeys(("GET", "BINGET", "LONG_BINGET", "DUP"), _note_sharing),
}


def _string_keys(keys: list[Any]) -> None:
    """Dumps key their dicts by strings. Other keys are refused before insertion: integers
    built to share one hash would make each insertion scan all the others."""
    if any(type(k) is not str for k in keys):
        raise Unusable("a dict key that is not a string")


def _refused(name: str) -> Callable[[Any], None]:
    def op(self: _PlainUnpickler) -> None:
        if name in _NOT_IN_DUMPS:
            raise Unusable(f"the pickle uses {name}, which no Flight Recorder dump does")
        raise UnsafePickle(f"refused: the pickle uses {name}; a Flight Recorder dump holds only plain data")

    return op


def _invalid(self: _PlainUnpickler) -> None:
    raise pickle.UnpicklingError("invalid opcode byte")


def _dispatch_table() -> dict[int, Callable[[Any], None]]:
    table: dict[int, Callable[[Any], None]] = dict.fromkeys(range(256), _invalid)
    for op in pickletools.opcodes:
        key = op.code.encode("latin-1")[0]
        if op.name in _PLAIN:
            load = pickle._Unpickler.dispatch[key]  # type: ignore[attr-defined]
            table[key] = _counted(_GUARDS[op.name](load) if op.name in _GUARDS else load)
        else:
            table[key] = _refused(op.name)
    return table


_PlainUnpickler.dispatch = _dispatch_table()


@dataclass
class Dump:
    path: str
    rank: int
    version: str
    summary: Summary
    pg_config: dict[str, Any] = field(default_factory=dict)
    pg_status: dict[str, Any] = field(default_factory=dict)
    backend: str | None = None

    @property
    def entries(self) -> list[dict[str, Any]]:
        """The dump's entries, read again (the guarded way) when asked for: the analysis
        keeps only the summary, so that a thousand dumps fit in memory."""
        obj = _decode(read_regular(self.path, MAX_DUMP_BYTES), self.path)
        return [e for e in obj["entries"] if isinstance(e, dict)]


def _unpickle(data: bytes, path: str) -> tuple[Any, set[int]]:
    unpickler = _PlainUnpickler(data)
    try:
        return unpickler.load(), unpickler.shared
    except UnsafePickle as exc:
        raise UnsafePickle(f"{path}: {exc}") from exc
    except Unusable as exc:
        raise DumpError(f"{path}: not a usable dump ({exc})") from exc
    except EOFError as exc:
        raise DumpError(f"{path}: not a usable dump (not a readable pickle: it ends before its STOP opcode)") from exc
    except Exception as exc:  # whatever crafted bytes make the unpickler trip on: one line, no traceback
        detail = str(exc).splitlines()[0][:80] if str(exc) else ""
        raise DumpError(f"{path}: not a usable dump (not a readable pickle: {type(exc).__name__}{': ' + detail if detail else ''})") from exc


class _FastUnpickler(pickle.Unpickler):
    """pickle's C unpickler; a class or function lookup, the only way a pickle runs code, is
    refused (the scan in :func:`_fast_unpickle` lets no such opcode through anyway)."""

    def find_class(self, module: str, name: str) -> Any:
        raise UnsafePickle(f"refused: the pickle asks for {module}.{name}")

    def persistent_load(self, pid: Any) -> Any:
        raise UnsafePickle("refused: the pickle uses persistent ids")


# runs of the opcodes torch's pickler writes that need no look at their argument: containers,
# MARK, POP, None and booleans, memo gets and puts (a put's index below 2**19, so the memo
# array stays under 8 MB), small integers and 8-byte LONG1 (nanosecond times); FRAME and
# MEMOIZE of protocol 4. Strings, other LONG1, floats and tuples are stepped over one by one.
_PLAIN_RUN = re.compile(
    rb"(?:[hqK].|[}\](euas0N\x88\x89)\x94\x85\x86\x87]|r..[\x00-\x07]\x00|M..|[Jj]....|\x8a\x08.{8}|G.{8}|\x95.{8})*+",
    re.S,
)
# floats and tuples can be made to share one hash (a dict of them as keys then costs the
# square of their number); their opcode bytes, counted anywhere, bound how many there are
_HASHABLE_OPS = (b"\x85", b"\x86", b"\x87", b"G")
_MAX_HASHABLE = 8192


def _fast_scan(data: bytes) -> bool:
    """True when every opcode is one torch's pickler writes, within the bounds above."""
    if len(data) > MAX_PICKLE_OPS or len(data) < 3 or data[:1] != b"\x80" or data[1] not in (2, 3, 4):
        return False
    if sum(data.count(op) for op in _HASHABLE_OPS) > _MAX_HASHABLE:
        return False
    pos, end = 2, len(data) - 1
    match = _PLAIN_RUN.match
    while True:
        pos = match(data, pos).end()
        if pos >= end:
            return pos == end and data[end] == 0x2E  # STOP, last
        op = data[pos]
        if op == 0x58:  # BINUNICODE
            pos += 5 + int.from_bytes(data[pos + 1:pos + 5], "little")
        elif op == 0x8C:  # SHORT_BINUNICODE
            pos += 2 + data[pos + 1]
        elif op == 0x8A and data[pos + 1] <= 8:  # LONG1 of at most 64 bits
            pos += 2 + data[pos + 1]
        else:
            return False


def _fast_unpickle(data: bytes) -> dict[str, Any] | None:
    """The dump, when the fast lane can read it; None sends it the guarded way."""
    if not _fast_scan(data):
        return None
    gc_was = gc.isenabled()
    gc.disable()  # plain, acyclic data: the collector would walk it again and again
    try:
        obj = _FastUnpickler(io.BufferedReader(io.BytesIO(data), 1 << 20)).load()
    except Exception:  # noqa: BLE001  the guarded reader says what is wrong with it
        return None
    finally:
        if gc_was:
            gc.enable()
    if type(obj) is not dict or type(obj.get("entries")) is not list or not all(type(k) is str for k in obj):
        return None
    if type(obj.get("version", "")) not in (str, int, float):
        return None
    for part in ("pg_config", "pg_status"):
        v = obj.get(part, {})
        if type(v) is not dict or not all(type(k) is str and type(x) is dict and all(type(kk) is str for kk in x) for k, x in v.items()):
            return None
    return obj


def _measure(meter: Meter, obj: Any, limit: int, context: str, remember: bool = False) -> None:
    try:
        meter.cost(obj, limit, remember)
    except Unusable as exc:
        raise DumpError(f"{context}{exc})") from exc


def _decode(data: bytes, path: str) -> dict[str, Any]:
    head = data[:_HEAD].lstrip()[:1]
    shared: set[int] = set()
    if head in (b"{", b"["):
        try:
            obj = loads_json(data, MAX_JSON_ITEMS)
        except Unusable as exc:
            raise DumpError(f"{path}: not a usable dump ({exc})") from exc
    elif data[:1] == b"\x80":
        obj, shared = _unpickle(data, path)
    else:
        raise DumpError(f"{path}: not a Flight Recorder dump (neither pickle nor JSON)")
    if not isinstance(obj, dict) or not isinstance(obj.get("entries"), list):
        raise DumpError(f"{path}: not a Flight Recorder dump (no 'entries' list)")
    meter = Meter(MAX_DEPTH, shared)
    for i, e in enumerate(obj["entries"]):
        if isinstance(e, dict):  # each entry first: analyze repr()s its parts
            _measure(meter, e, MAX_ENTRY_COST, f"{path}: not a usable dump (entry {i}: ", remember=True)
    _measure(meter, obj, MAX_DUMP_COST, f"{path}: not a usable dump (")
    return obj


def rank_from_name(path: str, prefix: str | None = None) -> int | None:
    name = os.path.basename(path)
    if prefix is not None:
        if not name.startswith(prefix):
            return None
        rest = re.sub(r"\.(?:json|pkl|pickle)$", "", name[len(prefix):])
        return int(rest) if rest.isdigit() else None
    m = _RANK_SUFFIX.match(name)
    return int(m["rank"]) if m else None


def load_dump(path: str, rank: int | None = None, prefix: str | None = None) -> Dump:
    r = rank if rank is not None else rank_from_name(path, prefix)
    if r is None:
        raise DumpError(f"{path}: no rank in the file name; name files <prefix><rank> or pass --rank")
    try:
        data = read_regular(path, MAX_DUMP_BYTES)
    except NotRegular as exc:
        raise DumpError(f"{path}: {exc}") from exc
    except Unusable as exc:
        raise DumpError(f"{path}: not a usable dump ({exc})") from exc
    obj = _fast_unpickle(data)
    summary = None
    if obj is not None:
        try:
            summary = summarize(obj["entries"], strict=True)
        except NotTorchShaped:
            obj = None
    if obj is None:
        obj = _decode(data, path)
        del data  # the bytes are not needed while the entries are looked at
        summary = summarize(obj["entries"])
    return Dump(
        path=str(path),
        rank=r,
        version=str(obj.get("version", "?")),
        summary=summary,
        pg_config=obj.get("pg_config") if isinstance(obj.get("pg_config"), dict) else {},
        pg_status=obj.get("pg_status") if isinstance(obj.get("pg_status"), dict) else {},
        backend=summary.backend,
    )


def _load_one(job: tuple[str, int | None, str | None]) -> Dump | DumpError:
    """One dump for a worker process; a dump error comes back as a value."""
    try:
        return load_dump(*job)
    except DumpError as exc:
        return exc


_PARALLEL_FROM = 32  # dumps; fewer are read in process (a worker costs ~20 ms to start)


def _load_many(jobs: list[tuple[str, int | None, str | None]]) -> list[Dump | DumpError]:
    """Dumps read by worker processes (fork), one per core, when there are many of them."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if len(jobs) < _PARALLEL_FROM or cores < 2 or "fork" not in _start_methods():
        return [_load_one(j) for j in jobs]
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(min(cores, 8)) as pool:
        return pool.map(_load_one, jobs, chunksize=max(1, len(jobs) // (4 * min(cores, 8))))


def _start_methods() -> list[str]:
    import multiprocessing

    return multiprocessing.get_all_start_methods()


def _looks_like_dump(head: bytes) -> bool:
    """Cheap test used when dumps sit next to logs: a pickle or JSON object with entries."""
    if head[:1] == b"\x80":
        return b"entries" in head or b"version" in head
    s = head.lstrip()
    return s[:1] == b"{" and b'"entries"' in head or (s[:1] == b"{" and b'"version"' in head and b"pg_config" in head)


def find_dumps(paths: list[str]) -> tuple[list[str], list[str]]:
    """The dump files among ``paths`` (folders searched), and one line for each file that is
    not a regular file (a FIFO, a device, a dangling link): skipped, never opened."""
    out: list[str] = []
    skipped: list[str] = []

    def consider(fp: str) -> None:
        try:
            head = read_head(fp, _HEAD)
        except NotRegular as exc:
            skipped.append(f"{fp}: {exc}")
        except Unusable:
            pass  # unreadable: not taken for a dump
        else:
            if _looks_like_dump(head):
                out.append(fp)

    for given in paths:
        if os.path.isdir(given):
            # the log reader's walk: no recursion (os.walk recurses before Python 3.12), links
            # to folders not followed
            for fp, _size, why in walk_files(given):
                if why is None or not os.path.isdir(fp):
                    consider(fp)
        else:
            consider(given)
    return out, skipped


def load_dumps(paths: list[str], prefix: str | None = None, ranks: list[int] | None = None) -> tuple[list[Dump], list[str]]:
    """Load every dump under ``paths``; return (dumps, one-line problems)."""
    files: list[str] = []
    problems: list[str] = []
    for given in paths:
        p = Path(given)
        if not p.exists():
            raise DumpError(f"{given}: no such file or directory")
        if p.is_dir():
            found, skipped = find_dumps([given])
            problems.extend(skipped)
            if not found:
                problems.append(f"{given}: no Flight Recorder dumps in this folder")
            files.extend(found)
        else:
            files.append(str(p))
    if ranks and len(ranks) != len(files):
        raise DumpError(f"--rank was given {len(ranks)} time(s) for {len(files)} dump file(s)")
    dumps: list[Dump] = []
    seen: dict[int, str] = {}
    loaded = _load_many([(f, ranks[i] if ranks else None, prefix) for i, f in enumerate(files)])
    for f, d in zip(files, loaded):
        if isinstance(d, UnsafePickle):
            raise d
        if isinstance(d, DumpError):
            problems.append(str(d))
            continue
        if d.rank in seen:
            problems.append(f"{f}: rank {d.rank} already read from {seen[d.rank]}; ignored")
            continue
        seen[d.rank] = f
        dumps.append(d)
    dumps.sort(key=lambda d: d.rank)
    return dumps, problems


def dumps_near(paths: list[str], extra: list[str] | None = None) -> tuple[list[Dump], list[str], set[str]]:
    """Dumps lying among the log inputs (folders are searched), plus those given with --fr.

    Returns (dumps, problems, paths of the dump files) so the caller can leave the dump
    files out of the log scan. Files among the logs that are not regular files are left to
    the log reader, which reports what it skips."""
    candidates, _ = find_dumps([p for p in paths if p != "-"])
    files = set(candidates)
    dumps: list[Dump] = []
    problems: list[str] = []
    if extra:
        got, probs = load_dumps(extra)
        dumps.extend(got)
        problems.extend(probs)
        files |= {d.path for d in got}
    have = {d.rank for d in dumps}
    for f in candidates:
        try:
            d = load_dump(f)
        except UnsafePickle:
            raise
        except DumpError as exc:
            problems.append(str(exc))
            continue
        if d.rank not in have:
            have.add(d.rank)
            dumps.append(d)
    dumps.sort(key=lambda d: d.rank)
    return dumps, problems, files
