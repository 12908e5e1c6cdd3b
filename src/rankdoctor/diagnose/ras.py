"""NCCL RAS reports as evidence about global ranks.

RAS names ranks of a communicator (by its hash) together with the host, pid and CUDA
device of the process. The logs say which global rank that is, in this order:

1. NCCL's INFO init line, "comm 0x... rank R nranks N cudaDev D ... commId 0x<hash> - Init
   START/COMPLETE", printed by a process whose global rank the line's prefix or file names
   (the commId NCCL prints there is the hash RAS reports, ``init.cc`` / ``ras/collectives.cc``);
2. the process id: NCCL's "host:pid:tid [dev]" prefix on lines of a known global rank (RAS
   prints the host as an IP address, the logs as a host name: only the pid, and the device
   when one pid holds several ranks, are compared);
3. a communicator of the whole job (its size is the world size): its ranks are the global
   ranks, as in PyTorch's default process group.

Anything else stays a communicator rank, and the diagnosis says which ones it could not map.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..events import Event, Fact
from ..ingest.ncclras import SUSPECT, Note, Process, Report, Trouble, track
from ..ingest.prefix import parse_prefix

_COMM_ID = re.compile(r"\bcommId 0x([0-9a-fA-F]+)")


@dataclass
class RasEvidence:
    """What the RAS reports say about global ranks, and what could not be mapped."""

    reports: list[Report]
    notes: list[Note]  # the latest snapshot's notes, dead processes' and the snapshots' stuck / slow
    troubles: dict[int, set[Trouble]] = field(default_factory=dict)  # global rank -> what RAS says
    mapped: list[tuple[Note, int]] = field(default_factory=list)  # each note with its global rank
    unmapped: list[Note] = field(default_factory=list)
    lost: list[Process] = field(default_factory=list)  # dead / unresponsive processes no rank could be given
    world: int | None = None  # the job's size as RAS counts it

    def ranks(self, *kinds: Trouble) -> set[int]:
        return {r for r, ts in self.troubles.items() if ts & set(kinds)}

    @property
    def shows_failure(self) -> bool:
        """A process or rank RAS cannot reach, counts stuck between snapshots, or an NCCL
        error, whether or not the logs tell which global rank it is."""
        bad = SUSPECT | {Trouble.stuck, Trouble.error}
        return any(n.trouble in bad for n in self.notes) or any(p.trouble in SUSPECT for r in self.reports for p in r.processes)


def ras_evidence(reports: list[Report], facts: list[Fact], events: list[Event], world_size: int | None) -> RasEvidence | None:
    if not reports:
        return None
    world = world_size or next((r.world for r in reports if r.world), None)
    by_comm, by_pid = _maps(facts, events, world)
    latest = max((r for r in reports if r.comms), key=lambda r: (r.ts is not None, r.ts or 0.0, r.order), default=None)
    notes = list(latest.notes) if latest is not None else []
    # death is for good: a process any report (or a monitor) calls dead stays dead
    notes += [n for r in reports if r is not latest for n in r.notes if n.trouble == Trouble.dead]
    notes += track(reports)
    ev = RasEvidence(reports, notes, world=world)
    comm_sizes = {h: c.size for r in reports for h, c in r.comms.items() if c.size}
    for n in notes:
        g = _global(n, by_comm, by_pid, comm_sizes.get(n.comm), world)
        if g is None:
            ev.unmapped.append(n)
        else:
            ev.mapped.append((n, g))
            ev.troubles.setdefault(g, set()).add(n.trouble)
    for r in reports:
        for p in r.processes:
            if latest is not None and r is not latest and p.trouble != Trouble.dead:
                continue
            g = _by_pid(by_pid, p.pid, p.gpus[0] if len(p.gpus) == 1 else None)
            if g is not None:
                ev.troubles.setdefault(g, set()).add(p.trouble)
            elif not any(n.pid == p.pid and p.pid is not None for n, _ in ev.mapped):
                ev.lost.append(p)
    return ev


def behind_few(ev: RasEvidence) -> set[int]:
    """Global ranks behind in a collective count where the ranks behind are at most half of
    the communicator (the few that lag, not the many that wait on a few)."""
    sizes = {h: c.size for r in ev.reports for h, c in r.comms.items() if c.size}
    count: dict[tuple[str, str | None], int] = {}
    for n in ev.notes:
        if n.trouble == Trouble.behind:
            count[(n.comm, n.op)] = count.get((n.comm, n.op), 0) + 1
    return {g for n, g in ev.mapped if n.trouble == Trouble.behind
            and not (sizes.get(n.comm) and 2 * count[(n.comm, n.op)] > sizes[n.comm])}


def _maps(facts: list[Fact], events: list[Event], world: int | None):
    """(comm hash, comm rank) -> global rank, and pid -> {(global rank, device)}."""
    by_comm: dict[tuple[str, int], int] = {}
    by_pid: dict[int, set[tuple[int, int | None]]] = {}
    for f in facts:
        if f.fact != "nccl-nranks":
            continue
        comm_rank, nranks = _int(f.captures.get("rank")), _int(f.captures.get("world_size"))
        printer = f.rank if f.rank is not None else (comm_rank if world and nranks == world else None)
        a, _ = parse_prefix(f.text)
        if printer is not None and a.pid is not None:
            by_pid.setdefault(a.pid, set()).add((printer, _int(f.captures.get("device"))))
        m = _COMM_ID.search(f.text)
        if m and printer is not None and comm_rank is not None and int(m.group(1), 16):  # split comms print commId 0
            by_comm.setdefault((format(int(m.group(1), 16), "016x"), comm_rank), printer)
    for e in events:
        if e.pid is not None and e.rank is not None:
            by_pid.setdefault(e.pid, set()).add((e.rank, e.device))
    return by_comm, by_pid


def _global(n: Note, by_comm, by_pid, size: int | None, world: int | None) -> int | None:
    if (n.comm, n.rank) in by_comm:
        return by_comm[(n.comm, n.rank)]
    if (g := _by_pid(by_pid, n.pid, n.device)) is not None:
        return g
    if size and world and size == world:
        return n.rank
    return None


def _by_pid(by_pid, pid: int | None, device: int | None) -> int | None:
    seen = by_pid.get(pid) if pid is not None else None
    if not seen:
        return None
    ranks = {g for g, _ in seen}
    if len(ranks) == 1:
        return next(iter(ranks))
    on_device = {g for g, d in seen if d == device and device is not None}
    return next(iter(on_device)) if len(on_device) == 1 else None


def _int(v) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def suspects_of(ev: RasEvidence | None, waiting: set[int]) -> tuple[set[int], set[int]]:
    """(dead or unresponsive, lagging) global ranks. Lagging: collective counts stuck behind
    between two snapshots; or, while other ranks report waiting, counts that lag (slow across
    two snapshots, or behind in one) of a rank that does not itself report waiting (a rank
    that timed out in a collective waits on someone else)."""
    if ev is None:
        return set(), set()
    dead = ev.ranks(*SUSPECT)
    lagging = ev.ranks(Trouble.stuck)
    late = (behind_few(ev) | ev.ranks(Trouble.slow)) - waiting
    if waiting - late:
        lagging |= late
    return dead, lagging - dead


def ras_notes(ev: RasEvidence | None, failed: bool) -> list[str]:
    """What the report should say about the RAS reports beyond the suspects: ranks it could
    not map to global ranks, and counts that lag in a single snapshot of a job that shows no
    failure (normal on a busy job; a second snapshot tells)."""
    if ev is None:
        return []
    from .collectives import compress_ranks

    out = []
    missing: dict[str, set[int]] = {}
    for n in ev.unmapped:
        if n.trouble in SUSPECT or n.trouble in (Trouble.stuck, Trouble.slow, Trouble.behind, Trouble.error):
            missing.setdefault(n.comm, set()).add(n.rank)
    for h, ranks in sorted(missing.items()):
        out.append(f"NCCL RAS names rank(s) {compress_ranks(sorted(ranks))} of communicator {h}, which the logs do not map to "
                   "global ranks (add the logs with NCCL_DEBUG=INFO: their 'Init COMPLETE' lines carry that commId)")
    # NCCL < 2.26 names a missing rank without its process: a rank of that kind can be the process
    unnamed = {g for n, g in ev.mapped if n.trouble in SUSPECT and n.pid is None}
    for p in ev.lost if len(ev.lost) > len(unnamed) else []:
        gpus = ",".join(map(str, p.gpus)) or "?"
        out.append(f"NCCL RAS reports process {p.pid} on node {p.host} (GPU {gpus}) {p.trouble.value}; the logs do not say "
                   "which rank it is (add the logs with NCCL_DEBUG=INFO: their 'host:pid:tid' prefixes tell)")
    behind = sorted(ev.ranks(Trouble.behind))
    if behind and not failed and len(ev.reports) == 1:
        out.append(f"NCCL RAS: rank(s) {compress_ranks(behind)} launched fewer collectives than the others in one snapshot; on a "
                   "busy job this is normal. Take a second snapshot (`ncclras` again, a few seconds later): counts that do not "
                   "move mean a stuck rank")
    return out
