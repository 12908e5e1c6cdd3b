"""The HTML report: one self-contained file (inline CSS, JS and SVG) for
``rankdoctor diagnose --format html``. The web app renders the same ``_report.html``
partial inside its own page, so the two never drift apart."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jinja2 import BaseLoader, ChoiceLoader, Environment, PackageLoader, select_autoescape
from markupsafe import Markup, escape

from .. import __version__
from ..diagnose.collectives import compress_ranks
from ..diagnose.model import Diagnosis
from ..events import ScanResult
from ..kb.loader import KnowledgeBase
from . import NO_EXPLANATION, NO_FAILURE, NO_FAILURE_HINT
from .timeline import build_timeline

ASSETS = Path(__file__).parent / "templates"
INPUTS_SHOWN = 8  # more input files than this are listed folded, in a <details>
VERDICT = {
    "diagnosed": "Diagnosed",
    "inconclusive": "Inconclusive — the evidence is short",
    "no-failure-found": "No failure found",
}


def _ticks(text: str) -> Markup:
    """Escape prose, then show `backticked` spans as inline code."""
    return Markup(re.sub(r"`([^`]+)`", r"<code>\1</code>", str(escape(str(text)))))


def _untick(text: str) -> str:
    """Prose for places that hold no markup (a page's <title>): backticks dropped."""
    return re.sub(r"`([^`]+)`", r"\1", str(text))


def _natural_key(path: str) -> list:
    """rank_2 before rank_10: runs of digits compare as numbers."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", path) if part]


def natural_paths(inputs: list) -> list:
    """Inputs in natural order of their paths."""
    return sorted(inputs, key=lambda i: _natural_key(i.path))


def _run_split(missing: str) -> tuple[str, str | None]:
    """A missing fact as (what to collect, how: the text after its last " Run: ")."""
    fact, sep, run = str(missing).rpartition(" Run: ")
    return (fact, run.strip()) if sep and run.strip() else (str(missing), None)


def _ranks(ranks: list[int]) -> str:
    return compress_ranks(ranks) if ranks else "—"


def make_env(*extra: BaseLoader) -> Environment:
    """A Jinja environment that sees the report templates (after any ``extra`` loaders)."""
    env = Environment(
        loader=ChoiceLoader([*extra, PackageLoader("rankdoctor.report", "templates")]),
        autoescape=select_autoescape(["html", "svg"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["ticks"] = _ticks
    env.filters["untick"] = _untick
    env.filters["ranks"] = _ranks
    env.filters["natural_paths"] = natural_paths
    env.filters["run_split"] = _run_split
    env.globals["INPUTS_SHOWN"] = INPUTS_SHOWN
    env.globals.update(NO_EXPLANATION=NO_EXPLANATION, NO_FAILURE=NO_FAILURE, NO_FAILURE_HINT=NO_FAILURE_HINT)
    return env


def asset(name: str) -> str:
    """report.css / report.js: inlined here, served as files by the web app."""
    return (ASSETS / name).read_text(encoding="utf-8")


def report_context(
    result: Diagnosis,
    scan: ScanResult,
    kb: KnowledgeBase,
    entry_href: Callable[[str], str] | None = None,
) -> dict[str, Any]:
    """Everything ``_report.html`` needs. ``entry_href`` turns an entry id into a link
    (the web app's encyclopedia); without it entries are named, with a command to show them."""
    top = result.diagnoses[0] if result.diagnoses else None
    entry = kb.get(top.entry) if top and top.entry in kb else None
    related = [kb.get(r) for r in sorted(kb.related_to(top.entry)) if r in kb] if top else []
    return {
        "d": result,
        "verdict_text": VERDICT.get(result.verdict, result.verdict),
        "top": top,
        "others": result.diagnoses[1:],
        "entry": entry,
        "related": related,
        "tl": build_timeline(result, scan),
        "href": entry_href,
        "total_lines": sum(i.lines for i in result.inputs),
        "version": __version__,
    }


def diagnosis_json(result: Diagnosis) -> Markup:
    """The rankdoctor.diagnosis/v1 document, safe inside a <script> element."""
    text = json.dumps(result.to_json(), ensure_ascii=False)
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def render_html(result: Diagnosis, scan: ScanResult, kb: KnowledgeBase) -> str:
    env = make_env()
    ctx = report_context(result, scan, kb)
    return env.get_template("standalone.html").render(
        css=Markup(asset("report.css")), js=Markup(asset("report.js")), doc=diagnosis_json(result), **ctx
    )
