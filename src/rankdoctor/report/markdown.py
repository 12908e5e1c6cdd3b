"""Markdown for pasting into an issue or incident ticket.

Everything a log or a file name put into the diagnosis is untrusted: a line like
``<img src=x onerror=...>`` must show as text wherever the Markdown is rendered. So every
text goes through one of three helpers: ``_code`` (a file name, a command, an id: a code
span whose backtick run is longer than any in the text), ``_fence`` (a log line: a fenced
block whose fence is longer than any backtick run in it) or ``_prose`` (sentences that
quote log lines, such as the root cause: code spans the text itself opens and closes are
kept, every other character Markdown or HTML would act on is backslash-escaped). Line
breaks inside a text become spaces: a new line could start a block of its own (an HTML
block interrupts a paragraph)."""

from __future__ import annotations

import re

from ..diagnose.collectives import compress_ranks
from ..diagnose.model import Diagnosis, Step
from . import NO_EXPLANATION, NO_FAILURE, NO_FAILURE_HINT

_VERDICT = {
    "diagnosed": "Diagnosed",
    "inconclusive": "Inconclusive — evidence is short",
    "no-failure-found": "No failure found",
}
_BREAKS = re.compile(r"[\x00-\x1f\x7f]+")  # line breaks and other control characters
_TICKS = re.compile(r"`+")
_SPECIAL = re.compile(r"([\\*_\[\]<>&|~!])")  # emphasis, links and images, HTML, entities, table cells
_LINE_START = re.compile(r"^([#+=-])")  # a heading, a list item, a setext underline


def _oneline(text: str) -> str:
    return _BREAKS.sub(" ", str(text))


def _escape(text: str) -> str:
    return _SPECIAL.sub(r"\\\1", text).replace("`", "\\`")


def _prose(text: str) -> str:
    """Text as Markdown that renders as the text: code spans it holds are kept (their
    content is shown literally), everything else escaped."""
    text = _oneline(text)
    out: list[str] = []
    at = 0
    while (m := _TICKS.search(text, at)) is not None:
        run = m.group()
        close = re.compile(rf"(?<!`){run}(?!`)").search(text, m.end())
        if close is None:  # a lone backtick run opens nothing
            out.append(_escape(text[at : m.end()]))
            at = m.end()
            continue
        out.append(_escape(text[at : m.start()]))
        out.append(text[m.start() : close.end()])
        at = close.end()
    out.append(_escape(text[at:]))
    return _LINE_START.sub(r"\\\1", "".join(out))


def _code(text: str) -> str:
    """A code span showing ``text`` as it is."""
    text = _oneline(text)
    longest = max((len(r) for r in _TICKS.findall(text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text[:1] in ("`", " ") or text[-1:] in ("`", " ") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _fence(text: str) -> str:
    """A fenced block showing ``text`` as it is (a fence longer than any backtick run in it)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    longest = max((len(r) for r in _TICKS.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"


def _step(s: Step) -> str:
    if s.command is None:
        return _prose(s.text)
    return f"{_prose(s.text)} — {_code(s.command)}" if s.text else _code(s.command)


def render_markdown(d: Diagnosis) -> str:
    out = [f"## rankdoctor: {_VERDICT[d.verdict]}", ""]
    seen = compress_ranks(d.ranks_seen) if d.ranks_seen else "none"
    out.append(f"Inputs: {len(d.inputs)} file(s), {sum(i.lines for i in d.inputs):,} lines · ranks seen: {seen}")
    out.append("")
    # the report's notes (inputs skipped, lines read as handled, a recovered restart), as the
    # text report prints them: the quoted log text shown literally
    if d.warnings:
        out += [f"- note: {_escape(_oneline(w))}" for w in d.warnings] + [""]
    if not d.diagnoses:
        if d.verdict == "inconclusive":
            out.append(NO_EXPLANATION)
        else:
            out.append(NO_FAILURE)
            out += ["", NO_FAILURE_HINT]
        return "\n".join(out) + "\n"
    top = d.diagnoses[0]
    out += [
        f"### {_prose(top.title)}",
        "",
        "| | |",
        "|---|---|",
        f"| Class | {_code(top.klass)} |",
        f"| Entry | {_code(top.entry)} |",
        f"| Confidence | {top.confidence:.2f} |",
        f"| Initiating rank | {top.initiating_rank if top.initiating_rank is not None else 'unknown'}"
        + (f" (ranks {compress_ranks(top.initiating_ranks)} started it together)" if len(top.initiating_ranks) > 1 else "")
        + (f" ({_prose(top.initiating_host)})" if top.initiating_host else "")
        + " |",
        f"| Collateral ranks | {compress_ranks(top.collateral_ranks) if top.collateral_ranks else '-'} |",
        "",
        "**Root cause.** " + _prose(top.root_cause),
        "",
        "**Evidence**",
        "",
    ]
    for ev in top.evidence:
        where = _code(f"{ev.source}:{ev.line}")
        rank = f"rank {ev.rank}" if ev.rank is not None else "rank ?"
        more = f" {_prose(ev.repeats_note)}" if ev.repeats else ""
        out.append(f"- {where} · {rank}" + (f" · {_prose(ev.shown_time)}" if ev.time else "") + f" · {_prose(ev.role)}{more}")
        out.append("")
        out.append("  " + _fence(ev.text).replace("\n", "\n  "))
    out += ["", "**Fix**", ""]
    out += [f"{i}. {_step(f)}" for i, f in enumerate(top.fix, 1)]
    v = top.verify
    out += ["", f"**Verify:** {_code(v.command)}" + (f" — {_prose(v.text)}" if v.text else "") if v.command else f"**Verify:** {_prose(v.text)}", ""]
    if top.missing:
        out += ["**Missing facts — collect next**", ""]
        out += [f"- {_prose(m)}" for m in top.missing]
        out.append("")
    out += _similar(d)
    if len(d.diagnoses) > 1:
        out += ["**Other candidates**", ""]
        for alt in d.diagnoses[1:]:
            out.append(f"- {_prose(alt.title)} ({_code(alt.klass)}, {alt.confidence:.2f})")
        out.append("")
    return "\n".join(out)


def _similar(d: Diagnosis) -> list[str]:
    """The history's closest incidents, the fix that worked first on each line."""
    if not d.similar:
        return [] if d.similar is None else ["**Similar past incidents:** none in the history", ""]
    out = ["**Similar past incidents**", ""]
    for m in d.similar:
        fix = f"fixed by: {_prose(m['fix'])}" if m["fix"] else "fix not recorded"
        ranks = compress_ranks(m["initiating_ranks"]) if m["initiating_ranks"] else "?"
        out.append(f"- #{m['id']} {fix} · {_prose(m['job'])} · {_prose(m['saved_at'])} · {_code(m['entry'] or '-')}"
                   f" · rank {ranks} · similarity {m['similarity']:.2f}")
    out.append("")
    return out
