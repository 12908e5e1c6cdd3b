"""Readings learned from the lab's eighteenth draw of new fault kinds (tests/scenarios/lab-fresh23,
real torchrun + gloo runs, measured before any change): a rooted collective's root-only side is no
mismatch (gather's output list exists on the destination only), and in a group that stopped at
different sequence numbers the ranks that stopped earliest are where it stopped advancing (a
collective completes only when every member issued it)."""

from __future__ import annotations

import rankdoctor

from .conftest import SCENARIOS

LAB23 = SCENARIOS / "lab-fresh23"


def test_the_gather_destination_is_no_size_mismatch_and_the_earliest_stop_is_named():
    # rank 3 raised in gather's argument check (seq 10 never issued); rank 0, the destination,
    # waits in the gather; ranks 1 and 2 sent their part and went on to the next all_reduce
    report = rankdoctor.fr([str(LAB23 / "gather-list-nondst-w4-r3" / "fr")])
    kinds = {f.kind for f in report.findings}
    assert not kinds & {"size-mismatch", "type-mismatch", "dtype-mismatch", "extra-collective"}, report.findings
    lagging = [f for f in report.findings if f.kind == "lagging"]
    assert lagging and lagging[0].culprit_ranks == [3]
    assert "blocked in a collective" in lagging[0].detail


def test_with_the_dumps_the_crash_of_the_non_destination_rank_is_named():
    for case, rank in (("gather-list-nondst-w4-r3", 3), ("gather-list-nondst-w3-r2-notee", 2)):
        run = LAB23 / case
        d = rankdoctor.diagnose([run / "console.log", run / "logs"], fr=run / "fr")
        top = d.diagnoses[0]
        assert (top.klass, top.initiating_rank) == ("peer-rank-crashed", rank), case
