"""Readings learned from held-out set EU (tests/scenarios/real-holdout155: run logs committed to
public repositories, measured before any change).

- NeMo's resume warning "There were no checkpoints found ... Training from scratch." is a first
  run starting; only its "... Cannot resume." is a failure (the signature now says so).
- ROCm's "Memory access fault by GPU node-N (Agent handle: ...)" is an AMD GPU's page fault, its
  illegal memory access (a new entry), on the rank whose launcher record shows the SIGABRT.
- accelerate's "FSDP requires PyTorch >= X" is FSDP's set-up refusing the installed torch.
- Warnings before the job's word that its work ended normally were survived, whichever says it:
  a launcher's record or a trainer's closing record (MLPerf's run_stop with status success, after
  NCCL's SHARP warnings and its fallback)."""

from __future__ import annotations

import rankdoctor

from .conftest import SCENARIOS, edited_copy

EU = SCENARIOS / "real-holdout155"


def _top(case: str):
    d = rankdoctor.diagnose(str(EU / case / "log.txt"))
    return d, d.diagnoses[0] if d.diagnoses else None


def test_nemo_training_from_scratch_is_no_checkpoint_failure():
    d, _ = _top("p1-nemo2-resiliency-demo-8gpu-tp2-baseline-healthy")
    assert d.verdict == "no-failure-found", [(x.entry, x.confidence) for x in d.diagnoses]


def test_a_rocm_memory_access_fault_is_an_illegal_memory_access():
    d, top = _top("p1-mi300x-torchtune-fsdp-bnb-paged-adamw-memory-access-fault")
    assert (top.entry, top.klass, top.initiating_rank) == ("rocm-gpu-memory-access-fault", "illegal-memory-access", 1)


def test_accelerate_refusing_fsdp_on_an_old_torch_is_an_fsdp_error():
    d, top = _top("p4-accelerate-fsdp-cifar-torch-too-old")
    assert top.klass == "fsdp-error" and top.entry == "fsdp-unclassified-exception"


def test_warnings_before_a_trainers_closing_record_were_survived(tmp_path):
    log = EU / "p2-mlperf-bert-8node-64rank-healthy-sharp-collnet-warn" / "log.txt"
    d = rankdoctor.diagnose(str(log))
    assert d.verdict == "no-failure-found"
    assert any("said its work ended normally after it" in w for w in d.warnings)
    # without MLPerf's run_stop record, nothing says the job ended well after the warnings
    cut = edited_copy(tmp_path, log, lambda no, ln: '"key": "run_stop"' not in ln)
    assert rankdoctor.diagnose(str(cut)).verdict != "no-failure-found"
