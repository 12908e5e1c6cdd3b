"""Hostile and heavy input for the scanner (issue 12): no line may stall it, and its memory
must not grow with the number of lines that match.

The attack run found ``rank`` + a million spaces + ``exitcode: -9`` backtracking for hours
in Python's ``re`` (the SIGKILL signature's ``rank\\s*:?\\s*``), and 128 MB of one real
watchdog line repeated holding 905 MB (an event object per line). Times are in
bench/memory_hits.md; these tests check outcomes: the run ends, every signature passes
the backtracking check, peak memory stays far below what one object per line needs.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rankdoctor.events import FIRST, LAST
from rankdoctor.facts import FACTS
from rankdoctor.kb.backtrack import problems

from .conftest import ROOT

HITS = 160_000  # lines of one watchdog line: 38 MB; one object per line held ~240 MB for them
SCAN_GROWTH_MB = 80  # what scanning them adds to the peak (a few MB measured; one event per hit added ~190 MB)


def test_backtracking_line_through_the_cli(tmp_path):
    """The line that took hours ends, with a normal exit status and no traceback."""
    log = tmp_path / "attack.log"
    log.write_text("rank" + " " * 1_000_000 + "exitcode: -9\n")
    for args, stdin in (([str(log)], None), (["-"], log.read_bytes())):
        proc = subprocess.run(
            [sys.executable, "-m", "rankdoctor.cli", "diagnose", *args, "--format", "json"],
            input=stdin, capture_output=True, cwd=ROOT, timeout=60,
        )
        assert proc.returncode in (0, 1, 3), proc.stderr.decode()[-2000:]
        assert b"Traceback" not in proc.stderr


def test_every_regex_passes_the_backtracking_check(kb):
    bad = [f"{e.id}/{s.id}: {why}" for e in kb for s in e.signatures for why in problems(s.regex, s.ignore_case)]
    bad += [f"fact/{fid}: {why}" for fid, rx in FACTS.items() for why in problems(rx)]
    assert bad == []


@pytest.mark.parametrize(
    "regex, stalls",
    [
        (r"rank\s*:?\s*(?P<rank>\d+) \(local[_ ]rank: \d+\)\s*exitcode\s*: -9\b", True),  # the attack's signature, before
        (r"rank\s*(?::\s*)?(?P<rank>\d+) \(local[_ ]rank: \d+\)\s*exitcode\s*: -9\b", False),  # ... and now
        (r"loss['\"]?\s*(?:[:=]\s*|\s+)nan\b", True),
        (r"\S+[^:]*: file write failed", True),
        (r"\s* \s*x", True),
        (r".*\s+x", True),
        (r"\s*\s+$", True),
        (r"(\w+\s?)*$", True),
        (r"(a+)+b", True),
        (r"(?:(?:,\d+)*)*x", True),
        (r"x(?=\s*\s*y)", True),
        (r"(\d+,)*x", False),
        (r"\d+(?:, ?\d+)*x", False),
        (r"(?:[^\]]*\])*", False),
        (r"\s+(?P<x>\d+)\s+", False),
        (r"foo.*bar.*baz", False),
        (r"\w+(?:.*?y)?", False),  # nothing after it can fail: \w+ never gives back twice
        (r"\s*\s+", False),
    ],
)
def test_backtracking_check_shapes(regex, stalls):
    assert bool(problems(regex)) == stalls, problems(regex)


_CHILD = """
import resource, sys
from rankdoctor.ingest.sources import expand_inputs
from rankdoctor.kb.loader import load_kb
from rankdoctor.scan import Scanner, scan_sources

kb = load_kb(check=False)
scanner = Scanner(kb)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
res = scan_sources(kb, expand_inputs([sys.argv[1]]), scanner)
hits = [e for e in res.events if e.signature == "watchdog-timeout"]
print(len(hits), sum(1 + e.folded for e in hits), before, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
"""


def test_memory_is_flat_in_the_number_of_hits(kb, tmp_path):
    """A log that is one real watchdog line (an entry example) over and over: the scan keeps
    the first and last occurrences, counts them all, and its peak memory stays bounded."""
    line = next(
        x.text for x in kb.get("nccl-watchdog-timeout").examples.match if x.text.startswith("[rank") and "Watchdog caught" in x.text
    )
    log = tmp_path / "hits.log"
    with open(log, "w", encoding="utf-8") as fh:
        block = (line + "\n") * 1000
        for _ in range(HITS // 1000):
            fh.write(block)
    out = subprocess.run([sys.executable, "-c", _CHILD, str(log)], capture_output=True, cwd=ROOT, timeout=300, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    kept, counted, loaded_mb, peak_mb = map(int, out.stdout.split())
    assert counted == HITS
    assert kept == FIRST + LAST
    # what the scan adds to the peak after the knowledge base is loaded (that load's own peak
    # depends on whether the pattern cache was warm): one event per hit was ~190 MB here
    assert peak_mb - loaded_mb < SCAN_GROWTH_MB, f"peak RSS {loaded_mb} MB after loading, {peak_mb} MB after the scan"
    assert peak_mb < 300, f"peak RSS {peak_mb} MB"
