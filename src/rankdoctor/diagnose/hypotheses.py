"""Hypotheses: which failure (an entry) started where (a set of ranks, or "unknown").

Proposing is cheap and generous; weighing is not done here. Every entry whose lines
fired is proposed with no rank and with each rank it fired on; every cross-rank finding
(ranks in different collectives, a rank missing or silent while the others wait, peers
losing a rank) proposes the entries that explain it with each rank the table singles
out; a failure line no entry names proposes the generic entry for it. ``features.py``
describes each hypothesis and ``scoring.py`` weighs them all in one place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum

from ..events import Event
from ..kb.loader import KnowledgeBase
from ..kb.model import Entry
from .attribution import FATAL, MAIN_FIRST_CALLS, TRACE, WARNED
from .ranktable import (
    REPORT_CLASSES, WAIT_CLASSES, End, about_peer, FR_HANG, FR_MISMATCH, RankTable, fingerprint_minority, fingerprints_ahead, fingerprints_differ, first_collective_hang,
    first_collective_stated, order,
)

MAX_SET = 8  # a set of ranks that failed together: at most one node's worth
# classes whose lines report a disagreement between ranks (any side may print it)
MISMATCH_CLASSES = frozenset({"collective-desync", "ddp-model-mismatch"})


class Kind(str, Enum):
    """How a hypothesis came about (what kind of reasoning proposed it)."""

    own = "own-failure"  # the entry's own cause lines
    symptom = "symptom"  # only the entry's symptom lines (timeouts, lost peers)
    desync = "desync"  # ranks in different collectives
    straggler = "straggler"  # a rank missing, silent or still busy while the others wait
    dead_peer = "dead-peer"  # peers report losing a rank
    first = "first-collective"  # the ranks hang in the job's first collective
    generic = "generic"  # a failure line no entry names


# ranks waiting in send/recv on each other issued mismatched point-to-point ops: a desync
FINDING_KIND = {"desync": Kind.desync, "straggler": Kind.straggler, "dead-peer": Kind.dead_peer, "first-collective": Kind.first,
                "p2p-wait": Kind.desync}


@dataclass(frozen=True)
class Hypothesis:
    entry: Entry
    ranks: tuple[int, ...]  # () = the evidence does not say where it started
    kind: Kind

    @property
    def key(self) -> tuple[str, tuple[int, ...], str]:
        return (self.entry.id, self.ranks, self.kind.value)


@dataclass
class Suspects:
    """The ranks each cross-rank finding singles out."""

    desync: set[int]
    straggler: set[int]
    dead_peer: set[int]

    p2p_wait: set[int] = field(default_factory=set)
    # the rank set each piece of evidence singles out on its own (the stack dumps' odd ranks,
    # the Flight Recorder's stuck ranks, the silent ranks ...), per finding: several ranks can
    # have started it together, and the union of all the sets is rarely that set
    groups: dict[str, list[frozenset[int]]] = field(default_factory=dict)

    def of(self, finding: str) -> set[int]:
        # a hang in the first collective is the whole job's: it singles out no rank
        return {"desync": self.desync, "straggler": self.straggler, "dead-peer": self.dead_peer,
                "p2p-wait": self.p2p_wait}.get(finding, set())


def generate(kb: KnowledgeBase, table: RankTable, events: list[Event]) -> list[Hypothesis]:
    out: dict[tuple, Hypothesis] = {}

    def add(entry: Entry, ranks: tuple[int, ...], kind: Kind) -> None:
        h = Hypothesis(entry, tuple(sorted(ranks)), kind)
        out.setdefault(h.key, h)

    by_entry: dict[str, list[Event]] = {}
    for e in events:
        if e.entry and e.role in ("cause", "symptom", "context"):
            by_entry.setdefault(e.entry, []).append(e)

    died = {r for r, rw in table.rows.items() if rw.end == End.own_death}
    accused = set(table.accusations())
    # 1. every entry whose cause or symptom lines fired
    for entry_id, evs in by_entry.items():
        entry = kb.get(entry_id)
        causes = [e for e in evs if e.role == "cause"]
        if causes:
            add(entry, (), Kind.own)
            ranks = sorted({e.rank for e in causes if e.rank is not None})
            for r in ranks:
                add(entry, (r,), Kind.own)
            if 2 <= len(ranks) <= MAX_SET and len(ranks) < len(table.expected):
                add(entry, tuple(ranks), Kind.own)
            # cause lines no rank could be given: they may be the output of a rank the launcher
            # saw die by itself (a traceback printed without prefixes, then torchrun's record)
            if not ranks and len(died) <= MAX_SET:
                for r in sorted(died):
                    add(entry, (r,), Kind.own)
            # ... or of the one rank its peers wait for or lost, when something of that rank is
            # here (a store it could not reach, printed before its rank was known, while the
            # others wait for its address; the launcher's record of it)
            if not ranks and len(accused) == 1 and accused <= set(table.rows):
                add(entry, tuple(accused), Kind.own)
            # a mismatch reported by most ranks: the few that did not report it are the odd ones
            if entry.class_ in MISMATCH_CLASSES:
                quiet_side = table.expected - set(ranks)
                if quiet_side and len(quiet_side) < len(ranks) and len(quiet_side) <= MAX_SET:
                    add(entry, tuple(sorted(quiet_side)), Kind.desync)
            # the other side a mismatch message names ("... in process 0") may be where it started
            for e in causes:
                pr = e.cap_int("peer_rank")
                if pr is not None and pr != e.rank and pr not in ranks:
                    add(entry, (pr,), Kind.own)
            # every rank reports the mismatch, each naming the first rank that disagrees with it:
            # the rank that most of the others name is the odd one (it names someone else)
            if entry.class_ in MISMATCH_CLASSES and (odd := most_named(causes)) is not None:
                add(entry, (odd,), Kind.desync)
        elif any(e.role == "symptom" for e in evs):
            add(entry, (), Kind.symptom)
            # the launcher's record of how a rank died of a cause other than a wait (a bus
            # error's exit code -7) names that rank, if it died by itself (a SIGABRT exit of a
            # watchdog's entry says only how a wait ended) ...
            if entry.class_ not in WAIT_CLASSES:
                for r in sorted({e.rank for e in evs if e.role == "symptom" and "launcher" in e.captures
                                 and e.rank is not None and e.rank in died}):
                    add(entry, (r,), Kind.symptom)
            # ... and a symptom that reports neither a wait nor a kill (ranktable.REPORT_CLASSES)
            # failed the rank that printed it
            if entry.class_ not in REPORT_CLASSES:
                local = sorted({e.rank for e in evs if e.role == "symptom" and "launcher" not in e.captures and e.rank is not None})
                for r in local if len(local) <= MAX_SET else ():
                    add(entry, (r,), Kind.symptom)

    # 2. cross-rank findings and the entries that explain them
    sus = suspects(kb, table, events)
    fired = set(by_entry)
    for finding in ("desync", "straggler", "dead-peer", "first-collective", "p2p-wait"):
        ranks = sus.of(finding)
        if not ranks and not _finding_present(finding, table, events, kb):
            continue
        kind = FINDING_KIND[finding]
        for entry in kb:
            explains = {x.value for x in entry.explains}
            if finding not in explains:
                continue
            if entry.id not in fired and finding not in {f.value for f in entry.fallback_for}:
                continue
            add(entry, (), kind)
            for r in ranks:
                add(entry, (r,), kind)
            for group in [ranks, *sus.groups.get(finding, [])]:
                if 2 <= len(group) <= MAX_SET and len(group) < len(table.expected):
                    add(entry, tuple(sorted(group)), kind)

    # 3. failures no entry names: the generic entry for the failing rank, and the entries
    # whose subsystem the exception's traceback passes through
    named_lines = named_failure_lines(kb, events)
    generic = {f.value: e for e in kb for f in e.fallback_for}
    unnamed = [(rw.rank, ev) for rw in table.rows.values() for ev in rw.failures]
    unnamed += [(None, ev) for ev in table.unranked_failures]
    # a fatal signal or abort that only a crash entry names ("Fatal Python error: Segmentation
    # fault" is worker-segfault's) says how the process died, not where: its frames may say more
    named_fatal = {ev.where for _, ev in unnamed if ev.role == FATAL and ev.where in named_lines}
    classes_at: dict[tuple, set[str]] = {}
    for e in events if named_fatal else ():
        if e.entry and e.where in named_fatal:
            classes_at.setdefault(e.where, set()).add(kb.get(e.entry).class_)
    # an exception only weak signatures name (an UnpicklingError: a checkpoint file, or any pickle)
    # is also an exception of its own, as if no entry named it: the weighing decides
    weakly_named = named_lines - strongly_named_lines(kb, events)
    proposed_for: dict[int, dict[str, Entry]] = {}  # each rank's unknown exceptions' entries
    for rank, ev in unnamed:
        if ev.where in weakly_named and ev.role == TRACE:
            candidates = [generic["exception"]] if "exception" in generic else []
        elif ev.where in named_lines:
            if ev.role != FATAL or classes_at.get(ev.where) != {"peer-rank-crashed"}:
                continue
            candidates = framed_entries(kb, ev)  # not the generic entry: the crash entry names the line
        else:
            key = {TRACE: "exception", FATAL: "abort", WARNED: "nccl-warn"}.get(ev.role)
            candidates = [generic[key]] if key in generic else []
            if key in ("exception", "abort"):  # an abort's frames: a C++ backtrace above it, faulthandler's stack below
                candidates += framed_entries(kb, ev)
            if key == "exception" and rank is not None:  # what the rank said it was doing just before
                candidates += [e for e in busy_with(kb, table.row(rank).last_active, ev) if e not in candidates]
        for entry in candidates:
            if rank is not None:
                add(entry, (rank,), Kind.generic)
                if ev.role == TRACE:
                    proposed_for.setdefault(rank, {})[entry.id] = entry
            add(entry, (), Kind.generic)
    # several ranks raised the same unknown exception (a bad shard read by two ranks, a node's
    # ranks failing one way): they may have started it together
    raised: dict[str, set[int]] = {}
    for rank, ev in unnamed:
        if rank is not None and ev.role == TRACE and ev.where not in named_lines and "cut" not in ev.captures:
            raised.setdefault(ev.captures.get("value", ""), set()).add(rank)  # the exception's type (facts.py)
    for kind_of, ranks in raised.items():
        if kind_of and 2 <= len(ranks) <= MAX_SET and len(ranks) < len(table.expected) and "exception" in generic:
            add(generic["exception"], tuple(sorted(ranks)), Kind.generic)
            # and each subsystem entry every one of them was proposed for (their frames, what
            # each said it was doing)
            shared = set.intersection(*(set(proposed_for.get(r, {})) for r in ranks))
            for entry_id in sorted(shared - {generic["exception"].id}):
                add(proposed_for[min(ranks)][entry_id], tuple(sorted(ranks)), Kind.generic)
    return list(out.values())



def named_failure_lines(kb: KnowledgeBase, events: list[Event]) -> set:
    """The places of the lines an entry names as its cause (or as a symptom other than a
    report of a peer): a failure there is that entry's, not an unknown one."""
    return {e.where for e in events if e.entry and (e.role == "cause" or (
        e.role == "symptom" and kb.get(e.entry).class_ not in REPORT_CLASSES))}


STRONG = 0.8  # a cause signature of at least this weight names its line firmly (also features' entry_strong)


def strongly_named_lines(kb: KnowledgeBase, events: list[Event]) -> set:
    """The places of named_failure_lines that some entry names with a cause signature of weight
    STRONG or more, or as a symptom (a line only weaker cause signatures name may be anything's)."""
    out = set()
    for e in events:
        if not e.entry:
            continue
        if e.role == "cause":
            sig = kb.signature(e.entry, e.signature)
            if sig is None or sig.weight >= STRONG:
                out.add(e.where)
        elif e.role == "symptom" and kb.get(e.entry).class_ not in REPORT_CLASSES:
            out.add(e.where)
    return out


def unnamed_failures_cut(kb: KnowledgeBase, table: RankTable, events: list[Event]) -> bool:
    """Every failure line no entry names is a traceback cut off before its exception line (or a
    C++ backtrace without its message): what failed is not shown, only where."""
    named = named_failure_lines(kb, events)
    unnamed = [ev for rw in table.rows.values() for ev in rw.failures] + list(table.unranked_failures)
    unnamed = [ev for ev in unnamed if ev.where not in named]
    return bool(unnamed) and all("cut" in ev.captures for ev in unnamed)


# the source line Python prints under a frame: indented deeper than its "File" line (the
# prefixes a rank's lines carry stand before it: "[rank3]:     state = torch.load(path)")
_CODE_LINE = re.compile(r".*?\s{4,}\S")


def framed_entries(kb: KnowledgeBase, ev: Event) -> list[Entry]:
    """Entries whose ``traceback_frames`` match a frame of the exception's traceback: its
    ``File "...", line N, in func`` line, or the line of code Python prints under it (what
    the frame was running: ``with open(cfg.CHECKPOINT_FILE_PATH, "rb") as f:``)."""
    lines = [*ev.context, ev.text]
    frames = []
    for i, ln in enumerate(lines):
        if 'File "' in ln or "frame #" in ln:
            # a Windows path's backslashes read as slashes, so one pattern serves both
            frames.append(ln.replace("\\", "/"))
            if 'File "' in ln and i + 1 < len(lines) and _CODE_LINE.match(lines[i + 1]) and 'File "' not in lines[i + 1]:
                frames.append(lines[i + 1])
    if not frames:
        return []
    return [e for e in kb if e.traceback_frames and any(re.search(rx, ln) for rx in e.traceback_frames for ln in frames)]


def busy_with(kb: KnowledgeBase, active: Event | None, ev: Event) -> list[Entry]:
    """Entries whose ``activity_lines`` match the rank's last line of work, when that line came
    before the exception ``ev`` (by time, or in one file): the program said it was saving a
    checkpoint, and then raised something no entry names."""
    if active is None or order(active, ev) != -1:
        return []
    return [e for e in kb if e.activity_lines and any(re.search(rx, active.text) for rx in e.activity_lines)]


def suspects(kb: KnowledgeBase, table: RankTable, events: list[Event]) -> Suspects:
    """The ranks the table singles out for each finding (see ``features.py`` for how
    strongly)."""
    from .features import MIN_GAP, left_early, outlived_peers, quiet_gaps, steps_behind  # one definition of "went quiet" / "still busy" / "finished" / "behind"

    desync: set[int] = set()
    straggler: set[int] = set()
    dead: set[int] = set()
    groups: dict[str, list[frozenset[int]]] = {}

    def group(finding: str, ranks: set[int]) -> None:
        if ranks and frozenset(ranks) not in groups.setdefault(finding, []):
            groups[finding].append(frozenset(ranks))

    coll = table.coll
    if coll and coll.kind == "desync":
        desync |= set(coll.culprits)
    if coll and coll.kind == "absent":
        # (of the ranks that never report the timed-out collective, those that stood where the
        # reporting ranks began to wait are waiting too, when some other rank was elsewhere)
        absent = set(coll.culprits) - table.level or set(coll.culprits)
        straggler |= absent
        dead |= absent
    odd_fp = fingerprint_minority(table)  # empty unless the fingerprints differ
    if fingerprints_differ(table):
        desync |= odd_fp | fingerprints_ahead(table)
    desync_entries = {e.id for e in kb if e.class_ == "collective-desync"}
    for rw in table.rows.values():
        # (a report of what a peer sent, gloo's size check, is about the peer, not the reporter)
        if any(ev.entry in desync_entries and not about_peer(kb, ev) for ev in rw.failures):
            desync.add(rw.rank)
        if rw.fr_kinds & FR_MISMATCH:
            desync.add(rw.rank)
        if rw.fr_kinds & FR_HANG:
            straggler.add(rw.rank)
            dead.add(rw.rank)
    for r in named_by_peers(events):
        desync.add(r)
    desync |= table.odd_senders  # the side of a rejected message that waited somewhere else
    desync |= table.in_step_senders_of  # a rejected message came from the op every other rank was in
    desync |= table.odd_waiters  # waited in another collective than every other rank
    # ranks blocked apart, each side waiting for the other: the smaller side strayed
    apart = smaller_side(table)
    desync |= apart
    group("desync", apart)
    group("desync", table.odd_waiters)
    desync |= outlived_peers(table)[0]
    early = left_early(table)
    desync |= early
    group("desync", early)
    # DETAIL's fingerprints single out a minority of ranks in another collective: the ranks whose
    # own fingerprint is the majority's only reported the mismatch (every rank prints it, and
    # names a peer on the other side), they are witnesses, not where it started
    if odd_fp:
        desync -= set(table.fingerprints) - odd_fp
    accused = set(table.accusations())
    dead |= accused
    # a peer named by a line that reports waiting for it (an entry that explains a straggler
    # and not a lost peer: "retrieving ncclUniqueId from [0] ... Socket Timeout") was late, as
    # far as that line knows, not gone
    late = late_accused(kb, events)
    straggler |= late
    group("straggler", late)
    for rw in table.rows.values():
        if rw.own_failure and not rw.failures:  # died (exit status) with no line of its own
            dead.add(rw.rank)
    straggler |= main_process_busy(kb, table, events)
    # stack dumps: the ranks whose main thread is elsewhere than most ranks': inside another
    # collective (a desync), or outside any (late or stuck: a straggler)
    desync |= table.stack_odd_collective
    straggler |= table.stack_odd - table.stack_odd_collective
    group("desync", table.stack_odd_collective)
    group("straggler", table.stack_odd - table.stack_odd_collective)
    stuck = {r for r, rw in table.rows.items() if rw.fr_kinds & FR_HANG}
    group("straggler", stuck)
    group("dead-peer", stuck)
    group("dead-peer", accused)
    # NCCL RAS: a rank it cannot reach is dead or hung; one whose collective counts are stuck,
    # or lag while the others wait, is late
    straggler |= table.ras_dead | table.ras_behind
    dead |= table.ras_dead
    quiet, late = quiet_gaps(table)
    # a gap shorter than ordinary jitter singles nobody out
    straggler |= {r for r, g in quiet.items() if g >= MIN_GAP}
    straggler |= {r for r, g in late.items() if g >= MIN_GAP}
    group("straggler", {r for r, g in quiet.items() if g >= MIN_GAP})
    group("straggler", table.ras_dead | table.ras_behind)
    if table.hung or table.stopped_from_outside:
        # said to have hung, or stopped from outside (a scheduler, a person) with no rank
        # failing or reporting a wait, with nothing else to go on: the rank whose step counter
        # stopped behind every other rank's is where it stopped (the others went on to wait for it)
        behind = steps_behind(table)
        straggler |= behind
        group("straggler", behind)
    dead |= {r for r, g in quiet.items() if g >= MIN_GAP and r in accused}
    # ranks of the job that never printed anything, while others waited
    # (only when one rank is missing, or most of the job's output is here: in a paste of
    # a few ranks' lines, the ranks that are not in it are not known to have been silent)
    never = table.expected - set(table.rows)
    if table.waiting_ranks and len(table.expected) <= 64 and (len(never) == 1 or 2 * len(table.rows) > len(table.expected)):
        if len(never) <= MAX_SET:
            straggler |= never
            dead |= never
    return Suspects(desync, straggler, dead, set(table.p2p_cycle), groups)


def smaller_side(table: RankTable) -> set[int]:
    """Of ranks blocked apart (ranktable._blocked_apart: the ranks waiting in a collective, and
    the ranks that stopped together after a line of work the waiting ones never got to), the
    smaller side: the ranks whose path through the program differs from most ranks'. Empty at
    a tie, or when the table shows no such split."""
    w, s = table.waiting_side, table.stopped_side
    if not w or not s or len(w) == len(s):
        return set()
    return set(w) if len(w) < len(s) else set(s)


def most_named(causes: list[Event]) -> int | None:
    """The rank that more than half of the other ranks reporting a mismatch (two at least) name
    as the other side, when it reports the mismatch too (naming someone else): each rank names
    the first rank whose value differs from its own, so the ranks that agree all name the odd
    one, and the odd one names one of them."""
    names: dict[int, int] = {}  # printing rank -> the rank its first such line names
    for e in causes:
        pr = e.cap_int("peer_rank")
        if e.rank is not None and pr is not None and pr != e.rank:
            names.setdefault(e.rank, pr)
    votes: dict[int, int] = {}
    for pr in names.values():
        votes[pr] = votes.get(pr, 0) + 1
    for pr, n in votes.items():
        if n >= 2 and pr in names and 2 * n > len(names) - 1:
            return pr
    return None


def late_accused(kb: KnowledgeBase, events: list[Event]) -> set[int]:
    """The peers that waiting ranks' lines name as the one they wait for (not lost)."""
    out: set[int] = set()
    for e in events:
        if e.role != "symptom" or not e.entry or "launcher" in e.captures:
            continue
        pr = e.cap_int("peer_rank")
        if pr is None or pr == e.rank:
            continue
        explains = {x.value for x in kb.get(e.entry).explains}
        if "straggler" in explains and "dead-peer" not in explains:
            out.add(pr)
    return out


def main_process_busy(kb: KnowledgeBase, table: RankTable, events: list[Event]) -> set[int]:
    """The main process that a rank cut off entering a "main process first" block waited for;
    else {0} when lines of long work (a progress bar, a checkpoint write: context lines of an
    entry that explains a straggler) carry no rank while other ranks wait and rank 0 does
    not: training frameworks print such progress from the main process (rank 0) only, and
    torchrun prefixes only tracebacks with a rank."""
    if not (table.waiting_ranks or table.unranked_accuses or table.unranked_waits) or 0 in table.waiting_ranks:
        return set()
    # a rank cut off entering a "main process first" block (HF TrainingArguments' and Accelerate's
    # main_process_first, YOLOv5's torch_distributed_zero_first) waits in a barrier that the main
    # process reaches only when its own work in the block (tokenizing, caching, downloading) is done
    # (the node's local rank 0 for the node-local forms, where the waiting rank's local rank
    # says which node; Accelerate's and HF's main_process_first may be either: rank 0 then)
    mains = {
        e.rank - e.local_rank if e.captures["wait_call"] != "main_process_first" and e.local_rank is not None
        and 0 <= e.local_rank <= e.rank else 0
        for e in events if e.captures.get("wait_call") in MAIN_FIRST_CALLS and e.rank not in (None, 0)
    }
    if mains:
        return mains - table.waiting_ranks or {0}
    busy = any(
        e.role == "context" and e.rank is None and e.local_rank is None and e.entry
        and "straggler" in {x.value for x in kb.get(e.entry).explains}
        for e in events
    )
    return {0} if busy else set()


def named_by_peers(events: list[Event]) -> dict[int, int]:
    """Ranks named as the other side in mismatch messages ("Rank 1 is running X, but
    Rank 2 is running Y"), with how many lines name them."""
    votes: dict[int, int] = {}
    for e in events:
        if e.role != "cause":
            continue
        pr = e.cap_int("peer_rank")
        if pr is not None and pr != e.rank:
            votes[pr] = votes.get(pr, 0) + 1
    return votes


def desync_strength(kb: KnowledgeBase, table: RankTable, events: list[Event]) -> float:
    """How clearly the ranks are in different collectives (0: no sign of it): the watchdog
    reports, the DETAIL fingerprints, the Flight Recorder dumps, a desync entry's line."""
    coll = table.coll
    desync = 0.0
    if coll and coll.kind == "desync":
        desync = max(desync, coll.strength)
    if fingerprints_differ(table) or table.stack_split:
        desync = max(desync, 0.7)
    if table.fr is not None and any(f.kind in FR_MISMATCH for f in table.fr.findings):
        desync = max(desync, 0.9)
    if any(e.role == "cause" and e.entry and kb.get(e.entry).class_ == "collective-desync" for e in events):
        desync = max(desync, 0.8)
    from .features import outlived_peers  # one definition of "its peers finished"

    if outlived_peers(table)[0]:
        desync = max(desync, 0.6)
    return desync


def _finding_present(finding: str, table: RankTable, events: list[Event], kb: KnowledgeBase) -> bool:
    """A finding can hold with no rank singled out (two equal camps, an unranked line)."""
    coll = table.coll
    fr_kinds = {f.kind for f in table.fr.findings} if table.fr is not None else set()
    if finding == "desync":
        return desync_strength(kb, table, events) > 0
    if finding == "first-collective":
        return first_collective_hang(table) or first_collective_stated(table)
    if finding == "p2p-wait":
        return bool(table.p2p_cycle)
    if finding in ("straggler", "dead-peer") and table.ras is not None and table.ras.shows_failure:
        return True  # NCCL RAS cannot reach a process, or its counts are stuck, though no rank may be known
    if finding == "straggler":
        # (a wait no rank could be given: who was late is not known, but somebody was waited for)
        # (or the job is said to have hung and not in its first collective: somebody stopped)
        return bool(fr_kinds & FR_HANG) or bool(coll and coll.kind in ("absent", "uniform")) or bool(table.unranked_waits) \
            or (table.hung and not first_collective_stated(table)) or table.stopped_from_outside
    return any(rw.accuses for rw in table.rows.values())


