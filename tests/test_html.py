"""`rankdoctor diagnose --format html`: one self-contained file with the report and the
per-rank timeline."""

from __future__ import annotations

import json
import re

from markupsafe import escape

from rankdoctor.diagnose.engine import diagnose
from rankdoctor.ingest.sources import expand_inputs
from rankdoctor.report.html import render_html
from rankdoctor.scan import scan_sources, scan_text

from .conftest import ROOT, SCENARIOS, run_cli
from .test_timeline import OOM, WATCHDOG


def _embedded(html: str) -> dict:
    m = re.search(r'<script type="application/json" id="rankdoctor-diagnosis">(.*?)</script>', html, re.S)
    assert m, "the diagnosis JSON is embedded"
    return json.loads(m.group(1))


def _self_contained(html: str) -> None:
    assert not re.search(r"<(?:script|img|iframe)[^>]+src=", html), "no external scripts or images"
    assert not re.search(r"<link[^>]+rel=\"?stylesheet", html), "CSS is inline"
    assert "@import" not in html and "url(http" not in html


def test_cli_writes_one_self_contained_file(kb, tmp_path, monkeypatch):
    case = (SCENARIOS / "real" / "comms-11-peer-crash-funasr-rank2-oom" / "log.txt").relative_to(ROOT)
    out = tmp_path / "report.html"
    proc = run_cli("diagnose", str(case), "--format", "html", "-o", str(out))
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == b"" and proc.stderr == b""
    html = out.read_text(encoding="utf-8")
    _self_contained(html)
    assert html.startswith("<!doctype html>") and "<style>" in html and "<svg" in html
    assert "CUDA out of memory" in html
    assert "Initiating rank" in html and ">rank 2<" in html.replace("rank 2 ", "rank 2<")
    # the embedded document is exactly the --format json document
    monkeypatch.chdir(ROOT)
    assert _embedded(html) == diagnose(kb, scan_sources(kb, expand_inputs([str(case)]))).to_json()


def test_report_shows_evidence_fix_verify_and_the_timeline(kb):
    lines = [f"2026-05-01 10:00:03,000 {OOM.format(r=3)}"]
    lines += [f"2026-05-01 10:10:0{r},000 {WATCHDOG.format(r=r)}" for r in range(8) if r != 3]
    scan = scan_text(kb, "\n".join(lines) + "\n", name="job.log")
    result = diagnose(kb, scan)
    html = render_html(result, scan, kb)
    top = result.diagnoses[0]
    for text in (top.title, top.klass, top.verify.command, top.root_cause.split(".")[0]):
        assert str(escape(text)) in html
    for ev in top.evidence:
        assert f"{ev.source}:{ev.line}" in html and str(escape(ev.text)) in html
    assert html.count('class="tl-lane') == 8
    assert html.count('class="tl-link"') == 7  # every collateral rank linked to the OOM
    assert "tl-ring" in html  # the initiating event is marked
    assert "placed by time" in html
    for r in kb.related_to(top.entry):
        assert str(escape(kb.get(r).title)) in html


def test_log_text_is_escaped(kb):
    evil = OOM.format(r=1) + " <script>alert(1)</script> </script><b>"
    scan = scan_text(kb, evil + "\n", name="x.log")
    html = render_html(diagnose(kb, scan), scan, kb)
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert _embedded(html)["diagnoses"][0]["evidence"][0]["text"].endswith("</script><b>")


def test_a_thousand_ranks_stay_small_and_readable(kb):
    lines = [WATCHDOG.format(r=r) for r in range(1024) if r != 700]
    lines.insert(10, OOM.format(r=700))
    scan = scan_text(kb, "\n".join(lines) + "\n", name="job.log")
    html = render_html(diagnose(kb, scan), scan, kb)
    assert html.count('class="tl-lane') <= 24
    assert "ranks 0-699,701-1023 (1023 ranks)" in html
    assert len(html) < 400_000


def test_no_failure_report(kb):
    scan = scan_text(kb, "[rank0]: step 1 loss 2.3\n", name="ok.log")
    html = render_html(diagnose(kb, scan), scan, kb)
    assert "No failure found" in html
    assert "tl-lane" not in html  # no timeline without a failure
