"""Readings learned from the lab's sixth draw of new fault kinds (tests/scenarios/lab-fresh11,
real torchrun + gloo runs, measured before any change): one rank that finished while every other
rank waited for it is the odd one (features.outlived_peers leaves it to left_early); an entry's
lines that carry no rank may be the one accused rank's (hypotheses.generate); an exception only
weak signatures name is also an exception of its own (hypotheses.strongly_named_lines)."""

from __future__ import annotations


from .conftest import SCENARIOS, diagnose_lab_run

LAB11 = SCENARIOS / "lab-fresh11"


def _run(kb, case: str):
    return diagnose_lab_run(kb, LAB11 / case)


def test_the_one_rank_that_finished_while_all_others_waited_is_the_odd_one(kb):
    # rank 3 skipped a batch (one gradient all_reduce fewer), ran to the end and exited 0 with
    # a higher step count; ranks 0-2 were left in their last all_reduce
    top = _run(kb, "skip-step-w4-r3").diagnoses[0]
    assert (top.klass, top.initiating_rank) == ("collective-desync", 3)


def test_a_store_connect_failure_without_a_rank_is_the_rank_the_others_wait_for(kb):
    # without --tee rank 1's "client socket has timed out ... (localhost, PORT)" has no prefix;
    # ranks 0, 2 and 3 wait for the address key of rank 1
    top = _run(kb, "wrong-master-port-w4-r1-notee").diagnoses[0]
    assert (top.klass, top.initiating_rank) == ("rendezvous-init", 1)


def test_an_unpickling_error_outside_torch_load_is_no_confident_checkpoint_answer(kb):
    d = _run(kb, "corrupt-shard-w4-r2")
    top = d.diagnoses[0]
    assert top.initiating_rank == 2
    assert top.klass == "peer-rank-crashed" or d.verdict != "diagnosed"
