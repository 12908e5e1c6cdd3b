"""CI outputs: GitHub workflow commands and JUnit XML, from the same diagnosis."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from .conftest import SCENARIOS
from .test_cli import run_cli

CASE = SCENARIOS / "lab-matrix" / "exception-w3-r1" / "console.log"
HEALTHY = SCENARIOS / "lab-matrix" / "healthy-w3" / "console.log"
COMMAND = re.compile(r"^::(error|warning|notice) (?:file=[^,:]+,line=\d+,)?title=[^:]*::\S.*$")


def test_github_annotations_sit_on_the_evidence_lines():
    r = run_cli("diagnose", str(CASE), "-q", "--format", "github")
    lines = r.stdout.decode().splitlines()
    assert r.returncode in (1, 3) and lines
    assert all(COMMAND.match(ln) for ln in lines), lines
    # every annotation is one line: the multi-line summary has its newlines escaped
    summary = lines[-1]
    assert "file=" not in summary and "%0A" in summary and "peer-rank-crashed" in summary
    # a colon inside a property value is escaped, or the runner would cut the title there
    assert "title=rankdoctor%3A " in lines[0]
    files = {m.group(1) for ln in lines[:-1] if (m := re.search(r"file=([^,]+),line=(\d+)", ln))}
    assert files == {str(CASE)}


def test_junit_is_one_failed_case_for_the_diagnosis():
    r = run_cli("diagnose", str(CASE), "-q", "--format", "junit")
    root = ET.fromstring(r.stdout)
    suite = root.find("testsuite")
    cases = suite.findall("testcase")
    failed = [c for c in cases if c.find("failure") is not None]
    assert len(failed) == 1 and suite.get("failures") == "1" and int(suite.get("tests")) == len(cases)
    fail = failed[0].find("failure")
    assert fail.get("type") == "peer-rank-crashed" and "rank 1" in fail.get("message")
    assert "IndexError" in fail.text and "fix 1:" in fail.text


def test_healthy_run_is_a_passing_case_and_a_notice():
    root = ET.fromstring(run_cli("diagnose", str(HEALTHY), "-q", "--format", "junit").stdout)
    assert root.get("failures") == "0" and len(root.iter("testcase").__next__()) == 0
    out = run_cli("diagnose", str(HEALTHY), "-q", "--format", "github").stdout.decode()
    assert out.startswith("::notice ") and "no failure found" in out


def test_other_commands_refuse_ci_formats():
    assert run_cli("kb", "list", "--format", "junit").returncode == 2
    assert run_cli("fr", str(SCENARIOS / "lab-matrix" / "exception-w3-r1" / "fr"), "-f", "github").returncode == 2
