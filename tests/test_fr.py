"""Flight Recorder: safe loading, cross-rank analysis on the lab's real dumps, the CLI."""

from __future__ import annotations

import importlib.util
import json
import os
import pickle
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from rankdoctor.flightrec.analyze import analyze
from rankdoctor.flightrec.load import DumpError, UnsafePickle, load_dump, load_dumps, rank_from_name

from .conftest import SCENARIOS, run_cli

LAB = SCENARIOS / "lab"
FR_CASES = sorted(p.parent for p in LAB.glob("*/fr") if any(p.iterdir()))


def _expected(case: Path) -> dict:
    return yaml.safe_load((case / "expected.yaml").read_text())


@pytest.mark.parametrize("case", FR_CASES, ids=lambda c: c.name)
def test_lab_dumps_name_the_culprit_and_call_site(case):
    dumps, problems = load_dumps([str(case / "fr")])
    report = analyze(dumps)
    want = _expected(case)
    if want["class"] is None:
        assert report.verdict == "consistent", [f.detail for f in report.findings]
        return
    assert report.verdict in ("mismatch", "hang")
    culprits = report.culprit_ranks()
    if want["initiating_rank"] is None:
        assert culprits == []
    else:
        assert culprits == [want["initiating_rank"]]
    # every finding shows where in the user's code each rank was
    sites = [v["call_site"] for f in report.findings for v in f.per_rank.values() if v.get("call_site")]
    assert sites and all("/lab/" in s for s in sites), sites


def test_same_shape_extra_collective_blames_the_rank_that_did_it():
    # torchfrtrace's "culprit" is "not the first rank"; the call sites show the truth
    report = analyze(load_dumps([str(LAB / "extra-collective-same-shape" / "fr")])[0])
    f = next(f for f in report.findings if f.kind == "extra-collective")
    assert f.culprit_ranks == [1]
    assert f.per_rank[1]["call_site"].endswith("extra_collective_same_shape.py:23")
    assert f.per_rank[0]["call_site"].endswith("extra_collective_same_shape.py:28")


def test_equal_size_dtype_mismatch_is_found():
    report = analyze(load_dumps([str(LAB / "dtype-mismatch" / "fr")])[0])
    f = report.findings[0]
    assert f.kind == "dtype-mismatch" and "same size" in f.detail


def test_json_dumps_and_a_wrapped_ring_buffer():
    jdir = LAB / "fr-formats" / "fr-json"
    dumps, problems = load_dumps([str(jdir)])
    assert [d.rank for d in dumps] == [0, 1] and not problems
    assert dumps[0].entries[0]["record_id"] > 0  # the 4-entry buffer wrapped
    report = analyze(dumps)
    assert report.verdict == "consistent"
    assert any("wrapped" in n for n in report.notes)
    pk = analyze(load_dumps([str(LAB / "fr-formats" / "fr")])[0])
    assert pk.verdict == "consistent"


def test_missing_ranks_are_reported_with_what_they_hide():
    report = analyze(load_dumps([str(LAB / "sigkill-rank1" / "fr")])[0])
    assert report.ranks_missing == [1]
    assert report.findings[0].kind == "missing-ranks"
    stuck = next(f for f in report.findings if f.kind == "stuck")
    assert stuck.culprit_ranks == [1]


def test_rank_from_file_name_and_override(tmp_path):
    assert rank_from_name("/x/fr_trace_rank_12") == 12
    assert rank_from_name("/x/nccl_trace_rank_3.json") == 3
    assert rank_from_name("/x/dump_7", prefix="dump_") == 7
    src = LAB / "dtype-mismatch" / "fr"
    a, b = tmp_path / "first", tmp_path / "second"
    shutil.copy(src / "fr_trace_rank_0", a)
    shutil.copy(src / "fr_trace_rank_1", b)
    dumps, _ = load_dumps([str(a), str(b)], ranks=[5, 6])
    assert [d.rank for d in dumps] == [5, 6]
    dumps, problems = load_dumps([str(a)])
    assert dumps == [] and "no rank in the file name" in problems[0]


class _Payload:
    def __init__(self, target: str):
        self.target = target

    def __reduce__(self):
        return (os.system, (f"touch {self.target}",))


def test_malicious_pickle_is_refused_and_never_runs(tmp_path):
    marker = tmp_path / "pwned"
    evil = tmp_path / "fr_trace_rank_0"
    evil.write_bytes(pickle.dumps({"version": "2.10", "entries": [], "x": _Payload(str(marker))}, protocol=4))
    with pytest.raises(UnsafePickle, match="refused"):
        load_dump(str(evil))
    r = run_cli("fr", str(evil))
    assert r.returncode == 2
    assert "refused" in r.stderr.decode() and "Traceback" not in r.stderr.decode()
    r = run_cli("diagnose", str(tmp_path))
    assert "Traceback" not in r.stderr.decode()
    assert not marker.exists()


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "neither pickle nor JSON"),
        (b"\x80\x04\x95\x10\x00\x00", "not a readable pickle"),
        (b'{"version": "2.10"}', "no 'entries' list"),
        (b"\x89PNG\r\n\x1a\n" + bytes(64), "neither pickle nor JSON"),
    ],
)
def test_bad_dumps_one_line_errors(tmp_path, content, message):
    p = tmp_path / "fr_trace_rank_0"
    p.write_bytes(content)
    with pytest.raises(DumpError, match=message):
        load_dump(str(p))
    r = run_cli("fr", str(p))
    assert r.returncode == 2 and "Traceback" not in r.stderr.decode()


def test_fr_cli_json_and_exit_codes():
    r = run_cli("fr", str(LAB / "extra-collective-same-shape" / "fr"), "--format", "json")
    assert r.returncode == 1
    d = json.loads(r.stdout)
    assert d["schema"] == "rankdoctor.fr/v1" and d["verdict"] == "mismatch"
    f = d["findings"][0]
    assert set(f) == {"kind", "process_group", "seq", "op", "culprit_ranks", "detail", "per_rank"}
    assert set(f["per_rank"]["1"]) == {"op", "sizes", "dtypes", "call_site"}
    r = run_cli("fr", str(LAB / "fr-formats" / "fr"))
    assert r.returncode == 0
    r = run_cli("fr", str(LAB / "extra-collective-same-shape" / "fr" / "fr_trace_rank_1"))
    assert r.returncode == 3  # one dump: nothing to compare with


def test_diagnose_uses_dumps_found_next_to_logs():
    r = run_cli("diagnose", str(LAB / "extra-collective-same-shape"), "--format", "json")
    d = json.loads(r.stdout)
    top = d["diagnoses"][0]
    assert (top["class"], top["initiating_rank"]) == ("collective-desync", 1)
    assert any("extra_collective_same_shape.py:23" in e["text"] for e in top["evidence"])


def test_diagnose_with_explicit_fr_folder():
    r = run_cli(
        "diagnose", str(LAB / "dtype-mismatch" / "console.log"), "--fr", str(LAB / "dtype-mismatch" / "fr"), "--format", "json"
    )
    d = json.loads(r.stdout)
    # the dumps show the ranks' collectives differ (a failure, exit 1 or 3 as the model is sure)
    assert r.returncode in (1, 3) and d["diagnoses"][0]["class"] == "collective-desync"
    r = run_cli("diagnose", str(LAB / "dtype-mismatch" / "console.log"), "--format", "json")
    assert json.loads(r.stdout)["verdict"] == "no-failure-found"  # the logs alone show nothing


@pytest.mark.parametrize("case", ["healthy-tp2dp4", "healthy-tp4dp2-notee", "healthy-pp2tp2dp2"])
def test_exit_dumps_of_a_healthy_job_with_sub_groups_are_consistent(case):
    # gloo's dumps carry no group membership (pg_config is empty): a TP group's collectives are
    # compared among the ranks that ran them, not held against the ranks of other groups
    root = Path(__file__).parent / "scenarios" / "lab-pg2d" / case / "fr"
    dumps, _ = load_dumps([str(root)])
    report = analyze(dumps)
    assert report.verdict == "consistent", [f.detail for f in report.findings]


def test_a_hung_rank_in_one_sub_group_lags_only_there():
    root = Path(__file__).parent / "scenarios" / "lab-pg2d" / "exception-tp2dp4-r5-s3" / "fr"
    dumps, _ = load_dumps([str(root)])
    report = analyze(dumps)
    for f in report.findings:
        if f.kind == "lagging":
            # a group's lagging ranks are members of that group, never the whole job
            assert len(f.culprit_ranks) < 8


def _fr_scale():
    spec = importlib.util.spec_from_file_location("bench_fr_scale", Path(__file__).parents[1] / "bench" / "fr_scale.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def test_generated_64_rank_dump_sets_healthy_exit_and_one_rank_stopped(tmp_path):
    # bench/fr_scale.py's sets (TP 8 x DP 8, NCCL-style, 2,000-entry rings that wrapped), small:
    # a healthy exit whose final barrier is still pending on the last ranks to arrive is no
    # failure; a rank that stopped is named, and the groups that only wait behind it are not
    fr_scale = _fr_scale()
    want = fr_scale.write_set(tmp_path / "healthy", 64, "healthy")
    assert want["verdict"] == "consistent"
    dumps, problems = load_dumps([str(tmp_path / "healthy" / "fr")])
    assert len(dumps) == 64 and not problems
    assert dumps[0].summary.first_record > 0  # the ring buffers wrapped
    report = analyze(dumps)
    assert report.verdict == "consistent", [f.detail for f in report.findings]
    want = fr_scale.write_set(tmp_path / "straggler", 64, "straggler")
    report = analyze(load_dumps([str(tmp_path / "straggler" / "fr")])[0])
    assert report.verdict == "hang"
    assert report.culprit_ranks() == want["culprits"] == [35]
    r = run_cli("fr", str(tmp_path / "straggler" / "fr"))
    assert r.returncode == 1 and "culprit: rank 35" in r.stdout.decode()
    assert len(r.stdout.decode().splitlines()) <= 30


def test_gloo_dumps_with_a_dead_rank_give_one_root_finding():
    """8 gloo ranks, TP 2 x DP 4; rank 6 issued an extra TP all_reduce and aborted on gloo's size
    check, leaving no dump (lab-pg2d-fresh2). gloo's pg_config is empty, so the dumps alone must
    tell that rank 6 is missing (a gap in 0..7) and a member of dp0 (the DP groups are a
    partition of one size, dp0 has one rank short), and that the TP groups whose ranks 0, 2, 4
    never issued their next collective only wait behind dp0, where those ranks' last record is.
    rank 7's TP group (tp3) is stuck on rank 6 too (lab-pg2d-fresh6 taught that reading)."""
    run = Path(__file__).parent / "scenarios" / "lab-pg2d-fresh2" / "extra-tp-tp2dp4-r6-s3-notee" / "fr"
    dumps, _ = load_dumps([str(run)])
    report = analyze(dumps)
    assert report.ranks_missing == [6] and report.gap_missing == [6]
    roots = [f for f in report.findings if not f.collateral and f.kind != "missing-ranks"]
    # dp0, where ranks 0, 2, 4 wait, and tp3, whose other member (rank 7) did nothing after the
    # TP all_reduce rank 6 never joined: both stuck on rank 6 alone (one root, printed as one)
    assert sorted((f.kind, f.process_group.partition(":")[2], f.root_ranks) for f in roots) == [
        ("stuck", "dp0", [6]), ("stuck", "tp3", [6])]
    assert {f.process_group.partition(":")[2] for f in report.findings if f.collateral} == {"tp0", "tp1", "tp2"}
