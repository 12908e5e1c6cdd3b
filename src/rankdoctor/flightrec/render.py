"""Terminal view of a Flight Recorder analysis."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .analyze import FRReport

_STYLE = {"mismatch": "bold red", "hang": "bold red", "consistent": "bold green", "inconclusive": "bold yellow"}


def render_fr_text(r: FRReport, console: Console, problems: list[str]) -> None:
    console.print(
        Text.assemble(
            ("rankdoctor fr ", "bold"),
            (r.verdict.upper(), _STYLE[r.verdict]),
            f"  ·  dumps from ranks {', '.join(map(str, r.ranks_found)) or '-'}",
            f"  ·  missing: {', '.join(map(str, r.ranks_missing)) or 'none'}",
        )
    )
    for p in problems:
        console.print(Text("warning: " + p, style="yellow"))
    for n in r.notes:
        console.print(Text("note: " + n, style="dim"))
    if not r.findings:
        console.print("Every rank ran the same collectives in the same order, and none is left waiting.")
        return
    for f in r.findings:
        head = Text.assemble((f.kind, "bold"), f"  pg {f.process_group}")
        if f.seq is not None:
            head.append(f"  seq {f.seq}")
        if f.op:
            head.append(f"  {f.op}")
        if f.culprit_ranks:
            head.append(f"  culprit: rank {', '.join(map(str, f.culprit_ranks))}", style="bold red")
        console.print(head)
        console.print(Text("  " + f.detail))
        if f.per_rank:
            t = Table(show_header=True, header_style="bold", box=None, padding=(0, 1))
            for col in ("rank", "op", "sizes", "dtypes", "call site", "state"):
                t.add_column(col, overflow="fold")
            for rank, v in sorted(f.per_rank.items()):
                style = "red" if rank in f.culprit_ranks else ""
                t.add_row(str(rank), str(v.get("op")), str(v.get("sizes")), str(v.get("dtypes")), str(v.get("call_site")), str(v.get("state")), style=style)
            console.print(t)
