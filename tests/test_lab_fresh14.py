"""Readings learned from the lab's ninth draw of new fault kinds (tests/scenarios/lab-fresh14,
real torchrun + gloo runs, measured before any change) and from set DP: autograd's in-place error
about an activation (", which is output N of <Fn>,") is the program's own bug, not DDP's buffer
broadcast into BatchNorm; a store wait for a key of the program's own that timed out on one rank
is that rank's (store-key-wait-timeout); activation checkpointing's detail lines, DCP's global
plan validation and a group larger than the world are read from their upstream formats."""

from __future__ import annotations

from rankdoctor.scan import Scanner, scan_text

from .conftest import SCENARIOS, diagnose_lab_run

LAB14 = SCENARIOS / "lab-fresh14"


def _run(kb, case: str):
    return diagnose_lab_run(kb, LAB14 / case)


def _entries(kb, text: str) -> set[str]:
    return {e.entry for e in scan_text(kb, text, scanner=Scanner(kb)).events if e.entry}


def test_an_activation_changed_in_place_is_the_rank_s_own_error_not_ddp_s_buffer_broadcast(kb):
    # rank 2 clipped its batch's sigmoid outputs in place; autograd names the tensor as
    # "output 0 of Sigmoid", which a BatchNorm buffer (a leaf) never is
    d = _run(kb, "inplace-autograd-w4-r2")
    top = d.diagnoses[0]
    assert (top.klass, top.initiating_rank) == ("peer-rank-crashed", 2)
    assert all(x.entry != "ddp-batchnorm-buffer-inplace" for x in d.diagnoses[:1])


def test_the_buffer_form_of_the_in_place_error_still_reads_as_ddp_s_broadcast(kb):
    line = ("RuntimeError: one of the variables needed for gradient computation has been modified by an "
            "inplace operation: [torch.cuda.FloatTensor [512]] is at version 4; expected version 3 instead.")
    assert "ddp-batchnorm-buffer-inplace" in _entries(kb, line)
    activation = line.replace("[512]]", "[8, 4]], which is output 0 of SigmoidBackward0,")
    assert "ddp-batchnorm-buffer-inplace" not in _entries(kb, activation)


def test_a_store_wait_for_a_misspelt_key_is_the_waiting_rank_s(kb):
    for case, rank in (("store-get-missing-w4-r3", 3), ("store-get-missing-w3-r1-notee", 1)):
        top = _run(kb, case).diagnoses[0]
        assert (top.entry, top.klass, top.initiating_rank) == ("store-key-wait-timeout", "rendezvous-init", rank)


def test_c10d_s_own_store_keys_are_not_read_as_a_key_of_the_program(kb):
    nccl = "torch.distributed.DistStoreError: wait timeout after 600000ms, keys: /default_pg/0//cuda//0"
    gloo = "RuntimeError: wait timeout after 10000ms, keys: /default_pg/0//cpu//0/2"
    assert "store-key-wait-timeout" not in _entries(kb, nccl) | _entries(kb, gloo)


def test_new_knowledge_from_set_dp_reads_upstream_formats(kb):
    assert "activation-checkpoint-recompute-mismatch" in _entries(
        kb, "[rank0]: recomputed metadata: {'shape': torch.Size([1, 2048, 8, 128]), 'dtype': torch.bfloat16, "
            "'device': device(type='cuda', index=0)}")
    assert "dcp-global-plan-invalid" in _entries(
        kb, "W0520 default_planner.py:495]  key:model.layers.0.attention.wq.weight invalid fill tensor-volume:  65536 chunks-volume: 32768")
    assert "group-ranks-beyond-world" in _entries(kb, "ValueError: Rank 2 is out of range. Valid ranks are 0 to 1 (world_size=2)")
