"""Search the encyclopedia by words or by a pasted log line.

A pasted line that an entry's signature matches puts that entry first. Otherwise words are
scored by how rare they are across the encyclopedia (a word every NCCL entry contains says
little; `posix_fallocate` says a lot), counting the title, tags, summary and the entry's own
example log lines."""

from __future__ import annotations

import math
import re

from .loader import KnowledgeBase
from .model import Entry

_WORD = re.compile(r"[A-Za-z0-9_]+")


def _text(e: Entry) -> tuple[str, str]:
    hay = " ".join([e.id, e.title, e.class_, " ".join(e.tags), " ".join(e.systems), e.summary]).lower()
    lines = " ".join(x.text for x in e.examples.match).lower()
    return hay, lines


def search(kb: KnowledgeBase, text: str) -> list[tuple[float, Entry, str]]:
    from ..scan import scan_text

    fired = {ev.entry: ev.signature for ev in scan_text(kb, text if text.endswith("\n") else text + "\n").events}
    words = {w.lower() for w in _WORD.findall(text) if len(w) > 2}
    texts = {e.id: _text(e) for e in kb}
    n = max(len(texts), 1)
    idf = {w: math.log(1 + n / (1 + sum(1 for h, ln in texts.values() if w in h or w in ln))) for w in words}
    out = []
    for e in kb:
        # an entry whose signature finds a whole kind of line (every NCCL WARN line) says
        # little by matching: it is ranked by the words, as the entries that know the line are
        if e.id in fired and not e.catch_all:
            out.append((100.0, e, f"signature {fired[e.id]} matches"))
            continue
        hay, lines = texts[e.id]
        hits = sorted(w for w in words if w in hay or w in lines)
        score = 0.0
        for w in hits:
            weight = 2.0 if (w in e.id or w in e.title.lower()) else 1.0
            score += idf[w] * (weight + (1.0 if w in lines else 0.0))
        if score:
            out.append((score, e, "words: " + ", ".join(hits)[:60]))
    out.sort(key=lambda x: (-x[0], x[1].id))
    return out
