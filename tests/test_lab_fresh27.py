"""Readings learned from the lab's twenty-second draw of new fault kinds (tests/scenarios/lab-fresh27,
real torchrun + gloo runs, measured before any change): a failure a rank reported as a log record,
worked past to later steps and outlived (it ended cleanly while other ranks waited) is not where the
failure started; the rank that left its peers waiting is (a "skip the batch on OOM" guard on one
rank, which issues one gradient all_reduce fewer than its peers)."""

from __future__ import annotations

import rankdoctor

from .conftest import SCENARIOS, edited_copy

LAB27 = SCENARIOS / "lab-fresh27"


def test_a_rank_that_skipped_a_batch_on_oom_and_finished_left_its_peers_in_a_collective(tmp_path):
    for case, culprit in (("oom-skip-desync-w4-r3", 3), ("oom-skip-desync-w3-r1-notee", 1)):
        log = LAB27 / case / "console.log"
        d = rankdoctor.diagnose(log)
        top = d.diagnoses[0]
        assert (top.klass, top.initiating_rank) == ("collective-desync", culprit), (case, top.klass)
        assert any("ended cleanly while other ranks waited" in w for w in d.warnings), case
        # without the culprit's later steps, nothing says it went on from the failed allocation
        cut = edited_copy(tmp_path, log, lambda _, ln, c=culprit: not (f"rank {c} step" in ln and " loss " in ln
                                                                   and "skipping" not in ln)
                          and f"rank {c} training finished" not in ln)
        d = rankdoctor.diagnose(cut)
        assert d.diagnoses[0].klass == "host-oom", case
