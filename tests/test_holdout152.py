"""Readings learned from held-out set ER (tests/scenarios/real-holdout152: logs people committed or
pasted, measured before any change): NCCL/RCCL's "Failed to find reverse path" is a node whose
topology the library cannot map - hardware newer than the release, or a partial view of a shared
node - which four independent labels read as a topology problem (one of them also as a version
mismatch), so the entry's class is nccl-p2p-topology."""

from __future__ import annotations

import rankdoctor

from .conftest import SCENARIOS


def test_a_reverse_path_failure_is_a_topology_problem():
    log = SCENARIOS / "real-holdout152" / "p4-lumi-smallg-rccl-reverse-path-internal-error" / "log.txt"
    top = rankdoctor.diagnose(str(log)).diagnoses[0]
    assert (top.entry, top.klass) == ("nccl-topology-reverse-path", "nccl-p2p-topology")
