"""Terminal view of a Flight Recorder analysis."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .analyze import FRReport, rank_list

_STYLE = {"mismatch": "bold red", "hang": "bold red", "consistent": "bold green", "inconclusive": "bold yellow"}


def render_fr_text(r: FRReport, console: Console, problems: list[str]) -> None:
    console.print(
        Text.assemble(
            ("rankdoctor fr ", "bold"),
            (r.verdict.upper(), _STYLE[r.verdict]),
            f"  ·  dumps from ranks {rank_list(r.ranks_found) or '-'}",
            f"  ·  missing: {rank_list(r.ranks_missing) or 'none'}",
        )
    )
    for p in problems:
        console.print(Text("warning: " + p, style="yellow"))
    for n in r.notes:
        console.print(Text("note: " + n, style="dim"))
    if not r.findings:
        console.print("Every rank ran the same collectives in the same order, and none is left waiting.")
        return
    told: set[tuple[int, ...]] = set()
    for f in r.shown:
        if f.root_ranks and tuple(f.root_ranks) in told:
            # the same culprit(s) seen from another of their groups: one line
            console.print(Text.assemble(("also ", "dim"), (f.kind, "bold"), f"  pg {f.process_group}  seq {f.seq}  {f.op or ''}  "
                                        f"(rank {rank_list(f.root_ranks)} there too)"))
            continue
        told.add(tuple(f.root_ranks))
        head = Text.assemble((f.kind, "bold"), f"  pg {f.process_group}")
        if f.seq is not None:
            head.append(f"  seq {f.seq}")
        if f.op:
            head.append(f"  {f.op}")
        if f.root_ranks:
            head.append(f"  culprit: rank {rank_list(f.root_ranks)}", style="bold red")
        console.print(head)
        console.print(Text("  " + f.detail))
        if f.collateral_ranks:
            console.print(Text(f"  rank(s) {rank_list(f.collateral_ranks)} only wait in another group's collective", style="dim"))
        if f.per_rank:
            # ranks that show the same row are one row (a DP group of 128 is a few rows)
            rows: dict[tuple[str, ...], list[int]] = {}
            for rank, v in sorted(f.per_rank.items()):
                key = tuple(str(v.get(k)) for k in ("op", "sizes", "dtypes")) + (_short(v.get("call_site")), str(v.get("state")))
                rows.setdefault((str(rank in f.root_ranks), *key), []).append(rank)
            t = Table(show_header=True, header_style="bold", box=None, padding=(0, 1))
            for col in ("rank", "op", "sizes", "dtypes", "call site", "state"):
                t.add_column(col, overflow="fold")
            for (culprit, *cells), ranks in sorted(rows.items(), key=lambda kv: kv[1][0]):
                t.add_row(rank_list(ranks, most=4), *cells, style="red" if culprit == "True" else "")
            console.print(t)


def _short(site: object) -> str:
    """A call site's file name and line (the finding's text above gives the whole path)."""
    return str(site).rsplit("/", 1)[-1] if site else "-"
