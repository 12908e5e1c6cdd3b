"""Readings learned from the lab's eleventh draw of new fault kinds (tests/scenarios/lab-fresh16,
real torchrun + gloo runs, measured before any change): ranks that each gave up waiting at a line
of their own, while the rest of the job waited together at one line, are the odd ones (the two sides
of a send and receive that never matched); a slow evaluation inside the timeout is no failure."""

from __future__ import annotations

from rankdoctor.diagnose.ranktable import _odd_waiters

from .conftest import SCENARIOS, diagnose_lab_run

LAB16 = SCENARIOS / "lab-fresh16"


def test_both_sides_of_an_unmatched_send_and_receive_are_the_odd_waiters(kb):
    # rank 1 sent with tag 7 to rank 2, which received with tag 0: rank 1 timed out in its
    # send, rank 2 in its receive, ranks 0 and 3 in the next gradient all_reduce
    # (on the logs the two sides split the probability and no rank is named; the lock holds the
    # answer with the runs' Flight Recorder dumps, which names the pair)
    top = diagnose_lab_run(kb, LAB16 / "p2p-tag-mismatch-w4-r1").diagnoses[0]
    assert top.klass == "collective-desync"
    assert set(top.initiating_ranks or [top.initiating_rank]) <= {None, 1, 2}


def test_odd_waiters_need_one_shared_line_and_no_more_odd_ranks_than_ranks_at_it():
    assert _odd_waiters({0: "a:513", 1: "a:443", 2: "a:442", 3: "a:513"}, {0, 1, 2, 3}) == {1, 2}
    assert _odd_waiters({0: "a:513", 1: "a:513", 2: "a:513", 3: "a:9"}, {0, 1, 2, 3}) == {3}
    # two lines shared by two ranks each (two process groups): nobody is odd
    assert _odd_waiters({0: "a:1", 1: "a:1", 2: "a:2", 3: "a:2"}, {0, 1, 2, 3}) == set()
    # more ranks elsewhere than at the shared line: the shared line is not "the rest"
    assert _odd_waiters({0: "a:1", 1: "a:1", 2: "a:2", 3: "a:3", 4: "a:4"}, set(range(5))) == set()


def test_a_slow_evaluation_inside_the_timeout_is_no_failure(kb):
    for case in ("none-slow-eval-w4-r0", "none-slow-eval-w3-r1-notee"):
        assert diagnose_lab_run(kb, LAB16 / case).verdict == "no-failure-found", case
