"""Readings learned from held-out set ET (tests/scenarios/real-holdout154: run logs committed to
public repositories, measured before any change).

- A process group with the MPI backend created in processes no MPI launcher started segfaults
  on every rank in c10d's createProcessGroupMPI (a new entry, rendezvous-init); a failure every
  rank shares is the job's, which two new features carry (claim_job_share, norank_failed_share).
- UCX's rendezvous aborting on a CUDA IPC remote key it cannot unpack is the GPU peer-to-peer
  path of a CUDA-aware MPI (a new entry); the cuda_ipc ERROR lines alone are no failure (UCX
  sends the buffer another way and the job goes on).
- "no CUDA-capable device is detected" on every rank: the processes were given no GPU (a new
  entry, duplicate-gpu's family of device visibility).
- DLRover's node check stopping a straggler (a new entry).
- Warnings printed before a launcher said every worker exited 0 were survived (SageMaker's
  "Reporting training SUCCESS" joins the launchers' word); MLPerf's run_stop with status success
  is the run's end. (NCCL's "Abort COMPLETE" alone is not: a watchdog aborts the same way after a
  failure, test_holdout128, so the DLcomm benchmark whose only end is its own line stays a miss.)
- A rank that died while another rank went on to three more steps was left behind by a job that
  re-formed without it (Horovod elastic's scale-in).
- Horovod's "Tue Sep  8 09:24:20 2020[0]<stdout>:" prefix in a log pasted as an indented block."""

from __future__ import annotations

import rankdoctor
from rankdoctor.ingest.prefix import parse_prefix

from .conftest import SCENARIOS, edited_copy

ET = SCENARIOS / "real-holdout154"


def _top(case: str):
    d = rankdoctor.diagnose(str(ET / case / "log.txt"))
    return d, d.diagnoses[0] if d.diagnoses else None


def test_an_mpi_group_created_outside_mpirun_is_a_job_wide_init_failure():
    d, top = _top("p5-mlperf-llama70b-lora-ub-mpi-bootstrap-segv")
    assert (top.entry, top.klass) == ("mpi-group-outside-mpi-launch", "rendezvous-init"), (top.entry, top.initiating_rank)
    assert top.initiating_rank is None


def test_ucx_rendezvous_failing_on_a_cuda_ipc_key_is_the_gpu_p2p_path():
    d, top = _top("p2-cori-gpu-torch-mpi-ucx17-cuda-ipc-rkey-fatal-rank0")
    assert (top.entry, top.klass, top.initiating_rank) == ("ucx-cuda-ipc-rkey-unpack", "nccl-p2p-topology", 0)
    # the same transport's ERROR lines in a run that went on and finished are no failure
    d, _ = _top("p2-cori-gpu-torch-mpi-completes-despite-ucx-cuda-ipc-errors")
    assert d.verdict == "no-failure-found"


def test_no_cuda_device_on_every_rank_is_the_job_given_no_gpu():
    d, top = _top("p5-mlperf-nccltests-no-cuda-device")
    assert (top.entry, top.klass, top.initiating_rank) == ("cuda-no-device-visible", "duplicate-gpu", None)


def test_dlrover_stopping_a_straggler_node():
    d, top = _top("p3-dlrover-chaos-cpu-overload-straggler-exits")
    assert (top.entry, top.klass) == ("dlrover-node-check-straggler", "straggler-timeout")


def test_warnings_before_the_launcher_said_every_worker_exited_0_were_survived(tmp_path):
    log = ET / "p1-sagemaker-nb-fsdp-2node-20b-healthy-clone-oom-warnings" / "log.txt"
    d = rankdoctor.diagnose(str(log))
    assert d.verdict == "no-failure-found"
    assert any("said its work ended normally after it" in w for w in d.warnings)
    # without the toolkit's word that the process exited 0, the out-of-memory warnings stand
    cut = edited_copy(tmp_path, log, lambda no, ln: "Received 0 from exiting" not in ln and "training SUCCESS" not in ln)
    assert rankdoctor.diagnose(str(cut)).verdict != "no-failure-found"


def test_mlperf_run_stop_success_ends_the_run(tmp_path):
    log = ET / "p5-mlperf-rgat-2node-healthy-nccl-proxy-warn" / "log.txt"
    assert rankdoctor.diagnose(str(log)).verdict == "no-failure-found"
    cut = edited_copy(tmp_path, log, lambda no, ln: '"key": "run_stop"' not in ln)
    assert rankdoctor.diagnose(str(cut)).verdict != "no-failure-found"


def test_a_rank_the_job_went_on_without_was_left_behind(tmp_path):
    log = ET / "p3-arena-horovod-elastic-scalein-healthy" / "log.txt"
    d = rankdoctor.diagnose(str(log))
    assert d.verdict == "no-failure-found"
    assert any("went on without it" in w for w in d.warnings)
    # the log cut right after the exit: nothing shows the job went on, the death stands
    lines = log.read_text(encoding="utf-8").splitlines()
    at = next(i for i, ln in enumerate(lines, 1) if "exit with status code 134" in ln)
    cut = edited_copy(tmp_path, log, lambda no, ln: no <= at)
    d = rankdoctor.diagnose(str(cut))
    assert d.verdict != "no-failure-found" and d.diagnoses[0].initiating_rank == 3


def test_horovod_prefix_behind_a_markdown_indent():
    a, at = parse_prefix("    Tue Sep  8 09:28:13 2020[0]<stdout>:Iter #102: 95.8 img/sec per GPU")
    assert a.rank == 0 and a.ts is not None and _rest(at) == "Iter #102: 95.8 img/sec per GPU"
    # an indented line with no prefix keeps its indentation (a traceback frame)
    assert parse_prefix('    File "train.py", line 3, in <module>')[1] == 0


def _rest(at: int) -> str:
    return "    Tue Sep  8 09:28:13 2020[0]<stdout>:Iter #102: 95.8 img/sec per GPU"[at:]


def test_the_scan_marks_where_each_ranks_last_three_steps_began(tmp_path):
    from rankdoctor.ingest.sources import expand_inputs
    from rankdoctor.kb.loader import load_kb
    from rankdoctor.scan import Scanner, scan_sources

    log = tmp_path / "steps.log"
    log.write_text("".join(f"[rank0]: step {s} loss 1.0\n" for s in (1, 2, 3, 1, 2, 2, 3, 4)), encoding="utf-8")
    kb = load_kb(None, check=False)
    res = scan_sources(kb, list(expand_inputs([str(log)])), Scanner(kb))
    runs = [t for t in res.tails if t.fact == "steps-run"]
    # the counter went back at line 4: the last run is 1, 2, 2, 3, 4, and its last three
    # distinct steps (2, 3, 4) begin at line 5
    assert [(t.rank, t.line, t.captures["first"], t.captures["last"]) for t in runs] == [(0, 5, "2", "4")]
    log.write_text("[rank0]: step 1 loss 1.0\n[rank0]: step 2 loss 1.0\n", encoding="utf-8")
    res = scan_sources(kb, list(expand_inputs([str(log)])), Scanner(kb))
    assert not [t for t in res.tails if t.fact == "steps-run"]
