"""Inputs named by URL: ``s3://bucket/prefix``, ``gs://bucket/prefix``, ``file:///path``,
read through fsspec in byte ranges — streamed, never downloaded whole to one place.

A URL is read like a local path: a prefix is a folder (its objects in the order the local
walk gives: a folder's files by name, then its subfolders; ``.git``, ``__pycache__``...
and ``.py``/``.sh`` files skipped), and each object is told apart by its first bytes
(plain log, .gz/.zst, tar/zip) by ``sources.sources_in``, the code local files go through.
So the same files give the same sources, the same scan and the same diagnosis; only the
names shown differ (the URL of each object).

What is read here, in the process that plans the scan: the listing, and the first 64 KiB
of every object (whole objects up to 4 MiB: the small-file rules of local files, such as
re-joining hard-wrapped lines, need them), fetched concurrently; up to 256 MiB of those
bytes are kept for this process and the workers it forks (no second read). The rest is
read in ranges by whoever scans it (a worker of ``parallel.py``, a Ray task): pickled, a
``RemoteFile`` is the object's name, not its bytes, and each process opens its own
filesystem from its own environment.

Credentials and endpoints are fsspec's and the cloud libraries' own: for s3:// botocore's
(``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, ``AWS_PROFILE``, ``AWS_ENDPOINT_URL``
for an S3-compatible server, an instance role...), for gs:// google-auth's
(``GOOGLE_APPLICATION_CREDENTIALS``...), and any other filesystem option as fsspec's
``FSSPEC_S3='{"anon": true}'`` / ``FSSPEC_GCS=...`` JSON. Every process reads its own.
"""

from __future__ import annotations

import io
import logging
import re
from dataclasses import dataclass, field
from typing import BinaryIO

from .sources import _SKIP_DIRS, _SKIP_SUFFIXES, _SNIFF, InputError, Source, _note, sources_in
from .unwrap import MAX_BYTES as MAX_UNWRAP

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://(.*)$", re.S)
# URL scheme -> (fsspec protocol, the package that implements it, the extra that installs it)
PROTOCOLS = {
    "s3": ("s3", "s3fs", "s3"),
    "gs": ("gcs", "gcsfs", "gcs"),
    "gcs": ("gcs", "gcsfs", "gcs"),
    "file": ("file", None, "s3"),
}
HEAD_BATCH_BYTES = 64 << 20  # heads fetched concurrently, at most this many bytes at a time
HEAD_CACHE_BYTES = 256 << 20  # bytes read here that are kept for this process's readers


def is_url(given: str) -> bool:
    return bool(_URL.match(given))


class RemoteError(OSError):
    """A read of an object in storage failed (any error of the storage library: the scan
    reports it like a local file it cannot finish)."""


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]


def filesystem(protocol: str, given: str = ""):
    """This process's fsspec filesystem for ``protocol`` (fsspec keeps one per process: a
    forked worker gets its own)."""
    scheme = next((k for k, v in PROTOCOLS.items() if v[0] == protocol), protocol)
    _, package, extra = PROTOCOLS[scheme]
    _quiet()
    try:
        import fsspec

        if package:
            __import__(package)
        return fsspec.filesystem(protocol)
    except ImportError:
        raise InputError(f"{given or scheme + '://'}: reading {scheme}:// URLs needs {package or 'fsspec'}: "
                         f"pip install 'rankdoctor[{extra}]'") from None
    except Exception as exc:  # a filesystem that cannot start (bad FSSPEC_* options...)
        raise InputError(f"{given or scheme + '://'}: cannot open {scheme}:// storage: {_one_line(exc)}") from None


def _quiet() -> None:
    """The storage libraries log their retries and failures (gcsfs with whole tracebacks)
    to stderr through Python's last-resort handler; what failed is reported here instead,
    in one line."""
    for name in ("fsspec", "s3fs", "gcsfs", "botocore", "aiobotocore", "google", "urllib3"):
        logger = logging.getLogger(name)
        if logger.level < logging.CRITICAL:
            logger.setLevel(logging.CRITICAL)


@dataclass(frozen=True, eq=False)
class RemoteFile:
    """An object in storage that byte ranges are read from (``Source.path`` of a plain log
    given by URL). Pickled (to a worker, a Ray task) it is only its name and size: the
    worker reads the object itself."""

    protocol: str
    path: str  # the filesystem's path: bucket/key
    size: int
    head: bytes = field(default=b"", repr=False)  # its first bytes, when read already (this process only)

    def __getstate__(self) -> dict:
        return {"protocol": self.protocol, "path": self.path, "size": self.size}

    def __setstate__(self, state: dict) -> None:
        for k, v in {**state, "head": b""}.items():
            object.__setattr__(self, k, v)

    def pread(self, n: int, offset: int) -> bytes:
        """Bytes [offset, offset + n) (fewer at the end of the object): one ranged GET."""
        end = min(offset + n, self.size)
        if end <= offset:
            return b""
        if end <= len(self.head):
            return self.head[offset:end]
        try:
            return filesystem(self.protocol).cat_file(self.path, start=offset, end=end)
        except InputError as exc:
            raise RemoteError(str(exc)) from None
        except Exception as exc:  # botocore, aiohttp, google-auth...: one line, as a damaged file
            raise RemoteError(f"cannot read {self.path}: {_one_line(exc)}") from None

    def open(self) -> BinaryIO:
        """The object as a seekable stream (tar and zip readers seek), read in ranges."""
        return io.BufferedReader(_RangeReader(self), buffer_size=256 << 10)  # type: ignore[return-value]


class _RangeReader(io.RawIOBase):
    def __init__(self, obj: RemoteFile):
        self._obj = obj
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._pos, 2: self._obj.size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, b) -> int:  # type: ignore[override]
        data = self._obj.pread(len(b), self._pos)
        b[: len(data)] = data
        self._pos += len(data)
        return len(data)


def _walk_key(rel: str) -> tuple:
    """The local walk's order (``sources.walk_files``): a folder's files by name, then its
    folders by name, depth first."""
    parts = rel.split("/")
    return tuple((1, p) for p in parts[:-1]) + ((0, parts[-1]),)


def _skipped(rel: str) -> bool:
    parts = rel.split("/")
    return any(p in _SKIP_DIRS for p in parts[:-1]) or parts[-1].endswith(_SKIP_SUFFIXES) or not parts[-1]


def expand_url(given: str) -> list[Source]:
    """The sources behind one URL (an object, or every object under a prefix); raise
    InputError, in one line, for what cannot be listed or read."""
    m = _URL.match(given)
    scheme = m.group(1).lower() if m else ""
    if scheme not in PROTOCOLS:
        known = ", ".join(f"{k}://" for k in ("s3", "gs", "file"))
        raise InputError(f"{given}: URLs of scheme '{scheme}' are not read (rankdoctor reads {known} and local paths)")
    protocol = PROTOCOLS[scheme][0]
    fs = filesystem(protocol, given)
    path = fs._strip_protocol(given)
    if not path.strip("/"):
        raise InputError(f"{given}: no bucket or path in the URL")
    try:
        info = fs.info(path)
    except FileNotFoundError as exc:
        why = _one_line(exc)
        raise InputError(f"{given}: " + (why[0].lower() + why[1:] if "bucket" in why.lower() else "no such file or directory")) from None
    except Exception as exc:  # no credentials, access denied, no such host...
        raise InputError(f"{given}: cannot read: {_one_line(exc)}") from None
    if info.get("type") == "directory":
        top = path.rstrip("/")
        try:
            found = fs.find(top, detail=True)
        except Exception as exc:
            raise InputError(f"{given}: cannot list: {_one_line(exc)}") from None
        entries = []
        for p, meta in found.items():
            rel = p[len(top) + 1 :] if p.startswith(top + "/") else p
            if meta.get("type", "file") == "file" and not _skipped(rel):
                entries.append((rel, p, int(meta.get("size") or 0)))
        entries.sort(key=lambda e: _walk_key(e[0]))
        shown = given.rstrip("/")
        objects = [(f"{shown}/{rel}", p, size) for rel, p, size in entries]
        if not objects:
            raise InputError(f"{given}: directory has no files")
        return _sources(fs, protocol, objects, in_folder=True)
    return _sources(fs, protocol, [(given, path, int(info.get("size") or 0))], in_folder=False)


def _sources(fs, protocol: str, objects: list[tuple[str, str, int]], in_folder: bool) -> list[Source]:
    """Sources for ``(name, path, size)`` objects: their heads fetched concurrently (one
    ranged GET each), then told apart as local files are."""
    out: list[Source] = []
    cached = 0
    i = 0
    while i < len(objects):
        batch, got = [], 0
        while i < len(objects) and (not batch or got < HEAD_BATCH_BYTES):
            want = _head_size(objects[i][2])
            batch.append((*objects[i], want))
            got += want
            i += 1
        ask = [b for b in batch if b[2]]  # (an empty object has no range to ask for)
        try:
            got_heads = fs.cat_ranges([b[1] for b in ask], [0] * len(ask), [b[3] for b in ask], on_error="return") if ask else []
        except Exception as exc:
            raise InputError(f"{batch[0][0]}: cannot read: {_one_line(exc)}") from None
        it = iter(got_heads)
        heads = [next(it) if b[2] else b"" for b in batch]
        for (name, path, size, _want), head in zip(batch, heads):
            if isinstance(head, BaseException):
                line = f"{name}: cannot read: {_one_line(head)}"
                if not in_folder:
                    raise InputError(line)
                out.append(_note(name, f"{line}; skipped"))
                continue
            # kept for this process's readers (the detectors, a forked worker): a small object
            # whole, else its first 64 KiB, within a budget; a Ray task gets the name only
            keep = head[:size] if size <= MAX_UNWRAP else head[:_SNIFF]
            keep = keep if cached + len(keep) <= HEAD_CACHE_BYTES else b""
            cached += len(keep)
            obj = RemoteFile(protocol, path, size, keep)
            try:
                out.extend(sources_in(name, size, head, obj.open, obj))
            except InputError as exc:  # a damaged zip in a folder: skipped, said
                if not in_folder:
                    raise
                out.append(_note(name, f"{exc}; skipped"))
    return out


def _head_size(size: int) -> int:
    """What ``sources._file_sources`` reads of a local file of this size."""
    return size + 1 if 0 < size <= MAX_UNWRAP else _SNIFF


__all__ = ["is_url", "expand_url", "RemoteFile", "RemoteError", "filesystem", "PROTOCOLS"]
