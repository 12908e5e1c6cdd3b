"""Markdown for pasting into an issue or incident ticket."""

from __future__ import annotations

from ..diagnose.collectives import compress_ranks
from ..diagnose.model import Diagnosis

_VERDICT = {
    "diagnosed": "Diagnosed",
    "inconclusive": "Inconclusive — evidence is short",
    "no-failure-found": "No failure found",
}


def _fence(text: str) -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}text\n{text}\n{fence}"


def render_markdown(d: Diagnosis) -> str:
    out = [f"## rankdoctor: {_VERDICT[d.verdict]}", ""]
    seen = compress_ranks(d.ranks_seen) if d.ranks_seen else "none"
    out.append(f"Inputs: {len(d.inputs)} file(s), {sum(i.lines for i in d.inputs):,} lines · ranks seen: {seen}")
    out.append("")
    if not d.diagnoses:
        out.append("No failure signature fired. Healthy-looking noise (NCCL INFO, warnings) is ignored on purpose.")
        return "\n".join(out) + "\n"
    top = d.diagnoses[0]
    out += [
        f"### {top.title}",
        "",
        "| | |",
        "|---|---|",
        f"| Class | `{top.klass}` |",
        f"| Entry | `{top.entry}` |",
        f"| Confidence | {top.confidence:.2f} |",
        f"| Initiating rank | {top.initiating_rank if top.initiating_rank is not None else 'unknown'}"
        + (f" (ranks {compress_ranks(top.initiating_ranks)} started it together)" if len(top.initiating_ranks) > 1 else "")
        + (f" ({top.initiating_host})" if top.initiating_host else "")
        + " |",
        f"| Collateral ranks | {compress_ranks(top.collateral_ranks) if top.collateral_ranks else '-'} |",
        "",
        "**Root cause.** " + top.root_cause,
        "",
        "**Evidence**",
        "",
    ]
    for ev in top.evidence:
        where = f"{ev.source}:{ev.line}"
        rank = f"rank {ev.rank}" if ev.rank is not None else "rank ?"
        more = f" {ev.repeats_note}" if ev.repeats else ""
        out.append(f"- `{where}` · {rank}" + (f" · {ev.shown_time}" if ev.time else "") + f" · {ev.role}{more}")
        out.append("")
        out.append("  " + _fence(ev.text).replace("\n", "\n  "))
    out += ["", "**Fix**", ""]
    out += [f"{i}. {f}" for i, f in enumerate(top.fix, 1)]
    v = top.verify
    out += ["", f"**Verify:** `{v.command}`" + (f" — {v.text}" if v.text else "") if v.command else f"**Verify:** {v.text}", ""]
    if top.missing:
        out += ["**Missing facts — collect next**", ""]
        out += [f"- {m}" for m in top.missing]
        out.append("")
    if len(d.diagnoses) > 1:
        out += ["**Other candidates**", ""]
        for alt in d.diagnoses[1:]:
            out.append(f"- {alt.title} (`{alt.klass}`, {alt.confidence:.2f})")
        out.append("")
    return "\n".join(out)
