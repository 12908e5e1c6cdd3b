"""Readings learned from held-out set EM (tests/scenarios/real-holdout147: logs people committed or
pasted, measured before any change): the verbs provider's "mlx5: <host>: got completion with error:"
(rdma-core providers/mlx5/cq.c) is an InfiniBand/RoCE completion error, not a healthy line; and an
exception no entry names, raised where a barrier or collective waits for completion (`work.wait()`
under torch.distributed's frames), is the rank waiting for its peers - an Ascend stream-synchronize
timeout in main_process_first's barrier - not a crash of its own. An argument the backend refuses
fails at the call, before the wait, and stays the rank's own failure."""

from __future__ import annotations

import rankdoctor
from rankdoctor.diagnose.attribution import attribute, raised_in_wait
from rankdoctor.ingest.sources import expand_inputs
from rankdoctor.scan import scan_sources

from .conftest import SCENARIOS, Scanner

EM = SCENARIOS / "real-holdout147"
MLX5 = EM / "p4-openrlhf-621-epoch-end-weight-sync-mlx5-completion-error" / "log.txt"
ASCEND = EM / "p1-ascend-llamafactory-rank7-main-process-first-entry-barrier-stream-sync-timeout" / "log.txt"
REFUSED = SCENARIOS / "lab-fresh37" / "allgather-into-tensor-size-w4-r3" / "console.log"


def _exceptions(kb, path):
    att = attribute(kb, scan_sources(kb, list(expand_inputs([str(path)])), Scanner(kb)))
    return [e for e in att.events if e.signature == "python-exception" and "cut" not in e.captures]


def test_the_mlx5_error_completion_is_a_network_failure():
    d = rankdoctor.diagnose(str(MLX5))
    assert d.verdict != "no-failure-found"
    assert (d.diagnoses[0].entry, d.diagnoses[0].klass) == ("nccl-ib-completion-error", "nccl-network")


def test_an_unknown_exception_raised_in_a_collective_s_wait_is_a_wait(kb):
    (ev,) = _exceptions(kb, ASCEND)
    assert ev.captures.get("waiting") == "1" and ev.captures.get("wait_call") == "main_process_first"
    top = rankdoctor.diagnose(str(ASCEND)).diagnoses[0]
    assert top.klass == "straggler-timeout" and top.initiating_rank != 7, (top.entry, top.initiating_rank)


def test_an_argument_refused_at_the_call_stays_the_rank_s_own_failure(kb):
    # gloo refuses all_gather_into_tensor's output at the call (`work = group.all_gather_single(...)`)
    evs = [e for e in _exceptions(kb, REFUSED) if "invalid tensor size" in e.text and e.rank == 3]
    assert evs and all("waiting" not in e.captures for e in evs)
    assert raised_in_wait(['  File "/x/torch/distributed/distributed_c10d.py", line 3690, in barrier',
                           "    work.wait()"]) == ""
    assert raised_in_wait(['  File "/x/torch/distributed/distributed_c10d.py", line 2952, in all_reduce',
                           "    work = group.allreduce([tensor], opts)"]) is None


def test_the_launch_command_quoted_by_calledprocesserror_names_no_rank(tmp_path):
    # torch.distributed.launch raises CalledProcessError(cmd=cmd) with its loop variable: the
    # node's last spawned worker's command, whichever worker died
    log = EM / "p5-mmaction2-i3d-4gpu-launch-sigkill-rank-unknown" / "log.txt"
    top = rankdoctor.diagnose(str(log)).diagnoses[0]
    assert (top.klass, top.initiating_rank) == ("host-oom", None), (top.entry, top.initiating_rank)
    # a node that ran one worker: its last command is the one that died
    one = tmp_path / "one-worker.log"
    one.write_text(log.read_text(encoding="utf-8").replace("'--local_rank=3'", "'--local_rank=0'"), encoding="utf-8")
    assert rankdoctor.diagnose(str(one)).diagnoses[0].initiating_rank == 0
