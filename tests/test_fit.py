"""The scoring weights are data fitted on the labelled corpus: they must be what
`make fit` produces from the scenarios in the repository (no hand edits, no stale fit)."""

from __future__ import annotations

import pytest

from rankdoctor.diagnose.features import FEATURES
from rankdoctor.diagnose.scoring import default_weights, posterior

from .conftest import SCENARIOS


def test_weights_are_current_with_the_corpus(capsys):
    pytest.importorskip("scipy")
    from rankdoctor.fit import main

    roots = sorted(str(p) for p in SCENARIOS.iterdir() if p.is_dir())
    assert main(["--check", *roots]) == 0, capsys.readouterr().err


def test_weights_cover_every_feature_and_are_calibrated():
    w = default_weights()
    assert set(w.features) <= set(FEATURES)
    cv = w.meta["fitted"]["cross_validated"]
    # the verdict threshold keeps cross-validated confident wrong answers at or under 3 %
    assert cv["confident_wrong"] <= 0.03 * cv["failed_runs"]
    assert 0.5 <= w.threshold < 1


def test_weights_keep_the_signs_their_meaning_fixes():
    # a signature's weight says how strongly one hit supports its entry: a stronger line of
    # one entry must not score lower than a weaker line of another on the same rank
    from rankdoctor.fit import NON_NEGATIVE

    w = default_weights().features
    assert NON_NEGATIVE and all(w[k] >= 0 for k in NON_NEGATIVE)


def test_posterior_is_a_distribution():
    ps, null = posterior([1.0, 0.5, -2.0], 0.3)
    assert abs(sum(ps) + null - 1) < 1e-9 and ps[0] > ps[1] > ps[2]


def test_a_label_without_a_rank_accepts_what_the_evidence_can_say(kb):
    pytest.importorskip("scipy")
    from rankdoctor.fit import is_right

    label = {"class": "ddp-unused-parameters", "rank": None, "also": []}
    job = kb.get("ddp-unused-parameters")
    assert job.scope.value == "job"
    # a job-wide error raised by rank 1 alone: naming rank 1 is right, and naming no rank too
    # would leave the fit indifferent between them; it names where it was seen
    assert is_right(label, job, (1,), {job.id: {1}}) and not is_right(label, job, (), {job.id: {1}})
    assert not is_right(label, job, (0,), {job.id: {1}})
    # raised by every rank (no set fewer than the job's): no rank
    assert is_right(label, job, (), {}) and not is_right(label, job, (1,), {})
    # a rank-scoped entry: the label does not say where, so any answer is right
    oom = kb.get("cuda-out-of-memory")
    assert oom.scope.value == "rank"
    assert is_right({"class": oom.class_, "rank": None, "also": []}, oom, (3,), {})


def test_a_rank_no_reasoning_proposes_leaves_the_answer_without_a_rank_right(kb):
    # the thread knew the rank (rank 0 ran out of memory), the log shows no rank: the answer
    # "out of memory, where unknown" is the right one the evidence allows, not "none of these"
    from rankdoctor.evaluate import read_label, weigh_case
    from rankdoctor.fit import _rights
    from rankdoctor.scan import Scanner

    scanner = Scanner(kb)
    case = SCENARIOS / "real-holdout52" / "open_clip-11-eval-oom"
    label, w = read_label(case), weigh_case(kb, scanner, case)
    assert label["rank"] == 0 and not any(s.hyp.ranks for s in w.scored)
    assert _rights(label, w) == [s.hyp.entry.class_ == "cuda-oom" for s in w.scored] and any(_rights(label, w))
    # where some hypothesis names the labelled rank, only those naming it are right
    case = SCENARIOS / "lab-fresh54" / "batch-size-mismatch-w4-r2"
    label, w = read_label(case), weigh_case(kb, scanner, case)
    rights = _rights(label, w)
    assert label["rank"] == 2 and any(rights)
    assert all(s.hyp.ranks == (2,) for s, r in zip(w.scored, rights) if r)


def test_a_threshold_set_by_decision_is_kept_only_within_the_promise(tmp_path, capsys):
    # `python -m rankdoctor.fit --threshold T`: a chosen verdict threshold is written when its
    # cross-validated confident-wrong rate stays within 3 %, and refused (nothing written) when not
    pytest.importorskip("scipy")
    import json

    from rankdoctor.fit import main

    roots = [str(SCENARIOS / "real-holdout17")]  # a set with misses: a threshold of 0.01 diagnoses them all
    out = tmp_path / "weights.json"
    assert main(["--out", str(out), "--threshold", "0.01", *roots]) == 1
    assert "refused" in capsys.readouterr().err and not out.exists()
    report = tmp_path / "cv.tsv"
    assert main(["--out", str(out), "--threshold", "0.97", "--report", str(report), *roots]) == 0
    assert json.loads(out.read_text())["threshold"] == 0.97
    # --report: one out-of-fold answer per run, and its confident-wrong count is the summary's
    rows = [r.split("\t") for r in report.read_text().splitlines()]
    assert rows[0][0] == "case" and len(rows) - 1 == json.loads(out.read_text())["fitted"]["cross_validated"]["runs"]
    assert sum(int(r[6]) for r in rows[1:]) == json.loads(out.read_text())["fitted"]["cross_validated"]["confident_wrong"]
