"""Readings learned from held-out set DS (tests/scenarios/real-holdout127: logs people committed to
public repositories, measured before any change): a repeated line whose streak stopped while the
program went on is no failure, a peer's departure reported after the job said its work ended is
teardown, and HPE Cray PALS's per-rank exit lines are launcher records."""

from __future__ import annotations

import rankdoctor
from rankdoctor.diagnose.launcher import read_launcher
from rankdoctor.events import Fact

from .conftest import SCENARIOS, edited_copy

DS = SCENARIOS / "real-holdout127"


def _log(case: str) -> str:
    return (DS / case / "log.txt").read_text(encoding="utf-8")


def test_a_streak_of_overflow_skips_the_run_got_past_is_no_failure(tmp_path):
    # DeepSpeed's fp16 scaler halves its scale from 2^32 to 1024 in 23 skipped steps, then the run
    # trains for 28 more logged steps and every process exits successfully
    case = "p4-healthy-ds-zero1-gpt2-fp16-initial-overflows"
    d = rankdoctor.diagnose(DS / case / "log.txt")
    assert d.verdict == "no-failure-found"
    assert any("read as a passing streak" in w for w in d.warnings)
    # the same lines cut where the streak ends: it runs to the end of the log, a failure
    d = rankdoctor.diagnose(edited_copy(tmp_path, DS / case / "log.txt", lambda no, _: no <= 102))
    assert d.diagnoses and d.diagnoses[0].klass == "nan-divergence"


def test_a_peer_leaving_after_the_trainer_s_closing_summary_is_teardown(tmp_path):
    case = "p1-healthy-eks-deepspeed-llama3-finish-connection-closed"
    d = rankdoctor.diagnose(DS / case / "log.txt")
    assert d.verdict == "no-failure-found"
    assert any("read as the job's teardown" in w for w in d.warnings)
    # without the trainer's closing summary nothing says the work had ended: a lost peer
    d = rankdoctor.diagnose(edited_copy(tmp_path, DS / case / "log.txt", lambda _, ln: "train_runtime" not in ln))
    assert d.verdict != "no-failure-found" and d.diagnoses[0].klass == "peer-rank-crashed"


def test_pals_rank_exit_lines_are_launcher_records():
    lines = [ln for ln in _log("p1-polaris-multinode-allreduce-hang-awsofi").split("\n") if ": rank " in ln]
    assert lines == ["x3200c0s19b1n0.hsn.cm.sirius.alcf.anl.gov: rank 0 exited with code 134",
                     "x3200c0s19b1n0.hsn.cm.sirius.alcf.anl.gov: rank 1 died from signal 15"]
    facts = [Fact("lc-pals-rank", "log.txt", 57, lines[0], None, None, None, None, None,
                  {"host": "x3200c0s19b1n0.hsn.cm.sirius.alcf.anl.gov", "rank": "0", "exitcode": "134"}),
             Fact("lc-pals-rank", "log.txt", 58, lines[1], None, None, None, None, None,
                  {"host": "x3200c0s19b1n0.hsn.cm.sirius.alcf.anl.gov", "rank": "1", "signal_num": "15"})]
    recs = read_launcher(facts).records
    assert [(r.rank, r.exitcode, r.root_cause, r.killed_by_launcher) for r in recs] == [(0, -6, True, False), (1, -15, False, True)]
