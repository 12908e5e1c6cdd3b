"""NCCL RAS reports (``ncclras``): the parser, the mapping of communicator ranks to global ranks,
stuck versus slow across two snapshots, and diagnose weighing a report with the logs.

The reports in tests/ras are real output (the NCCL user guide's RAS page, NVIDIA/nccl issues
#1911 and #1730) or built strictly from the format strings of NCCL's src/ras/client_support.cc
(the ``built-*`` files and the ``job-4rank`` logs; tests/ras/README.md says which is which).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import rankdoctor
from rankdoctor.ingest.ncclras import Trouble, parse_ras, ras_among, track
from rankdoctor.ingest.sources import expand_inputs

from .conftest import run_cli

RAS = Path(__file__).parent / "ras"
JOB = RAS / "job-4rank"
WORLD = "7f3c9e2ab41d5e60"
SUB = "2b1e5d0c9a873f14"


def read(name: str):
    rep = parse_ras((RAS / name).read_text(), name)
    assert rep is not None, name
    return rep


def notes(rep, trouble: Trouble) -> list[tuple]:
    return sorted((n.comm, n.rank, n.op, n.count, n.majority) for n in rep.notes if n.trouble == trouble)


# --- the parser, on real output -------------------------------------------------------------

def test_docs_mismatch_2_24_names_the_ranks_behind():
    rep = read("docs-2.24-mismatch.txt")
    c = rep.comms["27a079b828ff1a75"]
    assert c.label == "#0-0" and c.size == 32
    # NCCL 2.24 counts all collectives together (op None); 26 ranks at 6650, the 6 listed at 6649
    assert notes(rep, Trouble.behind) == [("27a079b828ff1a75", r, None, 6649, 6650) for r in (0, 2, 3, 4, 5, 7)]
    n = next(n for n in rep.notes if n.rank == 7)
    assert (n.host, n.pid, n.device) == ("172.16.64.210", 483079, 7)


def test_docs_incomplete_then_dead_2_24():
    inc = read("docs-2.24-incomplete.txt")
    assert [(p.trouble, p.pid, p.host, p.gpus) for p in inc.processes] == [(Trouble.unresponsive, 3487984, "172.16.64.213", (5,))]
    assert notes(inc, Trouble.unresponsive) == [("cf264af53edbe986", 21, None, None, None)]
    assert inc.timeouts == 2 and inc.comms["cf264af53edbe986"].missing == 1
    assert inc.world == 32  # the excerpt has no job summary; its table counts one 32-rank communicator
    dead = read("docs-2.24-dead.txt")
    assert [(p.trouble, p.pid) for p in dead.processes] == [(Trouble.dead, 3487984)]
    # the missing rank of a report whose only missing process is dead is that dead process
    assert notes(dead, Trouble.dead) == [("cf264af53edbe986", 21, None, None, None)]


def test_docs_status_2_24():
    rep = read("docs-2.24-status.txt")
    status = sorted((n.rank, n.detail) for n in rep.notes if n.trouble == Trouble.status)
    assert status == [(0, "RUNNING"), (4, "FINALIZE"), (8, "RUNNING"), (16, "RUNNING"), (20, "FINALIZE"), (24, "RUNNING")]
    assert not notes(rep, Trouble.behind) and not notes(rep, Trouble.dead)


def test_issue_1911_two_ranks_ahead_per_collective_type():
    rep = read("issue1911-2.26-mismatch.txt")
    assert rep.version == "2.26.2" and rep.job == {"nodes": 4, "processes": 32, "gpus": 32}
    assert notes(rep, Trouble.ahead) == [("fa93daea854b060b", 12, "AllGather", 641, 640), ("fa93daea854b060b", 13, "AllGather", 641, 640)]
    assert not notes(rep, Trouble.behind)  # the 30 ranks behind are the many: RAS does not list them


def test_report_inside_a_log_is_read_and_the_log_still_scanned():
    sources = list(expand_inputs([str(RAS / "issue1730-2.26-healthy-then-timeout.log")]))
    reports, pure = ras_among(sources)
    assert len(reports) == 1 and not pure  # PyTorch's lines follow the report: still a log
    rep = reports[0]
    assert rep.job["gpus"] == 256 and not rep.notes and not rep.processes
    d = rankdoctor.diagnose([str(RAS / "issue1730-2.26-healthy-then-timeout.log")])
    assert d.ranks_seen == [118]  # the watchdog line was scanned


def test_docs_json_2_29():
    rep = read("docs-2.29-json.json")
    assert (rep.fmt, rep.version, rep.time) == ("json", "2.29.1", "2025-12-19 13:06:53")
    c = rep.comms["ae94423cfbb2ef4a"]
    assert c.size == 2 and c.missing == 1 and c.secondary == "0xb7e7187447156001:0xb8242ed28a71381e"
    assert c.counts["AllReduce"] == {0: 0} and c.where[0] == ("172.16.64.245", 1524344, 0)
    (n,) = rep.notes
    assert (n.rank, n.trouble, n.host, n.pid, n.device) == (1, Trouble.unresponsive, "172.16.64.245", 1524345, 1)
    assert rep.world == 2


def test_docs_monitor_2_29():
    rep = read("docs-2.29-monitor.txt")
    assert rep.fmt == "monitor" and rep.time == "2025-12-19 13:07:07"
    assert [(p.trouble, p.pid, p.host, p.gpus) for p in rep.processes] == [(Trouble.dead, 1524345, "172.16.64.245", (1,))]


# --- the parser, on reports built from the format strings --------------------------------------

def test_text_2_28_dead_error_behind():
    rep = read("built-2.28-text-dead-error-behind.txt")
    assert rep.version == "2.28.7+cuda12.8" and rep.job["gpus"] == 4 and rep.foreign == 0
    assert sorted((n.comm, n.rank, n.pid) for n in rep.notes if n.trouble == Trouble.dead) == [(SUB, 1, 2004), (WORLD, 3, 2004)]
    (err,) = [n for n in rep.notes if n.trouble == Trouble.error]
    assert (err.rank, err.detail) == (1, "Asynchronous error: Remote process error")
    assert notes(rep, Trouble.behind) == [(WORLD, 2, "AllReduce", 811, 812)]
    assert rep.comms[WORLD].size == 4 and rep.comms[SUB].size == 2


def test_json_2_28_dead_in_two_communicators():
    rep = read("built-2.28-json-dead-rank3.json")
    assert sorted((n.comm, n.rank, n.pid, n.device) for n in rep.notes) == [(SUB, 1, 2004, 3), (WORLD, 3, 2004, 3)]
    assert all(n.trouble == Trouble.dead for n in rep.notes)
    assert rep.comms[WORLD].counts["AllReduce"] == {0: 812, 1: 812, 2: 812}


def test_two_snapshots_tell_stuck_from_slow():
    a, b = read("built-2.28-json-stuck-a.json"), read("built-2.28-json-stuck-b.json")
    (n,) = track([b, a])  # ordered by their timestamps, not by how they were given
    assert (n.trouble, n.comm, n.rank, n.op, n.count, n.after) == (Trouble.stuck, WORLD, 3, "AllReduce", 811, 811)
    a, b = read("built-2.28-json-slow-a.json"), read("built-2.28-json-slow-b.json")
    (n,) = track([a, b])
    assert (n.trouble, n.rank, n.count, n.after, n.majority) == (Trouble.slow, 3, 805, 809, 816)
    assert track([a]) == []


# --- bad input ---------------------------------------------------------------------------------

def test_bad_and_cut_input_never_raises():
    for f in sorted(RAS.glob("*.*")):
        text = f.read_text()
        for cut in range(0, len(text), 97):
            parse_ras(text[:cut], f.name)  # a partial report, or None; never an exception
    for junk in ("", "{", "[" * 100_000, '{"communicators": [' + "{" * 50_000, '{"communicators": [{"hash": 5}]}',
                 '{"communicators": [{"hash": "0x1", "ranks": [{"rank": "x"}, 7], "missing_ranks": {"a": 1}}]}',
                 "Errors\n======\n\nDEAD\n  1 job process is considered dead\n  Process x on node", "\x00\xff" * 1000,
                 '{"communicators": [{"hash": "0x1", "ranks": [{"rank": 0, "collective_counts": {"AllReduce": ' + "9" * 5000 + "}}]}]}"):
        parse_ras(junk)
    assert parse_ras("INFO train: step 1 loss 2.0\nErrors\nWarnings\n") is None  # words of a log, not a report


def test_json_cut_short_keeps_the_whole_communicators():
    text = (RAS / "built-2.28-json-dead-rank3.json").read_text()
    cut = text[: text.index('"hash": "0x2b1e5d0c9a873f14"')]
    rep = parse_ras(cut)
    assert rep is not None and not rep.complete
    assert list(rep.comms) == [WORLD] and [(n.rank, n.trouble) for n in rep.notes] == [(3, Trouble.dead)]


# --- communicator ranks to global ranks --------------------------------------------------------

def test_dead_rank_is_mapped_and_named_in_the_rank_table():
    d = rankdoctor.diagnose([str(JOB), str(RAS / "built-2.28-json-dead-rank3.json")])
    assert d.table.ras_dead == {3}
    mapped = {(n.comm, n.rank): g for n, g in d.table.ras.mapped}
    assert mapped == {(WORLD, 3): 3, (SUB, 1): 3}  # the 2-rank communicator's rank 1 is global rank 3
    assert not d.table.ras.unmapped


def test_mapping_by_commid_alone(tmp_path):
    # other pids than the logs' and a communicator smaller than the job: only the init
    # line's commId can tell that rank 1 of the 2-rank communicator is global rank 3
    text = (RAS / "built-2.28-json-dead-rank3.json").read_text().replace('"pid": 200', '"pid": 900')
    (tmp_path / "ras.json").write_text(text)
    d = rankdoctor.diagnose([str(JOB), str(tmp_path / "ras.json")])
    assert {(n.comm, n.rank): g for n, g in d.table.ras.mapped} == {(WORLD, 3): 3, (SUB, 1): 3}


def test_mapping_by_pid_and_by_world_without_logs():
    # with the logs: the DEAD process 2004 is rank 3 by its pid, rank 2 behind is pid 2003
    d = rankdoctor.diagnose([str(JOB), str(RAS / "built-2.28-text-dead-error-behind.txt")])
    assert d.table.ras_dead == {3} and d.table.ras.ranks(Trouble.error) == {1}
    assert d.table.ras_behind == set()  # rank 2 is behind by one, but it reports its own timeout: it waits too
    # without logs: the world communicator's ranks are global ranks; the 2-rank one's are not known
    d = rankdoctor.diagnose([str(RAS / "built-2.28-text-dead-error-behind.txt")])
    assert d.table.ras_dead == {3} and d.ranks_count == 4
    assert [(n.comm, n.rank) for n in d.table.ras.unmapped if n.trouble == Trouble.dead] == [(SUB, 1)]
    assert any("rank(s) 1 of communicator 2b1e5d0c9a873f14" in w for w in d.warnings)


def test_stuck_rank_across_snapshots_is_a_suspect():
    d = rankdoctor.diagnose([str(JOB), str(RAS / "built-2.28-json-stuck-a.json"), str(RAS / "built-2.28-json-stuck-b.json")])
    assert d.table.ras_behind == {3} and d.table.ras_dead == set()


def test_one_snapshot_of_a_busy_job_is_no_failure():
    d = rankdoctor.diagnose([str(RAS / "docs-2.24-mismatch.txt")])
    assert d.verdict == "no-failure-found"
    assert any("second snapshot" in w for w in d.warnings)


# --- the command line --------------------------------------------------------------------------

def test_diagnose_takes_a_ras_report_among_its_inputs():
    r = run_cli("diagnose", str(JOB), str(RAS / "built-2.28-json-dead-rank3.json"), "--format", "json")
    d = json.loads(r.stdout)
    # a failure found (diagnosed or, at the verdict threshold where this run sits, inconclusive)
    assert r.returncode in (1, 3), r.stderr.decode()
    assert d["diagnoses"][0]["initiating_rank"] == 3
    assert not any(i["path"].endswith(".json") for i in d["inputs"])  # the report is evidence, not a log scanned


@pytest.mark.parametrize("name", ["docs-2.29-json.json", "docs-2.24-mismatch.txt"])
def test_diagnose_on_a_ras_report_alone(name):
    r = run_cli("diagnose", str(RAS / name), "--format", "json")
    assert r.returncode in (0, 1, 3), r.stderr.decode()  # not 2: not "empty input" or an unknown log
    d = json.loads(r.stdout)
    if name.endswith(".json"):
        assert d["diagnoses"][0]["initiating_rank"] == 1  # the unresponsive rank of the 2-rank job
