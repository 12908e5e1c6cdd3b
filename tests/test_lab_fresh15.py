"""Readings learned from the lab's tenth draw of new fault kinds (tests/scenarios/lab-fresh15,
real torchrun + gloo runs, measured before any change): an exception the program logged with its
traceback and got past (every rank went on working, none died or waited) is no failure
(ranktable._handled); gloo's size check printed without a rank prefix is the report of the one
rank that aborted, about what its peer sent, which does not make that rank the odd one."""

from __future__ import annotations

from rankdoctor.diagnose.ranktable import logged_at
from rankdoctor.events import Event

from .conftest import SCENARIOS, diagnose_lab_run

LAB15 = SCENARIOS / "lab-fresh15"


def _run(kb, case: str):
    return diagnose_lab_run(kb, LAB15 / case)


def test_a_logged_exception_every_rank_got_past_is_no_failure(kb):
    for case in ("none-handled-w4-r1", "none-handled-w3-r0-notee"):
        d = _run(kb, case)
        assert d.verdict == "no-failure-found", case
        assert any("logged and got past" in w for w in d.warnings), case


def test_only_a_log_record_just_before_the_traceback_makes_an_exception_logged():
    ctx = ["2026-12-06 15:24:51,935 ERROR train: rank 1: metrics upload failed at step 3, skipping it",
           "Traceback (most recent call last):", '  File "train.py", line 398, in main', "    raise ConnectionError(...)"]
    logged = Event("", "python-exception", "trace", "x.log", 5, "ConnectionError: refused", context=ctx)
    assert logged_at(logged) is not None
    uncaught = Event("", "python-exception", "trace", "x.log", 5, "ConnectionError: refused",
                     context=["2026-12-06 15:24:51,833 INFO train: rank 1 step 2 loss 9.8997", *ctx[1:]])
    assert logged_at(uncaught) is None


def test_a_size_check_report_without_a_prefix_does_not_make_the_aborting_rank_the_odd_one(kb):
    # rank 2 all_reduced float64 where ranks 0 and 1 used float32; rank 1 received the 8 bytes
    # and aborted ("op.preamble.length <= op.nbytes. 8 vs 4"), printed without --tee
    d = _run(kb, "allreduce-dtype-w3-r2-notee")
    top = d.diagnoses[0]
    assert top.klass == "collective-desync"
    assert not (d.verdict == "diagnosed" and top.initiating_rank == 1)
