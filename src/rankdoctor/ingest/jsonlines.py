"""Logs kept as JSON lines, one record per line: Docker's json-file driver
(``{"log":"[rank3]: Traceback ...\\n","stream":"stderr","time":"2024-05-01T10:00:00.123Z"}``),
journald's ``journalctl -o json`` (``MESSAGE``), Google Cloud Logging exports (``textPayload``),
structured loggers (``message`` / ``msg``) and benchmark runners that wrap each output line
(milabench's ``{"event": "line", "data": "...", "pipe": "stderr"}``). A line's text is inside a
JSON string there, escaped, after the record's own keys: a traceback's lines do not start a line,
and a quote is ``\\"``. A small input whose lines are mostly such records is read as the text
they carry, each record's time in front of its text (so the prefix reader takes it as the line's
time); a record that carries several lines becomes several lines, and other lines stay as they
are.
"""

from __future__ import annotations

import json

# the keys a record keeps its text under, in the order they are tried
TEXT_KEYS = ("log", "message", "msg", "MESSAGE", "textPayload", "data", "line")
TIME_KEYS = ("time", "timestamp", "@timestamp", "ts")
_SAMPLE = 50  # non-empty lines looked at to decide
_SHARE = 0.8  # of them records with text, for the input to be read as records


def _text_of(line: bytes) -> tuple[str, str] | None:
    """The text a JSON record carries and its time (ISO text, or ""), or None."""
    s = line.strip()
    if not (s.startswith(b"{") and s.endswith(b"}")):
        return None
    try:
        doc = json.loads(s)
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict):
        return None
    text = next((v for k in TEXT_KEYS if isinstance(v := doc.get(k), str)), None)
    if text is None:
        return None
    when = next((v for k in TIME_KEYS if isinstance(v := doc.get(k), str) and v[:4].isdigit() and "T" in v[:11]), "")
    return text, when


def _head_lines(data: bytes, n: int) -> list[bytes]:
    """The first ``n`` lines of ``data``, without splitting the rest of it (this runs on every
    small plain log, most of which are not JSON records)."""
    out: list[bytes] = []
    start = 0
    while len(out) < n:
        end = data.find(b"\n", start)
        if end < 0:
            out.append(data[start:])
            break
        out.append(data[start:end])
        start = end + 1
    return out


def read_records(data: bytes) -> tuple[bytes, int] | None:
    """The text of an input kept as JSON records, and how many records were read; None when
    the input is not mostly JSON records with a text field."""
    sample = [ln for ln in _head_lines(data, _SAMPLE * 4) if ln.strip()][:_SAMPLE]
    if len(sample) < 2:
        return None
    hits = sum(1 for ln in sample if _text_of(ln) is not None)
    if hits < 2 or hits < _SHARE * len(sample):
        return None
    out: list[str] = []
    n = 0
    for ln in data.split(b"\n"):
        got = _text_of(ln)
        if got is None:
            out.append(ln.decode("utf-8", "replace"))
            continue
        n += 1
        text, when = got
        parts = text.rstrip("\n").split("\n") or [""]
        out.extend(f"{when} {p}" if when else p for p in parts)
    return "\n".join(out).encode("utf-8"), n
