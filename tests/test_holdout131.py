"""Readings learned from held-out set DW (tests/scenarios/real-holdout131: logs people committed to
public repositories, measured before any change): the rank in the logging format of k2/icefall,
lhotse and WeNet, a best-so-far loss a trainer starts at infinity is no divergence, and nccl-tests'
own CUDA check of an illegal memory access."""

from __future__ import annotations

import rankdoctor
from rankdoctor.ingest.prefix import parse_prefix

from .conftest import SCENARIOS

DW = SCENARIOS / "real-holdout131"


def test_the_rank_of_icefall_s_logging_format_is_read():
    line = "2023-08-27 11:00:45,004 INFO [train_noCtc.py:958] (3/4) Training started"
    a, at = parse_prefix(line)
    assert a.rank == 3 and line[at:] == "Training started" and a.time.startswith("2023-08-27T11:00:45")
    a, at = parse_prefix("2023-08-27 11:00:45,004 WARNING [train.py:12] (0/4) Grad scale is small")
    assert a.rank == 0 and a.extra["level"] == "W"


def test_icefall_s_best_loss_starting_at_infinity_is_no_divergence():
    # get_params() starts best_train_loss and best_valid_loss at float("inf"), logged with the parameters
    for case in ("p2-icefall-ami-4gpu-healthy", "p2-icefall-ami-4gpu-scratch-healthy"):
        d = rankdoctor.diagnose(DW / case / "log.txt")
        assert d.verdict == "no-failure-found", (case, d.diagnoses[:1])
        assert d.ranks_seen == [0, 1, 2, 3]


def test_nccl_tests_cuda_check_of_an_illegal_access_is_read():
    d = rankdoctor.diagnose(DW / "p4-alltoall-devapi-nvl-kernel-2node-illegal-memory-access" / "log.txt")
    assert d.diagnoses and d.diagnoses[0].klass == "illegal-memory-access"
