"""Readings learned from the lab's sixteenth draw of new fault kinds (tests/scenarios/lab-fresh21,
real torchrun + gloo runs, measured before any change): a failure line that a rank printed as a log
record (an ERROR record, no traceback) and then trained past, to later steps, while another rank
failed by itself after it, is not where the failure started (ranktable._got_past)."""

from __future__ import annotations

from rankdoctor.diagnose.ranktable import logged_record

from .conftest import SCENARIOS, diagnose_lab_run

LAB21 = SCENARIOS / "lab-fresh21"


def test_an_error_record_its_rank_trained_past_does_not_start_the_failure(kb):
    # rank c+1 logged that its fused kernel could not load (libcudart.so.12) at step 1 and went
    # on with the fallback; rank c raised ValueError at a later step
    for case, rank in (("noise-then-crash-w4-r2", 2), ("noise-then-crash-w3-r0-notee", 0)):
        d = diagnose_lab_run(kb, LAB21 / case)
        top = d.diagnoses[0]
        assert (top.klass, top.initiating_rank) == ("peer-rank-crashed", rank), case
        assert any("an error record the program went on from" in w and "not read as where the failure started" in w
                   for w in d.warnings), case


def test_a_chained_checkpoint_write_error_is_the_disk_s(kb):
    for case, rank in (("chained-disk-full-w4-r1", 1), ("chained-disk-full-w3-r2-notee", 2)):
        d = diagnose_lab_run(kb, LAB21 / case)
        top = d.diagnoses[0]
        assert (top.klass, top.initiating_rank) == ("checkpoint-error", rank), case


def test_log_records_are_told_by_their_level():
    assert logged_record("2026-12-06 18:16:26,101 ERROR train: rank 3 failed to load optional kernel extension")
    assert logged_record("[rank1]:E1206 18:16:26.101000 77 ProcessGroupNCCL.cpp:1540] [PG 0 Rank 1] Process group watchdog")
    assert logged_record("[2025-04-23 17:11:11,812] WARNING - RUN - run.py: main - 174: --reuse is not set")
    assert not logged_record("[rank2]: ValueError: label index 7 out of range for 4 classes (sample 34)")
    assert not logged_record("RuntimeError: CUDA error: an illegal memory access was encountered")
