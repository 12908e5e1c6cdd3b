"""Readings learned from held-out set EW (tests/scenarios/real-holdout157: run logs committed to
public repositories, measured before any change).

- verl's driver failing to find the register center that rank 0's worker actor should have
  created ("failed to get register_center_actor ..._register_center in [...]") is a failed
  rendezvous (a new entry); where rank 0's actor printed its own error, that error is the cause.
- An indexed assignment between dtypes ("Index put requires the source and destination dtypes
  match, got Half for the destination and Float for the source.") is a dtype mismatch.
- One process printing the same exception again and again, as records the program logs, lived on
  after them: a process dies of an exception once.
- A rank with no line of its own that the launcher records as aborted (SIGABRT) within seconds of a
  rank whose watchdog timed out and aborted it died of the same timeout, not by itself: the
  watchdog ends every waiting rank so (here torchrun showed rank 0's output only).
- The "[20260511 03:22:17][rank-7/8][INFO]" prefix (AMD Primus; "[time][rank-N]" logging formats)
  names the printing rank and its time, so a stop from outside can be weighed against the steps."""

from __future__ import annotations

import rankdoctor
from rankdoctor.diagnose.engine import weigh
from rankdoctor.diagnose.ranktable import End
from rankdoctor.ingest.prefix import parse_prefix
from rankdoctor.ingest.sources import expand_inputs
from rankdoctor.scan import scan_sources

from .conftest import SCENARIOS, Scanner, edited_copy
from .conftest import diagnose_top as _diag

EW = SCENARIOS / "real-holdout157"


def test_verl_driver_without_rank_zeros_register_center_is_a_failed_rendezvous():
    _d, top = _diag(EW / "p2-simplerl-2node-verl-register-center-wait-timeout" / "log.txt")
    assert (top.klass, top.entry) == ("rendezvous-init", "verl-register-center-timeout")


def test_rank_zeros_own_cuda_error_outweighs_the_missing_register_center():
    _d, top = _diag(EW / "p2-simplerl-2node-verl-rank0-cuda-802-fabric" / "log.txt")
    assert top.klass == "gpu-hardware", (top.entry, top.confidence)


def test_an_index_put_between_dtypes_is_a_dtype_mismatch():
    _d, top = _diag(EW / "p3-ultralytics-pose-ddp-2gpu-indexput-half-float" / "log.txt")
    assert (top.klass, top.entry) == ("device-mismatch", "tensor-dtype-mismatch")


def test_an_exception_one_process_logs_again_and_again_is_no_failure(tmp_path):
    log = EW / "p2-guicursor-verl-8gpu-agent-action-parse-tracebacks-healthy" / "log.txt"
    d, _top = _diag(log)
    assert d.verdict == "no-failure-found", [(x.entry, x.confidence) for x in d.diagnoses]
    assert sum("printed again and again" in w for w in d.warnings) == 1, d.warnings
    # the log cut after two processes' first printings (lines 884 and 893): nothing shows that
    # either lived on (cut by bytes: the agent's text holds characters str.splitlines breaks at)
    cut = tmp_path / "first-printings.log"
    cut.write_bytes(b"\n".join(log.read_bytes().split(b"\n")[:894]) + b"\n")
    d, top = _diag(cut)
    assert d.verdict != "no-failure-found" and top.klass == "peer-rank-crashed"


def test_a_rank_dash_prefix_names_rank_and_time():
    a, at = parse_prefix("[20260511 03:22:17][rank-7/8][DEBUG]    [----utils.py:429] : iteration 19/ 20 |")
    assert (a.rank, a.time) == (7, "2026-05-11T03:22:17") and at == 40
    a, at = parse_prefix("[2024-01-02 10:11:12,123][rank-3] loss 1.2")
    assert a.rank == 3 and a.time.startswith("2024-01-02T10:11:12")
    # a bracketed date alone is no rank
    assert parse_prefix("[20260511 03:22:17] starting")[0].rank is None


def test_a_stop_from_outside_between_primus_steps_is_no_failure():
    log = EW / "p5-primus-dsv2lite-ep8-external-sigterm" / "log.txt"
    d, _top = _diag(log)
    assert d.verdict == "no-failure-found", [(x.entry, x.confidence) for x in d.diagnoses]
    assert any("stopped from outside" in w for w in d.warnings), d.warnings


def _table(kb, path):
    return weigh(kb, scan_sources(kb, list(expand_inputs([str(path)])), Scanner(kb))).table


def test_silent_aborts_beside_a_watchdog_abort_ended_the_same_wait(kb, tmp_path):
    # torchrun printed only rank 0's output (its watchdog timed out in an all-gather, then
    # aborted); the summary records all eight ranks exiting by SIGABRT within three seconds
    log = EW / "p1-torchtitan-qwen3-8xb200-p2p-cuda-memcpy-first-allgather-timeout" / "log.txt"
    table = _table(kb, log)
    assert table.row(0).waits and table.row(0).exit.exitcode == -6
    assert all(table.row(r).end == End.died_waiting for r in (1, 2, 3, 4, 5)), {r: table.row(r).end for r in range(8)}
    assert not table.failed_ranks
    # without rank 0's timeout nothing says the aborts ended a wait: each is the rank's own
    cut = edited_copy(tmp_path, log, lambda _no, ln: "[rank0]:" not in ln)
    table = _table(kb, cut)
    assert all(table.row(r).end == End.own_death for r in (1, 2, 3, 4, 5))
