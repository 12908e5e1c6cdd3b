"""The incident history and run comparison as a user drives them: real torchrun runs of the
lab (and a real log) diagnosed and saved with --save, one resolved with its fix, a later run
of the same fault whose report lists that incident first with the fix; export/import; and
`compare` telling a repeated failure from a different one."""

from __future__ import annotations

import json
import sqlite3

import pytest

from rankdoctor import schemas
from rankdoctor.history import History, job_name
from rankdoctor.history.similar import lookup
from rankdoctor.history.similar import similar as score_every_incident
from rankdoctor.history.fingerprints import template

from .conftest import SCENARIOS, run_cli

LAB = SCENARIOS / "lab-matrix"
# real torchrun runs: the same fault (an exception on one rank) at other world sizes and ranks,
# and other faults
EXCEPTION_A = LAB / "exception-w3-r1"
EXCEPTION_B = LAB / "exception-w4-r0"
EXCEPTION_LATER = SCENARIOS / "lab-fresh1" / "exception-w5-r3"
SIGKILL = LAB / "sigkill-w3-r0"
DESYNC = SCENARIOS / "lab" / "compile-desync"
OOM = SCENARIOS / "real" / "comms-11-peer-crash-funasr-rank2-oom" / "log.txt"
FIX = "rank 1's sampler indexed past the end of the shard: clamp the index (PR 4711)"


def cli(*args: str, stdin: bytes | None = None):
    r = run_cli(*args, stdin=stdin)
    return r.returncode, r.stdout.decode(), r.stderr.decode()


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A history with five diagnoses saved from the command line, the first one resolved."""
    db = tmp_path_factory.mktemp("history") / "team.sqlite3"
    ids = {}
    for name, path in (("exception-a", EXCEPTION_A), ("sigkill", SIGKILL), ("desync", DESYNC), ("oom", OOM), ("exception-b", EXCEPTION_B)):
        rc, out, err = cli("diagnose", str(path), "--save", "--db", str(db), "-q", "--format", "json")
        # a failure, diagnosed or inconclusive (the lab run folders hold expected.yaml too, which the
        # command reads as one more log; its lines move the confidence either side of the threshold)
        assert rc in (1, 3), err
        assert "similar_incidents" in json.loads(out)  # from the second save on there is a history to look in
        ids[name] = int(err.split("saved as incident ")[1].split()[0])
    rc, out, err = cli("history", "resolve", str(ids["exception-a"]), "--fix", FIX, "--db", str(db))
    assert rc == 0 and FIX in out, err
    return db, ids


def test_a_later_run_of_the_same_fault_lists_the_resolved_incident_first_with_its_fix(saved):
    db, ids = saved
    rc, out, err = cli("diagnose", str(EXCEPTION_LATER), "--db", str(db), "-q", "--format", "json")
    assert rc == 1, err
    doc = json.loads(out)
    schemas.validate("diagnosis", doc)  # the optional key keeps the document valid v1
    similar = doc["similar_incidents"]
    first = similar[0]
    assert first["id"] == ids["exception-a"] and first["fix"] == FIX and first["job"] == "exception-w3-r1"
    assert first["entry"] == doc["diagnoses"][0]["entry"] == "worker-python-exception"
    # the other exception run is similar too; the sigkill, desync and OOM runs are not
    assert [m["id"] for m in similar] == [ids["exception-a"], ids["exception-b"]]
    assert first["similarity"] >= similar[1]["similarity"] > 0.5
    assert "saved as incident" not in err  # looked up, not saved: no --save
    # the lookup in the file (the index of fingerprints) finds what scoring every incident finds
    doc.pop("similar_incidents")
    history = History(db)
    by_index = [(m.incident.id, round(m.similarity, 6)) for m in lookup(doc, history)]
    assert by_index == [(m.incident.id, round(m.similarity, 6)) for m in score_every_incident(doc, history.all())]

    rc, text, _ = cli("diagnose", str(EXCEPTION_LATER), "--db", str(db), "-q")
    block = text.split("similar past incidents", 1)[1]
    assert block.index(FIX[:40]) < block.index("not recorded")  # the fix that worked, first
    rc, md, _ = cli("diagnose", str(EXCEPTION_LATER), "--db", str(db), "-q", "--format", "markdown")
    line = next(ln for ln in md.splitlines() if ln.startswith(f"- #{ids['exception-a']} "))
    assert "fixed by: rank 1's sampler" in line and "similarity" in line
    rc, html, _ = cli("diagnose", str(EXCEPTION_LATER), "--db", str(db), "-q", "--format", "html")
    assert "Similar past incidents" in html and "clamp the index (PR 4711)" in html


def test_a_different_failure_does_not_get_the_exception_fix(saved):
    db, ids = saved
    rc, out, err = cli("diagnose", str(LAB / "sigkill-w2-r1"), "--db", str(db), "-q", "--format", "json")
    similar = json.loads(out)["similar_incidents"]
    assert similar and similar[0]["id"] == ids["sigkill"]
    assert ids["exception-a"] not in [m["id"] for m in similar]


def test_list_show_and_the_saved_fields(saved):
    db, ids = saved
    assert db.stat().st_mode & 0o777 == 0o600  # it quotes log lines: the user's eyes only
    rc, out, _ = cli("history", "list", "--db", str(db))
    rows = [ln.split("\t") for ln in out.splitlines()]
    assert rc == 0 and [int(r[0]) for r in rows] == sorted(ids.values(), reverse=True)  # newest first
    by_id = {int(r[0]): r for r in rows}
    a = by_id[ids["exception-a"]]
    assert a[2:] == ["exception-w3-r1", "diagnosed", "worker-python-exception", "1", "3", FIX]
    assert by_id[ids["oom"]][2] == "comms-11-peer-crash-funasr-rank2-oom"  # the job from a file's folder
    rc, out, _ = cli("history", "show", str(ids["exception-a"]), "--db", str(db))
    assert rc == 0 and FIX in out and "worker-python-exception" in out and "<path>/pair.cc" in out
    rc, out, _ = cli("history", "show", str(ids["exception-a"]), "--db", str(db), "--format", "json")
    doc = json.loads(out)
    schemas.validate("incident", doc)
    assert doc["world_size"] == 3 and doc["initiating_ranks"] == [1] and doc["collateral_ranks"] == [0, 2]
    assert doc["report"]["diagnoses"][0]["entry"] == "worker-python-exception"
    assert cli("history", "show", "999", "--db", str(db))[0] == 2
    for name in ("incident", "compare"):  # the documents' JSON Schemas are published too
        assert json.loads(cli("schema", name)[1])["$id"] == f"rankdoctor.{name}/v1"
    rc, _, err = cli("history", "resolve", "999", "--fix", "x", "--db", str(db))
    assert rc == 2 and err.count("\n") == 1 and "no incident 999" in err


def test_export_then_import_shares_a_history_without_duplicates(saved, tmp_path):
    db, ids = saved
    out_file = tmp_path / "history.jsonl"
    rc, _, err = cli("history", "export", "--db", str(db), "-o", str(out_file))
    lines = out_file.read_text().splitlines()
    assert rc == 0 and len(lines) == len(ids), err
    for line in lines:
        schemas.validate("incident", json.loads(line))
    team = tmp_path / "team.sqlite3"
    rc, out, _ = cli("history", "import", str(out_file), "--db", str(team))
    assert rc == 0 and "imported 5 new" in out
    rc, out, _ = cli("history", "import", str(out_file), "--db", str(team))
    assert rc == 0 and "imported 0 new" in out and "5 already here" in out
    assert sqlite3.connect(team).execute("SELECT count(*) FROM incidents").fetchone()[0] == 5
    # a history that has the incident without its fix takes the fix from the import
    unresolved = [json.loads(ln) for ln in lines]
    for doc in unresolved:
        doc["fix"] = doc["fixed_at"] = None
    other = tmp_path / "other.sqlite3"
    rc, _, _ = cli("history", "import", "-", "--db", str(other), stdin="".join(json.dumps(d) + "\n" for d in unresolved).encode())
    rc, out, _ = cli("history", "import", str(out_file), "--db", str(other))
    assert rc == 0 and "imported 0 new incident(s); 1 fix(es) taken" in out
    assert FIX in cli("history", "list", "--db", str(other))[1]
    # a bad line: one line naming the file and line, and nothing imported
    bad = tmp_path / "bad.jsonl"
    bad.write_text(lines[0] + "\n" + '{"schema": "rankdoctor.incident/v1", "uid": "x"}\n')
    empty = tmp_path / "empty.sqlite3"
    rc, _, err = cli("history", "import", str(bad), "--db", str(empty))
    assert rc == 2 and err.count("\n") == 1 and f"{bad}:2: not a rankdoctor.incident/v1 line" in err
    assert not empty.exists()


def test_compare_tells_a_repeated_failure_from_a_different_one(saved, tmp_path):
    db, ids = saved
    rc, out, err = cli("compare", str(EXCEPTION_A), str(EXCEPTION_LATER), "--format", "json")
    assert rc == 0, err
    same = json.loads(out)
    schemas.validate("compare", same)
    assert same["same_failure"] and same["a"]["entry"] == same["b"]["entry"] == "worker-python-exception"
    assert same["fingerprints"]["shared"] and same["similarity"] > 0.5
    # the same fault, started on rank 3 of 5 instead of rank 1 of 3
    assert {"rank": 1, "a": "initiating", "b": "collateral"} in same["rank_changes"]
    assert {"rank": 3, "a": "-", "b": "initiating"} in same["rank_changes"]

    rc, out, _ = cli("compare", str(EXCEPTION_A), str(SIGKILL), "--format", "json")
    diff = json.loads(out)
    assert rc == 1 and not diff["same_failure"] and diff["b"]["entry"] == "worker-killed-sigkill"
    assert diff["fingerprints"]["only_a"] and diff["fingerprints"]["only_b"]
    assert any("SIGKILL" in fp for fp in diff["fingerprints"]["only_b"])
    assert any("IndexError" in fp for fp in diff["fingerprints"]["only_a"])

    # a history incident against a run: "is this the same failure as last week's?"
    rc, out, _ = cli("compare", str(ids["exception-a"]), str(EXCEPTION_LATER), "--db", str(db))
    assert rc == 0 and "SAME FAILURE" in out and "rank 3 - -> initiating" in out
    rc, out, _ = cli("compare", f"#{ids['desync']}", str(ids["exception-b"]), "--db", str(db))
    assert rc == 1 and "DIFFERENT FAILURE" in out and "evidence only in A" in out
    rc, _, err = cli("compare", str(tmp_path / "nope"), str(EXCEPTION_A))
    assert rc == 2 and err.count("\n") == 1 and "no such file or folder" in err
    (tmp_path / "blob.bin").write_bytes(bytes(range(256)) * 20)
    rc, _, err = cli("compare", str(EXCEPTION_A), str(tmp_path / "blob.bin"))
    assert rc == 2 and err.count("\n") == 1 and "not a text log" in err


def test_a_broken_history_costs_the_lookup_not_the_diagnosis(tmp_path):
    junk = tmp_path / "history.sqlite3"
    junk.write_bytes(b"this is not a database\n" * 100)
    rc, out, err = cli("diagnose", str(OOM), "--db", str(junk), "--format", "json")
    assert rc == 1 and "similar_incidents" not in json.loads(out) and "warning:" in err
    rc, _, err = cli("diagnose", str(OOM), "--db", str(junk), "--save")
    assert rc == 2 and err.count("\n") == 1 and "cannot use the incident history" in err
    assert junk.read_bytes() == b"this is not a database\n" * 100


def test_templates_mask_what_differs_between_runs_and_keep_what_says_where():
    a = "[rank2]: RuntimeError: [/__w/pytorch/third_party/gloo/transport/tcp/pair.cc:553] Connection closed by peer [10.1.2.3]:20628"
    b = "[rank7]: RuntimeError: [/home/alice/src/gloo/transport/tcp/pair.cc:561] Connection closed by peer [fe80::1]:31000"
    assert template(a) == template(b) == "RuntimeError: [<path>/pair.cc:#] Connection closed by peer [<ip>]:#"
    assert template("connect to node-12.cluster.example.com failed, mail ops@example.com") == "connect to <host> failed, mail <email>"
    assert template("E1202 00:08:28.533000 4215 api.py:1002] failed") == "E# #:#:#.# # api.py:#] failed"
    assert job_name([str(EXCEPTION_A / "console.log")]) == "exception-w3-r1" and job_name(["-"]) == "stdin"
    assert job_name([str(OOM)]) == "comms-11-peer-crash-funasr-rank2-oom" and job_name([str(DESYNC)]) == "compile-desync"


def test_save_true_in_the_config_saves_every_diagnosis_and_no_save_skips_one(tmp_path):
    (tmp_path / "rankdoctor.toml").write_text('save = true\n', encoding="utf-8")
    db = tmp_path / "h.sqlite3"
    r = run_cli("diagnose", str(OOM), "--db", str(db), "-q", cwd=tmp_path)
    assert r.returncode == 1 and "saved as incident 1" in r.stderr.decode()
    r = run_cli("diagnose", str(OOM), "--db", str(db), "-q", "--no-save", cwd=tmp_path)
    assert r.returncode == 1 and "saved as incident" not in r.stderr.decode()
    assert sqlite3.connect(db).execute("SELECT count(*) FROM incidents").fetchone()[0] == 1
