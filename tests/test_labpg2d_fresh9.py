"""Readings learned from lab-pg2d-fresh9 (tests/scenarios/lab-pg2d-fresh9: 8-rank TP x DP (x PP)
runs, measured before any change).

- Groups of one kind ("dp0".."dp3") run the same program, so at one sequence number every sibling
  runs the same collective. A group whose other member left no dump (gloo's size check aborted it)
  cannot be compared within itself; compared with its siblings, the rank that all-reduced its DP
  gradients in float64 where every other DP group reduced float32 issued the odd collective - not
  its partner, whose abort names no sender."""

from __future__ import annotations

import rankdoctor
from rankdoctor.flightrec.analyze import analyze
from rankdoctor.flightrec.load import load_dumps

from .conftest import SCENARIOS

PG = SCENARIOS / "lab-pg2d-fresh9"


def test_a_group_without_its_partners_dump_is_compared_with_its_siblings():
    # rank 3 reduced Double [168] in dp3 = {3, 7}; rank 7 aborted on the size check and left no dump
    dumps, _problems = load_dumps([str(PG / "dp-dtype-tp4dp2-r3-s2" / "fr")])
    report = analyze(dumps)
    odd = [f for f in report.findings if f.kind == "dtype-mismatch"]
    assert report.verdict == "mismatch" and len(odd) == 1, report.findings
    assert odd[0].culprit_ranks == [3] and odd[0].process_group.endswith(":dp3") and odd[0].seq == 3
    assert "sibling" in odd[0].detail
    # the same rank, the same reading, older draw: dp2 = {2, 6}, rank 6 reduced Double, rank 2 left
    # no dump; the group is not read as stuck waiting for rank 2
    dumps, _problems = load_dumps([str(SCENARIOS / "lab-pg2d-fresh6" / "dp-dtype-tp4dp2-r6-s3-notee" / "fr")])
    report = analyze(dumps)
    assert [f.culprit_ranks for f in report.findings if f.kind in ("dtype-mismatch", "stuck")] == [[6]]


def test_the_diagnosis_names_the_rank_with_the_odd_dtype_only_with_the_dumps():
    d = PG / "dp-dtype-tp4dp2-r3-s2"
    diag = rankdoctor.diagnose([str(d / "console.log"), str(d / "logs"), str(d / "fr")])
    top = diag.diagnoses[0]
    assert (top.klass, top.initiating_rank, diag.verdict) == ("collective-desync", 3, "diagnosed")
    # the logs alone: gloo's abort on rank 7 names no sender, so no confident rank
    diag = rankdoctor.diagnose([str(d / "console.log"), str(d / "logs")])
    assert diag.verdict != "diagnosed" or diag.diagnoses[0].initiating_rank == 3


def test_healthy_sibling_groups_give_no_finding():
    # every member dumped at a clean exit: nothing is compared across groups
    for d in sorted(SCENARIOS.glob("lab-pg2d*/healthy-*")):
        report = analyze(load_dumps([str(d / "fr")])[0])
        assert not [f for f in report.findings if "sibling" in f.detail], d


def test_in_a_pipeline_only_the_siblings_that_ran_the_same_program_are_compared():
    # lab-pg2d-fresh10 (measured before this): PP 2 x TP 2 x DP 2. The DP groups of the two stages
    # reduce gradients of different sizes, so the four DP groups never agree; the one that ran what
    # dp2 = {4, 6} ran over its last collectives (dp3, the same stage) is compared with it: rank 6
    # reduced Double where dp3 reduced Float, and rank 4 (aborted by gloo) left no dump
    fresh10 = SCENARIOS / "lab-pg2d-fresh10"
    report = analyze(load_dumps([str(fresh10 / "dp-dtype-pp2tp2dp2-r6-s3" / "fr")])[0])
    odd = [f for f in report.findings if f.kind == "dtype-mismatch"]
    assert [(f.process_group.split(":")[1], f.culprit_ranks) for f in odd] == [("dp2", [6])]
    # the same in a TP group of the first stage: rank 1's activations in Double, rank 0 without a dump
    report = analyze(load_dumps([str(fresh10 / "tp-dtype-pp2tp2dp2-r1-s2" / "fr")])[0])
    assert [(f.process_group.split(":")[1], f.culprit_ranks) for f in report.findings
            if f.kind == "dtype-mismatch"] == [("tp0", [1])]
