"""Readings learned from held-out set DT (tests/scenarios/real-holdout128: more logs people committed
to public repositories, measured before any change): what NCCL prints at INFO level while the job is
torn down, after it said its work ended normally, is teardown, not a failure."""

from __future__ import annotations

import rankdoctor

from .conftest import SCENARIOS, edited_copy

DT = SCENARIOS / "real-holdout128"


def test_nccl_info_error_returns_after_the_trainer_finished_are_teardown(tmp_path):
    # a two-node DeepSpeed run prints its closing train_runtime summary and "Training job finished
    # successfully" on both ranks; then NCCL INFO "misc/socket.cc:47 -> 3" and "Abort COMPLETE"
    case = DT / "p5-aws-pcluster-deepspeed-2node-healthy" / "log.txt"
    d = rankdoctor.diagnose(case)
    assert d.verdict == "no-failure-found"
    assert any("read as the job's teardown" in w for w in d.warnings)
    # the same lines without the closing summary: nothing says the work had ended
    cut = edited_copy(tmp_path, case, lambda _, ln: "train_runtime" not in ln)
    assert rankdoctor.diagnose(cut).verdict != "no-failure-found"
