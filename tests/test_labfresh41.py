"""Learned from lab-fresh41 (tests/scenarios/lab-fresh41, measured before any change): rank 1's
``git rev-parse`` under ``check=True`` raised CalledProcessError; rank 0 then printed gloo's
"Connection closed by peer" and aborted on its way out ("terminate called without an active
exception", exit -6), while rank 1, slow to exit, was stopped by torchrun (-15, named the root
cause). Rank 0's abort came after it reported losing its peer: it died of the loss, not of a
failure of its own. The console line of the loss has no time (its error file's copy has one), so
every report of a lost peer is put in order with the failure, not only the first wait line."""

from __future__ import annotations

from rankdoctor.diagnose.engine import weigh
from rankdoctor.diagnose.ranktable import End
from rankdoctor.ingest.sources import expand_inputs
from rankdoctor.scan import scan_sources

from .conftest import SCENARIOS, Scanner, diagnose_lab_run, edited_copy

RUN = SCENARIOS / "lab-fresh41" / "subprocess-check-failed-w3-r1-notee"


def _table(kb, paths):
    return weigh(kb, scan_sources(kb, list(expand_inputs([str(p) for p in paths])), Scanner(kb))).table


def test_an_abort_after_a_lost_peer_is_how_the_loss_ended(kb):
    d = diagnose_lab_run(kb, RUN)
    top = d.diagnoses[0]
    assert (top.klass, top.initiating_rank) == ("peer-rank-crashed", 1), (top.entry, top.initiating_rank)
    table = _table(kb, [RUN / "console.log", RUN / "logs"])
    assert table.row(0).end == End.died_waiting
    assert table.row(1).failures and "CalledProcessError" in table.row(1).failures[0].text


def test_the_same_abort_without_the_loss_is_the_rank_s_own(kb, tmp_path):
    # without rank 0's report of the closed connection (console and error file), its abort is its own
    log = edited_copy(tmp_path, RUN / "console.log", lambda no, ln: "Connection closed by peer" not in ln)
    table = _table(kb, [log])
    assert table.row(0).end == End.own_death
