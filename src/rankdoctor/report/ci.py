"""Outputs for a CI job: GitHub Actions workflow commands (annotations on the evidence lines)
and a JUnit XML report (one test case per diagnosis), so a training pipeline can gate on the
answer and show it where people look."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from ..diagnose.collectives import compress_ranks
from ..diagnose.model import Diagnosis, Finding


def _data(s: str) -> str:
    """A workflow command's message: %, CR and LF escaped (actions/toolkit escapeData)."""
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(s: str) -> str:
    """A workflow command's property value: also ':' and ',' (actions/toolkit escapeProperty)."""
    return _data(s).replace(":", "%3A").replace(",", "%2C")


# characters XML 1.0 cannot hold (C0 controls but tab, newline and CR; lone surrogates, which
# an undecodable file name brings; U+FFFE/U+FFFF): ElementTree writes them as they are and
# the report would not parse. Log lines and file names may carry any of them.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml(s: str) -> str:
    return _NOT_XML.sub("\ufffd", s)


def _where(f: Finding) -> str:
    if len(f.initiating_ranks) > 1:
        return f"ranks {compress_ranks(f.initiating_ranks)}"
    if f.initiating_rank is not None:
        return f"rank {f.initiating_rank}" + (f" on {f.initiating_host}" if f.initiating_host else "")
    return "rank unknown"


def _headline(d: Diagnosis, f: Finding) -> str:
    return f"rankdoctor {d.verdict}: {f.klass} ({f.entry}) at {_where(f)}, confidence {f.confidence:.2f}"


def render_github(d: Diagnosis) -> str:
    """One annotation per evidence line of the top diagnosis (error when diagnosed, warning
    when inconclusive), then the answer with its fix as a summary annotation."""
    if not d.diagnoses:
        return "::notice title=rankdoctor::" + _data("no failure found in the logs") + "\n"
    top = d.diagnoses[0]
    level = "error" if d.verdict == "diagnosed" else "warning"
    title = _prop(f"rankdoctor: {top.klass} at {_where(top)}")
    out = []
    for ev in top.evidence:
        rank = f"rank {ev.rank}" if ev.rank is not None else "rank ?"
        msg = f"{ev.role} ({rank}{', ' + ev.shown_time if ev.time else ''}): {ev.text}"
        out.append(f"::{level} file={_prop(ev.source)},line={max(ev.line, 1)},title={title}::{_data(msg)}")
    body = [_headline(d, top), top.root_cause]
    body += [f"fix {i}: {x}" for i, x in enumerate(top.fix, 1)]
    if top.verify.command or top.verify.text:
        body.append(f"verify: {top.verify.as_line()}")
    body += [f"missing: {m}" for m in top.missing]
    out.append(f"::{level} title={title}::{_data(chr(10).join(body))}")
    return "\n".join(out) + "\n"


def render_junit(d: Diagnosis) -> str:
    """A JUnit report: the top diagnosis is a failed test case (its evidence, root cause and
    fix in the failure's text); the other candidates are skipped cases; a healthy run is one
    passing case."""
    suites = ET.Element("testsuites", name="rankdoctor")
    suite = ET.SubElement(suites, "testsuite", name="rankdoctor")
    failures = skipped = 0
    if not d.diagnoses:
        ET.SubElement(suite, "testcase", classname="rankdoctor", name="no failure found in the logs")
    for i, f in enumerate(d.diagnoses):
        case = ET.SubElement(suite, "testcase", classname=f"rankdoctor.{f.klass}", name=f"{f.entry} at {_where(f)}")
        if i == 0:
            failures += 1
            lines = [_headline(d, f), "", f.root_cause, "", "evidence:"]
            lines += [f"  {e.source}:{e.line} rank {e.rank if e.rank is not None else '?'}: {e.text}" for e in f.evidence]
            lines += ["", *[f"fix {k}: {x}" for k, x in enumerate(f.fix, 1)]]
            if f.verify.command or f.verify.text:
                lines.append(f"verify: {f.verify.as_line()}")
            lines += [f"missing: {m}" for m in f.missing]
            fail = ET.SubElement(case, "failure", message=_headline(d, f), type=f.klass)
            fail.text = "\n".join(lines)
        else:
            skipped += 1
            ET.SubElement(case, "skipped", message=f"another candidate (confidence {f.confidence:.2f})")
    n = max(1, len(d.diagnoses))
    for el in (suites, suite):
        el.set("tests", str(n))
        el.set("failures", str(failures))
        el.set("errors", "0")
    suite.set("skipped", str(skipped))
    for el in suites.iter():
        el.text = _xml(el.text) if el.text else el.text
        for k, v in el.attrib.items():
            el.attrib[k] = _xml(v)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
