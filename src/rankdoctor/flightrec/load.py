"""Read Flight Recorder dumps (pickle or JSON) without ever executing them.

A dump is written by ``torch._C._distributed_c10d._dump_fr_trace`` (pickle) or
``_dump_fr_trace_json`` (JSON), usually one file per rank named ``<prefix><rank>``. Pickles
are read with an unpickler that builds only plain containers and scalars: a pickle that
asks for any class or function (the way a crafted pickle runs code) is refused.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_DUMP_BYTES = 512 << 20
_RANK_SUFFIX = re.compile(r"^(?P<prefix>.*?)(?P<rank>\d+)(?:\.(?:json|pkl|pickle))?$")


class DumpError(Exception):
    """A dump that cannot be read; the message is one line."""


class UnsafePickle(DumpError):
    pass


class _PlainUnpickler(pickle.Unpickler):
    """Builds dicts, lists, tuples, sets, strings, bytes, numbers, booleans and None only."""

    def find_class(self, module: str, name: str) -> Any:  # noqa: D401
        raise UnsafePickle(f"refused: the pickle asks for {module}.{name}; a Flight Recorder dump holds only plain data")

    def persistent_load(self, pid: Any) -> Any:
        raise UnsafePickle("refused: the pickle uses persistent ids; a Flight Recorder dump holds only plain data")


@dataclass
class Dump:
    path: str
    rank: int
    version: str
    entries: list[dict[str, Any]]
    pg_config: dict[str, Any] = field(default_factory=dict)
    pg_status: dict[str, Any] = field(default_factory=dict)
    backend: str | None = None


def _decode(data: bytes, path: str) -> dict[str, Any]:
    head = data.lstrip()[:1]
    if head in (b"{", b"["):
        try:
            obj = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise DumpError(f"{path}: not a valid JSON dump ({exc.__class__.__name__})") from exc
    elif data[:1] == b"\x80":
        try:
            obj = _PlainUnpickler(io.BytesIO(data)).load()
        except UnsafePickle as exc:
            raise UnsafePickle(f"{path}: {exc}") from exc
        except RecursionError as exc:
            raise DumpError(f"{path}: pickle is nested too deeply to be a dump") from exc
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError, AttributeError, MemoryError) as exc:
            raise DumpError(f"{path}: not a readable pickle ({exc.__class__.__name__}: {str(exc)[:80]})") from exc
    else:
        raise DumpError(f"{path}: not a Flight Recorder dump (neither pickle nor JSON)")
    if not isinstance(obj, dict) or not isinstance(obj.get("entries"), list):
        raise DumpError(f"{path}: not a Flight Recorder dump (no 'entries' list)")
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
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_DUMP_BYTES:
            raise DumpError(f"{path}: {size} bytes is larger than any Flight Recorder dump should be")
        data = p.read_bytes()
    except OSError as exc:
        raise DumpError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    obj = _decode(data, path)
    r = rank if rank is not None else rank_from_name(path, prefix)
    if r is None:
        raise DumpError(f"{path}: no rank in the file name; name files <prefix><rank> or pass --rank")
    entries = [e for e in obj["entries"] if isinstance(e, dict)]
    backend = None
    for e in entries:
        name = str(e.get("profiling_name") or "")
        if ":" in name:
            backend = name.split(":", 1)[0]
            break
    return Dump(
        path=str(path),
        rank=r,
        version=str(obj.get("version", "?")),
        entries=entries,
        pg_config=obj.get("pg_config") if isinstance(obj.get("pg_config"), dict) else {},
        pg_status=obj.get("pg_status") if isinstance(obj.get("pg_status"), dict) else {},
        backend=backend,
    )


def looks_like_dump(path: str) -> bool:
    """Cheap test used when dumps sit next to logs: a pickle or JSON object with entries."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    if head[:1] == b"\x80":
        return b"entries" in head or b"version" in head
    s = head.lstrip()
    return s[:1] == b"{" and b'"entries"' in head or (s[:1] == b"{" and b'"version"' in head and b"pg_config" in head)


def find_dumps(paths: list[str]) -> list[str]:
    out = []
    for given in paths:
        p = Path(given)
        if p.is_dir():
            for root, dirs, files in os.walk(p):
                dirs.sort()
                for fn in sorted(files):
                    fp = os.path.join(root, fn)
                    if looks_like_dump(fp):
                        out.append(fp)
        elif p.is_file() and looks_like_dump(str(p)):
            out.append(str(p))
    return out


def load_dumps(paths: list[str], prefix: str | None = None, ranks: list[int] | None = None) -> tuple[list[Dump], list[str]]:
    """Load every dump under ``paths``; return (dumps, one-line problems)."""
    files: list[str] = []
    problems: list[str] = []
    for given in paths:
        p = Path(given)
        if not p.exists():
            raise DumpError(f"{given}: no such file or directory")
        if p.is_dir():
            found = find_dumps([given])
            if not found:
                problems.append(f"{given}: no Flight Recorder dumps in this folder")
            files.extend(found)
        else:
            files.append(str(p))
    if ranks and len(ranks) != len(files):
        raise DumpError(f"--rank was given {len(ranks)} time(s) for {len(files)} dump file(s)")
    dumps: list[Dump] = []
    seen: dict[int, str] = {}
    for i, f in enumerate(files):
        try:
            d = load_dump(f, ranks[i] if ranks else None, prefix)
        except UnsafePickle:
            raise
        except DumpError as exc:
            problems.append(str(exc))
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
    files out of the log scan."""
    candidates = find_dumps([p for p in paths if p != "-"])
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
