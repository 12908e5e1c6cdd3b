"""Learned from lab-fresh37 (tests/scenarios/lab-fresh37, measured before any change): a healthy DDP
run with find_unused_parameters=True all_reduces its unused-parameter bitmap asynchronously at every
step, and the last one is never waited on. Its Flight Recorder dumps, taken at exit, hold that
collective issued by every rank and retired, while pg_status never counted it completed: that is no
stuck group. A collective still running is never retired, so a real hang keeps its finding."""

from __future__ import annotations

import rankdoctor
from rankdoctor.flightrec.analyze import analyze
from rankdoctor.flightrec.load import load_dumps

from .conftest import SCENARIOS

HEALTHY = SCENARIOS / "lab-fresh37" / "none-find-unused-warning-w4-r2"


def test_an_unwaited_last_collective_retired_on_every_rank_is_not_stuck():
    dumps, problems = load_dumps([str(HEALTHY / "fr")])
    assert not problems and len(dumps) == 4
    # the last all_reduce (the bitmap of the last step): issued and retired on every rank, not completed
    report = analyze(dumps)
    assert report.verdict not in ("hang", "mismatch"), [(f.kind, f.seq, f.detail) for f in report.findings]
    assert rankdoctor.diagnose(str(HEALTHY)).verdict == "no-failure-found"


def test_a_rank_whose_last_collective_is_not_retired_still_waits():
    # lab-fresh1's straggler: rank 3 never joined; the others' copies of that collective are not retired
    report = analyze(load_dumps([str(SCENARIOS / "lab-fresh1" / "straggler-w5-r3" / "fr")])[0])
    assert report.verdict == "hang", [(f.kind, f.seq) for f in report.findings]
