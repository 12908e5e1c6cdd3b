"""What ``rankdoctor watch`` prints: a Rich live view on a terminal, JSON lines for scripts,
plain timestamped lines when the text goes to a pipe or a file."""

from __future__ import annotations

import json
import signal
import sys
import time
from typing import TextIO

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from .core import Reason, Update, Watcher

_MANY = 16  # more ranks than this: grouped by state instead of one row each
_CHANGES_SHOWN = 8
_SILENT_SHOWN = 12


def _clock(t: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t))


def _ranks(rs) -> str:
    from ..diagnose.collectives import compress_ranks

    return compress_ranks(rs)


def warnings_of(u: Update) -> list[str]:
    """The lines a script watching stderr should see: silence and what happened to inputs
    (the diagnosis itself is the document on stdout)."""
    out = [c for c in u.changes if " silent for " in c or c.endswith(" write again") or c == "ranks write again"]
    return out + u.notes


def print_json(watcher: Watcher, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> Update | None:
    """One rankdoctor.diagnosis/v1 document per line whenever the diagnosis changes (and
    the first and the last, with the inputs' final counts); silence warnings and input
    notes on stderr."""
    last = None
    for u in watcher:
        last = u
        for w in warnings_of(u):
            err.write(f"rankdoctor watch: {w}\n")
        err.flush()
        if u.diagnosis_changed or u.reason in (Reason.start, Reason.final):
            out.write(json.dumps(u.document, ensure_ascii=False) + "\n")
            out.flush()
    return last


def print_lines(watcher: Watcher, out: TextIO = sys.stdout) -> Update | None:
    """Plain lines, one per change, each with the time it was seen."""
    last = None
    for u in watcher:
        last = u
        stamp = _clock(u.at)
        lines = list(u.changes) + u.notes
        if u.reason is Reason.final:
            lines.append(f"watch ended: {_summary(u)}")
        for line in lines:
            out.write(f"{stamp} {line}\n")
        out.flush()
    return last


def _summary(u: Update) -> str:
    doc = u.document
    lines = sum(i["lines"] for i in doc["inputs"])
    return f"{len(doc['inputs'])} file(s), {lines} line(s), {len(u.ranks)} rank(s) heard from; {_headline(u)}"


def _headline(u: Update) -> str:
    from .core import _headline as headline

    return headline(u.document)


class LiveView:
    """The terminal view: ranks alive / silent (grouped when many), the current diagnosis
    and what changed. Rendered again twice a second, so the seconds since each rank's last
    line count up between updates."""

    def __init__(self, silent_after: float):
        self.silent_after = silent_after
        self.update: Update | None = None
        self.log: list[tuple[float, str]] = []

    def feed(self, u: Update) -> None:
        self.update = u
        for c in [*u.changes, *u.notes]:
            self.log.append((u.at, c))
        del self.log[:-_CHANGES_SHOWN]

    def __rich__(self):
        u = self.update
        if u is None:
            return Text("rankdoctor watch: reading the logs ...")
        now = time.time()
        doc = u.document
        lines = sum(i["lines"] for i in doc["inputs"])
        head = Text.assemble(
            ("rankdoctor watch", "bold"),
            f"  {len(doc['inputs'])} file(s) · {len(u.ranks)} rank(s) heard from · {lines} line(s) · updated {_clock(u.at)}",
        )
        return Group(head, self._diagnosis(doc), self._ranks(u, now), self._changes())

    def _diagnosis(self, doc: dict) -> Panel:
        verdict = doc["verdict"]
        style = {"diagnosed": "bold red", "inconclusive": "bold yellow"}.get(verdict, "bold green")
        body = Text(verdict, style=style)
        if doc["diagnoses"]:
            top = doc["diagnoses"][0]
            body.append(f"  {top['title']}\n", style="bold")
            body.append(f"entry {top['entry']} · class {top['class']} · confidence {top['confidence']:.2f}\n")
            where = _ranks(top["initiating_ranks"]) if top["initiating_ranks"] else "unknown"
            body.append("started on rank ")
            body.append(where, style="bold")
            if top["collateral_ranks"]:
                body.append(f" · collateral: {_ranks(top['collateral_ranks'])}")
            if top["fix"]:
                step = top["fix"][0]
                body.append(f"\nfix: {step['command'] or step['text']}")
        else:
            body.append("  no failure in the logs so far")
        return Panel(body, title="diagnosis", title_align="left")

    def _ranks(self, u: Update, now: float):
        if not u.ranks:
            return Panel(Text("no rank has written a line yet"), title="ranks", title_align="left")
        gaps = {r: now - life.seen_at for r, life in u.ranks.items()}
        if len(u.ranks) <= _MANY:
            t = Table(expand=True, box=None, pad_edge=False)
            t.add_column("rank", justify="right")
            t.add_column("state")
            t.add_column("last line", justify="right")
            t.add_column("its text", overflow="ellipsis", no_wrap=True, ratio=1)
            for r, life in u.ranks.items():
                state, style = self._state(r, gaps[r], u)
                t.add_row(str(r), Text(state, style=style), f"{gaps[r]:.0f} s ago", Text(life.text))  # (Text: a log line is not markup)
            return Panel(t, title="ranks", title_align="left")
        groups: dict[str, list[int]] = {}
        for r in u.ranks:
            groups.setdefault(self._state(r, gaps[r], u)[0], []).append(r)
        body = Text()
        for state in ("writing", "quiet", "silent"):
            rs = groups.get(state)
            if not rs:
                continue
            newest = min(gaps[r] for r in rs)
            oldest = max(gaps[r] for r in rs)
            body.append(f"{state:8}", style=self._state_style(state))
            body.append(f" {len(rs):5} rank(s)  last line {newest:.0f}-{oldest:.0f} s ago  {_ranks(rs)}\n")
        for r in sorted(groups.get("silent", []), key=lambda r: -gaps[r])[:_SILENT_SHOWN]:
            body.append(f"  rank {r}: silent {gaps[r]:.0f} s, last line: {u.ranks[r].text[:100]}\n", style="red")
        return Panel(body, title="ranks", title_align="left")

    def _state(self, r: int, gap: float, u: Update) -> tuple[str, str]:
        if r in u.silent or u.stalled or gap >= self.silent_after:
            state = "silent"
        elif gap >= self.silent_after / 2:
            state = "quiet"
        else:
            state = "writing"
        return state, self._state_style(state)

    @staticmethod
    def _state_style(state: str) -> str:
        return {"silent": "bold red", "quiet": "yellow"}.get(state, "green")

    def _changes(self) -> Panel:
        body = Text()
        for at, c in self.log:
            body.append(f"{_clock(at)} ", style="dim")
            body.append(c + "\n", style="red" if " silent for " in c else "")
        return Panel(body, title="what changed", title_align="left")


def show_live(watcher: Watcher, console: Console, silent_after: float) -> Update | None:
    from rich.live import Live

    view = LiveView(silent_after)
    last = None
    with Live(view, console=console, refresh_per_second=2, screen=False):
        for u in watcher:
            view.feed(u)
            last = u
    return last


class StopOnSignals:
    """SIGINT and SIGTERM stop the watcher (which reads the files to their end once more and
    makes its last update) instead of killing the process. Installed before the knowledge
    base is loaded, so a signal during start-up is not lost either."""

    def __init__(self) -> None:
        self.signalled = False
        self.watcher: Watcher | None = None
        self._previous: dict = {}

    def __enter__(self) -> "StopOnSignals":
        self._previous = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        return self

    def __exit__(self, *exc) -> None:
        for s, h in self._previous.items():
            signal.signal(s, h)

    def _on_signal(self, _signum, _frame) -> None:
        self.signalled = True
        if self.watcher is not None:
            self.watcher.stop()

    def attach(self, watcher: Watcher) -> None:
        self.watcher = watcher
        if self.signalled:
            watcher.stop()


def run(watcher: Watcher, fmt: str, console: Console | None = None) -> Update | None:
    """Print the watcher's updates in ``fmt`` (json, or text: the live view on a terminal,
    lines otherwise) until it ends; the last update."""
    if fmt == "json":
        return print_json(watcher)
    if console is not None and console.is_terminal:
        return show_live(watcher, console, watcher.silent_after)
    return print_lines(watcher)
