"""Terminal views of the history and of a comparison (Rich), and the piped forms: one
tab-separated line per incident, whole, as `kb list` prints when not on a terminal."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..diagnose.collectives import compress_ranks
from .compare import Comparison
from .store import Incident


def _ranks(ranks: list[int]) -> str:
    return compress_ranks(ranks) if ranks else "-"


def list_lines(incidents: list[Incident]) -> list[str]:
    """Piped `history list`: id, saved, job, verdict, entry, initiating ranks, world size, fix."""
    return ["\t".join([str(i.id), i.saved_at, i.job, i.verdict, i.entry or "-", _ranks(i.initiating_ranks),
                       str(i.world_size), i.fix or "-"]) for i in incidents]


def list_table(incidents: list[Incident], console: Console) -> None:
    t = Table(show_header=True, header_style="bold")
    for name in ("#", "saved", "job", "verdict", "entry", "initiating", "world", "fix"):
        t.add_column(name, overflow="fold")
    for i in incidents:
        t.add_row(str(i.id), i.saved_at, escape(i.job), i.verdict, i.entry or "-", _ranks(i.initiating_ranks),
                  str(i.world_size), Text(i.fix, style="green") if i.fix else Text("-", style="dim"))
    console.print(t)
    console.print(f"{len(incidents)} incident(s)")


def show(i: Incident, console: Console) -> None:
    top = (i.report.get("diagnoses") or [{}])[0]
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column(overflow="fold")
    head.add_row("Incident", f"#{i.id}  ({i.uid})")
    head.add_row("Job", escape(i.job))
    head.add_row("Saved", i.saved_at)
    head.add_row("Verdict", i.verdict)
    if top:
        head.add_row("What", escape(f"{top.get('title', '')}  [{i.klass}]"))
        head.add_row("Entry", f"{i.entry}   (rankdoctor kb show {i.entry})")
    head.add_row("Initiating", _ranks(i.initiating_ranks))
    head.add_row("Collateral", _ranks(i.collateral_ranks))
    head.add_row("World size", str(i.world_size))
    head.add_row("Fixed by", Text(i.fix, style="bold green") if i.fix else Text("not recorded (rankdoctor history resolve ID --fix TEXT)", style="dim"))
    if i.fixed_at:
        head.add_row("Fixed at", i.fixed_at)
    if top.get("root_cause"):
        head.add_row("Why", escape(top["root_cause"]))
    console.print(head)
    if i.fingerprints:
        console.print(Text(f"fingerprints ({len(i.fingerprints)})", style="bold"))
        for fp in i.fingerprints:
            console.print(Text("  " + fp))


def compare_text(c: Comparison, console: Console) -> None:
    doc = c.to_json()
    if c.same_failure and c.a.top is None:
        verdict = Text("SAME: no failure in either", style="bold green")
    else:
        verdict = Text("SAME FAILURE", style="bold green") if c.same_failure else Text("DIFFERENT FAILURE", style="bold red")
    how = ""
    if not c.same_failure:
        how = "  ·  same entry, other evidence" if c.same_entry else "  ·  same class" if c.same_class else ""
    console.print(Text.assemble(("rankdoctor compare  ", "bold"), verdict, f"  ·  evidence similarity {doc['similarity']:.2f}{how}"))
    t = Table(box=None, padding=(0, 2), show_header=True, header_style="bold")
    t.add_column("")
    t.add_column("A: " + escape(c.a.label), overflow="fold")
    t.add_column("B: " + escape(c.b.label), overflow="fold")
    a, b = doc["a"], doc["b"]
    for key, name in (("verdict", "verdict"), ("entry", "entry"), ("class", "class")):
        t.add_row(name, str(a[key] or "-"), str(b[key] or "-"))
    t.add_row("initiating", _ranks(a["initiating_ranks"]), _ranks(b["initiating_ranks"]))
    t.add_row("collateral", _ranks(a["collateral_ranks"]), _ranks(b["collateral_ranks"]))
    t.add_row("world size", str(a["world_size"]), str(b["world_size"]))
    console.print(t)
    changes = doc["rank_changes"]
    if changes:
        console.print(Text("ranks that changed role: " + "; ".join(f"rank {r['rank']} {r['a']} -> {r['b']}" for r in changes)))
    else:
        console.print(Text("no rank changed role"))
    fps = doc["fingerprints"]
    for key, title in (("only_a", "evidence only in A"), ("only_b", "evidence only in B"), ("shared", "evidence in both")):
        console.print(Text(f"{title} ({len(fps[key])})", style="bold"))
        for fp in fps[key]:
            console.print(Text("  " + fp))
