"""Attribution: every event gets the global rank it belongs to, as a new list.

The scanner's events are never changed: this stage copies what it adjusts. It gives
lines printed inside a launcher record that record's rank, a line that names only its GPU
that GPU's local rank, maps local ranks to global ranks where the logs show the mapping,
turns a harmless line that keeps repeating into a cause, adds Python exceptions (and
tracebacks cut off before theirs), C++ aborts and each rank's last lines as events, gives
an unprefixed fatal line the rank whose stream it interrupts or whose death the launcher
recorded, and in a two-rank job names the other rank as the peer a line reports on.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field, replace

from ..claims import beyond_world, claimed_twice, shared_gpu, waits_beyond_world
from ..events import Event, ScanResult
from ..facts import ERROR_FACTS
from ..ingest.prefix import parse_prefix
from ..kb.loader import KnowledgeBase
from .launcher import ExitRecord, LauncherSummary, read_launcher
from .ras import RasEvidence, ras_evidence
from .traceback import DIST_PATH, FRAME, distributed_call, in_backward

# internal event roles besides the knowledge base's cause / symptom / context
TRACE = "trace"  # the last line of a Python traceback: "XError: message"
FATAL = "fatal"  # a C++ exception that ended the process: "terminate called ...", "what(): ..."
TAIL = "tail"  # a rank's last timestamped line
ACTIVITY = "activity"  # a rank's last line that reports work, not trouble
CADENCE = "cadence"  # a source's last line with a step counter, and how often such lines came (captures "interval")
STEPS = "steps"  # where a rank's last three steps began in a source (captures "first", "last": the counters)
WARNED = "nccl-warn"  # a NCCL WARN line no entry but the generic one names: an unknown NCCL failure

_FACT_ROLES = {"py-exception": TRACE, "py-uncaught": TRACE, "py-escaped": TRACE, "py-traceback": TRACE, "cpp-terminate": FATAL, "cpp-what": FATAL,
               "fatal-signal": FATAL, "xla-spawn-raised": TRACE}
_FACT_SIGNATURES = {"py-exception": "python-exception", "py-uncaught": "python-exception", "py-escaped": "python-exception", "py-traceback": "python-traceback",
                    "xla-spawn-raised": "python-exception",
                    "cpp-terminate": "cpp-terminate", "cpp-what": "cpp-what", "fatal-signal": "fatal-signal"}
_STREAM_LOOKBACK = 12  # lines above an unprefixed fatal line searched for the rank it interrupts


@dataclass
class Attributed:
    """What the later stages read: attributed events, the launcher's records with global
    ranks, the ranks seen and the world size the logs state."""

    events: list[Event]
    summary: LauncherSummary
    seen: set[int]
    world_size: int | None
    stacks: list = field(default_factory=list)  # stack dumps of the ranks (ingest.stacks.StackDump)
    ras: "RasEvidence | None" = None  # NCCL RAS reports, their ranks mapped to global ranks


def attribute(kb: KnowledgeBase, scan: ScanResult) -> Attributed:
    summary = read_launcher(scan.facts)
    events = _unknown_warnings(kb, _escalate_repeats(kb, _dedupe(scan.events), scan)) + _fact_events(kb, scan)
    events = _beyond_world_waits(kb, events)
    events = _daemon_lines(events)
    events = _inside_launcher_records(events, summary)
    events = _spawn_blocks(events, scan)
    events = _one_rank_sources(_device_owners(_stream_below([_stream_owner(e) for e in events])), scan)
    to_global = _local_rank_mapping(events, summary, scan)
    events = _pid_owners([_globalised(e, to_global) for e in events], summary, scan)
    summary = replace(
        summary,
        records=[
            replace(r, rank=to_global(r.host, r.local_rank)) if r.rank is None and r.local_rank is not None else r
            for r in summary.records
        ],
    )
    events = _launcher_aborts(events, summary)
    seen, world_size = _world(scan, events, summary)
    events = _listed_sides(events, world_size)
    events = _odd_value_out(events, scan)
    if not world_size:  # a report that lists every rank of the job as stuck in one op tells its size
        world_size = max((int(e.captures["every_rank_listed"]) for e in events if "every_rank_listed" in e.captures), default=None)
    events = _peer_side(kb, events, seen, world_size, scan)
    seen |= {d.rank for d in scan.stacks if d.rank is not None}
    ras = ras_evidence(scan.ras, scan.facts, events, world_size) if scan.ras else None
    if ras is not None:
        world_size = world_size or ras.world  # the logs' own word first
        seen |= set(ras.troubles)
    return Attributed(events, summary, seen, world_size, list(scan.stacks), ras)


def _peer_side(kb: KnowledgeBase, events: list[Event], seen: set[int], world_size: int | None, scan: ScanResult) -> list[Event]:
    """A line about a peer (a signature with ``reports_peer``: what the peer sent, or that
    it closed the connection) names no rank. The peer is known all the same where the
    traceback above it stops in a send/recv call with a literal peer ("dist.recv(input,0)"),
    and in a job of two ranks, where it is the other one: the line gets that rank as the
    other side (``peer_rank``), as a message that names it would. A report of data received
    in gloo's ring all_reduce (``ring_sender``) gets the next rank as its ``sender_rank``
    when that rank's traceback stops in all_reduce."""
    calls = {(f.source, f.line): (f.rank, int(f.captures["peer_rank"]))
             for f in scan.facts if f.fact == "py-p2p-call" and f.captures.get("peer_rank", "").isdigit()}
    # (ranks 0 and 2 seen are not a job of two: rank 1 exists too)
    world = set(range(world_size)) if world_size else set(range(max(seen) + 1)) if seen else set()
    in_all_reduce = _in_all_reduce(events) if len(world) > 2 else set()
    if len(world) != 2 and not calls and not in_all_reduce:
        return events
    out = []
    for ev in events:
        if "peer_rank" not in ev.captures and ev.entry and ev.signature:
            sig = kb.signature(ev.entry, ev.signature)
            if sig is not None and sig.reports_peer:
                call = next((c for d in range(1, _CUT_AFTER) if (c := calls.get((ev.source, ev.line - d))) and c[0] == ev.rank), None)
                if call is not None and call[1] != ev.rank:
                    ev = ev.copy()
                    ev.captures["peer_rank"] = str(call[1])
                    ev.captures["peer_from"] = "the send/recv call in its traceback"
                elif ev.rank in world and len(world) == 2:
                    ev = ev.copy()
                    ev.captures["peer_rank"] = str(min(world - {ev.rank}))
                    ev.captures["peer_from"] = "two-rank job"
                elif sig.ring_sender and ev.rank in world and (nxt := (ev.rank + 1) % len(world)) in in_all_reduce:
                    # gloo's ring all_reduce: rank r receives its segments from rank r+1 and sends
                    # to r-1, so what this rank received came from the next one, which its own
                    # traceback shows inside all_reduce. The sender is not accused (either side
                    # may have strayed): the rank table compares where each side waited
                    ev = ev.copy()
                    ev.captures["sender_rank"] = str(nxt)
        out.append(ev)
    return out


def _in_all_reduce(events: list[Event]) -> set[int]:
    """Ranks whose last Python traceback stopped inside torch.distributed's all_reduce, or in
    the autograd engine's backward pass (DDP's gradient all-reduce, issued from there)."""
    last: dict[int, Event] = {}
    for ev in events:
        if ev.role == TRACE and ev.rank is not None and ev.context:
            if ev.rank not in last or (ev.source, ev.line) > (last[ev.rank].source, last[ev.rank].line):
                last[ev.rank] = ev
    return {r for r, ev in last.items() if distributed_call(ev.context, r) == "all_reduce" or in_backward(ev.context, r)}


def _listed_sides(events: list[Event], world_size: int | None) -> list[Event]:
    """A report that lists the ranks that never joined an op (``ranks_missing``) or the ranks
    that did (``ranks_ready``) splits the job in two: the smaller side is the odd one out (a
    rank absent while the others wait, or the one rank that issued an op nobody else did).
    When that side is one rank, it becomes the line's ``peer_rank``, as a message naming it
    would. The job is ``world_size`` ranks, else every rank the list names plus the one that
    printed it (Horovod's coordinator, rank 0)."""
    out = []
    for ev in events:
        listed = ev.captures.get("ranks_missing") or ev.captures.get("ranks_ready")
        if listed and "peer_rank" not in ev.captures:
            ranks = {int(x) for x in re.findall(r"\d+", listed)}
            world = set(range(world_size)) if world_size else set(range(max(ranks) + 1)) | {0}
            missing = ranks if "ranks_missing" in ev.captures else world - ranks
            if missing == world:  # every rank the list implies is missing: the job is larger than it shows
                odd = missing
            else:
                odd = missing if 2 * len(missing) < len(world) else world - missing if 2 * len(missing) > len(world) else set()
            if "ranks_missing" in ev.captures and len(missing) > 1 and missing >= world and ev.role == "cause":
                # every rank of the job is listed as stuck in one op: nobody lagged or strayed, the
                # op itself did not complete; the line reports a wait, not a disagreement
                ev = ev.copy(role="symptom")
                ev.captures["every_rank_listed"] = str(max(missing) + 1)  # (the job's size)
            elif len(odd) == 1:
                ev = ev.copy()
                ev.captures["peer_rank"] = str(next(iter(odd)))
                ev.captures["peer_from"] = "the ranks the report lists"
        out.append(ev)
    return out


def _odd_value_out(events: list[Event], scan: ScanResult) -> list[Event]:
    """A report that lists each process's value on a line of its own ("- Process 0: [1024]",
    "- Process 1: [2048]", ...) under a failure line: when every process but one shows the
    same value, that one is the odd one out and becomes the failure line's ``peer_rank``, as a
    message naming it would. The list starts within a few lines of the failure line and runs
    on consecutive lines."""
    rows = sorted(((f.source, f.line, int(f.captures["rank"]), f.captures.get("value", ""))
                   for f in scan.facts if f.fact == "per-rank-value" and f.captures.get("rank", "").isdigit()))
    if len(rows) < 3:
        return events
    blocks: list[list[tuple]] = []
    for row in rows:
        if blocks and blocks[-1][-1][0] == row[0] and row[1] - blocks[-1][-1][1] <= 1:
            blocks[-1].append(row)
        else:
            blocks.append([row])
    odd_at: dict[tuple[str, int], int] = {}  # (source, first line of the list) -> the odd rank
    for b in blocks:
        values: dict[str, set[int]] = {}
        for _s, _l, rank, value in b:
            values.setdefault(value, set()).add(rank)
        if len(b) >= 3 and len(values) == 2:
            small = min(values.values(), key=len)
            if len(small) == 1:
                odd_at[(b[0][0], b[0][1])] = next(iter(small))
    if not odd_at:
        return events
    out = []
    for ev in events:
        if ev.role == "cause" and ev.entry and "peer_rank" not in ev.captures:
            odd = next((r for (src, first), r in odd_at.items() if src == ev.source and 0 < first - ev.line <= 6), None)
            if odd is not None and odd != ev.rank:
                ev = ev.copy()
                ev.captures["peer_rank"] = str(odd)
                ev.captures["peer_from"] = "the one process whose value differs in the list the report gives"
        out.append(ev)
    return out


def _unknown_warnings(kb: KnowledgeBase, events: list[Event]) -> list[Event]:
    """The lines of the entry that is the fallback for NCCL WARN lines (its signature finds
    every WARN line but the harmless ones): a line another entry also names is that entry's
    and is dropped here; a line no other entry names is an unknown NCCL failure of the rank
    that printed it (role ``WARNED``), which the rank table counts as its own failure."""
    generic = {e.id for e in kb if e.catch_all}
    if not generic or not any(ev.entry in generic for ev in events):
        return events
    named = {ev.where for ev in events if ev.entry and ev.entry not in generic}
    return [ev if ev.entry not in generic else ev.copy(role=WARNED) for ev in events
            if ev.entry not in generic or ev.where not in named]


def _dedupe(events: list[Event]) -> list[Event]:
    """One event per (line, entry, signature, rank); keep the first."""
    seen: set[tuple] = set()
    out = []
    for ev in events:
        k = (ev.source, ev.line, ev.entry, ev.signature, ev.rank)
        if k not in seen:
            seen.add(k)
            out.append(ev)
    return out


def _escalate_repeats(kb: KnowledgeBase, events: list[Event], scan: ScanResult) -> list[Event]:
    """A line that is harmless once (an overflow skip) is a failure when it keeps coming:
    its ``repeat_cause`` threshold (entry data) turns its events into causes. (The scanner
    keeps the first and last occurrences of a line; ``folded`` counts those between.)

    ... unless the streak stopped and the program went on: in every source where it
    occurred, it was followed by at least as many lines as it had (and ten or more), none of
    them a failure (a cause line, an exception, a fatal line), and the source did not end in
    an error. Then the repeats were a transient the program got past (the fp16 loss scaler
    searching down from its initial scale, connection retries that then succeeded)."""
    # a line that says the condition went away (``resets_repeats``: the loss scaler raised its
    # scale again after clean steps): in its source, the entry's earlier lines do not count
    resetting = {(en.id, s.id) for en in kb for s in en.signatures if s.resets_repeats}
    reset_at: dict[tuple[str, str], int] = {}  # (entry, source) -> the last such line
    for e in events:
        if (e.entry, e.signature) in resetting:
            reset_at[(e.entry, e.source)] = max(reset_at.get((e.entry, e.source), 0), e.line)
    counts: dict[tuple[str, str], int] = {}
    last: dict[tuple[str, str], dict[str, int]] = {}
    for e in events:
        if e.line < reset_at.get((e.entry, e.source), 0):
            continue
        k = (e.entry, e.signature)
        counts[k] = counts.get(k, 0) + 1 + e.folded
        at = last.setdefault(k, {})
        at[e.source] = max(at.get(e.source, 0), e.line)
    out = []
    transient: dict[tuple[str, str], bool] = {}
    for e in events:
        k = (e.entry, e.signature)
        sig = kb.signature(e.entry, e.signature)
        n = sig.repeat_cause if sig is not None else None
        if n and counts.get(k, 0) >= n and e.role != "cause" and e.line > reset_at.get((e.entry, e.source), 0):
            if k not in transient:
                transient[k] = _got_past_streak(scan, events, k, counts[k], last[k])
            if transient[k]:
                e = e.copy()
                e.captures["streak_got_past"] = str(counts[k])  # engine.streak_notes names it
                out.append(e)
                continue
            e = e.copy(role="cause")
            e.captures["repeats"] = str(counts[k])
        out.append(e)
    return out


def _got_past_streak(scan: ScanResult, events: list[Event], key: tuple[str, str], count: int,
                     last: dict[str, int]) -> bool:
    """Whether a repeated line's streak stopped while every source it occurred in went on
    cleanly after it (see ``_escalate_repeats``)."""
    lines = {s.path: s.lines for s in scan.inputs}
    ended_in_error = {f.source for f in scan.tails if f.fact == "end-error"}
    for source, at in last.items():
        if source in ended_in_error or lines.get(source, 0) - at < max(count, 10):
            return False
    if any(e.source in last and e.line > last[e.source] and e.role == "cause" and (e.entry, e.signature) != key
           for e in events):
        return False
    return not any(f.source in last and f.line > last[f.source] and f.fact in _FACT_ROLES for f in scan.facts)


def _fact_events(kb: KnowledgeBase, scan: ScanResult) -> list[Event]:
    """Python exceptions, C++ aborts, each rank's last lines and the jumps in a run's numbers
    that an entry reads (its computed signatures), as events."""
    out = []
    after = _fault_frames_after(scan)
    ignored = _ignored_errors(scan) | _interrupted(scan)
    for f in scan.facts:
        role = _FACT_ROLES.get(f.fact)
        if role and (f.source, f.line) not in ignored:
            captures = dict(f.captures)
            if f.fact == "py-exception" and (waited_in := raised_in_wait(f.context)) is not None:
                captures["waiting"] = "1"  # raised where the rank waited for its peers' part of a collective
                if waited_in:
                    captures["wait_call"] = waited_in
            pid = f.captures.get("prefix_pid")
            out.append(Event("", _FACT_SIGNATURES[f.fact], role, f.source, f.line, f.text, f.rank, f.local_rank, f.host,
                             int(pid) if pid else None, None, f.time, f.ts, captures,
                             list(f.context) + after.get((f.source, f.line), []), f.folded))
    out += _cut_tracebacks(scan)
    for entry, sig, f, detail, ranked in computed_readings(kb, scan):
        out.append(Event(entry.id, sig.id, sig.role.value, f.source, f.line, f.text, f.rank if ranked else None,
                         f.local_rank if ranked else None, f.host, None, None, f.time, f.ts, {"value": detail}))
    # lines an entry or another fact already reads
    taken = {(e.source, e.line) for e in scan.events} | {(e.source, e.line) for e in out} | ignored
    for f in scan.tails:
        if f.fact in ("numeric-jump", "last-step"):  # read above, as a computed signature's; by restarts.scope
            continue
        if f.fact == "end-error":  # a source's last line is an error no entry or fact read
            if (f.source, f.line) not in taken:
                out.append(Event("", "end-error-line", FATAL, f.source, f.line, f.text, f.rank, f.local_rank, f.host,
                                 None, None, f.time, f.ts, {}))
            continue
        if f.fact == "steps-run":  # where a rank's last steps began (ranktable._outlived)
            out.append(Event("", "steps-run", STEPS, f.source, f.line, f.text, f.rank, f.local_rank, f.host,
                             None, None, f.time, f.ts, dict(f.captures)))
            continue
        if f.fact == "cadence":  # how often the source reported a step near its end (ranktable._stopped_working)
            out.append(Event("", "step-cadence", CADENCE, f.source, f.line, f.text, None, None, f.host,
                             None, None, f.time, f.ts, dict(f.captures)))
            continue
        role = ACTIVITY if f.fact == "activity" else TAIL
        out.append(Event("", "last-line" if role == TAIL else "last-activity", role, f.source, f.line, f.text, f.rank,
                         f.local_rank, f.host, None, None, f.time, f.ts, {}))
    return out


# (after the prefixes parse_prefix reads; srun -l's "N: " label is the source's dialect, read by
# the scanner, so it is allowed here, behind a pasted quote's "> " or a script comment's "# ")
_DAEMON = re.compile(r"(?:[>#]\s*)?(?:\d+:\s+)?slurmstepd(?:-\S+)?: ")


def _daemon_lines(events: list[Event]) -> list[Event]:
    """A Slurm step daemon's message ("slurmstepd: error: Detected 1 oom_kill event in StepId=...")
    that srun -l printed under a task's label ("0: slurmstepd: ...") is about the step, not said
    by that task: the label's rank is not the line's (a rank the message itself names is kept)."""
    out = []
    for ev in events:
        if ev.rank is not None and "rank" not in ev.captures and "slurmstepd" in ev.text:
            _, at = parse_prefix(ev.text)
            if _DAEMON.match(ev.text, at):
                ev = ev.copy(rank=None, local_rank=None)
        out.append(ev)
    return out


def _beyond_world_waits(kb: KnowledgeBase, events: list[Event]) -> list[Event]:
    """A wait for a rank outside the job's world (claims.py waits_beyond_world) names no peer
    that was lost or late: the waiting process's own world is the mistake, so that line
    accuses nobody."""
    owner = kb.computed("waits-beyond-world")
    if owner is None:
        return events
    at = {(e.source, e.line) for e in events if e.entry == owner[0].id and e.signature == owner[1].id}
    if not at:
        return events
    out = []
    for ev in events:
        if (ev.source, ev.line) in at and ev.role == "symptom" and "peer_rank" in ev.captures:
            ev = ev.copy()
            ev.captures.pop("peer_rank")
        out.append(ev)
    return out


def computed_readings(kb: KnowledgeBase, scan: ScanResult) -> list[tuple]:
    """Where the entries' computed signatures hold in a scan, as (entry, signature, fact,
    detail, ranked): the jumps trajectory.py found in a source's numbers (on that line's
    rank), and the ranks claims.py found announced twice (on no rank: two processes printed
    the line). Read by the engine and by the knowledge base's example check alike."""
    out = []
    for f in scan.tails:
        if f.fact == "numeric-jump" and (owner := kb.computed(f.captures.get("signature"))) is not None:
            out.append((*owner, f, f.captures.get("value", ""), True))
    if (owner := kb.computed("rank-claimed-twice")) is not None:
        out += [(*owner, c.fact, c.detail, False) for c in claimed_twice(scan.facts)]
    if (owner := kb.computed("rank-beyond-world")) is not None:
        out += [(*owner, c.fact, c.detail, False) for c in beyond_world(scan.facts)]
    if (owner := kb.computed("waits-beyond-world")) is not None:  # on the waiting process's rank
        out += [(*owner, c.fact, c.detail, True) for c in waits_beyond_world(scan.facts, scan.ranks_seen | scan.local_ranks_seen)]
    if (owner := kb.computed("gpu-shared-by-processes")) is not None:
        out += [(*owner, c.fact, c.detail, False) for c in shared_gpu(scan.facts)]
    return out


_FAULT_FRAMES_WITHIN = 60  # lines below a fatal signal's report within which faulthandler prints its stack
_IGNORED_WITHIN = 60  # lines below Python's "Exception ignored in: ..." within which its exception's line comes


def _ignored_errors(scan: ScanResult) -> set[tuple[str, int]]:
    """The lines of the exceptions Python reported as ignored ("Exception ignored in: <function
    X.__del__ ...>", then the traceback, then the exception's line): the program went on after
    them, so they are no failure. Each such report's traceback start and its first exception line
    in the same stream, unless another traceback starts in between (the report was cut off)."""
    out: set[tuple[str, int]] = set()
    heads = [f for f in scan.facts if f.fact == "py-ignored"]
    if not heads:
        return out
    by_stream: dict[tuple, list] = {}
    for f in scan.facts:
        if f.fact in ERROR_FACTS or f.fact == "py-traceback":
            by_stream.setdefault((f.source, f.rank, f.local_rank), []).append(f)
    for h in heads:
        started = False
        for f in sorted(by_stream.get((h.source, h.rank, h.local_rank), ()), key=lambda f: f.line):
            if f.line <= h.line:
                continue
            if f.line - h.line > _IGNORED_WITHIN:
                break
            if f.fact == "py-traceback":
                if started or f.line - h.line > 1:
                    break  # a second traceback: the ignored one's end was cut off
                started = True
                out.add((f.source, f.line))
                continue
            out.add((f.source, f.line))
            break
    return out


def _interrupted(scan: ScanResult) -> set[tuple[str, int]]:
    """The lines of a KeyboardInterrupt traceback: its exception line and the traceback start
    above it in the same stream. Python raises KeyboardInterrupt where the main thread was when
    SIGINT arrived (a person's Ctrl-C, or torchrun forwarding it: "Sending process N closing
    signal SIGINT"): the code it interrupted did not fail, and the stop is the launcher's or the
    person's, read from their lines. (Where the process was stays in its frames and last lines.)"""
    out: set[tuple[str, int]] = set()
    stops = [f for f in scan.facts if f.fact == "py-exception" and f.captures.get("value", "").rsplit(".", 1)[-1] == "KeyboardInterrupt"]
    if not stops:
        return out
    heads: dict[tuple, list[int]] = {}
    for f in scan.facts:
        if f.fact == "py-traceback":
            heads.setdefault((f.source, f.rank, f.local_rank), []).append(f.line)
    for f in stops:
        out.add((f.source, f.line))
        above = [ln for ln in heads.get((f.source, f.rank, f.local_rank), ()) if ln < f.line]
        if above:
            out.add((f.source, max(above)))
    return out


def _fault_frames_after(scan: ScanResult) -> dict[tuple[str, int], list[str]]:
    """faulthandler prints the crashing thread's stack below its "Fatal Python error: ..."
    line, innermost frame first: those frames, per fatal-signal line, so that the code the
    process died in frames the crash as a traceback's frames frame an exception."""
    frames: dict[tuple, list] = {}
    for f in scan.facts:
        if f.fact == "py-fault-frame":
            frames.setdefault((f.source, f.rank, f.local_rank), []).append(f)
    out: dict[tuple[str, int], list[str]] = {}
    if not frames:
        return out
    for f in scan.facts:
        if f.fact == "fatal-signal":
            below = [x for x in frames.get((f.source, f.rank, f.local_rank), ()) if 0 < x.line - f.line <= _FAULT_FRAMES_WITHIN]
            if below:
                out[(f.source, f.line)] = [x.text for x in sorted(below, key=lambda x: x.line)]
    return out


_CUT_AFTER = 12  # lines after a traceback's last frame within which its exception line would be
_FRAMES_KEPT = 40  # frames of a cut traceback kept as its context
_XLA_TRACE_SPAN = 40  # lines under torch_xla's one-line exception report that its traceback (16 frames) takes


def _cut_tracebacks(scan: ScanResult) -> list[Event]:
    """A traceback that stops at a frame, with no exception line after it (a paste cut
    short, a process killed while printing), still shows a failure: its last frame becomes
    an exception event whose type is unknown, so the run is not called healthy."""
    ends: dict[tuple, list[int]] = {}  # where exception / abort lines are, per stream
    heads: dict[tuple, list[int]] = {}  # torch_xla's reports, each above its exception's traceback
    for f in scan.facts:
        if f.fact in ERROR_FACTS:
            ends.setdefault((f.source, f.rank, f.local_rank), []).append(f.line)
        # (and Python's "Exception ignored in: ..." above an exception it dropped: not a failure)
        if f.fact in ("xla-spawn-raised", "py-ignored"):
            heads.setdefault((f.source, f.rank, f.local_rank), []).append(f.line)

    def below_head(key: tuple, line: int, span: int) -> bool:
        """``line`` is in the traceback torch_xla printed under its one-line report of the same
        exception ("Exception in device=TPU:5: <message>", then traceback.print_exc(limit=16)):
        that traceback's message is known, it is not cut off. The same for a traceback under
        Python's "Exception ignored in: ...": an exception the program dropped."""
        return any(0 < line - h <= span and not any(h < e < line for e in ends.get(key, ())) for h in heads.get(key, ()))
    last: dict[tuple, object] = {}
    frames: dict[tuple, list] = {}
    for f in sorted((f for f in scan.facts if f.fact == "py-frame"), key=lambda f: f.line):
        key = (f.source, f.rank, f.local_rank, f.host)
        last[key] = f
        frames.setdefault(key, []).append(f)
    calls = {(f.source, f.line): f.captures.get("value", "") for f in scan.facts if f.fact == "py-collective-call"}
    out = []
    for (source, rank, local_rank, host), f in last.items():
        if any(0 < line - f.line <= _CUT_AFTER for line in ends.get((source, rank, local_rank), ())):
            continue
        if below_head((source, rank, local_rank), f.line, _XLA_TRACE_SPAN):
            continue
        captures = {"value": "(a traceback cut off before its exception line)", "cut": "1"}
        if (waited_in := _cut_in_wait(frames[(source, rank, local_rank, host)], calls)) is not None:
            waited_in = _main_first_block(frames[(source, rank, local_rank, host)]) or waited_in
            captures["waiting"] = "1"  # it stopped in a barrier or a collective: waiting for peers
            if waited_in:
                captures["wait_call"] = waited_in  # the call it waited in, where its code names one
        out.append(Event("", "python-exception", TRACE, f.source, f.line, f.text, f.rank, f.local_rank, f.host,
                         None, None, f.time, f.ts, captures, [x.text for x in frames[(source, rank, local_rank, host)][-_FRAMES_KEPT:]]))
    # a traceback cut right after its "Traceback (most recent call last):" line (a paste that
    # stops there, a process killed as it began to print): no frame and no exception line of
    # its stream follows at all (other ranks' lines may interleave), so it is an exception of
    # unknown type too
    last_read = {key: max(lines) for key, lines in ends.items()}  # a stream's last frame or error line
    for (source, rank, local_rank, _host), fs in frames.items():
        key = (source, rank, local_rank)
        last_read[key] = max(last_read.get(key, -1), fs[-1].line)
    for f in scan.facts:
        if f.fact != "py-traceback" or last_read.get((f.source, f.rank, f.local_rank), -1) > f.line:
            continue
        if below_head((f.source, f.rank, f.local_rank), f.line, 2):
            continue
        out.append(Event("", "python-exception", TRACE, f.source, f.line, f.text, f.rank, f.local_rank, f.host,
                         None, None, f.time, f.ts, {"value": "(a traceback cut off before its exception line)", "cut": "1"}, []))
    return out + _bare_cpp_backtraces(scan, ends)


# a frame of library code (an installed package or the standard library), not the program's own
_LIBRARY_FRAME = re.compile(r"[/\\](?:site-packages|dist-packages|lib[/\\]python\d[\d.]*)[/\\]")
_TRACE_GAP = 4  # lines between two frames of one traceback (a code line, carets)


def _dist_wait_frame(m: re.Match) -> bool:
    """A traceback frame (FRAME's match) of a barrier or collective of torch.distributed /
    Accelerate / DeepSpeed."""
    return m["func"] in _WAIT_CALLS and bool(DIST_PATH.search(m["path"]))


def _cut_in_wait(frames: list, calls: dict[tuple[str, int], str]) -> str | None:
    """A traceback cut off where it waits for its peers: its last frame is a barrier or a
    collective of torch.distributed / Accelerate / DeepSpeed, or the last frame of the program's
    own code calls one (the code line below it) and only library frames follow (entering
    `with training_args.main_process_first():` goes through contextlib before the barrier).
    The call it waited in ("main_process_first", "barrier"; "" when only the frame's function
    says so), or None when it did not stop in a wait."""
    f = frames[-1]
    m = FRAME.search(f.text)
    if (f.source, f.line + 1) in calls:
        return calls[(f.source, f.line + 1)]
    if m and _dist_wait_frame(m):
        return ""
    for i in range(len(frames) - 2, max(-1, len(frames) - 6), -1):
        if frames[i + 1].line - frames[i].line > _TRACE_GAP:
            return None  # another traceback's frame
        m = FRAME.search(frames[i + 1].text)
        if not m or not _LIBRARY_FRAME.search(m["path"]):
            return None  # the program's own code below: it did not stop in the call
        if (frames[i].source, frames[i].line + 1) in calls:
            return calls[(frames[i].source, frames[i].line + 1)]
    return None


# the code line under a frame that waits for a collective to complete, behind any prefix of the
# launcher or the log ("[rank7]:     work.wait()", "worker-1:     work.wait()")
_WORK_WAIT = re.compile(r"(?:^|\s)(?:[A-Za-z_]\w*\.)*wait\(\)\s*$")


def raised_in_wait(context: list[str]) -> str | None:
    """An exception whose traceback ends in a torch.distributed / Accelerate / DeepSpeed barrier
    or collective at the line that waits for the collective to complete (``work.wait()``), not
    at the call that starts it: the collective was issued and failed while the rank waited for
    its peers (a backend's timeout or transport error no entry knows, such as an Ascend stream
    synchronize timeout in a barrier). An argument the backend refuses fails at the call, before
    any wait, and stays the rank's own failure. The call it waited in ("main_process_first" when
    it was entering that block, else ""), or None when it was not waiting."""
    lines = [ln for ln in context if ln.strip()]
    for i in range(len(lines) - 1, -1, -1):
        m = FRAME.search(lines[i])
        if not m:
            continue
        if not _dist_wait_frame(m) or i + 1 >= len(lines):
            return None
        if not _WORK_WAIT.search(lines[i + 1]):
            return None
        for ln in lines[max(0, i - 12):i]:
            f = FRAME.search(ln)
            if f and f["func"] in MAIN_FIRST_CALLS:
                return f["func"]
        return ""
    return None


# context managers that make every rank but the main one wait in a barrier while it does the work
# in the block (HF TrainingArguments' and Accelerate's main_process_first, YOLOv5's
# torch_distributed_zero_first)
MAIN_FIRST_CALLS = frozenset({"main_process_first", "local_main_process_first", "torch_distributed_zero_first"})


def _main_first_block(frames: list) -> str:
    """The "main process first" context manager a traceback that stopped in a wait was
    entering, when one of its last frames is that function (the barrier in it is what waited;
    a cut before the function's own frame is read from the `with` line, _cut_in_wait)."""
    last = frames[-6:]
    for i in range(len(last) - 1, -1, -1):
        if i < len(last) - 1 and last[i + 1].line - last[i].line > _TRACE_GAP:
            break  # another traceback's frame
        m = FRAME.search(last[i].text)
        if m and m["func"] in MAIN_FIRST_CALLS:
            return m["func"]
    return ""


# frames of the threads and calls that wait for peers: the NCCL watchdog and heartbeat monitor, a
# work object's wait, gloo's pair waiting for a send or a receive
_CPP_WAITING = re.compile(r"frame #\d+: c10d::\S*(?:ncclCommWatchdog|[Ww]atchdog|HeartbeatMonitor|heartbeatMonitor|Work\w*::wait)|frame #\d+: gloo::\S*::wait")
_CPP_BEFORE = 30  # lines above a C++ backtrace within which its error message would be
_CPP_GAP = 3  # lines between two frames of one backtrace ("<omitting python frames>")


def _bare_cpp_backtraces(scan: ScanResult, ends: dict[tuple, list[int]]) -> list[Event]:
    """A block of c10's C++ backtrace frames ("frame #3: c10d::PrefixStore::get(...) + 0x32
    (... in libtorch_cpu.so)") with no error message above it: c10 prints the frames under the
    message of the exception they belong to, so frames alone are an exception whose message
    was cut off (a paste that starts at the frames). Its first frame becomes an exception
    event of unknown type, with the block's frames as context; a block under a message that
    a knowledge-base signature or an exception line names is that message's, and adds nothing."""
    said: dict[tuple, list[int]] = {}
    for key, lines in ends.items():
        said.setdefault(key, []).extend(lines)
    for e in scan.events:
        said.setdefault((e.source, e.rank, e.local_rank), []).append(e.line)
    in_source: dict[str, list[int]] = {}
    for (source, _rank, _local), lines in said.items():
        in_source.setdefault(source, []).extend(lines)
    blocks: dict[tuple, list[list]] = {}
    for f in sorted((f for f in scan.facts if f.fact == "cpp-frame"), key=lambda f: (f.source, f.line)):
        runs = blocks.setdefault((f.source, f.rank, f.local_rank, f.host), [])
        if runs and f.line - runs[-1][-1].line <= _CPP_GAP:
            runs[-1].append(f)
        else:
            runs.append([f])
    out = []
    for (source, rank, local_rank, _host), runs in blocks.items():
        # an unprefixed backtrace may belong to any rank's message around it; a prefixed one
        # to its own rank's or to an unprefixed one
        near = in_source.get(source, ()) if rank is None and local_rank is None else \
            [*said.get((source, rank, local_rank), ()), *said.get((source, None, None), ())]
        for run in runs:
            first, last = run[0], run[-1]
            if any(first.line - _CPP_BEFORE <= line <= last.line + _CUT_AFTER for line in near):
                continue
            captures = {"value": "(a C++ backtrace without its error message)", "cut": "1"}
            if any(_CPP_WAITING.search(f.text) for f in run):
                captures["waiting"] = "1"  # a watchdog's or a wait's backtrace: it was waiting for peers
            out.append(Event("", "cpp-backtrace", TRACE, source, first.line, first.text, first.rank, first.local_rank,
                             first.host, None, None, first.time, first.ts, captures,
                             [f.text for f in run[:_FRAMES_KEPT]]))
    return out


# the library functions of a barrier or a collective (torch.distributed, Accelerate, DeepSpeed's comm)
_WAIT_CALLS = frozenset({
    "wait_for_everyone", "barrier", "monitored_barrier", "all_reduce", "all_gather", "all_gather_object",
    "all_gather_into_tensor", "broadcast", "broadcast_object_list", "reduce_scatter", "reduce_scatter_tensor",
    "all_to_all", "all_to_all_single", "gather_object", "scatter_object_list", "_store_based_barrier",
})


def _inside_launcher_records(events: list[Event], summary: LauncherSummary) -> list[Event]:
    """Lines printed inside a launcher record are about that record's rank — printed by the
    launcher, not by the rank (``captures["launcher"]``)."""
    spans: dict[str, list[ExitRecord]] = {}
    for r in summary.records:
        if r.rank is not None or r.local_rank is not None:
            spans.setdefault(r.source, []).append(r)
    if not spans:
        return events
    out = []
    for ev in events:
        for r in spans.get(ev.source, ()):
            if r.line <= ev.line <= r.end:
                ev = ev.copy(
                    rank=r.rank if r.rank is not None else ev.rank,
                    local_rank=r.local_rank if r.local_rank is not None else ev.local_rank,
                    host=r.host or ev.host,
                )
                ev.captures.setdefault("exitcode", str(r.exitcode) if r.exitcode is not None else "")
                ev.captures["launcher"] = "1"
                if r.killed_by_launcher and ev.role == "cause":
                    ev.role = "symptom"  # the launcher's own SIGKILL: how the rank ended, not why
                break
        out.append(ev)
    return out


def _local_rank_mapping(events: list[Event], summary: LauncherSummary, scan: ScanResult):
    """A function (host, local rank) -> global rank, from what the logs show: launcher
    records, lines carrying both prefixes, NCCL's "comm ... rank R nranks N cudaDev D" and
    its ring / channel setup lines."""
    pairs: dict[tuple[str | None, int], int] = {}
    for r in summary.records:
        if r.rank is not None and r.local_rank is not None:
            pairs[(r.host, r.local_rank)] = r.rank
    for ev in events:
        if ev.rank is not None and ev.local_rank is not None:
            pairs.setdefault((ev.host, ev.local_rank), ev.rank)
    rings: dict[tuple[str | None, int], set[int]] = {}
    for f in scan.facts:
        if f.fact == "nccl-nranks" and f.captures.get("device", "").isdigit() and f.captures.get("rank", "").isdigit():
            pairs.setdefault((f.host, int(f.captures["device"])), int(f.captures["rank"]))
        elif f.fact == "nccl-ring" and f.host and f.captures.get("prefix_device", "").isdigit():
            printer = f.captures["dst"] if f.captures.get("dir") == "receive" else f.captures["src"]
            rings.setdefault((f.host, int(f.captures["prefix_device"])), set()).add(int(printer))
    for key, rs in rings.items():
        if len(rs) == 1:  # several communicators number their ranks differently: no answer then
            pairs.setdefault(key, next(iter(rs)))
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

    # a node's workers are numbered in order: global rank = the node's first rank + local rank.
    # Where every pair the logs show for a host has the same offset (at least two of them), a
    # local rank of that host with no pair of its own gets it too ("comm ... rank 3 ... cudaDev 3"
    # and "rank 6 ... cudaDev 6" on a host: its device 2 is rank 2)
    offsets: dict[str, set[int]] = {}
    counts: dict[str, int] = {}
    for (h, lr), rk in pairs.items():
        if h:
            offsets.setdefault(h, set()).add(rk - lr)
            counts[h] = counts.get(h, 0) + 1
    node_base = {h: next(iter(o)) for h, o in offsets.items() if len(o) == 1 and counts[h] >= 2}

    def to_global(host: str | None, lr: int | None) -> int | None:
        if lr is None:
            return None
        if (host, lr) in pairs:
            return pairs[(host, lr)]
        if host in node_base:
            return node_base[host] + lr
        ranks = by_local.get(lr, set())
        if len(ranks) == 1 and single_node:
            return next(iter(ranks))
        return lr if single_node else None

    return to_global


# the lines in which a process states its own global rank (facts.py), read with the pid of the
# prefix they were printed behind
_SELF_RANK_FACTS = ("self-rank-assigned", "self-rank-announce", "self-rank-barrier", "self-rank-store-key")


def _pid_owners(events: list[Event], summary: LauncherSummary, scan: ScanResult) -> list[Event]:
    """Output tagged only with its process's pid (a worker prefix such as vLLM's
    "(VllmWorkerProcess pid=176981) ", Ray's "(pid=4242) ") belongs to the rank that pid is,
    where the logs say so: a line behind the same prefix in which the process states its
    rank ("rank 1 in world size 2 is assigned as ..."), a launcher record of that pid
    ("local_rank: 1 (pid: 176981)" with its rank), or a line that carries both. A pid the
    logs give two ranks is left alone."""
    # (pids repeat across hosts: a pid is read with its host where the line gives one, and a
    # line without a host takes the rank only when every host's process of that pid agrees)
    owners: dict[tuple[str | None, int], set[int]] = {}
    for f in scan.facts:
        if f.fact in _SELF_RANK_FACTS and (pid := f.captures.get("prefix_pid")) and f.captures.get("rank", "").isdigit():
            if f.fact == "self-rank-barrier" and not f.captures.get("key", "").endswith(":1"):
                continue  # a sub-group's barrier numbers its ranks within the group
            owners.setdefault((f.host, int(pid)), set()).add(int(f.captures["rank"]))
    for r in summary.records:
        if r.pid is not None and r.rank is not None:
            owners.setdefault((r.host, r.pid), set()).add(r.rank)
    # (an event's pid is its prefix's unless the line names a process: "Sending process 27586
    # closing signal SIGTERM" is the launcher's line about that process)
    for ev in events:
        if ev.pid is not None and ev.rank is not None and ev.captures.get("rank_from") is None and "pid" not in ev.captures:
            owners.setdefault((ev.host, ev.pid), set()).add(ev.rank)
    if not owners:
        return events

    def rank_of(host: str | None, pid: int) -> int | None:
        ranks = owners.get((host, pid)) or (owners.get((None, pid)) if host is not None else None)
        if ranks is None and host is None:  # a line without a host: every host's process of that pid
            ranks = set().union(*(rs for (_h, p), rs in owners.items() if p == pid))
        return next(iter(ranks)) if ranks and len(ranks) == 1 else None

    out = []
    for ev in events:
        if ev.rank is None and ev.local_rank is None and ev.pid is not None and "pid" not in ev.captures \
                and (r := rank_of(ev.host, ev.pid)) is not None:
            ev = ev.copy(rank=r)
            ev.captures["rank_from"] = "pid"
        out.append(ev)
    return out


def _globalised(ev: Event, to_global) -> Event:
    rank = ev.rank if ev.rank is not None else to_global(ev.host, ev.local_rank)
    plr = ev.cap_int("peer_local_rank")
    if plr is not None and ev.device == plr and ev.local_rank in (None, plr) and ev.role == "symptom":
        # NCCL's proxy service thread reporting the local rank it serves itself ("[0] ... Could not
        # receive type from localRank 0", then "Failed to execute operation Close from rank N" of
        # the same process): the printing process's own main thread closed its connection - it
        # is exiting (at the end of the run, or of its own failure), not losing a peer
        out = ev.copy(rank=rank, role="context")
        out.captures["peer_self"] = "1"
        return out
    peer = to_global(ev.host, plr) if plr is not None and "peer_rank" not in ev.captures else None
    if rank == ev.rank and peer is None:
        return ev
    out = ev.copy(rank=rank)
    if peer is not None:
        out.captures["peer_rank"] = str(peer)
    return out


def _stream_owner(ev: Event) -> Event:
    """A fatal line with no rank prefix ("terminate called after throwing ...", "what():",
    a bare exception) belongs to the rank whose stream it interrupts: the nearest
    rank-prefixed line just above it."""
    if ev.rank is not None or ev.local_rank is not None or ev.role not in (TRACE, FATAL, WARNED, "cause"):
        return ev
    for line in reversed(ev.context[-_STREAM_LOOKBACK:]):
        a, _ = parse_prefix(line)
        if a.rank is not None or a.local_rank is not None:
            out = ev.copy(rank=a.rank, local_rank=a.local_rank, host=ev.host or a.host)
            out.captures["rank_from"] = "stream"
            return out
    return ev


_BELOW_LOOKAHEAD = 200  # lines below an unprefixed failure line searched for the rank whose output follows


def _spawn_blocks(events: list[Event], scan: ScanResult) -> list[Event]:
    """mp.spawn reports a worker's exception as "-- Process N terminated with the following
    error:" followed by that process's own traceback, with no prefix: an unranked failure line
    below such a header (the nearest one above it, within the lookahead) is process N's."""
    # (torch_xla's xmp.spawn does the same on one line, "Exception in device=TPU:5: <message>",
    # the message on the header itself and the traceback below; its index is a global ordinal)
    heads: dict[str, list[tuple[int, int, bool]]] = {}
    for f in scan.facts:
        if f.fact == "spawn-raised" and f.captures.get("local_rank", "").isdigit():
            heads.setdefault(f.source, []).append((f.line, int(f.captures["local_rank"]), False))
        elif f.fact == "xla-spawn-raised" and f.captures.get("rank", "").isdigit():
            heads.setdefault(f.source, []).append((f.line, int(f.captures["rank"]), True))
    if not heads:
        return events
    for lst in heads.values():
        lst.sort()
    out = []
    for ev in events:
        if ev.rank is None and ev.local_rank is None and ev.role in (TRACE, FATAL, WARNED, "cause", "symptom") and ev.source in heads:
            above = [h for h in heads[ev.source] if h[0] < ev.line or (h[2] and h[0] == ev.line)]
            if above and ev.line - above[-1][0] <= _BELOW_LOOKAHEAD and (ev.role != "symptom" or above[-1][0] == ev.line):
                ev = ev.copy(local_rank=above[-1][1]) if not above[-1][2] else ev.copy(rank=above[-1][1])
                ev.captures["rank_from"] = "spawn-header"
        out.append(ev)
    return out


def _stream_below(events: list[Event]) -> list[Event]:
    """An unprefixed failure line with no ranked line above it (a CUDA kernel's device-side
    assert, printed by the driver without the launcher's prefix) belongs to the rank whose
    prefixed output comes next in the same file - its traceback follows - when only one rank
    prints in between."""
    ranked: dict[str, list[Event]] = {}
    for e in events:
        if e.rank is not None and "launcher" not in e.captures:
            ranked.setdefault(e.source, []).append(e)
    lines: dict[str, list[int]] = {}
    for src, lst in ranked.items():
        lst.sort(key=lambda e: e.line)
        lines[src] = [e.line for e in lst]
    out = []
    for ev in events:
        if ev.rank is None and ev.local_rank is None and ev.role in (TRACE, FATAL, WARNED, "cause") and "rank_from" not in ev.captures:
            lst, at = ranked.get(ev.source, []), lines.get(ev.source, [])
            first_below = bisect.bisect_right(at, ev.line)
            if bisect.bisect_left(at, ev.line) == 0 and first_below < len(lst) and at[first_below] - ev.line <= _BELOW_LOOKAHEAD:
                nxt = lst[first_below]  # no ranked line above it; the first one below
                near = lst[first_below:bisect.bisect_right(at, min(nxt.line + 20, ev.line + _BELOW_LOOKAHEAD))]
                if all(e.rank == nxt.rank for e in near):
                    ev = ev.copy(rank=nxt.rank, host=ev.host or nxt.host)
                    ev.captures["rank_from"] = "stream-below"
        out.append(ev)
    return out


def _one_rank_sources(events: list[Event], scan: ScanResult) -> list[Event]:
    """A source with no rank on any line, whose lines that state the printing process's rank
    (NCCL's "comm 0x... rank R nranks N cudaDev D", c10d's "Rank R: Completed store-based
    barrier", "Added key: store_based_barrier_key:1 to store for rank: R", "Process Group destroyed
    on rank R") all name one rank, is that rank's own log
    (one process's output): its unattributed lines are rank R's."""
    named: dict[str, set[int]] = {}
    for f in scan.facts:
        if f.fact in ("nccl-nranks", "self-rank-barrier", "self-rank-pg-destroyed", "self-rank-announce", "self-rank-store-key") and f.captures.get("rank", "").isdigit():
            # (an NCCL communicator or a store of one rank may be a sub-group of a larger job, its
            # rank 0 not the process's global rank; Lightning's "GLOBAL_RANK: 0, MEMBER: 1/1" is
            # the job's own size: a job of one process, all of whose lines are rank 0's)
            ws = f.captures.get("world_size", "2")
            if ws.isdigit() and (int(ws) > 1 or f.fact == "self-rank-announce"):
                named.setdefault(f.source, set()).add(int(f.captures["rank"]))
    owner = {src: next(iter(rs)) for src, rs in named.items() if len(rs) == 1}
    if not owner:
        return events
    ranked = {e.source for e in events if e.rank is not None or e.local_rank is not None}
    out = []
    for ev in events:
        src_rank = owner.get(ev.source)
        if src_rank is not None and ev.source not in ranked and ev.rank is None and ev.local_rank is None:
            ev = ev.copy(rank=src_rank)
            ev.captures["rank_from"] = "nccl-comm"
        out.append(ev)
    return out


def _device_owners(events: list[Event]) -> list[Event]:
    """A line with no rank that names its GPU ("GPU 5" in an OOM, NCCL's "[5]") belongs to
    the local rank of that index: launchers give each worker one GPU, set_device(local_rank).
    Index 0 alone tells nothing (a worker that sees only its own GPU calls it 0 whatever its
    rank) unless the same host's lines name other GPUs too: there every worker sees them all."""
    all_gpus = {e.host for e in events if e.device is not None and e.device >= 1}
    out = []
    for ev in events:
        if ev.rank is None and ev.local_rank is None and ev.entry and ev.device is not None and (ev.device >= 1 or ev.host in all_gpus):
            ev = ev.copy(local_rank=ev.device)
            ev.captures["rank_from"] = "device"
        out.append(ev)
    return out


def _launcher_aborts(events: list[Event], summary: LauncherSummary) -> list[Event]:
    """An unattributed C++ abort belongs to the one rank the launcher saw die of SIGABRT,
    and so do the unattributed lines of its message (``what():`` just below it)."""
    aborted = sorted({r.rank for r in summary.records if r.rank is not None and r.exitcode == -6})
    if len(aborted) != 1:
        return events
    fatal = {(ev.source, ev.line) for ev in events if ev.rank is None and ev.role == FATAL}
    out = []
    for ev in events:
        in_block = ev.role == FATAL or (
            ev.entry and ev.role in ("cause", "symptom", "context")
            and any((ev.source, ev.line - d) in fatal for d in (1, 2, 3))
        )
        if ev.rank is None and in_block:
            ev = ev.copy(rank=aborted[0])
            ev.captures["rank_from"] = "launcher"
        out.append(ev)
    return out


def _world(scan: ScanResult, events: list[Event], summary: LauncherSummary) -> tuple[set[int], int | None]:
    seen = set(scan.ranks_seen)
    # a rank inferred from a GPU index attributes that line; it says nothing about how many
    # ranks the job has (the other ranks' output may simply not be here)
    seen |= {e.rank for e in events if e.rank is not None and e.captures.get("rank_from") != "device"}
    seen |= {r.rank for r in summary.records if r.rank is not None}
    size = None
    ring = 0  # NCCL's ring / channel lines name the ranks of a communicator: at least that many
    for f in scan.facts:
        ws = f.captures.get("world_size")
        if ws and ws.isdigit() and 0 < int(ws) <= 1_000_000:
            size = max(size or 0, int(ws))
        if f.fact == "nccl-ring":
            ring = max(ring, int(f.captures["src"]) + 1, int(f.captures["dst"]) + 1)
    if size is None and 2 <= ring <= 1_000_000:
        size = ring
    return seen, size
