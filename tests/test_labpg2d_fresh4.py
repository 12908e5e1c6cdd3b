"""Readings learned from lab-pg2d-fresh4 (tests/scenarios/lab-pg2d-fresh4: 8-rank TP x DP (x PP)
runs, measured before any change): a rank that skips one DP gradient all_reduce finishes its
program one collective short; its DP peers lose the connection when it exits, and the launcher then
stops everyone, so no exit is clean. The rank that stopped working before the first lost-connection
report, while the other ranks that did not wait worked on past it, is the one that left (a desync
that started on it), not the waiting ranks as "the smaller side blocked apart"."""

from __future__ import annotations

import rankdoctor

from .conftest import SCENARIOS

PG = SCENARIOS / "lab-pg2d-fresh4"


def _logs(case: str) -> list[str]:
    d = PG / case
    return [str(d / "console.log"), str(d / "logs")]


def test_the_rank_that_skipped_a_dp_all_reduce_is_the_one_that_left():
    for case, rank in (("skip-dp-tp2dp4-r5-s2", 5), ("skip-dp-pp2tp2dp2-r3-s3-notee", 3)):
        top = rankdoctor.diagnose(_logs(case)).diagnoses[0]
        assert (top.klass, top.initiating_rank) == ("collective-desync", rank), (case, top.entry, top.initiating_rank)


def test_a_rank_that_stopped_after_the_loss_is_not_the_one_lost(tmp_path):
    console = PG / "skip-dp-tp2dp4-r5-s2" / "console.log"
    lines = console.read_text(encoding="utf-8").splitlines()
    assert rankdoctor.diagnose(str(console)).diagnoses[0].initiating_rank == 5
    # the same console with rank 5's last line of work printed after the first lost connection:
    # every rank that did not wait then worked on past the loss, and none is named for it
    i = next(k for k, ln in enumerate(lines) if "rank 5 finished 8 steps" in ln)
    j = next(k for k, ln in enumerate(lines) if "Connection closed by peer" in ln)
    moved = lines[:i] + lines[i + 1:j + 1] + [lines[i]] + lines[j + 1:]
    out = tmp_path / "console.log"
    out.write_text("".join(ln + "\n" for ln in moved), encoding="utf-8")
    assert rankdoctor.diagnose(str(out)).diagnoses[0].initiating_rank != 5


def test_a_pair_that_lost_the_peer_who_finished_first_blames_that_peer():
    # lab-pg2d-fresh5: rank 0 of TP 4 x DP 2 skips one DP all_reduce; its DP peer rank 4 (a group of
    # two) waits for the last one after rank 0 finished, and the other ranks finish after rank 4's
    # loss: rank 0 left early, rank 4 was not "left waiting by peers that all finished"
    d = SCENARIOS / "lab-pg2d-fresh5" / "skip-dp-tp4dp2-r0-s4-notee"
    top = rankdoctor.diagnose([str(d / "console.log"), str(d / "logs")]).diagnoses[0]
    assert (top.klass, top.initiating_rank) == ("collective-desync", 0)
