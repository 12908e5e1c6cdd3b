"""Readings learned from the lab's fifth draw of new fault kinds (tests/scenarios/lab-fresh10,
real torchrun + gloo runs, measured before any change): a worker that died by a SIGTERM the
launcher did not send died by itself (ranktable._sigterm_from_outside)."""

from __future__ import annotations

from rankdoctor.diagnose.ranktable import End
from rankdoctor.scan import scan_text

from .conftest import SCENARIOS, diagnose_lab_run

LAB10 = SCENARIOS / "lab-fresh10"


def _run(kb, case: str):
    return diagnose_lab_run(kb, LAB10 / case)


def test_a_sigterm_the_launcher_did_not_send_is_the_ranks_own_death(kb):
    # torchrun lists the workers it sends SIGTERM to; the culprit, killed from outside first, is
    # not among them, and its peers only lost their connection to it
    for case, rank in (("sigterm-one-w4-r2", 2), ("sigterm-one-w5-r0-notee", 0)):
        top = _run(kb, case).diagnoses[0]
        assert (top.klass, top.initiating_rank) == ("peer-rank-crashed", rank), case


# the launcher's lines of a teardown (torch 2.13 torchrun, as in lab-fresh10/sigterm-one-w4-r2)
_TEARDOWN = """\
[default0]:[rank0]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error [127.0.0.1]:29393: Connection reset by peer. This is typically caused by a remote worker hanging or bugs in the application. Check the logs of the remote worker before reporting an error. GLHF!
W1206 12:50:09.619000 19779 .venv/lib/python3.11/site-packages/torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 19785 closing signal SIGTERM
W1206 12:50:09.622000 19779 .venv/lib/python3.11/site-packages/torch/distributed/elastic/multiprocessing/api.py:1028] Sending process {sent} closing signal SIGTERM
E1206 12:50:09.814000 19779 .venv/lib/python3.11/site-packages/torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: -15) local_rank: 1 (pid: 19787) of binary: /usr/bin/python
"""


def test_the_launchers_own_sigterm_stays_collateral(kb):
    from rankdoctor.diagnose.attribution import attribute
    from rankdoctor.diagnose.ranktable import build_rank_table

    for sent, end in (("19788", End.own_death), ("19787", End.terminated)):
        att = attribute(kb, scan_text(kb, _TEARDOWN.format(sent=sent)))
        table = build_rank_table(kb, att)
        assert table.rows[1].end == end, sent


def test_the_rank_most_others_name_in_a_mismatch_is_the_odd_one(kb):
    # DDP's parameter-count check on every rank: each names the first rank whose count differs
    # from its own (lab-fresh10/frozen-one-rank-w4-r3-notee: rank 3 froze a layer)
    from rankdoctor.diagnose.hypotheses import most_named

    line = "[rank{r}]: RuntimeError: DDP expects same model across all ranks, but Rank {r} has {n} params, while rank {p} has inconsistent {m} params.\n"
    text = "".join(line.format(r=r, n=4, p=3, m=2) for r in (0, 1, 2)) + line.format(r=3, n=2, p=0, m=4)
    causes = [e for e in scan_text(kb, text).events if e.role == "cause"]
    assert most_named(causes) == 3
    # two ranks naming each other: no majority
    two = line.format(r=0, n=4, p=1, m=2) + line.format(r=1, n=2, p=0, m=4)
    assert most_named([e for e in scan_text(kb, two).events if e.role == "cause"]) is None
    for case, rank in (("frozen-one-rank-w3-r1", 1), ("frozen-one-rank-w4-r3-notee", 3)):
        top = _run(kb, case).diagnoses[0]
        assert (top.klass, top.initiating_rank) == ("ddp-model-mismatch", rank), case
