"""Readings learned from held-out set EP (tests/scenarios/real-holdout150: logs people committed or
pasted, measured before any change): oneCCL's own set-up errors (its communicator cannot learn the
local rank, start its worker threads or reach its key-value store) are start-up failures of the
job, not one rank's crash; the UCX network plugin's "Failed: UCX error" is the network stack that
was chosen; torch_npu's failed HcclCommInitRootInfo is the communicator's creation failing; NCCL
2.28's IB completion error broken after "NET/IB:" is still an IB completion error; nccl-tests'
"Test CUDA failure ... 'system not yet initialized'" is the Fabric Manager's; and output tagged only
with a worker's pid (vLLM's "(VllmWorkerProcess pid=N)") belongs to the rank that pid announced
itself as."""

from __future__ import annotations

import rankdoctor

from .conftest import SCENARIOS

EP = SCENARIOS / "real-holdout150"


def _top(path):
    return rankdoctor.diagnose(str(path)).diagnoses[0]


def test_oneccl_set_up_errors_are_start_up_failures():
    for case, entry, klass in (
        (EP / "p2-torch-ccl-54-start-workers-pthread-einval", "oneccl-init-failed", "rendezvous-init"),
        (SCENARIOS / "real-holdout57" / "accelerate-2340-xpu-ccl-local-idx", "oneccl-init-failed", "rendezvous-init"),
        (SCENARIOS / "real-holdout129" / "p1-aurora-megads-llama7b-oneccl-ipc-exchange", "oneccl-init-failed", "rendezvous-init"),
        (SCENARIOS / "real-holdout80" / "deepspeed-5313-pipe-cpu-ccl-wrong-iface", "oneccl-kvs-connect-timeout", "nccl-network"),
    ):
        top = _top(case / "log.txt")
        assert (top.entry, top.klass) == (entry, klass), case.name


def test_the_ucx_plugin_error_is_the_network_stack():
    top = _top(EP / "p1-rccl-tests-ucx-plugin-gdr-rcache-invalid-param" / "log.txt")
    assert (top.entry, top.klass) == ("nccl-ucx-plugin-error", "nccl-network")


def test_hccl_communicator_creation_failing_is_an_init_failure():
    top = _top(EP / "p2-vllm-ascend-397-grpo-deepspeed-hcclcomminit" / "log.txt")
    assert (top.entry, top.klass, top.initiating_rank) == ("hccl-comm-init-failed", "rendezvous-init", 0)


def test_an_ib_completion_error_broken_over_two_lines_is_read():
    d = rankdoctor.diagnose(str(EP / "p5-gx10-roce-bond0-alltoall-ib-retry-exceeded" / "log.txt"))
    assert any(x.entry == "nccl-ib-completion-error" for x in d.diagnoses)


def test_nccl_tests_cuda_failure_names_the_fabric_manager():
    top = _top(EP / "p5-h20-2node-fabricmanager-mismatch-system-not-initialized" / "log.txt")
    assert (top.entry, top.klass) == ("gpu-fabric-manager-not-running", "gpu-hardware")


def test_a_workers_pid_prefix_is_the_rank_it_announced(tmp_path):
    log = EP / "p2-vllm-ascend-310p-tp2-rank1-unpickle-ei0006" / "log.txt"
    assert _top(log).initiating_rank == 1
    # without the worker's "rank 1 in world size 2 is assigned as ..." line its pid names no rank
    # (written under a name that does not name a rank itself, as the case's folder does)
    cut = tmp_path / "vllm.log"
    cut.write_text("".join(ln + "\n" for ln in log.read_text(encoding="utf-8").splitlines() if "is assigned as" not in ln),
                   encoding="utf-8")
    assert _top(cut).initiating_rank is None
