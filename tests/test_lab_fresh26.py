"""Readings learned from the lab's twenty-first draw of new fault kinds (tests/scenarios/lab-fresh26,
real torchrun + gloo runs, measured before any change): a non-finite loss after which its rank
reported finite losses again is a bad step the program got past, and ranks that stopped together
after a line of work the waiting ranks never got to are blocked, not busy (the smaller side of the
two is where the program's path differs)."""

from __future__ import annotations

import rankdoctor

from .conftest import SCENARIOS, edited_copy

LAB26 = SCENARIOS / "lab-fresh26"


def test_a_nan_step_every_rank_skipped_is_no_divergence(tmp_path):
    # rank 1 warns "loss is nan, skipping this step's update on every rank", every rank skips
    # that step together and trains on to the end with finite losses
    log = LAB26 / "none-nan-skip-w3-r1-notee" / "console.log"
    d = rankdoctor.diagnose(log)
    assert d.verdict == "no-failure-found", d.diagnoses[:1]
    assert any("read as a bad step the program got past" in w for w in d.warnings)
    d = rankdoctor.diagnose(LAB26 / "none-nan-skip-w4-r3" / "logs")
    assert d.verdict == "no-failure-found"
    # without the finite losses rank 1 reported after it, nothing says the loss came back
    cut = edited_copy(tmp_path, log, lambda no, ln: not (no > 15 and "rank 1 step" in ln and " loss " in ln))
    d = rankdoctor.diagnose(cut)
    assert d.diagnoses and (d.diagnoses[0].klass, d.diagnoses[0].initiating_rank) == ("nan-divergence", 1)


def test_ranks_that_stopped_together_after_a_step_the_waiting_rank_skipped_are_blocked_apart():
    # rank 1 skipped building a metrics sub-group and waits in the next gradient all_reduce; ranks
    # 0, 2 and 3 logged "building the metrics group" within a millisecond and went quiet
    for case, culprit, others in (("new-group-skip-w4-r1", 1, {0, 2, 3}), ("new-group-skip-w3-r2-notee", 2, {0, 1})):
        run = LAB26 / case
        d = rankdoctor.diagnose(run / "console.log")
        assert (d.table.waiting_side, d.table.stopped_side) == ({culprit}, others), case
        top = d.diagnoses[0]
        assert (top.klass, top.initiating_rank) == ("collective-desync", culprit), (case, top.klass, top.initiating_ranks)


def test_a_rank_that_loads_a_checkpoint_still_being_written_is_where_it_started():
    for case, rank in (("ckpt-read-race-w4-r2", 2), ("ckpt-read-race-w3-r1-notee", 1)):
        d = rankdoctor.diagnose(LAB26 / case / "console.log")
        top = d.diagnoses[0]
        assert (top.klass, top.initiating_rank) == ("checkpoint-error", rank), case
