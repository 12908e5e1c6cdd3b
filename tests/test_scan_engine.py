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
from rankdoctor.scan import Scanner, scan_text, split_interleaved

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
        segs = split_interleaved(line)
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


def test_prefilter_starts_at_the_longest_literal():
    from rankdoctor.scan import prefilter, to_hs

    ssh = r"(?P<host>[\w.-]+): [\w.-]+@[\w.-]+: Permission denied \((?:publickey|password)[\w,-]*\)"
    assert to_hs(ssh) == rb": Permission denied \((?:publickey|password)[\w,-]*\)"
    # a top-level alternation, a leading global flag, a short literal: used whole
    assert prefilter(r"foo \d+|bar baz qux") == r"foo \d+|bar baz qux"
    assert prefilter(r"(?i)\w+ timed out after") == r"(?i)\w+ timed out after"
    assert prefilter(r"\d+ab\d+") == r"\d+ab\d+"
    # quantified characters and escapes are not literal; a class with "]" inside is one atom
    assert prefilter(r"[]\w]+x?y Watchdog caught\.") == r"y Watchdog caught\."
    assert prefilter(r"^\s*\[(?:\d+)\]:[ \t]*$") == r"^\s*\[(?:\d+)\]:[ \t]*$"


def test_prefilter_keeps_every_example_line(kb):
    """The cut pattern is a prefilter: every line the whole regex matches must match it."""
    import re

    from rankdoctor.scan import to_hs

    checked = 0
    for e in kb:
        for s in e.signatures:
            hs = to_hs(s.regex).decode()
            try:
                cut = re.compile(hs, re.I if s.ignore_case else 0)
            except re.error:  # hyperscan-only syntax; the scanner test above covers it
                continue
            full = re.compile(s.regex, re.I if s.ignore_case else 0)
            for ex in e.examples.match:
                line = ex.text
                if full.search(line):
                    assert cut.search(line), (e.id, s.id, hs, line)
                    checked += 1
    assert checked > 500
