"""Every labelled scenario diagnoses the same redacted and unredacted: same verdict, entry,
class and initiating rank(s). Redaction replaces what is private, never what the diagnosis
reads (rank prefixes, timestamps, NCCL's text, sizes, sequence numbers, hex ids' shape)."""

from __future__ import annotations

import shutil

import pytest

from rankdoctor.evaluate import case_key, evidence_paths, find_scenarios
from rankdoctor.pipeline import diagnose_paths
from rankdoctor.redact import new_redactor, redact_paths
from rankdoctor.scan import scan_sources

from .conftest import SCENARIOS

CASES = find_scenarios([SCENARIOS])


def _answer(kb, scanner, case) -> tuple:
    d, _, _ = diagnose_paths(kb, evidence_paths(case), lambda s: scan_sources(kb, s, scanner), fr=[str(case)])
    top = d.diagnoses[0] if d.diagnoses else None
    return d.verdict, top and top.entry, top and top.klass, top and top.initiating_rank, top and tuple(top.initiating_ranks)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("redacted")


@pytest.mark.parametrize("case", CASES, ids=lambda c: case_key(c, SCENARIOS))
def test_redacted_case_diagnoses_the_same(kb, scanner, scratch, case):
    out = scratch / "out"
    try:
        done = redact_paths([str(case)], out, new_redactor())
        assert not done.skipped, done.skipped
        copy = done.roots[0][2]
        assert _answer(kb, scanner, copy) == _answer(kb, scanner, case)
    finally:
        shutil.rmtree(out, ignore_errors=True)
