"""Readings learned from held-out set EI (tests/scenarios/real-holdout143: logs people committed or
pasted, gathered by failure family, measured before any change): PyTorch 2.5+ append each rank's
watchdog counters to its "Received a dump signal" line, so a rank whose last enqueued work is behind
the others' never issued the collective they time out in - the rank that strayed, even when its own
watchdog never fired."""

from __future__ import annotations

import rankdoctor
from rankdoctor.kb.loader import load_kb
from rankdoctor.scan import iter_events, scan_text

from .conftest import SCENARIOS

EI = SCENARIOS / "real-holdout143"


def test_the_dump_signal_line_carries_the_ranks_counters():
    line = ("[rank7]:[E710 18:00:32.686716232 ProcessGroupNCCL.cpp:1987] [PG ID 0 PG GUID 0(default_pg) Rank 7] "
            "Received a dump signal due to a collective timeout from  rank 3 and we will try our best to dump the "
            "debug info. Last enqueued NCCL work: 59957, last completed NCCL work: 59957.This is most likely caused "
            "by incorrect usages of collectives\n")
    evs = [e for e in iter_events(scan_text(load_kb(), line)) if e.signature == "dump-signal-from-peer"]
    assert evs and evs[0].captures["last_enqueued"] == "59957" and evs[0].rank == 7
    # the older form, without the counters, still reads as the dump signal
    old = ("[rank1]:[E1130 05:20:11.123456789 ProcessGroupNCCL.cpp:1684] [PG ID 0 PG GUID 0(default_pg) Rank 1] "
           "Received a dump signal due to a collective timeout from this local rank and we will try our best to "
           "dump the debug info.\n")
    assert any(e.signature == "dump-signal-from-peer" and "last_enqueued" not in e.captures
               for e in iter_events(scan_text(load_kb(), old)))


def test_the_rank_behind_the_others_counters_is_named():
    d = rankdoctor.diagnose(str(EI / "p1-torchinferno-tp8-warmup-allreduce-rank7-never-joined" / "log.txt"))
    top = d.diagnoses[0]
    assert top.initiating_rank == 7, [(x.entry, x.initiating_rank, x.confidence) for x in d.diagnoses]
    assert top.klass in ("collective-desync", "straggler-timeout")


def test_a_broadcast_against_a_gather_names_the_desync():
    d = rankdoctor.diagnose(str(EI / "p1-coordexp-8rank-broadcast-vs-gloo-gather-desync" / "log.txt"))
    assert d.diagnoses[0].klass == "collective-desync", [(x.entry, x.confidence) for x in d.diagnoses]
