"""Search the encyclopedia by words or by a pasted log line."""

from __future__ import annotations

import re

from .loader import KnowledgeBase
from .model import Entry

_WORD = re.compile(r"[A-Za-z0-9_]+")


def search(kb: KnowledgeBase, text: str) -> list[tuple[float, Entry, str]]:
    from ..scan import scan_text

    fired = {ev.entry: ev.signature for ev in scan_text(kb, text if text.endswith("\n") else text + "\n").events}
    words = {w.lower() for w in _WORD.findall(text) if len(w) > 2}
    out = []
    for e in kb:
        if e.id in fired:
            out.append((100.0, e, f"signature {fired[e.id]} matches"))
            continue
        hay = " ".join([e.id, e.title, e.class_, " ".join(e.tags), " ".join(e.systems), e.summary]).lower()
        score = sum(3.0 if w in e.id or w in e.title.lower() else 1.0 for w in words if w in hay)
        if score:
            out.append((score, e, "words: " + ", ".join(sorted(w for w in words if w in hay))[:60]))
    out.sort(key=lambda x: (-x[0], x[1].id))
    return out
