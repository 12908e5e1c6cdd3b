"""Two readings learned from the lab's draw of new fault kinds (tests/scenarios/lab-fresh6, real
torchrun + gloo runs): a job the launcher restarted is read from its first failed attempt
(diagnose/restarts.py), and a rank that ran to a clean exit while its peers were still in a
collective left early (features.left_early)."""

from __future__ import annotations

from rankdoctor.diagnose.engine import weigh
from rankdoctor.diagnose.features import left_early
from rankdoctor.diagnose.ranktable import End
from rankdoctor.events import ScanResult
from rankdoctor.ingest.sources import expand_inputs
from rankdoctor.pipeline import diagnose_paths
from rankdoctor.scan import Scanner, scan_sources, scan_text

from .conftest import SCENARIOS

LAB6 = SCENARIOS / "lab-fresh6"


def _run(kb, case: str):
    d = LAB6 / case
    scanner = Scanner(kb)
    return diagnose_paths(kb, [str(d / "console.log"), str(d / "logs")], lambda s: scan_sources(kb, s, scanner))[0]


def _scan(kb, case: str) -> ScanResult:
    d = LAB6 / case
    return scan_sources(kb, expand_inputs([str(d / "console.log"), str(d / "logs")]), Scanner(kb))


def test_restarted_job_is_read_from_its_first_failed_attempt(kb):
    # rank 1 raises KeyError in attempt 0; after torchrun's restart the new workers cannot
    # connect (gloo connectFullMesh, connection refused), which the final summary reports
    for case, rank in (("restart-exception-w4-r1-notee", 1), ("restart-exception-w3-r2", 2)):
        d = _run(kb, case)
        top = d.diagnoses[0]
        assert (top.klass, top.initiating_rank) == ("peer-rank-crashed", rank), case
        assert any("restarted the workers (2 attempts)" in w and "attempt 0" in w for w in d.warnings), d.warnings


def test_one_attempt_is_not_scoped(kb):
    d = _run(kb, "early-exit-w4-r2")
    assert not any("restarted the workers" in w for w in d.warnings)


def test_restart_line_of_older_agents_starts_a_new_attempt(kb):
    # torchelastic's INFO line (real-holdout20's format) ends attempt 0: a failure after it is
    # attempt 1's, and attempt 0's own exception is the one weighed
    text = "\n".join([
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "train.py", line 10, in <module>',
        "[rank0]: KeyError: 'labels'",
        "[ERROR] 2021-09-14 14:02:56,862 api: failed (exitcode: 1) local_rank: 0 (pid: 28436) of binary: /usr/bin/python3",
        "[INFO] 2021-09-14 14:02:56,862 api: [default] Worker group FAILED. 1/3 attempts left; will restart worker group",
        "[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered",
    ]) + "\n"
    w = weigh(kb, scan_text(kb, text))
    assert w.restarted is not None and w.restarted.attempt == 0 and w.restarted.attempts == 2
    assert not any("illegal memory access" in e.text for e in w.att.events)


def test_rank_that_left_early_is_the_desync(kb):
    for case, rank in (("early-exit-w4-r2", 2), ("early-exit-w5-r0-notee", 0)):
        w = weigh(kb, _scan(kb, case))
        assert w.table.rows[rank].end == End.clean, case  # the failure summary does not list it
        assert left_early(w.table) == {rank}, case
        d = _run(kb, case)
        assert (d.diagnoses[0].klass, d.diagnoses[0].initiating_rank) == ("collective-desync", rank), case


def test_a_crash_is_not_an_early_exit(kb):
    # rank 3 segfaults: every other rank is listed (SIGTERM'd), none ran to a clean exit
    w = weigh(kb, _scan(kb, "segfault-w4-r3"))
    assert left_early(w.table) == set()


def test_detail_mismatch_reports_give_each_rank_its_fingerprint(kb):
    # lab-fresh7: under TORCH_DISTRIBUTED_DEBUG=DETAIL rank 2 broadcasts where ranks 0, 1, 3
    # all_reduce; every rank prints "Detected mismatch ... Rank <self> is running collective:
    # CollectiveFingerPrint(SequenceNumber=16, OpType=<its op> ...), but Rank <peer> ..."
    from rankdoctor.diagnose.hypotheses import suspects
    from rankdoctor.diagnose.ranktable import fingerprint_minority

    d = SCENARIOS / "lab-fresh7" / "detail-allreduce-w4-r2"
    w = weigh(kb, scan_sources(kb, expand_inputs([str(d / "console.log")]), Scanner(kb)))
    assert {r: e.captures["op"] for r, e in w.table.fingerprints.items()} == {
        0: "ALLREDUCE", 1: "ALLREDUCE", 2: "BROADCAST", 3: "ALLREDUCE"}
    assert fingerprint_minority(w.table) == {2}
    # the majority's ranks only reported the mismatch: witnesses, not suspects
    assert suspects(kb, w.table, w.att.events).desync == {2}


def test_the_rank_waiting_where_no_other_rank_waited_is_odd(kb):
    # lab-fresh9: only rank 1 calls dist.barrier(); it gives up waiting at the barrier's line,
    # ranks 0 and 2 at the training step's line
    d = SCENARIOS / "lab-fresh9" / "barrier-one-rank-w3-r1-notee"
    w = weigh(kb, scan_sources(kb, expand_inputs([str(d / "console.log")]), Scanner(kb)))
    assert w.table.odd_waiters == {1}


def test_a_few_ranks_wait_sites_in_a_multi_group_job_single_out_nobody(kb):
    # lab-pg2d: 8 ranks in TP and DP groups; only three ranks' tracebacks show where they
    # waited, in different groups' collectives: no rank is odd
    d = SCENARIOS / "lab-pg2d" / "extra-tp-tp2dp4-r3-s2"
    w = weigh(kb, scan_sources(kb, expand_inputs([str(d / "console.log")]), Scanner(kb)))
    assert len(w.table.wait_sites) < 8 and w.table.odd_waiters == set()
