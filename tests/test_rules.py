"""`rankdoctor rules`: the encyclopedia's cause fingerprints as Prometheus alerting rules
(checked by promtool, which ships with the Debian prometheus package; `make prometheus`)
and Loki ruler rules, golden-tested for a few entries in tests/rules/. Every line filter is
a necessary condition of its signature: each entry's real example lines that the signature
matches contain every filter's literal.

Regenerate the golden files after a deliberate change: `python tests/test_rules.py regen`.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rankdoctor import rules
from rankdoctor.kb.loader import load_kb

HERE = Path(__file__).parent
GOLDEN = HERE / "rules"
CLI = [sys.executable, "-m", "rankdoctor.cli"]
# a literal with quotes and parentheses, a case-insensitive signature, an alternation whose
# branches carry a quote, a signature with no literal (its regex instead), a traceback's last line
ENTRIES = ["state-dict-key-mismatch", "cgroup-oom-kill", "rendezvous-store-timeout", "loss-nan", "worker-python-exception"]


def _rules(fmt: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "rules", "--format", fmt, *args], capture_output=True, text=True, timeout=120)


def _entry_args() -> list[str]:
    return [a for e in ENTRIES for a in ("--entry", e)]


def test_loki_rules_match_the_golden_file():
    r = _rules("loki", *_entry_args())
    assert r.returncode == 0, r.stderr
    assert r.stdout == (GOLDEN / "loki.yaml").read_text(), "run `python tests/test_rules.py regen` after a deliberate change"
    doc = yaml.safe_load(r.stdout)
    exprs = [rule["expr"] for g in doc["groups"] for rule in g["rules"]]
    # the escapes as Loki reads them: a Go string literal (a quote in the literal stays one)
    assert 'count_over_time({job=~".+"} |= "Missing key(s) in state_dict: \\"" [5m]) > 0' in exprs
    assert any('|~ "(?i)OOMKilled"' in x for x in exprs)
    assert not any("|= \"\"" in x for x in exprs)


def test_prometheus_rules_match_the_golden_file_and_promtool_accepts_them(tmp_path):
    r = _rules("prometheus", *_entry_args())
    assert r.returncode == 0, r.stderr
    assert r.stdout == (GOLDEN / "prometheus.yaml").read_text(), "run `python tests/test_rules.py regen` after a deliberate change"
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (`make prometheus` installs the Debian prometheus package as root)")
    every = _rules("prometheus")
    assert every.returncode == 0, every.stderr
    path = tmp_path / "rankdoctor.rules.yml"
    path.write_text(every.stdout)
    check = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    kb = load_kb(None, check=False)
    with_cause = sum(1 for e in kb if any(s.role.value == "cause" for s in e.signatures))
    assert f"SUCCESS: {with_cause + 3} rules found" in check.stdout, check.stdout  # + diagnosis, silent, stalled


def test_every_line_filter_is_in_the_lines_its_signature_matches():
    kb = load_kb(None, check=False)
    signatures = checked = 0
    for e in kb:
        for s in e.signatures:
            if s.role.value != "cause":
                continue
            signatures += 1
            icase = rules._ignores_case(s.regex, s.ignore_case)
            filters = rules.line_filters(s.regex, s.ignore_case)
            rx = re.compile(s.regex, re.I if s.ignore_case else 0)
            for ex in e.examples.match:
                if not rx.search(ex.text):
                    continue
                checked += 1
                text = ex.text.lower() if icase else ex.text
                for f in filters:
                    alts = [f] if isinstance(f, str) else list(f)
                    assert any((a.lower() if icase else a) in text for a in alts), (e.id, s.id, f, ex.text)
    assert signatures > 300 and checked > 300, (signatures, checked)


def test_literals_come_from_the_regex_parser():
    assert rules.requirements(r"ncclUnhandledCudaError: Call to CUDA function failed\.") == ["ncclUnhandledCudaError: Call to CUDA function failed."]
    assert rules.requirements(r"Watchdog caught (?:collective )?operation timeout: (?P<op>\w+)") == ["Watchdog caught ", "operation timeout: "]
    assert rules.requirements(r"(?:CUDA|NCCL) error: out of memory") == [("CUDA", "NCCL"), " error: out of memory"]
    assert rules.line_filters(r"rk (\d+) .{0,20}(?i:Fatal) x{2}") == []  # short, a case change, a repeat
    # a literal inside a plain group joins its neighbours; a repeat does not
    assert rules.requirements(r"ab(cd)ef(gh)+ij") == ["abcdef", "gh", "ij"]
    pipeline = rules.logql_pipeline([r'say "a\b"', ("x.y", "z|w")], ignore_case=False)
    assert pipeline == r'|= "say \"a\\b\"" |~ "x\\.y|z\\|w"'
    assert json.loads(pipeline.split("|= ", 1)[1].split(" |~")[0]) == r'say "a\b"'


def test_rules_refuses_what_it_cannot_export():
    r = _rules("loki", "--entry", "no-such-entry")
    assert r.returncode == 2 and "no such entry" in r.stderr
    r = _rules("loki", "--entry", "nccl-watchdog-timeout")  # only symptom signatures: collateral, not a cause
    assert r.returncode == 2 and "no cause signature" in r.stderr
    r = _rules("loki", "--selector", 'job="x"')
    assert r.returncode == 2 and "braces" in r.stderr


if __name__ == "__main__" and sys.argv[1:2] == ["regen"]:
    GOLDEN.mkdir(exist_ok=True)
    for fmt in ("loki", "prometheus"):
        out = _rules(fmt, *_entry_args())
        assert out.returncode == 0, out.stderr
        (GOLDEN / f"{fmt}.yaml").write_text(out.stdout)
        print(f"wrote {GOLDEN / (fmt + '.yaml')}")
