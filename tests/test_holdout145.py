"""Readings learned from held-out set EK (tests/scenarios/real-holdout145: logs people committed,
measured before any change): when every rank raises the same exception word for word, the program
fails the same way everywhere and the rank torchrun saw exit first did not start it
(claim_shared_failure, norank_same_failure); the launcher's exit codes can set ranks apart (a rank
stopped with SIGTERM among ranks their watchdogs aborted: claim_exit_odd); and a convolution's
input/bias dtype check ("Input type (float) and bias type (c10::Half) should be the same") is a
dtype mismatch."""

from __future__ import annotations

import rankdoctor
from rankdoctor.diagnose.engine import weigh
from rankdoctor.ingest.sources import expand_inputs
from rankdoctor.scan import scan_sources

from .conftest import SCENARIOS, Scanner, edited_copy

EK = SCENARIOS / "real-holdout145"
VAE = EK / "p3-accelerate-5rank-vae-decode-dtype-mismatch-all-ranks" / "log.txt"
ZERO3 = EK / "p3-internvl-zero3-partitioned-param-indexerror-all-ranks" / "log.txt"
TP8 = EK / "p1-torchinferno-tp8-broadcast-rank0-absent-root-cause-rank1" / "log.txt"


def _scored(kb, path):
    return weigh(kb, scan_sources(kb, list(expand_inputs([str(path)])), Scanner(kb))).scored


def _features(scored, entry, ranks):
    return next(s.features for s in scored if s.hyp.entry.id == entry and tuple(s.hyp.ranks) == ranks)


def test_the_conv_bias_dtype_check_is_a_dtype_mismatch():
    d = rankdoctor.diagnose(str(VAE))
    top = d.diagnoses[0]
    assert (top.entry, top.klass, top.initiating_rank) == ("tensor-dtype-mismatch", "device-mismatch", None), d.verdict


def test_one_exception_on_every_rank_is_not_one_rank_s_crash(kb, tmp_path):
    scored = _scored(kb, ZERO3)
    assert _features(scored, "worker-python-exception", (1,))["claim_shared_failure"] == 1.0
    assert _features(scored, "worker-python-exception", ())["norank_same_failure"] == 1.0
    d = rankdoctor.diagnose(str(ZERO3))
    assert not (d.verdict == "diagnosed" and d.diagnoses[0].initiating_rank == 1), d.diagnoses[0]
    # rank 1's IndexError alone (the others' lines cut): its crash, shared with nobody
    alone = edited_copy(tmp_path, ZERO3, lambda no, ln: "IndexError" not in ln or ln.startswith("[rank1]"))
    scored = _scored(kb, alone)
    assert _features(scored, "worker-python-exception", (1,))["claim_shared_failure"] == 0.0
    assert rankdoctor.diagnose(str(alone)).diagnoses[0].initiating_rank == 1


def test_an_exit_code_no_other_rank_has_sets_the_rank_apart(kb):
    scored = _scored(kb, TP8)
    # rank 0 exited -15 (stopped), ranks 1-7 -6 (their watchdogs aborted them after the timeout)
    assert _features(scored, "rank-zero-straggler", (0,))["claim_exit_odd"] == 1.0
    assert _features(scored, "rank-zero-straggler", (2,))["claim_exit_odd"] == 0.0
