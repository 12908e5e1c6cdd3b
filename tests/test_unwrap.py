"""Hard-wrapped pastes are re-joined before scanning; everything else is left alone."""

from __future__ import annotations

from rankdoctor.ingest.unwrap import unwrap
from rankdoctor.scan import scan_text

from .conftest import SCENARIOS

WRAPPED = SCENARIOS / "real-holdout8" / "openr1-grpo-broadcast-seq4-timeout" / "log.txt"  # cut at 140 columns
PADDED = SCENARIOS / "real-holdout7" / "lightning-rank0-allgather-vs-broadcast" / "log.txt"  # cut and space-padded
FIXED_WIDTH = SCENARIOS / "real-holdout7" / "megatron-ds-grad-norm-nan-iterations" / "log.txt"  # whole lines of one width


def test_wrapped_watchdog_lines_are_joined_and_keep_their_line_numbers(kb):
    data = WRAPPED.read_bytes()
    text, n = unwrap(data)
    assert n >= 5
    assert text.count(b"\n") == data.count(b"\n")  # continuation lines are left empty, not removed
    joined = [ln for ln in text.split(b"\n") if b"Watchdog caught" in ln]
    # the excerpt's first line is already cut at its start (not at the wrap width): it stays as it is
    assert sum(b"NumelOut=112, Timeout(ms)=1800000) ran for" in ln for ln in joined) >= 5
    scan = scan_text(kb, text)
    assert any(e.entry == "nccl-watchdog-timeout" for e in scan.events)


def test_space_padded_wrap_is_joined(kb):
    text, n = unwrap(PADDED.read_bytes())
    assert n >= 1 and b"NumelOut=5164000, Timeout(ms)=1800000)" in text
    # cut between a key and its "=value": "...NumelIn=513, NumelOut" / "=2052, Timeout(ms)=..."
    assert b"OpType=_ALLGATHER_BASE, NumelIn=513, NumelOut=2052, Timeout(ms)=1800000)" in text


def test_fixed_width_lines_and_ordinary_logs_are_left_alone():
    assert unwrap(FIXED_WIDTH.read_bytes()) is None
    for p in sorted((SCENARIOS / "lab").glob("*/console.log")):
        assert unwrap(p.read_bytes()) is None, p


def test_the_cli_says_it_rejoined_lines():
    from .conftest import run_cli

    r = run_cli("diagnose", str(WRAPPED))
    assert r.returncode in (1, 3)
    assert b"hard-wrapped line(s) re-joined" in r.stdout
