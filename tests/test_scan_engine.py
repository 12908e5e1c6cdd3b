"""The byte scanner must find every line that plain Python `re` finds.

hyperscan is an optimisation, not a second definition of a match: on every captured log
in tests/scenarios (a lab run's per-rank files are left out where its console.log, written
with --tee, holds the same lines), the (line, pattern) pairs the scanner reports must equal those of a
line-by-line `re` pass with the entries' own regexes. (This caught a real engine bug: with
some hyperscan builds, a short pattern sharing its prefix with a long one was never
reported in large buffers.) The same holds for what the scanner does so that no line can
stall it (a start guard on leading repeats, RE2 on long lines) and for what it does so
that its memory does not grow with the number of hits (first and last occurrences kept,
the rest counted).
"""

from __future__ import annotations

import io
import re

import pytest

from rankdoctor.diagnose.attribution import attribute
from rankdoctor.diagnose.engine import diagnose
from rankdoctor.events import FIRST, LAST
from rankdoctor.facts import FACTS
from rankdoctor.ingest.prefix import Dialect, clean, parse_prefix, sniff_dialect
from rankdoctor.ingest import sources as sources_mod
from rankdoctor.ingest.sources import Source, expand_inputs, looks_binary
from rankdoctor.parallel import scan_parallel
from rankdoctor.scan import LONG_LINE, Pattern, Scanner, scan_sources, scan_text, split_interleaved, start_guarded

from .conftest import SCENARIOS

def _teed(path) -> bool:
    """A per-rank file under a lab run's torchrun --log-dir whose run was started with --tee:
    its lines are also in the run's console.log (with the rank prefix), which is checked."""
    parts = path.relative_to(SCENARIOS).parts
    if "logs" not in parts:
        return False
    run = SCENARIOS.joinpath(*parts[: parts.index("logs")])
    cmd = run / "cmd.txt"
    return (run / "console.log").is_file() and cmd.is_file() and "--tee" in cmd.read_text(errors="replace")


FILES = sorted(
    p
    for p in SCENARIOS.rglob("*")
    if p.is_file() and p.suffix in (".log", ".txt") and p.stat().st_size and not looks_binary(p.read_bytes()[:65536])
    and not _teed(p)
)


def _reference(scanner: Scanner, data: bytes) -> set[tuple[int, str]]:
    text = data.decode("utf-8", "replace")
    lines = text.split("\n")
    dialect = sniff_dialect(lines[:200])
    out = set()
    plain = {id(p): re.compile(p.regex, p.flags) for p in scanner.patterns}  # as the entry has it
    for no, raw in enumerate(lines, 1):
        line = clean(raw.replace("\x00", ""))
        segs = split_interleaved(line)
        # each segment's message (its prefixes parsed once, not once per pattern)
        pairs = [(seg, seg[parse_prefix(seg, dialect if isinstance(dialect, Dialect) else Dialect())[1]:]) for seg in segs]
        for pat in scanner.patterns:
            for seg, message in pairs:
                if plain[id(pat)].search(message if pat.kind == "fact" else seg):
                    out.add((no, f"{pat.entry}/{pat.signature}"))
                    break
    return out


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(SCENARIOS)))
def test_scanner_finds_what_re_finds(kb, scanner, path):
    data = path.read_bytes()
    res = scan_text(kb, data, str(path), scanner=scanner)
    got = {(e.line, f"{e.entry}/{e.signature}") for e in res.events} | {(f.line, f"/{f.fact}") for f in res.facts}
    want = _reference(scanner, data)
    # a kind of line seen more than FIRST + LAST times keeps only its first and last ones, and
    # the line after the gap counts the lines it folded: those are counted, not missed
    folded: dict[str, int] = {}
    for what, n in [(f"{e.entry}/{e.signature}", e.folded) for e in res.events] + [(f"/{f.fact}", f.folded) for f in res.facts]:
        folded[what] = folded.get(what, 0) + n
    missed: dict[str, int] = {}
    for _line, what in want - got:
        missed[what] = missed.get(what, 0) + 1
    unfolded = {what: n for what, n in missed.items() if n != folded.get(what, 0)}
    assert not unfolded, f"scanner missed {sorted(want - got)[:5]} ({unfolded}, folded {folded})"


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


# -- no line can stall the scan --------------------------------------------------------------


def _all_patterns(kb) -> list[tuple[str, str, int, list[str]]]:
    """(name, regex, flags, lines to try) for every signature and structural fact."""
    rows = [(f"{e.id}/{s.id}", s.regex, re.I if s.ignore_case else 0, [x.text for x in (*e.examples.match, *e.examples.no_match)])
            for e in kb for s in e.signatures]
    examples = [x.text for e in kb for x in e.examples.match]
    return rows + [(f"fact/{fid}", rx, 0, examples) for fid, rx in FACTS.items()]


def test_start_guard_finds_the_same_match(kb):
    """``(?<!\\w)\\w+ : invalid`` finds what ``\\w+ : invalid`` finds (span and groups) on
    every example line, also with the line's own start glued to a word before it."""
    guarded = 0
    for name, regex, flags, lines in _all_patterns(kb):
        g = start_guarded(regex)
        if g == regex:
            continue
        guarded += 1
        want, got = re.compile(regex, flags), re.compile(g, flags)
        for line in lines:
            for text in (line, "xx-x.x" + line, line + " " + line):
                a, b = want.search(text), got.search(text)
                assert (a and (a.span(), a.groupdict())) == (b and (b.span(), b.groupdict())), (name, text)
    assert guarded >= 8  # ssh, NCCL "\\w+ : invalid ...", "\\d+ worker(s) were killed", ...


def test_start_guard_shapes():
    assert start_guarded(r"\w+ : invalid") == r"(?<!\w)\w+ : invalid"
    assert start_guarded(r"(?P<host>[\w.-]+): x") == r"(?P<host>(?<![\w.-])[\w.-]+): x"
    assert start_guarded(r"(?:WARN |\w+ ?: )Connect") == r"(?:WARN |(?<!\w)\w+ ?: )Connect"
    # a literal, an anchor or a bounded repeat first: nothing to guard
    for rx in (r"NCCL WARN \w+", r"^\s*rank", r"\d{2} x", r"(?i)\w+ timed out"):
        assert start_guarded(rx) == rx


def test_long_lines_go_to_re2_with_the_same_match(kb):
    """A line longer than LONG_LINE is matched by RE2 in linear time; on ASCII lines it finds
    what ``re`` finds (span and named groups)."""
    pad = "x " * (LONG_LINE // 2)
    checked = 0
    for name, regex, flags, lines in _all_patterns(kb):
        pat = Pattern("sig", "", name, "cause", regex, flags)
        for line in lines:
            if not line.isascii():
                continue
            for text in (line + " " + pad, pad + line):
                want = re.compile(regex, flags).search(text)
                got = pat.search(text)
                assert (want and (want.span(), want.groupdict())) == (got and (got.span(), got.groupdict())), (name, text[:200])
                checked += 1
    assert checked > 1000


def test_a_hostile_long_line_is_linear(kb, scanner):
    """``rank`` + a million spaces + ``exitcode: -9``: hours of backtracking for the old
    SIGKILL signature under ``re``; RE2 reads it once."""
    res = scan_text(kb, "rank" + " " * 1_000_000 + "exitcode: -9 (pid: 4242)\n", scanner=scanner)
    assert res.inputs[0].lines == 1


# -- memory flat in the number of hits ---------------------------------------------------------

WATCHDOG = (
    "[rank{r}]:[E ProcessGroupNCCL.cpp:563] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=15734, "
    "OpType=ALLREDUCE, NumelIn=220084533, NumelOut=220084533, Timeout(ms)=600000) ran for 600037 milliseconds before timing out."
)


def _watchdogs(events, rank: int):
    return [e for e in events if e.signature == "watchdog-timeout" and e.rank == rank]


def test_repeats_keep_first_and_last_and_the_count(kb, scanner):
    n = 1000
    lines = [WATCHDOG.format(r=r) for _ in range(n) for r in (0, 1)]
    res = scan_text(kb, "\n".join(lines) + "\n", scanner=scanner)
    for r in (0, 1):
        kept = _watchdogs(res.events, r)
        assert len(kept) == FIRST + LAST
        assert sum(1 + e.folded for e in kept) == n  # the true count is carried
        assert [e.line for e in kept] == [2 * i + 1 + r for i in [*range(FIRST), *range(n - LAST, n)]]
        assert kept[FIRST].folded == n - FIRST - LAST and not any(e.folded for e in kept if e is not kept[FIRST])
    assert [e.line for e in res.events] == sorted(e.line for e in res.events)  # input order


def test_a_kept_cause_has_the_lines_before_it(kb, scanner):
    """The traceback before a cause is read for the occurrences kept (first and last), each
    its own, also across chunks."""
    oom = "[rank3]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    blocks = [f"[rank3]: step {i} before\n{oom}\n" for i in range(400)]
    data = "".join(blocks).encode()
    res = scan_sources(kb, [Source("x.log", lambda: io.BytesIO(data), len(data))], scanner, chunk_size=4096)
    for kept in ([e for e in res.events if e.signature == "cuda-oom-tried-to-allocate"], [f for f in res.facts if f.fact == "py-exception"]):
        assert len(kept) == FIRST + LAST and sum(1 + e.folded for e in kept) == 400
        for e in kept:
            assert e.context[-1] == f"[rank3]: step {(e.line - 2) // 2} before"


def test_repeat_cause_and_evidence_count_the_folded_lines(kb, scanner):
    """A repeat_cause threshold and the report's "+N similar" see every occurrence, not only
    those kept."""
    n = 500
    text = "".join(f"[rank1]: step {i} grad_norm: nan\n" for i in range(n))
    att = attribute(kb, scan_text(kb, text, scanner=scanner))
    grads = [e for e in att.events if e.signature == "grad-norm-nan"]
    assert len(grads) == FIRST + LAST and {e.captures.get("repeats") for e in grads} == {str(n)}
    d = diagnose(kb, scan_text(kb, "".join(WATCHDOG.format(r=0) + "\n" for _ in range(n)), scanner=scanner))
    shown = [e for f in d.diagnoses for e in f.evidence if "Watchdog caught" in e.text]
    assert shown and shown[0].repeats == n - 1 and "+499 similar" in shown[0].repeats_note


def test_ranges_merge_to_what_one_pass_keeps(kb, scanner, tmp_path, monkeypatch):
    """A file split into byte ranges: first occurrences from the earliest ranges, last from
    the latest, counts summed: the same result as one pass."""
    monkeypatch.setattr(sources_mod, "MAX_LINE", 1024)  # (so that 2 KiB chunks split exactly)
    log = tmp_path / "console.log"
    log.write_text("".join(f"[rank{i % 3}]: step {i}\n{WATCHDOG.format(r=i % 3)}\n" for i in range(3000)))
    src = expand_inputs([str(log)])
    seq = scan_sources(kb, src, scanner, chunk_size=2048)
    par = scan_parallel(kb, src, jobs=2, scanner=scanner, chunk_size=2048, range_bytes=16384, min_parallel_bytes=0)
    assert par == seq and par.events == seq.events
    assert sum(1 + e.folded for e in par.events if e.signature == "watchdog-timeout") == 3000
