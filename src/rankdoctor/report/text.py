"""The terminal report (Rich)."""

from __future__ import annotations

from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ..diagnose.collectives import compress_ranks
from ..diagnose.model import Diagnosis
from . import NO_EXPLANATION, NO_FAILURE, NO_FAILURE_HINT, plain

_STYLE = {"diagnosed": "bold red", "inconclusive": "bold yellow", "no-failure-found": "bold green"}
_ROLE = {"cause": "red", "symptom": "yellow", "context": "cyan"}


def render_text(d: Diagnosis, console: Console, verbose: bool = False) -> None:
    lines = sum(i.lines for i in d.inputs)
    seen = compress_ranks(d.ranks_seen) if d.ranks_seen else "none"
    console.print(
        Text.assemble(
            ("rankdoctor ", "bold"),
            (d.verdict.upper(), _STYLE[d.verdict]),
            f"  ·  {len(d.inputs)} input(s), {lines:,} lines  ·  ranks seen: {seen}",
        )
    )
    for w in d.warnings:
        console.print(Text("warning: " + w, style="yellow"))
    if not d.diagnoses:
        if d.verdict == "inconclusive":
            console.print(Text(plain(NO_EXPLANATION)))
        else:
            console.print(Text(plain(NO_FAILURE)))
            console.print(Text(plain(NO_FAILURE_HINT), style="dim"))
        return
    top = d.diagnoses[0]
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    head.add_row("What", Text.assemble((top.title, "bold"), f"  [{top.klass}]"))
    head.add_row("Entry", f"{top.entry}   (rankdoctor kb show {top.entry})")
    head.add_row("Confidence", f"{top.confidence:.2f}")
    where = "unknown" if top.initiating_rank is None else f"rank {top.initiating_rank}"
    if len(top.initiating_ranks) > 1:
        where = f"ranks {compress_ranks(top.initiating_ranks)} (they started it together)"
    if top.initiating_host:
        where += f" on {top.initiating_host}"
    head.add_row("Where", Text(where, style="bold red" if top.initiating_rank is not None else ""))
    head.add_row("Collateral", compress_ranks(top.collateral_ranks) if top.collateral_ranks else "-")
    head.add_row("Why", escape(top.root_cause))
    console.print(Panel(head, title="diagnosis", title_align="left", border_style=_STYLE[d.verdict].split()[-1]))

    ev = Table(title="evidence", title_justify="left", show_lines=True, expand=True, box=None, padding=(0, 1))
    ev.add_column("rank", justify="right", no_wrap=True)
    ev.add_column("role", no_wrap=True)
    ev.add_column("where / line", overflow="fold", ratio=1)
    for e in top.evidence:
        where = f"{e.source}:{e.line}" + (f"  {e.shown_time}" if e.time else "")
        if e.repeats:
            where += f"  {e.repeats_note}"
        text = e.text if len(e.text) <= 400 else e.text[:400] + " …"
        ev.add_row(
            "?" if e.rank is None else str(e.rank),
            Text(e.role, style=_ROLE.get(e.role, "")),
            Text.assemble((where, "dim"), "\n", text),
        )
    console.print(ev)

    todo = Table.grid(padding=(0, 1))
    todo.add_column(style="bold")
    todo.add_column()
    for i, f in enumerate(top.fix, 1):
        todo.add_row(f"fix {i}", escape(str(f)))
    todo.add_row("verify", escape(top.verify.as_line()))
    for m in top.missing:
        todo.add_row(Text("missing", style="yellow"), escape(m))
    console.print(Panel(todo, title="what to do", title_align="left"))
    _print_similar(d, console)
    if verbose and top.notes:
        console.print(Group(*[Text("· " + n, style="dim") for n in top.notes]))
    if verbose and top.reasoning:
        _print_breakdown(top.reasoning, console)
    if len(d.diagnoses) > 1:
        # each alternative's own share: its class's probability would count the winner's too
        alts = ", ".join(f"{a.title} [{a.klass}] {a.entry_share:.2f}" for a in d.diagnoses[1:])
        console.print(Text("other candidates (probability of each entry): " + alts, style="dim"))


def _print_similar(d: Diagnosis, console: Console) -> None:
    """The history's closest incidents, the fix that worked first on each row."""
    if d.similar is None:  # no history consulted
        return
    if not d.similar:
        console.print(Text("similar past incidents: none in the history", style="dim"))
        return
    t = Table(title="similar past incidents", title_justify="left", box=None, padding=(0, 1), expand=True)
    t.add_column("#", justify="right", no_wrap=True)
    t.add_column("fix that worked", overflow="fold", ratio=2)
    t.add_column("job · saved", overflow="fold", ratio=1)
    t.add_column("entry · ranks", overflow="fold", ratio=1)
    t.add_column("similar", justify="right", no_wrap=True)
    for m in d.similar:
        ranks = compress_ranks(m["initiating_ranks"]) if m["initiating_ranks"] else "?"
        fix = Text(m["fix"], style="bold green") if m["fix"] else Text("not recorded", style="dim")
        t.add_row(str(m["id"]), fix, f"{m['job']} · {m['saved_at']}", f"{m['entry']} · rank {ranks}", f"{m['similarity']:.2f}")
    console.print(t)
    console.print(Text("rankdoctor history show ID for one in full; history resolve ID --fix TEXT records what fixed one", style="dim"))


def _print_breakdown(rows: list[dict], console: Console) -> None:
    """-v: the score of the winning hypothesis and of the runner-up, feature by feature."""
    for row in rows:
        where = "no rank" if not row["ranks"] else "rank" + ("s " if len(row["ranks"]) > 1 else " ") + compress_ranks(row["ranks"])
        t = Table(title=f"{row['label']}: {row['entry']} @ {where} ({row['kind']}) — score {row['score']:+.2f}, p {row['p']:.2f}",
                  title_justify="left", box=None, padding=(0, 1))
        t.add_column("weight×value", justify="right", no_wrap=True)
        t.add_column("feature", no_wrap=True)
        t.add_column("meaning", overflow="fold", style="dim")
        for name, part, meaning in row["parts"]:
            t.add_row(f"{part:+.2f}", name, meaning)
        console.print(t)
