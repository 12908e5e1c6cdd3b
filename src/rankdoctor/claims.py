"""Two processes that claim one rank.

Launch a multi-node job with a scheduler script that does not match the framework's idea of
the job (the same node rank on two nodes, more tasks per node than the framework expects)
and every process still starts, computes a global rank from what it was given, and says so:
PyTorch Lightning prints "Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/8" in each
process before it joins the process group. When two processes compute the same rank, some
ranks of the world are never taken, the process group cannot form, and the job hangs in (or
fails out of) its initialisation with no line that says why: the only evidence is the same
rank announced twice while other ranks are never announced.

``claimed_twice`` finds that in the announcements the scanner read (the ``self-rank-announce``
fact): within one file (Slurm writes every task's output to one file), a rank announced a
second time, close to the first (processes start together) and with no failure or launcher
record in between (a restart announces every rank again after a failure), while fewer ranks
than the announced world size appear. The entry whose signature says ``computed:
rank-claimed-twice`` carries what that means and what to do.

``beyond_world`` finds the other shape of the same mistake: a process that announces a rank
the job's world does not have. Lightning's "GLOBAL_RANK: 1, MEMBER: 2/1" (a node given its node
rank while the job was told it has one node), or c10d's default-group barrier completed "with 2
nodes" while a third process adds its key for rank 2: the launch arguments of the processes
disagree on how big the job is, and the extra process waits for a group it can never join.
``waits_beyond_world`` reads the mirror image in a gloo job: one process waits at init for the
address of a rank that no process shows and no other process waits for, while the others went
on and failed later: it was told a larger world (WORLD_SIZE one too large) than the rest.

``shared_gpu`` reads the same mistake from the other side, where nvidia-smi's process table was
pasted beside the log: one GPU holding several processes of the same program. Each rank of a
data-parallel job should hold memory on its own GPU only; several on one GPU means ranks that
were never pinned to their device (no set_device before the first CUDA call, a torch.load
without map_location, a barrier on GPU 0), each paying a CUDA context (and often tensors) there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from .facts import ERROR_FACTS

ANNOUNCE = "self-rank-announce"
# the computed signatures this module finds, and what each reads, as a report says it ("Read from
# <this>: <detail>.")
READS = {"rank-claimed-twice": "the ranks the processes announced", "rank-beyond-world": "the ranks the processes announced",
         "waits-beyond-world": "the ranks the processes waited for at init",
         "gpu-shared-by-processes": "nvidia-smi's process table"}
DETECTORS = tuple(READS)
# the announcements that give the printing process's global rank (and, with a world size, the
# size of the job as that process was told it); a barrier's only for the default group (key 1)
_RANKED = ("self-rank-announce", "self-rank-barrier", "self-rank-store-key")
_NEAR = 16  # lines, besides 4 per rank of the world: how close a second claim follows the first


@dataclass(frozen=True)
class Claim:
    fact: object  # the Fact of the second announcement
    detail: str


def _breaks(fact: str) -> bool:
    return fact in ERROR_FACTS or fact.startswith(("tr-", "ds-", "lc-")) or fact in ("spawn-raised", "xla-spawn-raised")


def claimed_twice(facts: Iterable) -> list[Claim]:
    """One claim per file in which a rank was announced twice (see the module's doc)."""
    by_source: dict[str, list] = {}
    breaks: dict[str, list[int]] = {}
    for f in facts:
        if f.fact == ANNOUNCE:
            by_source.setdefault(f.source, []).append(f)
        elif _breaks(f.fact):
            breaks.setdefault(f.source, []).append(f.line)
    out = []
    for source, anns in by_source.items():
        anns.sort(key=lambda f: f.line)
        try:
            world = max(int(f.captures.get("world_size", "0")) for f in anns)
            ranks = {int(f.captures["rank"]) for f in anns}
        except (KeyError, ValueError):
            continue
        if world < 2 or len(ranks) >= world:
            continue  # every rank announced: several runs or a restart, not a collision
        stops = breaks.get(source, [])
        first: dict[int, int] = {}
        for f in anns:
            r = int(f.captures["rank"])
            at = first.get(r)
            if at is not None and f.line - at <= 4 * world + _NEAR and not any(at < b < f.line for b in stops):
                missing = world - len(ranks)
                out.append(Claim(f, f"global rank {r} announced twice (lines {at} and {f.line}); "
                                    f"{missing} of the {world} ranks never announced"))
                break
            first.setdefault(r, f.line)
    return out


def _default_group(f) -> bool:
    return f.fact != "self-rank-barrier" or f.captures.get("key", "").endswith(":1")


def beyond_world(facts: Iterable) -> list[Claim]:
    """The first announcement of a global rank at or beyond the largest world size any process
    was told (see the module's doc), on no more than one claim per job."""
    ranked = [f for f in facts if f.fact in _RANKED and _default_group(f)]
    worlds = [int(w) for f in ranked if (w := f.captures.get("world_size", "")).isdigit()]
    if not worlds:
        return []
    world = max(worlds)
    if world < 1:
        return []
    for f in sorted(ranked, key=lambda f: (f.source, f.line)):
        r = f.captures.get("rank", "")
        if r.isdigit() and int(r) >= world:
            return [Claim(f, f"global rank {r} announced, but the largest world size any process was told is {world} "
                             f"(ranks 0-{world - 1})")]
    return []


WAIT_KEY = "store-wait-key"


def _who(f) -> int | None:
    return f.rank if f.rank is not None else f.local_rank


def waits_beyond_world(facts: Iterable, seen: Iterable[int] = ()) -> list[Claim]:
    """The first wait at init for a rank outside the world of the other processes (see the
    module's doc), on no more than one claim per job. Every process of a gloo job waits for
    every other process's address while the default group forms, so a rank that never came
    leaves every process waiting for its key. When only some processes wait for rank R, the
    others failed elsewhere without ever waiting for it, and nothing of R (nor of any rank
    above the others' highest) shows, the others formed their group without R: the waiting
    process was told a larger world than they were. Read only where the processes' ranks
    cannot be confused: one host, or every fact with its global rank. ``seen``: the ranks and
    local ranks whose lines the scan saw (any line, not only facts)."""
    facts = list(facts)
    if len({f.host for f in facts if f.host}) > 1 and any(f.rank is None and f.local_rank is not None for f in facts):
        return []
    waits = [f for f in facts if f.fact == WAIT_KEY and _who(f) is not None and f.captures.get("peer_rank", "").isdigit()]
    if not waits:
        return []
    waiting = {_who(f) for f in waits}
    shown = {w for f in facts if (w := _who(f)) is not None} | set(seen)
    elsewhere = {w for f in facts if f.fact in ERROR_FACTS and (w := _who(f)) is not None} - waiting
    if not elsewhere:
        return []
    for f in sorted(waits, key=lambda f: (f.source, f.line)):
        r = int(f.captures["peer_rank"])
        if r <= max(shown):
            continue  # a rank that shows, or one of the others' range: it may simply have been late
        others = ", ".join(str(x) for x in sorted(elsewhere)[:8]) + (" ..." if len(elsewhere) > 8 else "")
        return [Claim(f, f"rank {_who(f)} waits at init for the address of rank {r}, which no process shows and no "
                         f"other process waits for; rank(s) {others} failed later without waiting for it")]
    return []


NVSMI = "nvsmi-proc"


def shared_gpu(facts: Iterable) -> list[Claim]:
    """The first GPU that nvidia-smi's process table shows holding two or more processes of one
    program, in one file (a table printed several times counts each process once), on no more
    than one claim per job."""
    per: dict[tuple[str, str, str], dict[str, int]] = {}
    first: dict[tuple[str, str, str], object] = {}
    for f in sorted((f for f in facts if f.fact == NVSMI), key=lambda f: (f.source, f.line)):
        c = f.captures
        if not (c.get("device", "").isdigit() and c.get("pid", "").isdigit() and c.get("mem", "").isdigit()):
            continue
        key = (f.source, c["device"], c.get("value", "").strip())
        pids = per.setdefault(key, {})
        pids[c["pid"]] = max(int(c["mem"]), pids.get(c["pid"], 0))
        first.setdefault(key, f)
    for key, pids in per.items():
        if len(pids) >= 2:
            mems = sorted(pids.values(), reverse=True)
            shown = ", ".join(f"{m} MiB" for m in mems[:4]) + (" ..." if len(mems) > 4 else "")
            return [Claim(first[key], f"GPU {key[1]} holds {len(pids)} processes of '{key[2]}' ({shown})")]
    return []

