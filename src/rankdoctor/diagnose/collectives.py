"""Cross-rank reading of collective timeouts: who waited where, and who is missing.

Every rank that reports a timeout says which collective (SeqNum, OpType, NumelIn) it was
waiting on, and newer PyTorch adds how many collectives it had enqueued. Comparing those
reports across ranks separates the three usual stories:

- desync: the reports disagree (different op or size at one SeqNum, different SeqNum,
  different last-enqueued counters) — the rank(s) in the minority took another path;
- absent rank: every report agrees, and some rank of the job never reports — it is dead,
  slow, or stuck elsewhere (the caller decides which, from that rank's own evidence);
- nothing to tell apart: every rank of the job reports the same collective.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..events import Event


@dataclass
class Report:
    rank: int
    seq: int | None
    op: str | None
    numel_in: int | None
    last_enqueued: int | None
    event: Event


@dataclass
class CollectiveFinding:
    kind: str  # desync | absent | uniform
    culprits: list[int] = field(default_factory=list)
    reporting: list[int] = field(default_factory=list)
    detail: str = ""
    strength: float = 0.0  # how clear the disagreement is (0..1)
    barrier_like: bool = False
    reports: dict[int, Report] = field(default_factory=dict)
    unseen: list[int] = field(default_factory=list)  # ranks of the job with no line in these logs


def minority(values: dict[int, object]) -> tuple[list[int], bool]:
    """Ranks whose value differs from the clear majority; (ranks, clear?)."""
    counts = Counter(values.values())
    if len(counts) < 2:
        return [], False
    (top, n_top), (_second, n_second) = counts.most_common(2)
    if n_top == n_second:
        # two equal camps: nothing says which one is wrong
        return [], False
    return sorted(r for r, v in values.items() if v != top), True


def collect_reports(events: list[Event]) -> dict[int, Report]:
    """The first timeout report of each rank on the default process group."""
    reports: dict[int, Report] = {}
    for ev in sorted(events, key=lambda e: (e.ts or 0.0, e.source, e.line)):
        if ev.role != "symptom" or ev.rank is None or "pg_rank" in ev.captures:
            continue
        seq = ev.cap_int("seq")
        if seq is None and ev.cap_int("last_enqueued") is None and ev.cap_int("timeout_ms") is None:
            continue
        r = reports.get(ev.rank)
        if r is None:
            reports[ev.rank] = Report(ev.rank, seq, ev.captures.get("op"), ev.cap_int("numel_in"), ev.cap_int("last_enqueued"), ev)
        else:
            # merge the watchdog line with the PG-status line of the same rank
            r.seq = r.seq if r.seq is not None else seq
            r.op = r.op or ev.captures.get("op")
            r.numel_in = r.numel_in if r.numel_in is not None else ev.cap_int("numel_in")
            r.last_enqueued = r.last_enqueued if r.last_enqueued is not None else ev.cap_int("last_enqueued")
    # a rank whose own report of the same kind lost its fields (the watchdog line hard-wrapped
    # after "timeout:", the SeqNum on a line of its own) still reports the timeout: it is
    # waiting with the others, not the rank that never reports
    kinds = {rep.event.entry for rep in reports.values()}
    for ev in events:
        if (ev.role == "symptom" and ev.rank is not None and "pg_rank" not in ev.captures and ev.entry in kinds
                and ev.rank not in reports and "launcher" not in ev.captures):
            reports[ev.rank] = Report(ev.rank, None, None, None, None, ev)
    return reports


def analyse(events: list[Event], expected_ranks: set[int] | None, present: set[int] | None = None) -> CollectiveFinding | None:
    """Compare the ranks' timeout reports. ``expected_ranks``: the job's ranks;
    ``present``: those with any line in these logs (a rank that is not in them at all is
    not said to have "never reported": the logs may be one rank's paste)."""
    reports = collect_reports(events)
    if not reports:
        return None
    reporting = sorted(reports)
    ops = {r: (rep.op, rep.numel_in) for r, rep in reports.items() if rep.op is not None}
    seqs = {r: rep.seq for r, rep in reports.items() if rep.seq is not None}
    enq = {r: rep.last_enqueued for r, rep in reports.items() if rep.last_enqueued is not None}
    barrier_like = any(rep.op == "ALLREDUCE" and rep.numel_in == 1 for rep in reports.values())

    # 1. different collectives at the same sequence number (or with none printed: older
    # releases' "WorkNCCL(OpType=ALLREDUCE, Timeout(ms)=...)" - ranks hung in different
    # operations all the same)
    if len(set(seqs.values())) <= 1 and len({v for v in ops.values()}) > 1:
        culprits, clear = minority(ops)
        detail = _grouped(ops, lambda v: f"{v[0]}{'' if v[1] is None else f' NumelIn={v[1]}'}", culprits if clear else [])
        where = f"at SeqNum={next(iter(seqs.values()))} " if seqs else ""
        return CollectiveFinding(
            "desync",
            culprits,
            reporting,
            f"{where}the ranks wait in different collectives ({detail})",
            (0.9 if clear else 0.75) if seqs else (0.8 if clear else 0.65),
            barrier_like,
            reports,
        )
    # 2. different sequence numbers or enqueue counters
    for name, values in (("SeqNum", seqs), ("last enqueued work", enq)):
        if len(set(values.values())) > 1:
            culprits, clear = minority(values)
            detail = _grouped(values, str, culprits if clear else [])
            return CollectiveFinding(
                "desync", culprits, reporting, f"ranks disagree on {name} ({detail})", 0.8 if clear else 0.6, barrier_like, reports
            )
    # 3. everyone agrees: is someone missing?
    if expected_ranks:
        shown = expected_ranks if present is None else expected_ranks & (present | set(reporting))
        absent = sorted(shown - set(reporting))
        unseen = sorted(expected_ranks - shown)
        if absent:
            first = next((reports[r] for r in reporting if reports[r].seq is not None or reports[r].op), reports[reporting[0]])
            if first.seq is not None or first.op:
                what = "at " + " ".join(
                    x for x in (f"SeqNum={first.seq}" if first.seq is not None else "", first.op or "",
                                f"NumelIn={first.numel_in}" if first.numel_in is not None else "") if x
                )
            else:
                what = "in a collective"
            return CollectiveFinding(
                "absent",
                absent,
                reporting,
                f"{ranks_phrase(reporting)} {'times' if len(set(reporting)) == 1 else 'time'} out waiting {what}; "
                f"{ranks_phrase(absent)} never {'reports' if len(set(absent)) == 1 else 'report'} it",
                0.7,
                barrier_like,
                reports,
                unseen,
            )
        if unseen:
            return CollectiveFinding("uniform", [], reporting, f"{ranks_phrase(reporting)} wait at the same collective; "
                                     f"{ranks_phrase(unseen)} {'is' if len(unseen) == 1 else 'are'} not in these logs",
                                     0.0, barrier_like, reports, unseen)
    return CollectiveFinding("uniform", [], reporting, "every reporting rank waits at the same collective", 0.0, barrier_like, reports)


def _grouped(values: dict[int, object], fmt, odd: list[int]) -> str:
    """"ranks 0-2,4-7: X; rank 3: Y (the odd one out)": ranks grouped by what they report."""
    groups: dict[object, list[int]] = {}
    for r, v in sorted(values.items()):
        groups.setdefault(v, []).append(r)
    parts = []
    for v, rs in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[1])):
        tag = " (the odd one out)" if odd and set(rs) == set(odd) else ""
        parts.append(f"{ranks_phrase(rs)}: {fmt(v)}{tag}")
    return "; ".join(parts)


def _fmt(ranks: list[int]) -> str:
    return compress_ranks(ranks)


def ranks_phrase(ranks: list[int] | set[int]) -> str:
    """'rank 3' or 'ranks 0-2,5'."""
    rs = sorted(set(ranks))
    return f"rank {rs[0]}" if len(rs) == 1 else f"ranks {compress_ranks(rs)}"


def compress_ranks(ranks: list[int] | set[int]) -> str:
    """[0,1,2,3,5] -> '0-3,5'."""
    rs = sorted(set(ranks))
    if not rs:
        return "-"
    parts = []
    start = prev = rs[0]
    for r in rs[1:]:
        if r == prev + 1:
            prev = r
            continue
        parts.append(f"{start}" if start == prev else f"{start}-{prev}")
        start = prev = r
    parts.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ",".join(parts)
