"""Readings learned from the lab's twenty-fourth draw of new fault kinds (tests/scenarios/lab-fresh29,
real torchrun + gloo runs, measured before any change): one rank writes evaluation samples while the
next rank, whose node sets a collective timeout under a third of the others', gives up waiting for
it first. Of the ranks that never report the timed-out collective, those whose last line of work is
the one the waiting rank printed last, at the same moment, stood where it began to wait: they wait
too (their longer timeout had not run out). The rank the others waited for is the one whose last
line is elsewhere (``ranktable._level_with_waiters``, used where hypotheses.py reads the ranks absent
from a timeout report)."""

from __future__ import annotations

import rankdoctor

from .conftest import SCENARIOS, edited_copy

LAB29 = SCENARIOS / "lab-fresh29"
RUNS = (("timeout-mismatch-w4-r1", 1, 2), ("timeout-mismatch-w3-r0-notee", 0, 1))


def test_ranks_level_with_the_waiting_rank_wait_too(tmp_path):
    for case, culprit, short in RUNS:
        log = LAB29 / case / "console.log"
        d = rankdoctor.diagnose(log, LAB29 / case / "logs")
        others = set(range(4 if "-w4-" in case else 3)) - {culprit, short}
        assert d.table.level == others, case
        top = d.diagnoses[0]
        assert (top.klass, top.initiating_rank) == ("straggler-timeout", culprit), case
        assert short not in (top.initiating_ranks or []), case
        # without the culprit's line about its other work, it too stood where the waiting rank stood
        cut = edited_copy(tmp_path, log, lambda _, ln: "writing evaluation samples" not in ln)
        assert culprit in rankdoctor.diagnose(cut).table.level, case
