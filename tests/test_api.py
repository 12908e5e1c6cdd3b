"""The Python API returns what the command line prints, as models."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import rankdoctor

from .conftest import SCENARIOS

CASE = SCENARIOS / "lab-matrix" / "exception-w3-r1"


def test_diagnose_returns_the_model_the_json_is_made_of():
    d = rankdoctor.diagnose([str(CASE)])
    top = d.diagnoses[0]
    assert (top.klass, top.initiating_rank) == ("peer-rank-crashed", 1)
    doc = d.to_json()
    assert doc["schema"] == "rankdoctor.diagnosis/v1"
    cli = subprocess.run([sys.executable, "-m", "rankdoctor.cli", "diagnose", str(CASE), "--format", "json", "--quiet"],
                         capture_output=True, text=True)
    out = json.loads(cli.stdout)
    assert (out["verdict"], out["diagnoses"][0]["class"], out["diagnoses"][0]["initiating_rank"]) == (
        doc["verdict"], doc["diagnoses"][0]["class"], doc["diagnoses"][0]["initiating_rank"])


def test_diagnose_takes_one_path_dumps_and_jobs():
    d = rankdoctor.diagnose(CASE / "console.log", fr=CASE / "fr", jobs=2)
    assert d.diagnoses and d.diagnoses[0].initiating_rank == 1


def test_fr_stacks_and_the_encyclopedia():
    report = rankdoctor.fr([str(CASE / "fr")])
    assert report.to_json()["schema"].startswith("rankdoctor.fr/")
    groups = rankdoctor.stacks(SCENARIOS / "lab-stacks" / "silent-hang-pyspy-w3-r2")
    assert [g.ranks for g in groups if g.odd] == [[2]]
    kb = rankdoctor.load_kb()
    assert kb.get("nccl-watchdog-timeout").class_ == "straggler-timeout"


def test_bad_input_raises_the_api_errors(tmp_path):
    with pytest.raises(rankdoctor.InputError):
        rankdoctor.diagnose(tmp_path / "missing.log")
    with pytest.raises(rankdoctor.InputError):
        rankdoctor.diagnose([])
    (tmp_path / "notes.txt").write_text("not a dump\n")
    with pytest.raises(rankdoctor.DumpError):
        rankdoctor.fr(tmp_path)
    with pytest.raises(rankdoctor.InputError):
        rankdoctor.stacks(tmp_path / "nope")
