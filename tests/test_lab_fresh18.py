"""Readings learned from the lab's thirteenth draw of new fault kinds (tests/scenarios/lab-fresh18,
real torchrun + gloo runs, measured before any change): a warning record that every rank went on
working past (dynamo falling back to eager at its recompile limit) is no failure
(ranktable._handled, ranktable.warning_record); a torchelastic error file's whole-second
timestamp is read as the end of its second, so the rank's own NaN loss line printed earlier in
that second comes first (sources.torchelastic_error)."""

from __future__ import annotations

from datetime import datetime

from rankdoctor.diagnose.ranktable import on_one_clock, warning_record

from .conftest import SCENARIOS, diagnose_lab_run

LAB18 = SCENARIOS / "lab-fresh18"


def test_a_warning_every_rank_went_on_past_is_no_failure(kb):
    for case in ("none-recompile-limit-w4-r0", "none-recompile-limit-w2-r0-notee"):
        d = diagnose_lab_run(kb, LAB18 / case)
        assert d.verdict == "no-failure-found", case
        notes = [w for w in d.warnings if "a warning the program went on from (dynamo-recompile-limit)" in w]
        assert len(notes) == 1, (case, d.warnings)  # one note for all ranks' copies of the line


def test_warning_records_are_told_by_their_level():
    assert warning_record("[rank0]:W1206 17:25:37.624000 924 torch/_dynamo/convert_frame.py:1994] [0/4] "
                          "torch._dynamo hit config.recompile_limit (4)")
    assert warning_record("[2025-04-23 17:11:11] WARNING - run.py: main - 174: --reuse is not set")
    assert warning_record("node1:2041:2100 [0] NCCL WARN NET/IB : Got async event : port error")
    assert warning_record("/opt/lib/trainer.py:812: UserWarning: grad is NaN")
    assert not warning_record("[rank0]:E1206 17:25:37.624000 924 ProcessGroupGloo.cpp:144] Gloo connectFullMesh failed")
    assert not warning_record("2026-12-06 17:25:02,405 INFO train: rank 2 step 3 loss nan")
    assert not warning_record("RuntimeError: The total norm of order 2.0 for gradients from `parameters` is non-finite")


def test_glog_s_year_less_time_is_compared_with_a_dated_one_within_the_year():
    dated = datetime(2026, 12, 6, 17, 25, 38).timestamp()
    glog = (datetime(1970, 12, 6, 17, 25, 37) - datetime(1970, 1, 1)).total_seconds()
    a, b = on_one_clock(glog, dated)
    assert b - a == 1.0


def test_a_nan_divergence_is_a_failure_however_long_the_ranks_go_on(kb):
    # every rank's clip_grad_norm_ raised on the non-finite norm; rank 2's loss went nan first
    for case, rank in (("nonfinite-clip-w4-r2", 2), ("nonfinite-clip-w3-r0-notee", 0)):
        d = diagnose_lab_run(kb, LAB18 / case)
        top = d.diagnoses[0]
        assert (d.verdict, top.klass, top.initiating_rank) == ("diagnosed", "nan-divergence", rank), case
