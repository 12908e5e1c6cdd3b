"""Every JSON document rankdoctor prints validates against its published schema."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from rankdoctor import schemas
from rankdoctor.evaluate import evidence_paths, find_scenarios

from .conftest import SCENARIOS
from .test_cli import run_cli

SAMPLE = find_scenarios([SCENARIOS / "lab", SCENARIOS / "real", SCENARIOS / "real-holdout16"])


@pytest.mark.parametrize("case", SAMPLE, ids=lambda c: f"{c.parent.name}/{c.name}")
def test_diagnosis_json_validates(case):
    import rankdoctor

    doc = rankdoctor.diagnose(evidence_paths(case)).to_json()
    schemas.validate("diagnosis", json.loads(json.dumps(doc)))


def test_fr_and_stacks_json_validate_from_the_cli():
    for fr in sorted((SCENARIOS / "lab-matrix").glob("*/fr"))[:12]:
        r = run_cli("fr", str(fr), "--format", "json")
        schemas.validate("fr", json.loads(r.stdout))
    checked = 0
    for case in sorted(p for p in (SCENARIOS / "lab-stacks").iterdir() if p.is_dir()):
        stacks = sorted(case.glob("pyspy_rank*.txt"))
        if stacks:
            r = run_cli("stacks", *map(str, stacks), "--format", "json")
            schemas.validate("stacks", json.loads(r.stdout))
            checked += 1
    assert checked >= 2


def test_the_schema_command_prints_draft_2020_12_and_rejects_unknown_documents():
    for name in ("diagnosis", "fr", "stacks"):
        doc = json.loads(run_cli("schema", name).stdout)
        assert doc["$schema"].endswith("2020-12/schema") and doc["$id"] == f"rankdoctor.{name}/v1"
        assert doc["additionalProperties"] is False
    assert run_cli("schema", "nope").returncode == 2


def test_a_document_with_an_unknown_class_or_key_is_refused():
    import rankdoctor

    doc = rankdoctor.diagnose(str(SCENARIOS / "lab-matrix" / "exception-w3-r1" / "console.log")).to_json()
    bad = json.loads(json.dumps(doc))
    bad["diagnoses"][0]["class"] = "not-a-class"
    with pytest.raises(ValidationError):
        schemas.validate("diagnosis", bad)
    extra = json.loads(json.dumps(doc))
    extra["surprise"] = 1
    with pytest.raises(ValidationError):
        schemas.validate("diagnosis", extra)
