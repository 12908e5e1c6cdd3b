"""Readings learned from held-out set EG (tests/scenarios/real-holdout141: logs people committed to
public repositories, measured before any change): a job whose only failure lines say it was ended
from outside - Slurm's time-limit banner, a launcher's death signal, a person's Ctrl-C - shows how it
ended, not whether it had stopped making progress before. Without a clock on its progress that is
not a confident hang (EG's 16-GPU VQGAN-GPT job, saving checkpoints up to the banner, was read as
one at 0.94)."""

from __future__ import annotations

import rankdoctor
from rankdoctor.diagnose.features import FEATURES, context, featurize
from rankdoctor.evaluate import weigh_case
from rankdoctor.kb.loader import load_kb
from rankdoctor.scan import Scanner

from .conftest import SCENARIOS

EG = SCENARIOS / "real-holdout141"
BANNER = EG / "p5-vqgan-gpt-16gpu-time-limit-healthy"


def test_stop_signatures_are_marked_in_the_knowledge_base():
    kb = load_kb()
    stops = {(e.id, s.id) for e in kb for s in e.signatures if s.stop}
    assert ("slurm-job-time-limit", "slurm-cancelled-time-limit") in stops
    assert ("job-killed-while-hung", "agent-death-signal") in stops
    assert ("job-killed-while-hung", "keyboard-interrupt") in stops
    # a stop is a symptom: the line says how the job ended, never that something in it failed
    assert all(kb.get(e).signature(s).role.value == "symptom" for e, s in stops)
    assert "stop_alone" in FEATURES


def test_a_time_limit_banner_alone_is_not_a_confident_hang():
    d = rankdoctor.diagnose(BANNER / "log.txt")
    # the banner is still reported (the run did end there), but not as a confident diagnosis
    assert d.verdict == "inconclusive", [(x.entry, x.confidence) for x in d.diagnoses]
    assert d.diagnoses[0].entry == "slurm-job-time-limit"
    assert d.diagnoses[0].confidence < 0.85


def test_the_stop_alone_reading_needs_every_failure_line_to_be_a_stop():
    kb = load_kb()
    scanner = Scanner(kb)
    w = weigh_case(kb, scanner, BANNER)
    cx = context(kb, w.table, w.att.events)
    assert cx.stop_alone
    top = max(w.scored, key=lambda s: s.p)
    assert featurize(top.hyp, cx)["stop_alone"] == 1.0
    # a run whose ranks also time out in a collective before the banner is not a stop alone
    hang = SCENARIOS / "real-holdout129" / "p5-perlmutter-ss11-nccl-ofi-ddp-hang-time-limit"
    w2 = weigh_case(kb, scanner, hang)
    assert not context(kb, w2.table, w2.att.events).stop_alone
