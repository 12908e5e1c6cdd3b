"""Every labelled scenario: real issue-thread logs (tests/scenarios/real, copied from
../shared/corpus with their case.yaml) and real torchrun runs from the lab
(tests/scenarios/lab). The diagnosis must name the labelled class and initiating rank."""

from __future__ import annotations

from pathlib import Path

import pytest

from rankdoctor.diagnose.engine import diagnose
from rankdoctor.evaluate import evidence_paths, find_scenarios, read_label, run_case
from rankdoctor.ingest.sources import expand_inputs
from rankdoctor.scan import scan_sources

from .conftest import SCENARIOS

# real/: the shared corpus; lab/: our own real torchrun runs. Every labelled scenario
# (these and the held-out sets, the lab matrix) is also locked case by case in
# tests/test_lock.py against tests/scenarios/expected.tsv.
CASES = find_scenarios([SCENARIOS / "real", SCENARIOS / "lab"])

# Known gaps, written down: these runs fail silently in their logs (no error, or an error
# that only shows the collateral); only their Flight Recorder dumps tell (the lock test
# passes on them because it reads the dumps too).
LOGS_CANNOT_TELL = {
    "dtype-mismatch": "ranks all_reduce float32 vs int32 of equal size: no error at all, torchrun exits 0",
}
# (extra-collective-same-shape left this list: the rank its peers left waiting when they all ran
# to the end is the one that issued the extra collective, and the logs show that)


def _mark(case: Path):
    reason = LOGS_CANNOT_TELL.get(case.name)
    return pytest.param(case, id=f"{case.parent.name}/{case.name}", marks=[pytest.mark.xfail(strict=True, reason=reason)] if reason else [])


LAB = [c for c in CASES if c.parent.name == "lab"]

# What the per-rank files of `torchrun --log-dir` cannot show: the launcher's own output
# (exit codes, signals, the kill of a hung job) goes only to the console.
LOGDIR_BLIND = {
    "hang-killed": "every rank's file just ends; only torchrun's console shows the job was killed while hung",
    "rendezvous-port-in-use": "torchrun fails to bind its store before any worker starts: the log dir stays empty",
    "sigkill-rank1": "rank 1 (SIGKILL) and rank 3 (SIGTERM from the launcher) both leave empty files; only the console says which died",
}
SIGNAL_DEATHS = {"host-oom"}  # a rank killed by a signal leaves no line of its own


@pytest.mark.parametrize("view", ["console.log", "logs"])
@pytest.mark.parametrize("case", [_mark(c) for c in LAB])
def test_lab_views_agree(kb, scanner, case, view):
    """The terminal output alone, or the torchrun --log-dir tree alone, is enough."""
    target = case / view
    if not target.exists():
        pytest.skip(f"{view} not captured")
    if view == "logs" and case.name in LOGDIR_BLIND:
        pytest.skip(LOGDIR_BLIND[case.name])
    o = run_case(kb, scanner, case, [str(target)], use_fr=False)
    if view == "logs" and o.want_class in SIGNAL_DEATHS:
        # without the launcher's exit status the logs only show a peer that vanished
        o.also = [*o.also, "peer-rank-crashed"]
    assert o.class_ok, f"{view}: want {o.want_class}, got {o.got_class} ({o.verdict})"
    assert o.rank_ok, f"{view}: want rank {o.want_rank}, got {o.got_rank}"


HEALTHY = [c for c in CASES if read_label(c)["class"] in ("none", "healthy")]


@pytest.mark.parametrize("case", HEALTHY, ids=lambda c: c.name)
def test_healthy_runs_fire_nothing(kb, scanner, case):
    res = scan_sources(kb, expand_inputs(evidence_paths(case)), scanner)
    alarming = [e for e in res.events if e.role in ("cause", "symptom")]
    assert alarming == [], [(e.entry, e.text) for e in alarming[:5]]
    assert diagnose(kb, res).verdict == "no-failure-found"


def test_there_is_a_healthy_corpus():
    assert len(HEALTHY) >= 2


def test_eval_reports_each_lab_fault_by_kind_of_evidence(kb, scanner):
    from rankdoctor.evaluate import evidence_table, fault_kind, view_outcomes

    assert fault_kind(Path("lab-pg2d/hang-gil-tp2dp4-r4-s3")) == "hang-gil"
    assert fault_kind(Path("lab-matrix/two-sigkill-w4-r1r3")) == "two-sigkill"
    assert fault_kind(Path("lab/straggler-rank0")) == "straggler-rank0"
    case = SCENARIOS / "lab-pg2d" / "hang-gil-tp2dp4-r4-s3"  # logs, Flight Recorder dumps and py-spy stacks
    views = view_outcomes(kb, scanner, case)
    assert set(views) == {"all", "logs only", "dumps only", "stacks only"}
    assert views["all"].class_ok and views["all"].rank_ok
    text = evidence_table([(case, views)])
    assert text.splitlines()[1].startswith("hang-gil") and "TOTAL" in text.splitlines()[-1]
