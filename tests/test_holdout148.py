"""Readings learned from held-out set EN (tests/scenarios/real-holdout148: logs people committed,
measured before any change): DTensor's refusal of an op over two device meshes is the FSDP2/DTensor
misuse it names, not one rank's crash; aws-ofi-nccl giving up its own initialisation on a machine
without EFA, before NCCL falls back to sockets, is no failure; and NCCL's INFO-level report of a
local rank leaving, printed just before the launcher says every worker exited 0, is teardown."""

from __future__ import annotations

import rankdoctor

from .conftest import SCENARIOS, edited_copy

EN = SCENARIOS / "real-holdout148"


def test_dtensor_cross_mesh_is_the_dtensor_misuse():
    top = rankdoctor.diagnose(str(EN / "p4-lingua-dmoe-fsdp2-ep-dtensor-cross-mesh" / "log.txt")).diagnoses[0]
    assert (top.entry, top.klass) == ("fsdp2-mixed-tensor-dtensor", "fsdp-error")


def test_aws_ofi_nccl_falling_back_to_sockets_is_healthy():
    d = rankdoctor.diagnose(str(EN / "p5-eks-g6e-4node-efa-no-provider-socket-fallback-healthy" / "log.txt"))
    assert d.verdict == "no-failure-found", [(x.entry, x.confidence) for x in d.diagnoses]


def test_a_rank_leaving_just_before_the_launcher_reports_success_is_teardown(tmp_path):
    log = EN / "p4-kubeflow-llama2-fsdp-2node-healthy" / "log.txt"
    assert rankdoctor.diagnose(str(log)).verdict == "no-failure-found"
    # (in this log each process's proxy reports its own local rank, which is never a lost peer
    # (real-holdout153); the copy below has local rank 0's proxy report local rank 1 leaving)
    lines = log.read_text(encoding="utf-8").splitlines()
    cross = [ln.replace("[0] NCCL INFO [Service thread] Connection closed by localRank 0",
                        "[0] NCCL INFO [Service thread] Connection closed by localRank 1") for ln in lines]
    assert cross != lines
    out = tmp_path / "kubeflow.log"
    out.write_text("".join(ln + "\n" for ln in cross), encoding="utf-8")
    assert rankdoctor.diagnose(str(out)).verdict == "no-failure-found"
    # without the launcher's success records, the same lines are a peer lost at the end of the run
    cut = edited_copy(tmp_path, out, lambda no, ln: "successfully finished" not in ln and "SUCCEEDED" not in ln
                      and "Done waiting for other agents" not in ln)
    assert rankdoctor.diagnose(str(cut)).verdict != "no-failure-found"
