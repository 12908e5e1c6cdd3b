"""Attribution: give every event the global rank it belongs to, and count the ranks."""

from __future__ import annotations

from ..events import Event, ScanResult
from ..kb.loader import KnowledgeBase
from .launcher import LauncherSummary

def map_local_ranks(events: list[Event], summary: LauncherSummary, scan: ScanResult) -> None:
    pairs: dict[tuple[str | None, int], int] = {}
    for r in summary.records:
        if r.rank is not None and r.local_rank is not None:
            pairs[(r.host, r.local_rank)] = r.rank
    for ev in events:
        if ev.rank is not None and ev.local_rank is not None:
            pairs.setdefault((ev.host, ev.local_rank), ev.rank)
    # NCCL's "comm 0x.. rank R nranks N cudaDev D" lines: on this host, device D is global rank R
    # (NCCL's localRank numbers follow the devices in the usual one-GPU-per-rank setup)
    for f in scan.facts:
        if f.fact == "nccl-nranks" and f.host and f.captures.get("device", "").isdigit() and f.captures.get("rank", "").isdigit():
            pairs.setdefault((f.host, int(f.captures["device"])), int(f.captures["rank"]))
    by_local: dict[int, set[int]] = {}
    for (_h, lr), rk in pairs.items():
        by_local.setdefault(lr, set()).add(rk)
    hosts = {h for (h, _), _ in pairs.items() if h} | {e.host for e in events if e.host and e.local_rank is not None}
    # one node, unless the logs show it is not: several hosts, a global rank that differs from
    # its local rank, or global ranks beyond what one node's local ranks cover
    known_local = {lr for (_h, lr) in pairs} | {e.local_rank for e in events if e.local_rank is not None}
    max_global = max((e.rank for e in events if e.rank is not None), default=-1)
    single_node = (
        len(hosts) <= 1
        and all(rk == lr for (_h, lr), rk in pairs.items())
        and (max_global < 8 or max_global <= max(known_local, default=-1))
    )

    def to_global(host: str | None, lr: int) -> int | None:
        if (host, lr) in pairs:
            return pairs[(host, lr)]
        ranks = by_local.get(lr, set())
        if len(ranks) == 1 and single_node:
            return next(iter(ranks))
        if single_node:
            return lr
        return None

    for ev in events:
        if ev.rank is None and ev.local_rank is not None:
            ev.rank = to_global(ev.host, ev.local_rank)
        plr = ev.cap_int("peer_local_rank")
        if plr is not None and "peer_rank" not in ev.captures:
            g = to_global(ev.host, plr)
            if g is not None:
                ev.captures["peer_rank"] = str(g)
    for r in summary.records:
        if r.rank is None and r.local_rank is not None:
            r.rank = to_global(r.host, r.local_rank)


def dedupe(events: list[Event]) -> list[Event]:
    """One event per (line, entry, signature); keep the first."""
    seen: set[tuple] = set()
    out = []
    for ev in events:
        k = (ev.source, ev.line, ev.entry, ev.signature, ev.rank)
        if k in seen:
            continue
        seen.add(k)
        out.append(ev)
    return out


def world_of(scan: ScanResult, events: list[Event], summary: LauncherSummary) -> tuple[set[int], int | None]:
    seen = set(scan.ranks_seen)
    seen |= {e.rank for e in events if e.rank is not None}
    seen |= {r.rank for r in summary.records if r.rank is not None}
    size = None
    for f in scan.facts:
        ws = f.captures.get("world_size")
        if ws and ws.isdigit() and 0 < int(ws) <= 1_000_000:
            size = max(size or 0, int(ws))
    return seen, size


def fact_events(scan: ScanResult) -> list[Event]:
    """Python exception lines and each rank's last line, as events the engine can attribute."""
    out = []
    for f in scan.facts:
        if f.fact in ("py-exception", "py-traceback"):
            out.append(Event("", f.fact.replace("py-", "python-"), "trace", f.source, f.line, f.text, f.rank, f.local_rank, f.host, None, None, f.time, f.ts, dict(f.captures), list(f.context)))
    for f in scan.tails:
        out.append(Event("", "last-line", "tail", f.source, f.line, f.text, f.rank, f.local_rank, f.host, None, None, f.time, f.ts, {}))
    return out


def escalate_repeats(kb: KnowledgeBase, events: list[Event]) -> None:
    """A line that is harmless once (an overflow skip) is a failure when it keeps coming."""
    counts: dict[tuple[str, str], int] = {}
    for e in events:
        counts[(e.entry, e.signature)] = counts.get((e.entry, e.signature), 0) + 1
    for e in events:
        try:
            n = kb.get(e.entry).signature(e.signature).repeat_cause
        except KeyError:
            continue
        if n and counts[(e.entry, e.signature)] >= n and e.role != "cause":
            e.role = "cause"
            e.captures["repeats"] = str(counts[(e.entry, e.signature)])
