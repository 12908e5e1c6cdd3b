"""Readings learned from the lab's fourteenth draw of new fault kinds (tests/scenarios/lab-fresh19,
real torchrun + gloo runs with Flight Recorder dumps, measured before any change): collectives of the
same shape reached from different lines are no extra collective when every rank went on past them and
every rank ended at the same sequence number (DDP's join() shadowing a finished rank's all_reduces;
flightrec.analyze); a rank whose DataLoader timed out is late and then dead of its own timeout, so
its peers' lost-peer reports fit the entry (dataloader-timeout explains a dead peer too)."""

from __future__ import annotations

from rankdoctor import api

from .conftest import SCENARIOS

LAB19 = SCENARIOS / "lab-fresh19"


def test_join_s_shadow_all_reduces_are_no_extra_collective():
    report = api.fr([str(LAB19 / "none-join-uneven-w4-r1" / "fr")])
    assert report.verdict == "consistent", [f.detail for f in report.findings]
    for case in ("none-join-uneven-w4-r1", "none-join-uneven-w3-r2-notee"):
        d = api.diagnose([str(LAB19 / case)])
        assert d.verdict == "no-failure-found", case


def test_a_dataloader_timeout_is_the_rank_that_was_late_even_though_it_then_died():
    for case, rank in (("dl-timeout-w4-r3", 3), ("dl-timeout-w3-r1-notee", 1)):
        d = api.diagnose([str(LAB19 / case)])
        top = d.diagnoses[0]
        assert (top.klass, top.initiating_rank) == ("straggler-timeout", rank), case


def test_an_unknown_exception_right_after_saving_a_checkpoint_is_a_checkpoint_failure():
    # every rank runs os.makedirs(folder) without exist_ok after logging "saving its shard to
    # ...-ckpt-step3": the ranks that lost the race raise FileExistsError, which no entry names
    for case, ranks in (("mkdir-race-all-w4", [1, 2, 3]), ("mkdir-race-all-w3-notee", [1, 2])):
        d = api.diagnose([str(LAB19 / case / "console.log"), str(LAB19 / case / "logs")])
        top = d.diagnoses[0]
        assert (top.klass, top.entry) == ("checkpoint-error", "checkpoint-unclassified-exception"), case
        # the ranks that lost the race, or no rank: the race is the job's (its label names none),
        # and a failure most of the job shares weighs as the job's (claim_job_share)
        assert top.initiating_ranks in (ranks, []), case


def test_activity_lines_need_the_line_before_the_exception(kb):
    from rankdoctor.diagnose.hypotheses import busy_with
    from rankdoctor.events import Event

    saving = Event("", "activity", "activity", "r1.log", 10, "INFO train: Saving model checkpoint to out/checkpoint-500", ts=100.0)
    raised = Event("", "python-exception", "trace", "r1.log", 14, "FileExistsError: [Errno 17] File exists: 'out'", ts=101.0)
    assert [e.id for e in busy_with(kb, saving, raised)] == ["checkpoint-unclassified-exception"]
    assert busy_with(kb, raised, saving) == []  # the line came after the exception
    reading = Event("", "activity", "activity", "r1.log", 10, "INFO train: loading data shard 3", ts=100.0)
    assert busy_with(kb, reading, raised) == []
