"""Readings learned from the lab's twelfth draw of new fault kinds (tests/scenarios/lab-fresh17,
real torchrun + gloo runs with Flight Recorder dumps, measured before any change): a collective of
the same op and shape reached from another line is no extra collective when the odd rank stopped
right there while the others went on past it (flightrec.analyze: the op completed with everyone)."""

from __future__ import annotations

from rankdoctor import api

from .conftest import SCENARIOS

LAB17 = SCENARIOS / "lab-fresh17"


def test_an_op_reached_from_another_line_that_completed_is_no_extra_collective():
    # rank 3 ran its step's backward from a probe (another line), then a second backward raised:
    # its last op matched the others', who went on to the next step's all_reduce
    report = api.fr([str(LAB17 / "backward-twice-w4-r3" / "fr")])
    kinds = {f.kind for f in report.findings}
    assert "extra-collective" not in kinds
    assert any(f.kind == "lagging" and f.culprit_ranks == [3] for f in report.findings)


def test_with_the_dumps_the_second_backward_is_the_rank_s_own_exception():
    d = api.diagnose([str(LAB17 / "backward-twice-w4-r3")])
    top = d.diagnoses[0]
    assert (top.klass, top.initiating_rank) == ("peer-rank-crashed", 3)
