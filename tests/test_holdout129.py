"""Readings learned from held-out set DU (tests/scenarios/real-holdout129: more logs people committed
to public repositories, measured before any change): a Slurm step daemon's message that srun -l printed
under a task's label is about the step, not said by that task."""

from __future__ import annotations

import rankdoctor

from .conftest import SCENARIOS


def test_a_slurmstepd_line_under_a_task_label_is_not_that_task_s(tmp_path):
    # "0: slurmstepd: error: Detected 1 oom_kill event in StepId=..." carries task 0's label; the
    # task that was killed is the one srun names ("task 2: Out Of Memory")
    d = rankdoctor.diagnose(SCENARIOS / "real-holdout129" / "p1-perlmutter-megads-gpt1t-oomkill" / "log.txt")
    top = d.diagnoses[0]
    assert (top.klass, top.initiating_rank, top.initiating_ranks) == ("host-oom", 2, [2])
    # a line a task printed itself keeps its label's rank
    log = tmp_path / "srun.log"
    log.write_text("0: step 10 loss 2.31\n1: step 10 loss 2.29\n"
                   "1: RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n", encoding="utf-8")
    assert rankdoctor.diagnose(log).diagnoses[0].initiating_rank == 1
