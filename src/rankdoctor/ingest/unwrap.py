"""Logs pasted from a terminal or an issue thread are often hard-wrapped: every line cut at
the same width, the rest of it on the next line ("...WorkNCCL(SeqNum=4, OpType=BROADCAST,
NumelIn=112, Numel" / "Out=112, Timeout(ms)=1800000) ran for ..."). No signature can match
a message cut in two. A small input whose lines are mostly of one width is re-joined: a
line that fills the width exactly and is cut inside a word or number continues on the next
line, unless
the next line starts a record of its own (indentation, a rank prefix, a timestamp, a glog
header, a traceback frame): fixed-width tables such as Megatron's iteration lines stay as
they are. The continuation's content moves up and its line is left empty, so line
numbers still point at the physical lines of the file.
"""

from __future__ import annotations

import re
from collections import Counter

from .prefix import parse_prefix

MAX_BYTES = 4 * 1024 * 1024  # only pastes and small logs; big files are written by programs, not terminals
MIN_WIDTH = 60
# a line that begins a record of its own is never a continuation
_NEW_RECORD = re.compile(
    rb"^(?:\s|[=*#~-]{5}|(?:[\w.]*\.)?[A-Z]\w*(?:Error|Exception|Warning|Interrupt)\b|(?:WARNING|INFO|ERROR|DEBUG|CRITICAL|FATAL)\b|\d+\s|\[|\(|\d{4}-\d\d-\d\d|[IWEFD]\d{4} |\d+: |[\w.-]+:\d+:\d+ \[|Traceback|File \"|frame #|[A-Z][a-z]{2} [A-Z][a-z]{2} +\d)"
)


_GLUE_AFTER = b"=(,:/"  # a cut right after these is inside an expression ("NumelIn=" / "513,")
_GLUE_BEFORE = b"=),.:;]"  # a line cannot start a record with these ("NumelOut" / "=2052, Timeout")


def _mid_token(line: bytes, nxt: bytes) -> bool:
    """The cut falls inside a word, a number or a key=value pair ("Numel" / "Out=112",
    "NumelOut=5" / "164000,", "NumelOut" / "=2052"): a line that ends with a whole word
    followed by a space or padding was not cut."""
    if not line or not nxt:
        return False
    a, b = line[-1:], nxt[:1]
    return (a.isalnum() or a in _GLUE_AFTER) and (b.isalnum() or b in _GLUE_BEFORE)


def _has_prefix(line: bytes) -> bool:
    """The line starts with a rank / host / time / pid prefix (a grep file name, NCCL's
    host:pid:tid [dev]): it is a record of its own, however wide the line before it."""
    a, _ = parse_prefix(line[:300].decode("utf-8", "replace"))
    return any(x is not None for x in (a.rank, a.local_rank, a.host, a.pid, a.ts)) or bool(a.extra)


def unwrap(data: bytes) -> tuple[bytes, int] | None:
    """The re-joined text and how many lines were joined, or None when the text does not
    look hard-wrapped."""
    if len(data) > MAX_BYTES or b"\n" not in data:
        return None
    lines = data.split(b"\n")
    widths = [len(x.rstrip(b"\r")) for x in lines]
    long = [w for w in widths if w >= MIN_WIDTH]
    if len(long) < 3:
        return None
    width, count = Counter(long).most_common(1)[0]
    if count < 3 or count < 0.3 * len(long):
        return None
    out = [x.rstrip(b"\r") for x in lines]
    joined = 0
    i = 0
    while i < len(out) - 1:
        head = i
        while (
            i < len(out) - 1
            and len(lines[i].rstrip(b"\r")) == width
            and _mid_token(lines[i].rstrip(b"\r"), out[i + 1])
            and not _NEW_RECORD.match(out[i + 1])
            and not _has_prefix(out[i + 1])
            and out[i + 1][:12] != lines[head].rstrip(b"\r")[:12]  # starts as the line it would continue: a record of its own
        ):
            out[head] = out[head] + out[i + 1].rstrip(b" ")
            out[i + 1] = b""
            joined += 1
            i += 1
        i += 1
    if not joined:
        return None
    return b"\n".join(out), joined


# A captured output kept as a string literal: a notebook cell printing a dict with a
# subprocess's "stdout"/"stderr", a JSON field, a Python repr - the whole log on one physical
# line, its line breaks written as the two characters backslash and n.
_ESCAPED_BREAK = b"\\n"
MIN_ESCAPED_BREAKS = 5  # fewer are a message that mentions "\n", or a Windows path
MIN_ESCAPED_LINE = 200
_ESCAPES = re.compile(rb"\\(?:n|r|t|\\|'|\"|x1b|u001b|e|033)")
_ESCAPED = {b"\\n": b"\n", b"\\r": b"\r", b"\\t": b"\t", b"\\\\": b"\\", b"\\'": b"'", b'\\"': b'"',
            b"\\x1b": b"\x1b", b"\\u001b": b"\x1b", b"\\e": b"\x1b", b"\\033": b"\x1b"}


def unescape_lines(data: bytes) -> tuple[bytes, int] | None:
    """The text with every line that holds an escaped captured output (five or more literal
    ``\\n`` in a line of 200 characters or more) replaced by the lines it holds, and how many
    such lines there were; None when there is none. Only small inputs (``MAX_BYTES``): logs
    written by programs to files break their lines."""
    if len(data) > MAX_BYTES or data.count(_ESCAPED_BREAK) < MIN_ESCAPED_BREAKS:
        return None
    lines = data.split(b"\n")
    done = 0
    for i, line in enumerate(lines):
        if len(line) >= MIN_ESCAPED_LINE and line.count(_ESCAPED_BREAK) >= MIN_ESCAPED_BREAKS:
            lines[i] = _ESCAPES.sub(lambda m: _ESCAPED[m.group(0)], line)
            done += 1
    return (b"\n".join(lines), done) if done else None
