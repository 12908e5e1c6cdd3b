"""Readings learned from held-out set EQ (tests/scenarios/real-holdout151: logs people committed or
pasted, measured before any change): Open MPI's --timestamp-output date glued to the --tag-output
tag is a prefix (the rank is read behind it); NCCL warnings every rank went on from (a missing IB
device at init, then the benchmark ran to its end) are not the failure, NCCL's INFO-level trace of
the error code included; mpirun's word on the signal a rank died of says how it ended, and a
failure line of the rank's own (TensorFlow's CUDA_ERROR_OUT_OF_MEMORY) says why; and a framework's
parallel layout that needs more processes than the launch started is a launch mistake."""

from __future__ import annotations

import rankdoctor
from rankdoctor.ingest.prefix import parse_prefix

from .conftest import SCENARIOS, edited_copy

EQ = SCENARIOS / "real-holdout151"


def _top(path):
    return rankdoctor.diagnose(str(path)).diagnoses[0]


def test_open_mpi_timestamp_output_is_a_prefix():
    a, at = parse_prefix("Fri Jun 19 09:00:59 2020[1,5]<stdout>:tf2-horovod-0:177:489 [1] NCCL INFO x")
    assert (a.rank, a.time, a.host, a.pid) == (5, "2020-06-19T09:00:59", "tf2-horovod-0", 177)


def test_nccl_warnings_every_rank_went_on_from_are_no_confident_failure(tmp_path):
    log = EQ / "p1-k8s-horovod-tf2-tcp-8gpu-healthy" / "log.txt"
    d = rankdoctor.diagnose(str(log))
    assert d.verdict != "diagnosed", [(x.entry, x.confidence) for x in d.diagnoses]
    # the same log cut right after the IB warnings (before NCCL's init completed and the
    # benchmark ran) leaves the warnings standing
    cut = edited_copy(tmp_path, log, lambda no, ln: no <= 110)
    assert rankdoctor.diagnose(str(cut)).diagnoses[0].klass == "nccl-network"


def test_the_ranks_own_oom_explains_mpiruns_signal_record():
    top = _top(EQ / "p1-horovod-1350-tf2-keras-mnist-rank1-cuda-oom-sigabrt" / "log.txt")
    assert (top.klass, top.initiating_rank) == ("cuda-oom", 1)


def test_a_parallel_layout_that_needs_other_processes_is_a_launch_mistake():
    top = _top(EQ / "p3-nanotron-tinyllama-parallel-config-8-vs-world-size-4" / "log.txt")
    assert (top.entry, top.klass) == ("parallel-layout-world-size-mismatch", "rendezvous-init")
