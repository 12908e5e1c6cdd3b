"""Readings learned from held-out set EJ (tests/scenarios/real-holdout144: logs people committed or
pasted, measured before any change): DeepSpeed's fp16 scaler skipping a step on overflow every
thousand iterations and raising its scale again in between ("Increasing dynamic loss scale from X to
Y") is calibrating, not collapsing - the overflow lines before such a line do not count toward the
repeat threshold that makes them a failure."""

from __future__ import annotations

import rankdoctor
from rankdoctor.kb.loader import load_kb

from .conftest import SCENARIOS

EJ = SCENARIOS / "real-holdout144"

OVERFLOW = ("[2024-11-12 19:53:55,749] [INFO] [unfused_optimizer.py:208:step] [deepspeed] fp16 dynamic loss scale "
            "overflow! Skipping step. Attempted loss scale: 4096.0, reducing to 2048.0\n")
RAISE = ("[2024-11-12 19:53:55,487] [INFO] [unfused_optimizer.py:291:_update_scale] Increasing dynamic loss scale "
         "from 2048.0 to 4096.0\n")


def test_the_scale_increase_is_marked_as_resetting_the_repeats():
    sig = load_kb().signature("fp16-loss-scale-at-minimum", "deepspeed-loss-scale-increase")
    assert sig is not None and sig.resets_repeats


def test_periodic_overflows_with_the_scale_raised_between_them_are_healthy(tmp_path):
    d = rankdoctor.diagnose(str(EJ / "p2-vit-deepspeed-3node-fp16-overflow-healthy" / "log.txt"))
    assert d.verdict == "no-failure-found", [(x.entry, x.confidence) for x in d.diagnoses]
    # twelve overflows in a row with no increase after them still read as the scaler collapsing
    log = tmp_path / "collapse.log"
    log.write_text(RAISE + OVERFLOW * 12)
    d2 = rankdoctor.diagnose(str(log))
    assert d2.diagnoses and d2.diagnoses[0].entry == "fp16-loss-scale-at-minimum", d2.verdict
    # ... and the same twelve before an increase are the scaler's search
    log.write_text(OVERFLOW * 12 + RAISE + "step 9000 loss 1.23\n" * 12)
    assert rankdoctor.diagnose(str(log)).verdict == "no-failure-found"
