"""Readings learned from held-out set ES (tests/scenarios/real-holdout153: run logs committed to
public repositories, measured before any change): NCCL's proxy thread reporting the local rank it
serves itself ("[0] ... Could not receive type from localRank 0", "[Proxy Service 0] Failed to
execute operation Close from rank 0") is its own process exiting, not a lost peer; what NCCL prints
after "socketProgressOpt: abort called" (the program closing its communicator) with nothing failed
before is teardown, the proxy thread's warnings included; ibv_create_cq failing is the IB connection
set-up failing; and an NCCL WARN no entry knows that every rank went on from is no failure."""

from __future__ import annotations

import rankdoctor

from .conftest import SCENARIOS, edited_copy

ES = SCENARIOS / "real-holdout153"
GKE = ES / "p1-gke-24rank-comms-healthy-rank0" / "log.txt"


def test_a_communicator_closed_after_the_work_is_teardown(tmp_path):
    assert rankdoctor.diagnose(str(GKE)).verdict == "no-failure-found"
    assert rankdoctor.diagnose(str(SCENARIOS / "real-holdout145" / "p3-gke-16rank-fsdp-healthy-teardown-nccl-warn"
                                   / "log.txt")).verdict == "no-failure-found"
    # without NCCL's word that the program closed the communicator, its error-return traces stand
    cut = edited_copy(tmp_path, GKE, lambda no, ln: "abort called" not in ln)
    assert rankdoctor.diagnose(str(cut)).verdict != "no-failure-found"


def test_the_proxy_reporting_its_own_rank_is_no_lost_peer():
    d = rankdoctor.diagnose(str(ES / "p1-gke-survivor-rerun-16gpu-healthy" / "log.txt"))
    assert d.verdict != "diagnosed" and d.diagnoses[0].klass != "peer-rank-crashed", \
        [(x.entry, x.initiating_rank, x.confidence) for x in d.diagnoses]


def test_ibv_create_cq_failing_is_the_ib_setup_of_the_rank_that_printed_it_first():
    top = rankdoctor.diagnose(str(ES / "p3-perlmutter-early-ddp-nccl-ibv-create-cq-failed-local-rank3" / "log.txt")).diagnoses[0]
    assert (top.entry, top.klass, top.initiating_rank) == ("nccl-ib-qp-setup-failed", "nccl-network", 3)


def test_an_unknown_nccl_warning_every_rank_went_on_from_is_no_failure():
    d = rankdoctor.diagnose(str(ES / "p3-k8s-horovod-tf2-roce-8vf-ibv-open-warn-healthy" / "log.txt"))
    assert d.verdict == "no-failure-found", [(x.entry, x.confidence) for x in d.diagnoses]
