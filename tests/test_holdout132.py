"""Readings learned from held-out set DX (tests/scenarios/real-holdout132: logs people committed to
public repositories, measured before any change): a KeyboardInterrupt is where SIGINT found the
main thread, not a failure of the code it interrupted; glog's failed CHECK is a native abort; a
library's CUDA check of a missing device symbol is a build without this GPU's architecture."""

from __future__ import annotations

import rankdoctor
from rankdoctor.ingest.prefix import parse_prefix

from .conftest import SCENARIOS, edited_copy

DX = SCENARIOS / "real-holdout132"


def test_a_keyboard_interrupt_in_a_checkpoint_save_is_no_checkpoint_failure(tmp_path):
    # Ctrl-C while Megatron saved iteration 4; the rerun resumed from iteration 3
    log = DX / "p5-megatron-sigint-midsave-resume" / "log.txt"
    d = rankdoctor.diagnose(log)
    assert not (d.diagnoses and d.diagnoses[0].klass == "checkpoint-error" and d.verdict == "diagnosed")
    # the same traceback ending in an error of its own is the save's failure
    edited = edited_copy(tmp_path, log, lambda _, ln: True)
    edited.write_text(edited.read_text(encoding="utf-8").replace("KeyboardInterrupt", "RuntimeError: PytorchStreamWriter failed writing file data/2: file write failed", 1),
                      encoding="utf-8")
    d = rankdoctor.diagnose(edited)
    assert d.diagnoses and d.diagnoses[0].klass == "checkpoint-error"


def test_a_terminal_s_ctrl_c_echo_is_no_part_of_the_line():
    a, at = parse_prefix("^CW1016 06:21:18.872000 140016382740288 torch/distributed/elastic/agent/server/api.py:688] "
                         "Received Signals.SIGINT death signal, shutting down workers")
    assert a.ts is not None and a.extra["level"] == "W"


def test_glog_s_failed_check_is_a_native_abort():
    # "F20220801 07:29:34.701110 2256 fs_coordinator.cc:42] Invalid tracker path" then glog's stack trace
    d = rankdoctor.diagnose(DX / "p2-graphlearn-invalid-tracker-path" / "log.txt")
    assert d.verdict != "no-failure-found"


def test_a_cuda_check_of_a_missing_device_symbol_is_a_build_without_this_gpu():
    d = rankdoctor.diagnose(DX / "p1-deepep-intranode-named-symbol-a100" / "log.txt")
    assert d.diagnoses[0].klass == "nccl-cuda-version"


def test_a_job_stopped_while_it_made_steps_is_no_hang(tmp_path):
    # Ctrl-C 0.9 s after iteration 5, iterations every 2 s: a stop on purpose
    log = DX / "p1-megatron-ep2-sigint-healthy" / "log.txt"
    d = rankdoctor.diagnose(log)
    assert d.verdict == "no-failure-found"
    assert any("read as a stop on purpose" in w for w in d.warnings)
    # the same stop 4.9 s after the last step reported (iterations 4 and 5 left out): the job had
    # stopped making steps before it was stopped, which is how a killed hang looks
    cut = edited_copy(tmp_path, log, lambda _, ln: not any(f"iteration        {k}/" in ln for k in (4, 5)))
    d = rankdoctor.diagnose(cut)
    assert d.verdict != "no-failure-found"
