"""The byte scanner must find every line that plain Python `re` finds.

hyperscan is an optimisation, not a second definition of a match: on every captured log
in tests/scenarios, the (line, pattern) pairs the scanner reports must equal those of a
line-by-line `re` pass. (This caught a real engine bug: with some hyperscan builds, a
short pattern sharing its prefix with a long one was never reported in large buffers.)
"""

from __future__ import annotations

import pytest

from rankdoctor.ingest.prefix import Dialect, clean, parse_prefix, sniff_dialect
from rankdoctor.ingest.sources import looks_binary
from rankdoctor.scan import _INTERLEAVED, Scanner, scan_text

from .conftest import SCENARIOS

FILES = sorted(
    p
    for p in SCENARIOS.rglob("*")
    if p.is_file() and p.suffix in (".log", ".txt") and p.stat().st_size and not looks_binary(p.read_bytes()[:65536])
)


def _reference(scanner: Scanner, data: bytes) -> set[tuple[int, str]]:
    text = data.decode("utf-8", "replace")
    lines = text.split("\n")
    dialect = sniff_dialect(lines[:200])
    out = set()
    for no, raw in enumerate(lines, 1):
        line = clean(raw.replace("\x00", ""))
        segs = _INTERLEAVED.split(line) if "[rank" in line[1:] else [line]
        for pat in scanner.patterns:
            for seg in segs:
                _, at = parse_prefix(seg, dialect if isinstance(dialect, Dialect) else Dialect())
                if pat.rx.search(seg[at:] if pat.kind == "fact" else seg):
                    out.add((no, f"{pat.entry}/{pat.signature}"))
                    break
    return out


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(SCENARIOS)))
def test_scanner_finds_what_re_finds(kb, scanner, path):
    data = path.read_bytes()
    res = scan_text(kb, data, str(path), scanner=scanner)
    got = {(e.line, f"{e.entry}/{e.signature}") for e in res.events} | {(f.line, f"/{f.fact}") for f in res.facts}
    want = _reference(scanner, data)
    assert want - got == set(), f"scanner missed {sorted(want - got)[:5]}"
