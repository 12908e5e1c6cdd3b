"""What a diagnose request carries: a text body, or multipart files plus a line map.

The browser usually sends only the lines the user selected. ``meta`` tells which
original line each sent line was, so evidence still points at the right file:line::

    {"files": [{"name": "rank_3.log", "lines": 48211, "bytes": 9123456,
                "runs": [[1, 5], [48090, 122]]}]}

``runs`` lists (first original line, number of lines) in the order they were sent; the
n-th entry of ``files`` describes the n-th uploaded file.
"""

from __future__ import annotations

import bisect
import gzip
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO

from fastapi import HTTPException, Request
from starlette.datastructures import UploadFile

from ..events import ScanResult
from ..ingest.sources import Source

MAX_FILES = 4096
MAX_META = 16 << 20
_CTRL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass
class LineMap:
    runs: list[tuple[int, int]]
    lines: int | None = None
    bytes: int | None = None

    def __post_init__(self) -> None:
        self._starts: list[int] = []
        sent = 0
        for _first, count in self.runs:
            self._starts.append(sent)
            sent += count

    def original(self, sent_line: int) -> int:
        """The original line number of the ``sent_line``-th line sent (1-based)."""
        if not self.runs:
            return sent_line
        i = max(bisect.bisect_right(self._starts, sent_line - 1) - 1, 0)
        return self.runs[i][0] + (sent_line - 1 - self._starts[i])


@dataclass
class Upload:
    name: str
    data: bytes
    linemap: LineMap | None = None

    def source(self) -> Source:
        return Source(self.name, _opener(self.data), len(self.data))


def _opener(data: bytes) -> Callable[[], BinaryIO]:
    def opener() -> BinaryIO:
        raw = io.BytesIO(data)
        if data[:2] == b"\x1f\x8b":
            return gzip.GzipFile(fileobj=raw)  # type: ignore[return-value]
        if data[:4] == b"\x28\xb5\x2f\xfd":
            import zstandard

            return zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)  # type: ignore[return-value]
        return raw

    return opener


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
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise HTTPException(400, f"meta: not a valid line map ({exc})") from None


async def read_uploads(request: Request) -> list[Upload]:
    """The logs in a request; 4xx with a one-line reason when there are none."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype == "multipart/form-data":
        form = await request.form(max_files=MAX_FILES, max_fields=64, max_part_size=MAX_META)
        files = [f for f in form.getlist("files") if isinstance(f, UploadFile)]
        uploads = []
        names = _unique([clean_name(f.filename, f"file-{i + 1}.log") for i, f in enumerate(files)])
        maps = _meta(form.get("meta") if isinstance(form.get("meta"), str) else None, len(files))  # type: ignore[arg-type]
        for f, name, lm in zip(files, names, maps):
            uploads.append(Upload(name, await f.read(), lm))
        text = form.get("text")
        if isinstance(text, str) and text.strip():
            uploads.append(Upload("pasted.log", text.encode("utf-8")))
        if not uploads:
            raise HTTPException(400, "no log in the request: add one or more `files` parts (or a `text` field)")
        return uploads
    if ctype in ("", "text/plain", "application/octet-stream") or ctype.startswith("text/"):
        body = await request.body()
        name = clean_name(request.query_params.get("name"), "pasted.log")
        return [Upload(name, body)]
    raise HTTPException(415, f"unsupported content type {ctype!r}: send text/plain, or multipart/form-data with `files`")


def apply_line_maps(scan: ScanResult, uploads: list[Upload]) -> None:
    """Put original line numbers (and sizes) back on everything the scanner found."""
    maps = {u.name: u.linemap for u in uploads if u.linemap is not None}
    if not maps:
        return
    for item in [*scan.events, *scan.facts, *scan.tails]:
        lm = maps.get(item.source)
        if lm is not None:
            item.line = lm.original(item.line)
    for stats in scan.inputs:
        lm = maps.get(stats.path)
        if lm is not None:
            stats.lines = max(stats.lines, lm.lines or 0)
            stats.bytes = max(stats.bytes, lm.bytes or 0)
