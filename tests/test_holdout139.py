"""Readings learned from held-out set EE (tests/scenarios/real-holdout139: logs people committed to
public repositories or pasted in issue threads, measured before any change): a process killed by
SIGKILL as MPICH's Hydra launcher, bash and NVIDIA FLARE report it (three federated-learning jobs
that were called healthy), and cuDNN's "Unable to find a valid cuDNN algorithm to run convolution",
a disguised out-of-memory error."""

from __future__ import annotations

import rankdoctor

from .conftest import SCENARIOS

EE = SCENARIOS / "real-holdout139"


def _top(path) -> tuple[str | None, str]:
    d = rankdoctor.diagnose(path)
    return (d.diagnoses[0].klass if d.diagnoses else None), d.verdict


def test_a_process_killed_by_sigkill_as_launchers_and_shells_report_it():
    for case in ("p4-fedml-187-mpi-fedavg-killed-signal9", "p4-openfl-313-director-killed-envoy-unavailable",
                 "p4-monai-nvflare-852-client-exit-minus9"):
        klass, verdict = _top(EE / case / "log.txt")
        assert verdict != "no-failure-found" and klass == "host-oom", (case, klass, verdict)


def test_the_same_reports_of_other_endings_are_not_a_sigkill(tmp_path):
    mpich = (EE / "p4-fedml-187-mpi-fedavg-killed-signal9" / "log.txt").read_text(encoding="utf-8")
    segv = tmp_path / "segv.log"
    segv.write_text(mpich.replace("EXIT CODE: 9", "EXIT CODE: 11").replace("Killed (signal 9)", "Segmentation fault (signal 11)"),
                    encoding="utf-8")
    assert _top(segv)[0] != "host-oom"
    flare = (EE / "p4-monai-nvflare-852-client-exit-minus9" / "log.txt").read_text(encoding="utf-8")
    done = tmp_path / "done.log"
    done.write_text(flare.replace("execution code: -9", "execution code: 0"), encoding="utf-8")
    assert _top(done)[1] == "no-failure-found"


def test_cudnn_finding_no_algorithm_is_a_gpu_memory_problem():
    d = rankdoctor.diagnose(EE / "p3-openstereo-raftstereo-cudnn-rank0" / "log.txt")
    top = d.diagnoses[0]
    assert (top.entry, top.klass) == ("cudnn-no-valid-algorithm", "cuda-oom")
    assert 0 in top.initiating_ranks


def test_a_launcher_s_called_process_error_for_a_sigkilled_worker(tmp_path):
    """The same reading for torch.distributed.launch of torch 1.x, which raises Python's
    CalledProcessError for a failed worker: "died with <Signals.SIGKILL: 9>" is a SIGKILL; another
    signal is not. (The command it quotes is the node's last spawned worker's, whichever died:
    tests/test_holdout147.py.)"""
    line = ("subprocess.CalledProcessError: Command '['/usr/bin/python3', '-u', 'train.py', '--local_rank=3', "
            "'--epochs', '90']' died with <Signals.SIGKILL: 9>.\n")
    killed = tmp_path / "killed.log"
    killed.write_text("Traceback (most recent call last):\n  File \"launch.py\", line 260, in <module>\n    main()\n" + line,
                      encoding="utf-8")
    d = rankdoctor.diagnose(killed)
    assert d.diagnoses[0].klass == "host-oom", [(x.entry, x.confidence) for x in d.diagnoses]
    segv = tmp_path / "segv.log"
    segv.write_text(killed.read_text(encoding="utf-8").replace("<Signals.SIGKILL: 9>", "<Signals.SIGSEGV: 11>"), encoding="utf-8")
    assert rankdoctor.diagnose(segv).diagnoses[0].klass != "host-oom"
