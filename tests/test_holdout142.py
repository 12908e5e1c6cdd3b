"""Readings learned from held-out set EH (tests/scenarios/real-holdout142: logs people committed or
pasted, measured before any change): torch 1.x's launcher naming a worker that died of SIGBUS
(shared memory), torch 1.x's assertion that no default process group exists, and a Horovod build
without GPU operations - each was read as a crashed rank without a cause before."""

from __future__ import annotations

import rankdoctor
from rankdoctor.kb.loader import load_kb
from rankdoctor.scan import iter_events, scan_text

from .conftest import SCENARIOS

EH = SCENARIOS / "real-holdout142"


def events(text: str):
    return [e for e in iter_events(scan_text(load_kb(), text)) if e.entry]


def top(case: str):
    d = rankdoctor.diagnose(str(EH / case / "log.txt"))
    return d.diagnoses[0]


def test_a_worker_that_died_of_sigbus_under_the_old_launcher_is_a_shared_memory_failure():
    line = ("subprocess.CalledProcessError: Command '['/usr/bin/python', '-u', 'train.py', '--local_rank=1']' "
            "died with <Signals.SIGBUS: 7>.\n")
    evs = [e for e in events(line) if e.entry == "nccl-shm-sigbus"]
    # the command is the node's last spawned worker's, whichever died (set EM): no rank from it
    assert evs and evs[0].local_rank is None
    evs = [e for e in events(line.replace("--local_rank=1", "--local_rank=0")) if e.entry == "nccl-shm-sigbus"]
    assert evs and evs[0].local_rank == 0  # a node that ran one worker
    f = top("p1-coclr-2gpu-launch-sigbus")
    assert f.klass == "shm-insufficient", f.entry


def test_torch_1x_assertion_without_a_default_group_is_a_missing_init():
    assert any(e.entry == "process-group-not-initialized"
               for e in events("AssertionError: Default process group is not initialized\n"))
    f = top("p1-torchssl-flexmatch-barrier-no-process-group")
    assert f.entry == "process-group-not-initialized", f.entry


def test_horovod_without_gpu_operations_is_a_build_problem_of_the_whole_job():
    assert any(e.entry == "horovod-built-without-gpu-ops" for e in events(
        "[1,1]<stderr>:RuntimeError: Internal error. Requested ReadyEvent with GPU device but not compiled with CUDA.\n"))
    f = top("p5-ofa-horovod-no-cuda")
    assert f.entry == "horovod-built-without-gpu-ops" and f.klass == "nccl-cuda-version", f.entry
