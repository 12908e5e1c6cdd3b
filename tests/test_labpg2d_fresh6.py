"""Readings learned from lab-pg2d-fresh6 (tests/scenarios/lab-pg2d-fresh6: 8-rank TP x DP (x PP)
runs, measured before any change).

- A console where several ranks print at once splits one rank's abort block: its "terminate called
  after throwing an instance of 'gloo::EnforceNotMet'" and its "what(): ... op.preamble.length <=
  op.nbytes" lie twenty lines apart. They are still one block (no other failure line of that rank
  between them), so the rank's own failure is only its report of what a peer sent - and in a group
  of two either side of a size mismatch may be the one that strayed.
- gloo retires a collective that failed because a member died: the survivor's copy reads done. A
  group whose member left no dump, where every member that dumped did nothing after the group's
  last collective, stopped there waiting for that member; a rank lagging elsewhere because it was
  blocked there is collateral, not a culprit."""

from __future__ import annotations

import rankdoctor
from rankdoctor.diagnose.ranktable import same_block
from rankdoctor.events import Event
from rankdoctor.flightrec.analyze import analyze
from rankdoctor.flightrec.load import load_dumps

from .conftest import SCENARIOS

PG = SCENARIOS / "lab-pg2d-fresh6"


def _ev(line: int, rank: int = 7, source: str = "console.log") -> Event:
    return Event("e", "s", "cause", source, line, f"line {line}", rank=rank)


def test_an_abort_block_split_by_other_ranks_lines_is_one_block():
    header, what = _ev(53), _ev(74)
    assert same_block(header, [what], [header, what])
    # another failure line of the same rank between them: two blocks
    assert not same_block(header, [what], [header, _ev(60), what])
    # another rank's failure between them does not split the block
    assert same_block(header, [what], [header, _ev(60, rank=3), what])
    # without the rank's failures, only lines close together count
    assert not same_block(header, [what])
    assert same_block(header, [_ev(55)])
    # more than a screen apart: not one block
    assert not same_block(header, [_ev(120)], [header, _ev(120)])


def test_a_size_mismatch_in_a_group_of_two_is_not_blamed_confidently_on_the_reporter():
    # rank 6 all-reduced its gradients in its TP group [6, 7]; rank 7 received the larger op and
    # aborted: its report alone cannot say which side strayed
    d = PG / "wrong-group-pp2tp2dp2-r6-s2"
    diag = rankdoctor.diagnose([str(d / "console.log"), str(d / "logs")])
    top = diag.diagnoses[0]
    assert top.klass == "collective-desync"
    assert diag.verdict != "diagnosed" or top.initiating_rank == 6, (diag.verdict, top.initiating_rank)


def test_a_group_waiting_for_a_member_without_a_dump_is_stuck_on_it():
    # rank 4 (TP group [4, 5]) aborted in native code and left no dump; rank 5's TP all_reduce was
    # retired when the connection closed, and rank 5 lags in its DP group only because of it
    dumps, _problems = load_dumps([str(PG / "abort-tp2dp4-r4-s3" / "fr")])
    report = analyze(dumps)
    assert report.ranks_missing == [4]
    tp = [f for f in report.findings if f.process_group.endswith(":tp2")]
    assert [(f.kind, f.culprit_ranks) for f in tp] == [("stuck", [4])]
    lagging = [f for f in report.findings if f.kind == "lagging"]
    assert lagging and all(f.collateral for f in lagging)
