"""Small shared pieces of the engine: how events are ordered and fingerprinted."""

from __future__ import annotations

import math
import re
from functools import lru_cache

from ..events import Event
from ..ingest.prefix import parse_prefix

MAX_EVIDENCE = 12

_MASK = re.compile(r"0x[0-9a-fA-F]+|\d+")

PREFIX_MASK = re.compile(r"^(?:\[[^\]]{0,80}\]:?\s*|\S+:\d+:\d+ \[\d+\] )+")


def event_key(e: Event) -> tuple:
    return (e.ts if e.ts is not None else math.inf, e.source, e.line)


@lru_cache(maxsize=1 << 16)  # each finding groups the same lines again
def fingerprint(text: str) -> str:
    """Mask what varies between ranks (numbers, addresses, prefixes) so the same message
    from many ranks groups into one (Drain-style)."""
    return _MASK.sub("#", PREFIX_MASK.sub("", text)).strip()


def said(text: str, limit: int | None = 120) -> str:
    """What a line says, for a note: the text after its prefixes, cut to ``limit`` characters
    (None: whole)."""
    _, at = parse_prefix(text)
    return text[at:].strip()[:limit]
