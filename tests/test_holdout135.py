"""Readings learned from held-out set EA (tests/scenarios/real-holdout135: logs people committed to
public repositories, measured before any change): CUDA's "out of memory" text alone on the line
under a program's own CUDA check (llm.c's cudaCheck) is a GPU allocation failure; ATen's
TensorIterator dtype check is a dtype mismatch; a job its launcher restarted whose last attempt
was still making steps with no failure line where the evidence ends has recovered."""

from __future__ import annotations

import rankdoctor
from rankdoctor.kb.loader import load_kb
from rankdoctor.scan import iter_events, scan_text

from .conftest import SCENARIOS, edited_copy

EA = SCENARIOS / "real-holdout135"


def test_cuda_s_out_of_memory_text_under_a_program_s_own_check_is_a_gpu_oom():
    # llm.c under mpirun -np 4, pasted as comment lines: "# [CUDA ERROR] at file train_gpt2.cu:1031:" / "# out of memory"
    d = rankdoctor.diagnose(EA / "p4-llmc-gpt2-1558m-4x3090-mpirun-oom" / "log.txt")
    assert d.diagnoses and d.diagnoses[0].klass == "cuda-oom"
    kb = load_kb()
    host = [e for e in iter_events(scan_text(kb, "xmalloc: out of memory\n")) if e.entry == "cuda-library-alloc-failed"]
    assert not host


def test_tensor_iterator_s_dtype_check_is_a_dtype_mismatch():
    d = rankdoctor.diagnose(EA / "p4-kaggle-omnivoice-dtype" / "log.txt")
    assert d.diagnoses and d.diagnoses[0].klass == "device-mismatch"


def test_a_restarted_job_still_stepping_in_its_last_attempt_has_recovered(tmp_path):
    # TorchElastic on Azure spot VMs: a node evicted, the agent restarts the group, the survivor
    # resumes from the checkpoint and trains on (epoch 2, steps 0-30) where the paste ends
    log = EA / "p1-azure-spot-eviction-torchelastic-etcd-recovered" / "log.txt"
    d = rankdoctor.diagnose(log)
    assert d.verdict == "no-failure-found"
    assert any("still making steps" in w for w in d.warnings)
    # without the restarted attempt's steps nothing shows that the restart worked
    cut = edited_copy(tmp_path, log, lambda _, ln: not ln.startswith("Epoch: [2]"))
    assert rankdoctor.diagnose(cut).verdict != "no-failure-found"
    # and a failure line in the last attempt is no recovery
    failed = edited_copy(tmp_path, log, lambda _, ln: True)
    failed.write_text(failed.read_text(encoding="utf-8") + "\nRuntimeError: CUDA error: an illegal memory access was encountered\n",
                      encoding="utf-8")
    assert rankdoctor.diagnose(failed).verdict != "no-failure-found"
