"""Redacted copies of a run's files: ``rankdoctor redact PATH... -o OUT`` and what
``diagnose --redact`` diagnoses.

Every input is read twice and never written: once to learn the private values of all of
them (so one host has one pseudonym across files), once to write the copies. Text logs keep
their bytes apart from the replacements (invalid UTF-8 included: it travels as surrogate
escapes) and their line numbers; ``.gz`` / ``.zst`` logs are written decompressed; archive
members go to a folder named after the archive; Flight Recorder dumps are read with the
project's safe loader, their strings redacted, and written back in their own format (pickle
of plain containers, or JSON). Binary files are not copied: there is no telling what is in
them. File and folder names are redacted like the text (a host name in a file name).
"""

from __future__ import annotations

import json
import os
import pickle
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from ..ingest.sources import InputError, _kind, _open_decompressing, expand_inputs, looks_binary, open_regular, shown, walk_files
from .redactor import Redactor

_CHUNK = 4 << 20  # text is redacted this much at a time, cut at a line end
_HEAD = 64 * 1024
_ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")


@dataclass
class _Item:
    src: str  # the file read
    parts: list[str]  # output path under OUT, before redaction
    kind: str  # text | dump | member
    opener: Callable[[], BinaryIO] | None = None
    dump: object = None
    dump_format: str = ""  # pickle protocol number or "json"


@dataclass
class Redacted:
    """What a redaction wrote: one output root per input (``roots``: the input as given,
    its redacted name as reports show it, and where its copy is), the files written, the
    ones skipped with why, and how many values of each kind were replaced."""

    roots: list[tuple[str, str, Path]] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    replaced: dict[str, int] = field(default_factory=dict)


def refuse_output(out: Path, inputs: list[str]) -> None:
    """The copies never land on an input: OUT may not be an input, lie inside one, or hold
    one; an existing OUT must be an empty folder."""
    real = os.path.realpath(out)
    for given in inputs:
        top = os.path.realpath(given)
        if real == top or real.startswith(top.rstrip(os.sep) + os.sep):
            raise InputError(f"{out}: is an input or inside one ({given}); refusing to write there")
        if top.startswith(real.rstrip(os.sep) + os.sep):
            raise InputError(f"{out}: holds an input ({given}); refusing to write there")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(f"{out}: exists and is not an empty folder; give a new or empty folder")


def _text_chunks(opener: Callable[[], BinaryIO]) -> Iterator[str]:
    """The text of a file in pieces that end at a line end; undecodable bytes as surrogate
    escapes (they come back unchanged on writing)."""
    with opener() as f:
        rest = b""
        while True:
            block = f.read(_CHUNK)
            if not block:
                break
            block = rest + block
            cut = block.rfind(b"\n") + 1
            if cut == 0 and len(block) < 4 * _CHUNK:
                rest = block
                continue
            cut = cut or len(block)
            rest = block[cut:]
            yield block[:cut].decode("utf-8", "surrogateescape")
        if rest:
            yield rest.decode("utf-8", "surrogateescape")


def _dump_of(path: str, head: bytes) -> tuple[object, str] | None:
    """A Flight Recorder dump, read the safe way, and its format; None when it is not one."""
    from ..flightrec.load import MAX_DUMP_BYTES, DumpError, _decode, _fast_unpickle, _looks_like_dump
    from ..ingest.dumpfile import Unusable, read_regular

    if not _looks_like_dump(head[:4096]):
        return None
    try:
        data = read_regular(path, MAX_DUMP_BYTES)
        obj = _fast_unpickle(data) or _decode(data, path)  # the loader's fast lane first, as load_dump does
    except (DumpError, Unusable, OSError):
        return None
    return obj, ("json" if data[:1] != b"\x80" else str(data[1]))


def _items_of_file(path: str, parts: list[str], skipped: list[str]) -> list[_Item]:
    try:
        with open_regular(path) as f:
            head = f.read(_HEAD)
    except OSError as exc:
        skipped.append(f"{shown(path)}: cannot read: {exc.strerror or exc}")
        return []
    kind = _kind(head)
    if kind in ("zip", "tar", "tar.gz"):
        name = parts[-1]
        for suffix in _ARCHIVE_SUFFIXES:
            if name.lower().endswith(suffix):
                name = name[: -len(suffix)]
                break
        out = []
        try:
            sources = expand_inputs([path])
        except InputError as exc:
            skipped.append(str(exc))
            return []
        for s in sources:
            if "!" not in s.name:
                skipped.extend(s.warnings)
                continue
            member = [p for p in s.name.split("!", 1)[1].split("/") if p not in ("", ".", "..")]
            out.append(_Item(path, [*parts[:-1], name, *member], "member", s.opener))
        return out
    if kind in ("gz", "zst"):
        name = parts[-1].rsplit(".", 1)[0] if parts[-1].lower().endswith((".gz", ".zst")) else parts[-1]
        return [_Item(path, [*parts[:-1], name], "text", lambda: _open_decompressing(path, head[:4]))]
    dump = _dump_of(path, head)
    if dump is not None:
        return [_Item(path, parts, "dump", dump=dump[0], dump_format=dump[1])]
    if looks_binary(head):
        skipped.append(f"{shown(path)}: not a text log (binary data); not copied")
        return []
    return [_Item(path, parts, "text", lambda: open_regular(path))]


def redact_paths(paths: list[str], out: Path, redactor: Redactor) -> Redacted:
    """Write redacted copies of ``paths`` (files and folders) under ``out``. Raises
    InputError for an input that is not there or an ``out`` that is refused."""
    for given in paths:
        if not os.path.lexists(given):
            raise InputError(f"{shown(given)}: no such file or directory")
    refuse_output(out, paths)
    result = Redacted()
    items: list[_Item] = []
    roots: list[tuple[str, str]] = []  # (given, output root name)
    used: set[str] = set()
    for given in paths:
        base = os.path.basename(os.path.normpath(given)) or "input"
        name, n = base, 1
        while name in used:  # two inputs named alike: rank0/logs and rank1/logs
            n += 1
            name = f"{base}-{n}"
        used.add(name)
        roots.append((given, name))
        if os.path.isdir(given):
            for fp, _size, why in walk_files(given):
                if why is not None:
                    result.skipped.append(f"{shown(fp)}: {why}")
                    continue
                rel = os.path.relpath(fp, given).split(os.sep)
                items.extend(_items_of_file(fp, [name, *rel], result.skipped))
        elif os.path.isfile(given):
            items.extend(_items_of_file(given, [name], result.skipped))
        else:
            raise InputError(f"{shown(given)}: not a regular file or folder")
    # pass 1: learn every private value, the file and folder names' too
    for given, _ in roots:
        redactor.learn(shown(given))
    for it in items:
        redactor.learn("/".join(it.parts))
        if it.kind == "dump":
            redactor.learn_obj(it.dump)
            continue
        try:
            for text in _text_chunks(it.opener):  # type: ignore[arg-type]
                redactor.learn(text)
        except (OSError, EOFError, ValueError) as exc:
            result.skipped.append(f"{shown(it.src)}: cannot read whole ({exc}); not copied")
            it.kind = "broken"
    redactor.seal()
    # pass 2: write
    out.mkdir(parents=True, exist_ok=True)
    for given, name in roots:
        result.roots.append((given, redactor.apply(shown(given)), out / redactor.apply(name)))
    for it in items:
        if it.kind == "broken":
            continue
        target = out.joinpath(*[redactor.apply(p) for p in it.parts])
        target.parent.mkdir(parents=True, exist_ok=True)
        if it.kind == "dump":
            clean = redactor.apply_obj(it.dump)
            if it.dump_format == "json":
                target.write_text(json.dumps(clean), encoding="utf-8")
            else:
                target.write_bytes(pickle.dumps(clean, protocol=min(int(it.dump_format), pickle.HIGHEST_PROTOCOL)))
        else:
            with open(target, "wb") as w:
                for text in _text_chunks(it.opener):  # type: ignore[arg-type]
                    w.write(redactor.apply(text).encode("utf-8", "surrogateescape"))
        result.written.append(target)
    result.replaced = redactor.replaced()
    return result


def redact_bytes(named: list[tuple[str, bytes]], redactor: Redactor) -> list[tuple[str, bytes]]:
    """In-memory files (the web app's upload), redacted together: (name, data) pairs."""
    texts = [(n, d.decode("utf-8", "surrogateescape")) for n, d in named]
    for n, t in texts:
        redactor.learn(n)
        redactor.learn(t)
    redactor.seal()
    return [(redactor.apply(n), redactor.apply(t).encode("utf-8", "surrogateescape")) for n, t in texts]


__all__ = ["Redacted", "redact_bytes", "redact_paths", "refuse_output"]
