"""`rankdoctor diagnose --format html`: one self-contained file with the report and the
per-rank timeline."""

from __future__ import annotations

import dataclasses
import io
import json
import re

from markupsafe import escape

from rankdoctor.diagnose.engine import diagnose
from rankdoctor.ingest.sources import Source, expand_inputs
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
    # what to do if the job hung all the same, as in the text and Markdown reports
    assert "<code>--hung</code>" in html and "<code>py-spy dump --pid PID &gt; pyspy_rankN.txt</code>" in html


def _positions(html: str, *marks: str) -> list[int]:
    found = [html.find(m) for m in marks]
    assert -1 not in found, dict(zip(marks, found))
    return found


def test_what_to_do_comes_before_the_timeline_and_the_evidence(kb):
    scan = scan_text(kb, _eight_ranks_text(), name="job.log")
    result = diagnose(kb, scan)
    html = render_html(result, scan, kb)
    top = result.diagnoses[0]
    todo, fix, verify, cause, timeline, evidence = _positions(
        html, 'id="rd-todo"', "<h2>Fix</h2>", str(escape(top.verify.command)), "<h2>Root cause</h2>", "<h2>Timeline", "<h2>Evidence</h2>"
    )
    assert todo < fix < verify < cause < timeline < evidence
    assert html.find(str(escape(top.fix[0].text.split("`")[0]))) < timeline


def test_an_inconclusive_report_leads_with_the_fact_to_collect(kb):
    # the view reads only the diagnosis: the same real one, as the engine words an
    # inconclusive answer (present.py: the missing fact, then " Run: " and how to get it)
    scan = scan_text(kb, _eight_ranks_text(), name="job.log")
    real = diagnose(kb, scan)
    missing = "The output of rank 3 around the failure: was it still working? Run: torchrun --log-dir logs --tee 3 ... train.py"
    result = dataclasses.replace(real, verdict="inconclusive", diagnoses=[dataclasses.replace(real.diagnoses[0], missing=[missing])])
    html = render_html(result, scan, kb)
    todo, collect, fact, run, fix, timeline = _positions(
        html, 'id="rd-todo"', "Collect next", "The output of rank 3 around the failure",
        "Run: <code>torchrun --log-dir logs --tee 3 ... train.py</code>", "the fix</h3>", "<h2>Timeline"
    )
    assert todo < collect < fact < run < fix < timeline


def test_many_inputs_are_in_natural_order_and_folded(kb):
    text = {f"rank_{r}.log": WATCHDOG.format(r=r) + "\n" for r in range(64) if r != 5}
    text["rank_5.log"] = OOM.format(r=5) + "\n"
    sources = [Source(name, (lambda b=body.encode(): io.BytesIO(b)), len(body)) for name, body in sorted(text.items())]
    scan = scan_sources(kb, sources)
    html = render_html(diagnose(kb, scan), scan, kb)
    table = html[html.index("<h2>Inputs</h2>"):]
    assert '<details class="rd-inputs-fold"><summary>64 files' in table
    rows = re.findall(r"<tr><td><code>(rank_\d+\.log)</code>", table)
    assert rows == [f"rank_{r}.log" for r in range(64)]  # rank_2 before rank_10


def test_a_few_inputs_are_not_folded(kb):
    scan = scan_text(kb, OOM.format(r=1) + "\n", name="x.log")
    html = render_html(diagnose(kb, scan), scan, kb)
    assert 'class="rd-inputs-fold"' not in html and "<td><code>x.log</code>" in html


def _eight_ranks_text() -> str:
    lines = [f"2026-05-01 10:00:03,000 {OOM.format(r=3)}"]
    lines += [f"2026-05-01 10:10:0{r},000 {WATCHDOG.format(r=r)}" for r in range(8) if r != 3]
    return "\n".join(lines) + "\n"
