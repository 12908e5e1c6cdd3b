"""Where log bytes come from: files, directories, archives, compressed files, stdin.

Every source yields newline-aligned chunks of bytes, so the scanner never holds a whole
file in memory. Nothing here ever writes to the user's files.
"""

from __future__ import annotations

import gzip
import io
import os
import sys
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

CHUNK = 2 << 20  # bytes read at a time (scanned while they are still in the CPU cache)
MAX_LINE = 1 << 20  # a "line" longer than this is cut; the rest continues as the same line


class InputError(Exception):
    """A problem with the user's input; the message is one line for the terminal."""


@dataclass
class Source:
    name: str  # what the report shows (the path as given, or archive!member)
    opener: Callable[[], BinaryIO]
    size: int | None = None
    warnings: list[str] = field(default_factory=list)
    path: Path | None = None  # an uncompressed regular file: byte ranges can be read directly


_GZ = b"\x1f\x8b"
_ZST = b"\x28\xb5\x2f\xfd"
_ZIP = b"PK\x03\x04"
_BINARY_MAGIC = (b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"%PDF", b"\x7fELF", b"BZh", b"\xfd7zXZ", b"RIFF")


def _decompressing(raw: BinaryIO, head: bytes) -> BinaryIO:
    if head.startswith(_GZ):
        return gzip.GzipFile(fileobj=raw)  # type: ignore[return-value]
    if head.startswith(_ZST):
        import zstandard

        return zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)  # type: ignore[return-value]
    return raw


def looks_binary(sample: bytes) -> bool:
    """True for data that is not a text log (images, executables, random bytes)."""
    if not sample:
        return False
    if sample.startswith(_BINARY_MAGIC):
        return True
    nul = sample.count(0)
    if nul > len(sample) // 10:
        return True
    # control bytes other than tab, newline, carriage return, escape, form feed, backspace
    ctrl = sum(sample.count(b) for b in (*range(1, 8), 11, 14, 15, *range(16, 27), 28, 29, 30, 31, 127))
    if ctrl > len(sample) // 20:
        return True
    text = sample.decode("utf-8", errors="replace")
    bad = text.count("\ufffd")
    return bad > max(8, len(text) // 10)


def _peek(opener: Callable[[], BinaryIO]) -> bytes:
    with opener() as f:
        return f.read(4)


def _file_sources(path: Path, display: str) -> Iterator[Source]:
    def raw() -> BinaryIO:
        return open(path, "rb")

    try:
        head = _peek(raw)
    except OSError as exc:
        raise InputError(f"{display}: cannot read: {exc.strerror or exc}") from exc
    if head.startswith(_ZIP):
        yield from _zip_sources(path, display)
        return
    if tarfile.is_tarfile(path) if not head.startswith((_GZ, _ZST)) else _is_compressed_tar(path, head):
        yield from _tar_sources(path, display, head)
        return

    def opener() -> BinaryIO:
        f = open(path, "rb")
        return _decompressing(f, head)

    plain = path if not head.startswith((_GZ, _ZST)) else None
    yield Source(display, opener, size=path.stat().st_size, path=plain)


def _is_compressed_tar(path: Path, head: bytes) -> bool:
    if not head.startswith(_GZ):
        return False
    try:
        with tarfile.open(path, "r:gz") as tf:
            return tf.next() is not None
    except (tarfile.TarError, OSError, EOFError, gzip.BadGzipFile):
        return False


def _tar_sources(path: Path, display: str, head: bytes) -> Iterator[Source]:
    mode = "r:gz" if head.startswith(_GZ) else "r:"
    try:
        with tarfile.open(path, mode) as tf:
            members = []
            while True:
                try:
                    m = tf.next()
                except (tarfile.TarError, EOFError, OSError, gzip.BadGzipFile) as exc:
                    members.append(("!truncated", str(exc)))
                    break
                if m is None:
                    break
                if m.isfile():
                    members.append((m.name, m.size))
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise InputError(f"{display}: cannot read archive: {exc}") from exc
    for name, size in members:
        if name == "!truncated":
            yield Source(f"{display}", lambda: io.BytesIO(b""), 0, [f"{display}: archive is truncated or damaged ({size}); read what was intact"])
            continue
        yield Source(f"{display}!{name}", _tar_member_opener(path, mode, name), size if isinstance(size, int) else None)


def _tar_member_opener(path: Path, mode: str, member: str) -> Callable[[], BinaryIO]:
    def opener() -> BinaryIO:
        tf = tarfile.open(path, mode)
        f = tf.extractfile(member)
        if f is None:
            return io.BytesIO(b"")
        head = f.read(4)
        data = io.BufferedReader(_Concat(head, f))  # type: ignore[arg-type]
        return _decompressing(data, head)  # type: ignore[arg-type]

    return opener


class _Concat(io.RawIOBase):
    """A readable stream of ``head`` followed by the rest of ``tail``."""

    def __init__(self, head: bytes, tail: BinaryIO):
        self._head = head
        self._tail = tail

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[override]
        if self._head:
            n = min(len(b), len(self._head))
            b[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._tail.read(len(b))
        b[: len(data)] = data
        return len(data)


def _zip_sources(path: Path, display: str) -> Iterator[Source]:
    try:
        zf = zipfile.ZipFile(path)
        infos = [i for i in zf.infolist() if not i.is_dir()]
        zf.close()
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise InputError(f"{display}: cannot read zip archive: {exc}") from exc
    for info in infos:
        def opener(name: str = info.filename) -> BinaryIO:
            zf = zipfile.ZipFile(path)
            f = zf.open(name)
            head = f.read(4)
            return _decompressing(io.BufferedReader(_Concat(head, f)), head)  # type: ignore[arg-type]

        yield Source(f"{display}!{info.filename}", opener, info.file_size)


_SKIP_DIRS = {".git", "__pycache__", "node_modules", ".venv"}
# inside a folder, source code next to the logs is not evidence (its strings would match)
_SKIP_SUFFIXES = (".py", ".pyc", ".sh")


def expand_inputs(paths: list[str], stdin: BinaryIO | None = None) -> list[Source]:
    """Turn command-line paths into sources; raise InputError for what cannot be read."""
    sources: list[Source] = []
    for given in paths:
        if given == "-":
            data_stream = stdin if stdin is not None else sys.stdin.buffer
            sources.append(_stdin_source(data_stream))
            continue
        path = Path(given)
        if not path.exists():
            raise InputError(f"{given}: no such file or directory")
        if path.is_dir():
            found = False
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
                for fn in sorted(files):
                    if fn.endswith(_SKIP_SUFFIXES):
                        continue
                    fp = Path(root) / fn
                    if not fp.is_file():
                        continue
                    found = True
                    try:
                        sources.extend(_file_sources(fp, str(fp)))
                    except InputError as exc:  # one bad file in a folder: skip it, say so
                        sources.append(Source(str(fp), lambda: io.BytesIO(b""), 0, [str(exc) + "; skipped"]))
            if not found:
                raise InputError(f"{given}: directory has no files")
            continue
        if not path.is_file():
            raise InputError(f"{given}: not a regular file")
        sources.extend(_file_sources(path, given))
    return [_unwrapped(s) for s in sources]


def _unwrapped(src: Source) -> Source:
    """A small input that was hard-wrapped by a terminal or a paste, re-joined (unwrap.py)."""
    from .unwrap import MAX_BYTES, unwrap

    if src.size is None or src.size > MAX_BYTES or src.size == 0:
        return src
    try:
        with src.opener() as f:
            data = f.read(MAX_BYTES + 1)
    except (OSError, EOFError, ValueError):
        return src  # the scan reports what is wrong with it
    done = unwrap(data)
    if done is None:
        return src
    text, n = done
    note = f"{src.name}: {n} hard-wrapped line(s) re-joined (the continuation lines are left empty)"
    return Source(src.name, lambda: io.BytesIO(text), len(text), [*src.warnings, note])


def _stdin_source(stream: BinaryIO) -> Source:
    # stdin can only be read once; the chunk reader consumes it in a streaming way.
    used = {"done": False}

    def opener() -> BinaryIO:
        if used["done"]:
            return io.BytesIO(b"")
        used["done"] = True
        head = stream.peek(4)[:4] if hasattr(stream, "peek") else b""
        return _decompressing(stream, head) if head else stream

    return Source("<stdin>", opener, None)


def iter_chunks(f: BinaryIO, chunk_size: int = CHUNK) -> Iterator[tuple[bytes, int]]:
    """Newline-aligned chunks of a stream, as ``(data, n)``: the chunk is ``data[:n]`` and
    ``data[n:]`` is the beginning of the next line (it comes again at the start of the next
    chunk). A line longer than MAX_LINE is cut so memory stays bounded. For a plain file the
    pairs equal ``iter_file_chunks``'s."""
    rest = b""
    # read1 returns what one underlying read gives, so a truncated compressed stream
    # still hands over everything before the damage
    read = getattr(f, "read1", None) or f.read
    pending: list[bytes] = []
    size = 0
    while True:
        try:
            part = read(chunk_size)
        except (EOFError, OSError, ValueError):
            if rest or pending:
                data = rest + b"".join(pending)
                yield data, len(data)
            raise
        if part:
            pending.append(part)
            size += len(part)
            if size < chunk_size:
                continue
        block = b"".join(pending)
        pending, size = [], 0
        if not block:
            break
        data = rest + block if rest else block
        cut = data.rfind(b"\n")
        if cut < 0:
            if len(data) > MAX_LINE:
                yield data, len(data)
                rest = b""
            else:
                rest = data
            continue
        yield data, cut + 1
        rest = data[cut + 1 :]
    if rest:
        yield rest, len(rest)


def iter_file_chunks(path: Path, start: int = 0, end: int | None = None, chunk_size: int = CHUNK) -> Iterator[tuple[bytes, int]]:
    """The chunks ``iter_chunks`` cuts from bytes [start, end) of a plain file (``start`` a
    chunk boundary), each read with one positioned read and never copied again.

    Yields ``(data, n)``: ``data[:n]`` is the chunk; ``data[n:]`` is the beginning of the
    next line, read again with the next chunk (instead of joining it to the next block:
    no copy of the chunk is ever made). Reads are aligned to multiples of ``chunk_size``
    exactly as a sequential read of the whole file is, so the pairs are the same as
    ``iter_chunks(open(path, "rb"))``'s.
    """
    fd = os.open(path, os.O_RDONLY)  # an unreadable file fails here, before the first chunk
    return _file_chunks(fd, start, end, chunk_size)


def _file_chunks(fd: int, start: int, end: int | None, chunk_size: int) -> Iterator[tuple[bytes, int]]:
    try:
        fend = os.fstat(fd).st_size if end is None else end
        pos = start
        block_end = min((start // chunk_size + 1) * chunk_size, fend)
        while pos < fend:
            data = os.pread(fd, block_end - pos, pos)
            if len(data) < block_end - pos:  # the file got shorter while we read it
                fend = block_end = pos + len(data)
                if not data:
                    return
            cut = data.rfind(b"\n")
            if cut < 0 and len(data) <= MAX_LINE and block_end < fend:
                block_end = min(block_end + chunk_size, fend)  # a short piece of a line: read it again with the next block
                continue
            n = len(data) if cut < 0 else cut + 1  # a line longer than MAX_LINE is cut here
            yield data, n
            pos += n
            block_end = min(block_end + chunk_size, fend)
    finally:
        os.close(fd)
