"""What a diagnose request carries: a text body, or multipart files plus a line map.
Both are streamed to files in a folder of the request's own as they arrive, so the
server holds no upload in memory, whatever its size or the number of requests.

The browser usually sends only the lines the user selected. ``meta`` tells which
original line each sent line was, so evidence still points at the right file:line::

    {"files": [{"name": "rank_3.log", "lines": 48211, "bytes": 9123456,
                "runs": [[1, 5], [48090, 122]]}]}

``runs`` lists (first original line, number of lines) in the order they were sent; the
n-th entry of ``files`` describes the n-th uploaded file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import BinaryIO

from fastapi import HTTPException, Request
from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header

from .worker import LineMap, Upload

MAX_FILES = 4096
MAX_FIELDS = 64
MAX_META = 16 << 20
_CTRL = re.compile(r"[\x00-\x1f\x7f]")

__all__ = ["LineMap", "Upload", "clean_name", "read_uploads"]


def clean_name(name: str | None, fallback: str) -> str:
    """A display name for an uploaded file: no control characters, no '..' or absolute
    paths (names are only shown and read for rank hints, never used to open a file)."""
    name = _CTRL.sub("", (name or "").replace("\\", "/"))
    parts = [p for p in name.split("/") if p not in ("", ".", "..")]
    name = "/".join(parts)[-200:]
    return name or fallback


def _unique(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for n in names:
        k = seen.get(n, 0) + 1
        seen[n] = k
        out.append(n if k == 1 else f"{n} ({k})")
    return out


def _meta(raw: str | None, n_files: int) -> list[LineMap | None]:
    if raw is None:
        return [None] * n_files
    try:
        doc = json.loads(raw)
        files = doc["files"]
        if not isinstance(files, list) or len(files) != n_files:
            raise ValueError(f"describes {len(files) if isinstance(files, list) else 'no'} file(s), the request has {n_files}")
        maps: list[LineMap | None] = []
        for f in files:
            runs = [(int(a), int(b)) for a, b in f.get("runs", [])]
            if any(a < 1 or b < 0 for a, b in runs):
                raise ValueError("runs hold positive line numbers and counts")
            lines = f.get("lines")
            size = f.get("bytes")
            maps.append(LineMap(runs, int(lines) if lines is not None else None, int(size) if size is not None else None))
        return maps
    except RecursionError:
        raise HTTPException(400, "meta: not a valid line map (nested too deeply)") from None
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise HTTPException(400, " ".join(f"meta: not a valid line map ({exc})".split())) from None


class _Parts:
    """python-multipart callbacks: every `files` part and the `text` field go to a file of
    their own in ``folder``; `meta` is kept (up to MAX_META); other fields are skipped."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.files: list[tuple[str | None, Path]] = []  # (file name sent, where it is)
        self.text: Path | None = None
        self.text_blank = True
        self.meta: bytearray | None = None
        self.fields = 0
        self._headers: dict[bytes, bytes] = {}
        self._field: list[bytes] = []
        self._value: list[bytes] = []
        self._out: BinaryIO | None = None
        self._kind = ""

    def callbacks(self) -> dict:
        return {
            "on_part_begin": self._part_begin,
            "on_header_field": lambda d, s, e: self._field.append(d[s:e]),
            "on_header_value": lambda d, s, e: self._value.append(d[s:e]),
            "on_header_end": self._header_end,
            "on_headers_finished": self._headers_finished,
            "on_part_data": self._part_data,
            "on_part_end": self._part_end,
        }

    def _part_begin(self) -> None:
        self._headers = {}

    def _header_end(self) -> None:
        self._headers[b"".join(self._field).lower()] = b"".join(self._value).strip()
        self._field, self._value = [], []

    def _headers_finished(self) -> None:
        _, options = parse_options_header(self._headers.get(b"content-disposition", b""))
        name = options.get(b"name", b"").decode("utf-8", "replace")
        self._kind = name if name in ("files", "text", "meta") else ""
        if self._kind == "files":
            if len(self.files) >= MAX_FILES:
                raise HTTPException(400, f"too many files in one request (at most {MAX_FILES})")
            filename = options.get(b"filename")
            path = self.folder / f"part-{len(self.files)}"
            self.files.append((filename.decode("utf-8", "replace") if filename is not None else None, path))
            self._out = open(path, "wb")
        elif self._kind == "text" and self.text is None:
            self.text = self.folder / "text"
            self._out = open(self.text, "wb")
        elif self._kind == "meta" and self.meta is None:
            self.meta = bytearray()
        else:
            self._kind = ""
            self.fields += 1
            if self.fields > MAX_FIELDS:
                raise HTTPException(400, f"too many form fields (at most {MAX_FIELDS})")

    def _part_data(self, data: bytes, start: int, end: int) -> None:
        if self._out is not None:
            self._out.write(data[start:end])
            if self._kind == "text" and self.text_blank and data[start:end].strip():
                self.text_blank = False
        elif self._kind == "meta" and self.meta is not None:
            self.meta += data[start:end]
            if len(self.meta) > MAX_META:
                raise HTTPException(400, f"meta: larger than {MAX_META >> 20} MB")

    def _part_end(self) -> None:
        if self._out is not None:
            self._out.close()
            self._out = None

    def close(self) -> None:
        self._part_end()


async def _read_multipart(request: Request, folder: Path, boundary: bytes | None) -> list[Upload]:
    if not boundary:
        raise HTTPException(400, "multipart body without a boundary in its Content-Type")
    parts = _Parts(folder)
    parser = MultipartParser(boundary, parts.callbacks())
    try:
        async for chunk in request.stream():
            parser.write(chunk)
        parser.finalize()
    except MultipartParseError as exc:
        raise HTTPException(400, " ".join(f"malformed multipart body: {exc}".split())) from None
    finally:
        parts.close()
    names = _unique([clean_name(sent, f"file-{i + 1}.log") for i, (sent, _) in enumerate(parts.files)])
    maps = _meta(parts.meta.decode("utf-8", "replace") if parts.meta is not None else None, len(parts.files))
    uploads = [Upload(name, path, path.stat().st_size, lm) for name, (_, path), lm in zip(names, parts.files, maps)]
    if parts.text is not None and not parts.text_blank:
        uploads.append(Upload("pasted.log", parts.text, parts.text.stat().st_size))
    if not uploads:
        raise HTTPException(400, "no log in the request: add one or more `files` parts (or a `text` field)")
    return uploads


async def read_uploads(request: Request, folder: Path) -> list[Upload]:
    """The logs in a request, written into ``folder``; 4xx with a one-line reason when
    there are none."""
    ctype, options = parse_options_header(request.headers.get("content-type", ""))
    ctype = ctype.lower()
    if ctype == b"multipart/form-data":
        return await _read_multipart(request, folder, options.get(b"boundary"))
    if ctype in (b"", b"application/octet-stream") or ctype.startswith(b"text/"):
        path = folder / "body"
        with open(path, "wb") as out:
            async for chunk in request.stream():
                out.write(chunk)
        name = clean_name(request.query_params.get("name"), "pasted.log")
        return [Upload(name, path, path.stat().st_size)]
    shown = ctype.decode("latin-1")
    raise HTTPException(415, f"unsupported content type {shown!r}: send text/plain, or multipart/form-data with `files`")
