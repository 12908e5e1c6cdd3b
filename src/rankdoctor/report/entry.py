"""`rankdoctor kb show ID`: one entry in the terminal, like `ruff rule`."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.syntax import Syntax
from rich.text import Text

from ..kb.loader import KnowledgeBase
from ..kb.model import Entry


def render_entry(kb: KnowledgeBase, e: Entry, console: Console | None = None) -> None:
    c = console or Console()
    c.print(Text.assemble((e.title, "bold"), f"  [{e.class_}] ", (e.severity.value, "red" if e.severity.value in ("critical", "high") else "yellow")))
    c.print(Text(f"{e.id} · systems: {', '.join(e.systems)} · tags: {', '.join(e.tags)}", style="dim"))
    for title, body in (("Summary", e.summary), ("Mechanism", e.mechanism), ("Usual misdiagnosis", e.misdiagnosis)):
        c.print(Panel(escape(" ".join(body.split())), title=title, title_align="left"))
    c.print(Text("What you will observe", style="bold"))
    for o in e.observe:
        c.print(" • " + escape(o))
    c.print(Text("Signatures", style="bold"))
    for s in e.signatures:
        c.print(Text.assemble(f" {s.role.value:8s} ", (s.id, "cyan"), f"  {s.description}"))
        c.print(Text("          " + s.regex, style="dim"))
    for title, steps in (("Confirm", e.confirm), ("Fix", e.fix)):
        c.print(Text(title, style="bold"))
        for i, s in enumerate(steps, 1):
            c.print(f" {i}. " + escape(s.text))
            if s.command:
                c.print(Text("    $ " + s.command, style="green"))
    c.print(Text("Prevention", style="bold"))
    for p in e.prevention:
        c.print(" • " + escape(p))
    c.print(Text.assemble(("Verify: ", "bold"), (e.verify, "green")))
    if e.missing:
        c.print(Text.assemble(("If evidence is short, collect: ", "bold"), e.missing.fact))
        c.print(Text("    $ " + e.missing.command, style="green"))
    for ex in e.code:
        c.print(Text(f"{ex.title} ({ex.system})", style="bold"))
        c.print(Syntax(ex.code.rstrip(), ex.language if ex.language != "bash" else "bash", theme="ansi_dark"))
    c.print(Text("Example lines", style="bold"))
    for x in e.examples.match[:4]:
        c.print(Text("  " + x.text, style="dim"))
    rel = sorted(kb.related_to(e.id))
    if rel:
        c.print(Text.assemble(("Related: ", "bold"), ", ".join(rel)))
    c.print(Text("References", style="bold"))
    for r in e.references:
        c.print(f" • {escape(r.title)} — {r.url}")
