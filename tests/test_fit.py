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


def test_posterior_is_a_distribution():
    ps, null = posterior([1.0, 0.5, -2.0], 0.3)
    assert abs(sum(ps) + null - 1) < 1e-9 and ps[0] > ps[1] > ps[2]
