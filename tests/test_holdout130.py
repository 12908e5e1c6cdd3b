"""Readings learned from held-out set DV (tests/scenarios/real-holdout130: logs people committed to
public repositories, measured before any change): a log pasted as an indented Markdown code block
keeps its rank prefixes, a job whose launcher restarted it and whose last attempt finished has
recovered, and SGLang's custom all-reduce fallback warning is no P2P failure."""

from __future__ import annotations

import rankdoctor

from .conftest import SCENARIOS, edited_copy

DV = SCENARIOS / "real-holdout130"


def test_rank_prefixes_behind_a_markdown_indent_are_read():
    # "  [rank0]: RuntimeError: FSDP requires CUDA for streams": the paste is indented two spaces
    for case in ("p2-torchtune-fsdp2-xpu-requires-cuda", "p2-mmm-fsdp2-xpu-cuda-streams"):
        d = rankdoctor.diagnose(DV / case / "log.txt")
        assert d.verdict != "no-failure-found", case
        assert d.diagnoses[0].klass == "fsdp-error", case
    from rankdoctor.ingest.prefix import parse_prefix
    a, at = parse_prefix("      [rank0]: AssertionError: Torch not compiled with CUDA enabled")
    assert a.rank == 0 and "      [rank0]: AssertionError: Torch not compiled with CUDA enabled"[at:].startswith("AssertionError")
    # a traceback frame keeps its indentation (it is no prefix)
    a, at = parse_prefix('  File "train.py", line 3, in <module>')
    assert a.rank is None and at == 0


def test_a_job_whose_last_attempt_finished_recovered(tmp_path):
    # torchelastic (2020) restarted the worker group after an NCCL error during a scale-down; the
    # last attempt ends "[default] All workers successfully finished."
    log = DV / "p1-healthy-fwctl-pet-etcd-scaledown-nccl-restart" / "log.txt"
    d = rankdoctor.diagnose(log)
    assert d.verdict == "no-failure-found"
    note = next(w for w in d.warnings if "the job recovered" in w)
    assert "NCCL error: unhandled system error" in note and "All workers successfully finished" in note
    # without the closing line nothing says the last attempt finished: the first attempt's failure stands
    d = rankdoctor.diagnose(edited_copy(tmp_path, log, lambda _, ln: "All workers successfully finished" not in ln))
    assert d.verdict != "no-failure-found"


def test_sglang_s_custom_all_reduce_fallback_warning_is_no_p2p_failure():
    d = rankdoctor.diagnose(DV / "p3-sglang-tp2-4090-customar-no-p2p-healthy" / "log.txt")
    assert d.verdict == "no-failure-found"
