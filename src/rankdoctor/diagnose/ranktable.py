"""The rank table: one row per rank of what the run left about it, built once from the
attributed events, the launcher's records and the Flight Recorder analysis.

Like the STAT tool's merged stack tree, the point is to make the few ranks that behaved
differently stand out from the many that only waited: which rank failed by itself and
when, how each one ended, when each one last did any work, what each one was waiting
in, and whom it says it lost. Every later step reads the table; nothing writes to it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING

from ..events import Event
from ..ingest.prefix import parse_prefix, progress_of
from ..kb.loader import KnowledgeBase
from ..trajectory import reported_loss
from .attribution import ACTIVITY, CADENCE, FATAL, STEPS, TAIL, TRACE, WARNED, Attributed
from .collectives import CollectiveFinding, Report, analyse, collect_reports, minority
from .common import said
from .launcher import ExitRecord
from .ras import RasEvidence, suspects_of
from .traceback import LIBRARY_PATH, user_call_site

if TYPE_CHECKING:
    from ..flightrec.analyze import FRReport

# lines that say only how a process ended (a fatal signal, a last line that reports an error):
# after the process reported waiting for a peer they are how the wait ended
ENDING_SIGNATURES = frozenset({"fatal-signal", "end-error-line"})
# classes whose symptom lines report waiting for, or losing, a peer
WAIT_CLASSES = frozenset({"straggler-timeout", "peer-rank-crashed", "collective-desync", "nccl-network", "rendezvous-init"})
# ... and those whose symptom lines report a process killed from outside it (by a launcher
# tearing the job down, srun, the kernel's OOM killer): neither kind is a failure of the printer
REPORT_CLASSES = WAIT_CLASSES | {"host-oom"}
# exceptions raised by launchers about their workers, not by a worker about itself: those that
# report a worker's failure, and SignalException, the launcher's own stop
_WORKER_FAILED = ("ChildFailedError", "ProcessRaisedException", "ProcessExitedException")
LAUNCHER_FAILED = re.compile(rf"(?:{'|'.join(_WORKER_FAILED)})$")
LAUNCHER_EXCEPTIONS = re.compile(rf"(?:{'|'.join((*_WORKER_FAILED, 'SignalException'))})$")
# Flight Recorder findings: the ranks' collectives differ, or some ranks are behind
FR_MISMATCH = frozenset({"type-mismatch", "size-mismatch", "dtype-mismatch", "extra-collective"})
FR_HANG = frozenset({"lagging", "stuck", "missing-ranks"})
# a line that is a numeric blow-up on the rank that printed it
NUMERIC_CLASS = "nan-divergence"
QUIET_SECONDS = 30.0  # a gap in last activity shorter than this is ordinary jitter


class End(str, Enum):
    """How a rank's process ended, as far as the launcher's records tell."""

    own_death = "own-death"  # it exited non-zero or by a signal of its own making
    terminated = "terminated"  # the launcher stopped it (SIGTERM, or SIGKILL after SIGTERM)
    died_waiting = "died-waiting"  # it exited non-zero after its own timeout / lost peer, or of what a peer sent
    clean = "clean"
    unknown = "unknown"


@dataclass
class RankRow:
    rank: int
    host: str | None = None
    local_rank: int | None = None
    failures: list[Event] = field(default_factory=list)  # its own failure lines, earliest first
    waits: list[Event] = field(default_factory=list)  # its timeouts and lost-peer reports, earliest first
    exit: ExitRecord | None = None
    end: End = End.unknown
    last_seen: Event | None = None  # last timestamped line of any kind
    last_active: Event | None = None  # last line that reports work, not trouble
    progress: int | None = None  # the step/iteration counter of its last line of work that has one
    report: Report | None = None  # what it was waiting in (watchdog / PG status)
    accuses: set[int] = field(default_factory=set)  # ranks it says it lost
    losses: list[Event] = field(default_factory=list)  # its reports of losing a peer (a closed or reset connection), among its waits
    numeric: Event | None = None  # its first NaN / inf / overflow line
    numeric_step: float | None = None  # the step that line belongs to (n.5: after step n's line)
    fr_kinds: set[str] = field(default_factory=set)  # Flight Recorder findings that single it out

    @property
    def first_failure(self) -> Event | None:
        return self.failures[0] if self.failures else None

    @property
    def lost_peer(self) -> bool:
        """It reported losing a peer, named or not."""
        return bool(self.losses)

    @property
    def own_failure(self) -> bool:
        return bool(self.failures) or self.end == End.own_death

    @property
    def waited(self) -> bool:
        return bool(self.waits)


@dataclass
class RankTable:
    rows: dict[int, RankRow]
    expected: set[int]  # the job's ranks: 0..world-1 when the logs say, else what was seen
    world_size: int | None
    coll: CollectiveFinding | None  # the watchdog reports compared across ranks
    fingerprints: dict[int, Event]  # each rank's last DETAIL collective fingerprint
    unranked_failures: list[Event]  # own-failure lines no rank could be given
    fr: "FRReport | None" = None
    stack_odd: set[int] = field(default_factory=set)  # ranks whose stack is elsewhere than most ranks'
    stack_odd_collective: set[int] = field(default_factory=set)  # ... and inside a collective call
    # peers named by waiting lines that no rank could be given ("[1] ... retrieving ncclUniqueId
    # from [0] ..." with no prefix): somebody waited on them, who is not known
    unranked_accuses: dict[int, int] = field(default_factory=dict)
    # NCCL RAS reports (diagnose/ras.py): ranks it cannot reach (dead, or no data from them),
    # and ranks whose collective counts are stuck between two snapshots, or lag while others wait
    ras_dead: set[int] = field(default_factory=set)
    ras_behind: set[int] = field(default_factory=set)
    ras: "RasEvidence | None" = None
    # the ranks that printed anything in these logs (of ``expected``, the others left no line:
    # a paste of two ranks' output from an eight-rank job says nothing about ranks 0-5)
    seen: set[int] = field(default_factory=set)

    # most ranks' stacks wait inside a collective while some are elsewhere: how a hung job looks
    stack_hang: bool = False
    # the stack dumps' main threads are all inside collectives, not the same one (different
    # frames): the processes are in different collectives, whatever their ranks
    stack_split: bool = False
    # some stack dump's main thread is past setting up (not in init_process_group, DDP's or an
    # engine's start-up broadcast): the job got to training
    stack_past_init: bool = False
    # stack dumps with call arguments (py-spy --locals): rank -> (send/recv, peer) for the ranks
    # blocked in a point-to-point op, and the ranks on a cycle of such waits (each waits for
    # the next: nothing on the cycle can move, whoever waits on them is collateral)
    p2p_waits: dict[int, tuple[str, int]] = field(default_factory=dict)
    p2p_cycle: set[int] = field(default_factory=set)
    # tracebacks cut off in a barrier or a collective that no rank could be given: somebody
    # waited for its peers, who is not known
    unranked_waits: list[Event] = field(default_factory=list)
    # the failure lines the program got past, by place: exceptions it logged and warning records
    # after which every rank went on working and none died or waited (``_handled``), and log
    # records a rank trained past while another rank failed after them (``_got_past``)
    handled: dict = field(default_factory=dict)
    # of those, the places whose rank went on to later steps while another rank failed after them
    got_past: set = field(default_factory=set)
    # (their places) what the communication layer printed after the job said its work ended
    # normally, with nothing failed: peers that left, NCCL's INFO records (``_teardown``)
    teardown: set = field(default_factory=set)
    # (their places) non-finite losses after which their rank reported finite ones again
    # (``_recovered_numeric``): a bad step the program got past
    recovered: set = field(default_factory=set)
    # (their places) NaN evaluation metrics just below the bar of an evaluation loop that ran no
    # batch (``_empty_evaluation``): a mean over nothing
    empty_eval: set = field(default_factory=set)
    # (their places) one process's exception of one type, printed again and again as log records
    # (``_repeated_in_process``): it lived on after them
    repeated: set = field(default_factory=set)
    # ranks that died by themselves while the job went on without them: another rank reported
    # three more steps after it, and nothing else failed or waited (``_outlived``; an elastic
    # job that re-formed without a worker), each with that rank's first step line after it
    outlived: dict = field(default_factory=dict)
    # (their places) warnings printed before the job said its work ended normally (a
    # launcher's or a trainer's "run-done" record, ``_warned_before_success``)
    warned_done: set = field(default_factory=set)
    # (their places) log records after which their rank worked on and ended cleanly while other
    # ranks waited (``_worked_past``)
    worked_past: set = field(default_factory=set)
    # the user (diagnose --hung) or watch (no line for a while) says the job stopped making
    # progress and no line shows a failure: the logs end where it hung, and every rank was
    # waiting (``mark_hung``, called by the engine, which decides whether a failure shows)
    hung: bool = False
    # why it is read as hung: "stated" (the user or watch said so) or "stacks" (stack dumps of
    # live processes are among the evidence: somebody took them because the job stopped)
    hung_by: str = ""
    progressed: bool = False  # (when hung) some line of work, of any rank or none, has a step counter
    # where each rank was waiting when it gave up: the line of user code its last traceback
    # that reports a timeout or a lost peer stopped at (a rank in another collective than its
    # peers waited somewhere else)
    wait_sites: dict[int, str] = field(default_factory=dict)
    # ranks that sent a message a peer's size check rejected (gloo's ring all_reduce), while
    # waiting at a line of user code where no other rank waited: the side that strayed
    odd_senders: set[int] = field(default_factory=set)
    # ranks whose size check rejected a message from a sender that waited where every other
    # waiting rank did (two at least), while the reporter did not wait there: the sender was in
    # the op the others were in, so the reporter's own op was the odd one
    in_step_senders_of: set[int] = field(default_factory=set)
    # the rank that gave up waiting at a line of user code where no other rank waited, while
    # every other rank of the job waited at one same line: it was in another collective
    odd_waiters: set[int] = field(default_factory=set)
    # ranks blocked apart (``_blocked_apart``): the ranks that reported waiting, and the ranks
    # that stopped together after one line of work the waiting ranks never got to; empty when
    # the logs do not show that
    waiting_side: set[int] = field(default_factory=set)
    stopped_side: set[int] = field(default_factory=set)
    # the ranks that neither failed nor reported waiting whose last line of work is the one a
    # waiting rank printed last (``_level_with_waiters``): they stood where the waiting ranks
    # stood when those began to wait, so they most likely wait too
    level: set[int] = field(default_factory=set)
    # the launcher says the job was stopped from outside: a symptom line, with no rank, of an
    # entry that explains a straggler and not a lost peer ("Received 15 death signal, shutting
    # down workers")
    stop_signal: bool = False
    # the job was stopped from outside while it still made steps (``_stopped_working``): the
    # launcher's line about the stop, the source's last step line, the seconds between them and
    # the seconds between steps; None otherwise
    stopped_working: tuple | None = None
    # (their places) the lines of that stop, read as no failure (they have a note of their own)
    stopped_lines: set = field(default_factory=set)

    def row(self, rank: int) -> RankRow:
        return self.rows.get(rank) or RankRow(rank)

    def accusations(self) -> dict[int, int]:
        """The ranks that peers name as the one they lost or wait for, with how many name each:
        one per accusing rank, and the lines of no rank that name it."""
        out = dict(self.unranked_accuses)
        for rw in self.rows.values():
            for r in rw.accuses:
                out[r] = out.get(r, 0) + 1
        return out

    @property
    def waiting_ranks(self) -> set[int]:
        if self.hung:
            return set(self.rows)  # no rank failed or reported anything: all of them waited
        return {r for r, row in self.rows.items() if row.waited}

    @property
    def failed_ranks(self) -> set[int]:
        return {r for r, row in self.rows.items() if row.own_failure}

    @property
    def stopped_from_outside(self) -> bool:
        """The job was stopped from outside (``stop_signal``) while no rank had failed by itself
        or reported a wait: it was stuck when it was killed, and the logs end where it hung."""
        return self.stop_signal and not self.failed_ranks and not self.waiting_ranks


def fingerprint_key(e: Event) -> tuple:
    """What a rank's last DETAIL collective fingerprint says: sequence number, op, shape."""
    return (e.cap_int("seq"), e.captures.get("op"), e.captures.get("value"))


def fingerprints_differ(table: "RankTable") -> bool:
    """The ranks' last DETAIL fingerprints disagree: they last entered different collectives."""
    return len({fingerprint_key(e) for e in table.fingerprints.values()}) > 1


def fingerprint_minority(table: "RankTable") -> set[int]:
    """The ranks whose last fingerprint differs from a clear majority's (empty without one)."""
    if not fingerprints_differ(table):
        return set()
    odd, clear = minority({r: fingerprint_key(e) for r, e in table.fingerprints.items()})
    return set(odd) if clear else set()


def fingerprints_ahead(table: "RankTable") -> set[int]:
    """The rank(s), at most half of those reporting, whose last fingerprint has a higher
    sequence number than every other rank's: they entered collectives the others never
    did (with two ranks, the one ahead)."""
    seqs = {r: e.cap_int("seq") for r, e in table.fingerprints.items() if e.cap_int("seq") is not None}
    if len(set(seqs.values())) < 2:
        return set()
    top = max(seqs.values())
    ahead = {r for r, q in seqs.items() if q == top}
    return ahead if 2 * len(ahead) <= len(seqs) else set()  # a few ahead of the rest, not the rest ahead of a few


def first_collective_hang(table: "RankTable") -> bool:
    """Every rank that reports a timeout waited in the job's first collective (SeqNum 0 or
    1): the communicator never moved any data, which is a transport or topology problem
    (P2P through an IOMMU, a firewall, a wrong interface), not a rank that fell behind
    in the middle of training."""
    if table.coll is not None and table.coll.kind == "absent":
        return False  # a rank never reached the collective the others wait in: it is late, not the transport
    seqs = [rw.report.seq if rw.report.seq is not None else rw.report.last_enqueued
            for rw in table.rows.values() if rw.report is not None]
    known = [s for s in seqs if s is not None]
    return bool(known) and len(known) == len(seqs) and max(known) <= 1


def mark_hung(table: "RankTable", events: list[Event], by: str = "stated") -> None:
    """The job was said to have hung (``by`` "stated"), or stack dumps of its live processes
    were taken (``by`` "stacks"), and no line shows a failure: the table reads as a hang
    (``hung``), and whether any line of work counted steps is looked up once, here."""
    table.hung = True
    table.hung_by = by
    table.progressed = table.stack_past_init or any(ev.role == ACTIVITY and progress_of(ev.text) is not None for ev in events)


def first_collective_stated(table: "RankTable") -> bool:
    """The job was said to have hung (``table.hung``) and no rank printed a step, a timeout
    report or a failure of its own: it stopped before training made any progress, in its
    first collective or earlier (init, the rendezvous)."""
    return (table.hung and table.coll is None and not table.failed_ranks and not table.progressed
            and all(rw.report is None for rw in table.rows.values()))


def order(a: Event | None, b: Event | None) -> int | None:
    """-1 if ``a`` happened before ``b``, 1 if after, 0 if together, None if the logs
    cannot tell: timestamps of one clock decide; without them, the line order of one
    file (a console interleaves ranks in the order their lines arrived)."""
    if a is None or b is None:
        return None
    if a.ts is not None and b.ts is not None and same_clock(a.ts, b.ts):
        return (a.ts > b.ts) - (a.ts < b.ts)
    if a.source == b.source:
        return (a.line > b.line) - (a.line < b.line)
    return None


def _below_or_later(a, b) -> bool:
    """``b`` (a line or a fact) comes after ``a``: below it in the same file, or later by the
    clock where both have a time."""
    return (a.source == b.source and a.line < b.line) or (a.ts is not None and b.ts is not None and a.ts < b.ts)


def same_clock(x: float, y: float) -> bool:
    """Dates with a year and glog's year-less times are different clocks."""
    return (x >= 1e9) == (y >= 1e9)


def about_peer(kb: KnowledgeBase, ev: Event) -> bool:
    """The line reports what an unnamed peer did (a signature with ``reports_peer``)."""
    sig = kb.signature(ev.entry, ev.signature)
    return sig is not None and sig.reports_peer


def reports_lost_peer(kb: KnowledgeBase, ev: Event) -> bool:
    """A symptom line that says a peer was lost: of an entry that explains a dead peer, or a
    report about an unnamed peer (a closed connection)."""
    if ev.role != "symptom" or not ev.entry:
        return False
    return any(x.value == "dead-peer" for x in kb.get(ev.entry).explains) or about_peer(kb, ev)


def time_key(e: Event) -> tuple:
    return (e.ts if e.ts is not None else math.inf, e.source, e.line)


def _teardown(kb: KnowledgeBase, events: list[Event], summary) -> dict[tuple[str, int], Event]:
    """What the communication layer printed while the job was torn down, after it said its work
    ended normally (``summary.done``: torchelastic's "worker group successfully finished",
    DeepSpeed's "exits successfully", a trainer's closing summary, NCCL's "socketProgressOpt:
    abort called" as the program closes a communicator), when nothing failed by
    itself: no exception or fatal line, no failed exit, and every failure line after the end is
    either a report of a peer that left or an NCCL record at INFO level (its error-return trace
    "misc/socket.cc:47 -> 3", "Abort COMPLETE"), none of them an NCCL WARN record. Processes leave at their own pace after the work,
    and their peers' communicators see them go (NCCL's "[Service thread] Connection closed by
    localRank 1"). A wait that timed out after the end is no teardown (a final save or barrier
    that hung), nor is a failure line printed before the end - except a stop notice (a
    scheduler's time limit) after which the same rank went on working to the job's own word of
    success (fact "run-done") in that file. The launcher's records of tasks it stopped with SIGTERM
    or SIGKILL after that success are teardown too; any other failed exit record means no
    teardown."""
    if not summary.done or summary.failed_reported:
        return {}

    def after_done(e: Event) -> bool:
        return any(_below_or_later(d, e) for d in summary.done)

    # the launcher's records of tasks it stopped (SIGTERM, SIGKILL) after the job's own word of
    # success are the step being ended (srun terminating a step whose time ran out after the
    # benchmark logged success); any other failed exit is a failure
    finished = [d for d in summary.done if d.fact == "run-done"]

    def stopped_after_success(r) -> bool:
        return r.signal_name in ("SIGTERM", "SIGKILL") and any(
            d.source == r.source and d.line < r.line for d in finished)

    if any(r.exitcode and not stopped_after_success(r) for r in summary.records):
        return {}
    stopped_records = {(r.source, r.line) for r in summary.records if r.exitcode}  # (all stopped after success)

    # a launcher's record that every local worker exited 0 comes after the workers left: what
    # their communicators printed as they went, just above it, is teardown too
    succeeded = [d for d in summary.done if _LAUNCHER_DONE.search(d.text)]

    def just_before_success(e: Event) -> bool:
        return any(d.source == e.source and 0 < d.line - e.line <= _TEARDOWN_SPAN for d in succeeded)

    # a stop notice (a scheduler's time limit, a preemption) that the job worked past to its own word
    # of success in the same file: the stop's grace period let it finish (MLPerf's run_stop with
    # status success, logged after Slurm's "CANCELLED ... DUE TO TIME LIMIT")
    worked = [e for e in events if e.role == ACTIVITY]

    def finished_after_stop(e: Event) -> bool:
        return e.role == "symptom" and bool(e.entry) and _explains_a_stop(kb, e.entry) \
            and e.cap_int("timeout_ms") is None and any(
                d.source == e.source and d.line > e.line and any(
                    a.source == e.source and a.rank == e.rank and e.line < a.line <= d.line for a in worked)
                for d in finished)

    out: dict[tuple[str, int], Event] = {}
    for e in events:
        if e.role in (TRACE, FATAL):
            return {}
        if finished_after_stop(e):
            out.setdefault(e.where, e)
            continue
        if e.role == WARNED and _PROXY_THREAD.search(e.text) and after_done(e):
            out.setdefault(e.where, e)  # an NCCL WARN no entry knows, from the proxy thread, after the end
            continue
        if e.role == "symptom" and "launcher" in e.captures and e.where in stopped_records:
            out.setdefault(e.where, e)  # (the record of a task stopped after success, above)
            continue
        if e.role not in ("cause", "symptom") or "launcher" in e.captures:
            continue
        if e.cap_int("timeout_ms") is not None or not (after_done(e) or just_before_success(e)):
            return {}
        proxy = _PROXY_THREAD.search(e.text) is not None
        if not (_NCCL_INFO.search(e.text) or proxy or (e.role == "symptom" and reports_lost_peer(kb, e))) \
                or (_NCCL_WARN.search(e.text) and not proxy):
            return {}
        out.setdefault(e.where, e)
    return out


_NCCL_INFO = re.compile(r"\bNCCL INFO\b")
# the launchers' records that every worker of the node exited 0 (facts "run-done" of torchelastic's
# agent, DeepSpeed's launcher and SageMaker's training toolkit, not a trainer's closing summary,
# which rank 0 prints before the others are done)
_LAUNCHER_DONE = re.compile(r"worker group successfully finished|WorkerState\.SUCCEEDED|All workers successfully finished|exits successfully|"
                            r"Reporting training SUCCESS")
_TEARDOWN_SPAN = 20  # lines above such a record that the workers' exit printed
# NCCL prints the errors it returns at WARN level ("NCCL WARN Net : Connection closed by remote
# peer" in a collective); its own teardown ("[Service thread] Connection closed by localRank 1")
# at INFO level: a WARN after the end is a communicator that was still in use, not teardown
_NCCL_WARN = re.compile(r"\bNCCL WARN\b")
# ... except the proxy thread's own warnings as the sockets it serves close ("[Service thread]
# Accept failed ...", "[Proxy Service 0] Failed to execute operation Close ..."): the thread that
# serves a communicator, not a collective in use
_PROXY_THREAD = re.compile(r"NCCL WARN \[(?:Service thread|Proxy Service \d+)\]")


def build_rank_table(kb: KnowledgeBase, att: Attributed, fr: "FRReport | None" = None) -> RankTable:
    # what the communication layer printed after the job said it finished, with nothing failed: teardown
    teardown = _teardown(kb, att.events, att.summary)
    events = [e for e in att.events if e.where not in teardown] if teardown else att.events
    ranks = set(att.seen)
    expected = set(range(att.world_size)) if att.world_size else (set(range(max(ranks) + 1)) if ranks else set())
    rows: dict[int, RankRow] = {}

    def row(r: int) -> RankRow:
        if r not in rows:
            rows[r] = RankRow(r)
        return rows[r]

    # a symptom line reports waiting for, or losing, a peer, or a kill; one of an entry of another class (an
    # NCCL "unhandled cuda error" whose Cuda failure line is elsewhere, a device mismatch seen
    # through a collective) is a failure of the rank that printed it
    local = {e.where for e in events if e.role == "symptom" and "launcher" not in e.captures
             and e.entry and kb.get(e.entry).class_ not in REPORT_CLASSES}
    symptom_lines = {e.where for e in events if e.role == "symptom"} - local
    numeric_entries = {e.id for e in kb if e.class_ == NUMERIC_CLASS}
    unranked: list[Event] = []
    unranked_accuses: dict[int, int] = {}
    unranked_waits: list[Event] = []
    counted: dict[int, Event] = {}  # each rank's last line of work with a progress counter
    waited_in: dict[str, int] = {}  # each source's first line that reports a wait
    for ev in events:
        if ev.role == "symptom" and "launcher" not in ev.captures and ev.where not in local:
            waited_in[ev.source] = min(waited_in.get(ev.source, ev.line), ev.line)
    for ev in sorted(events, key=time_key):
        if ev.signature in ENDING_SIGNATURES and (
                (ev.rank is not None and ev.rank in rows and rows[ev.rank].waits)
                or ev.line > waited_in.get(ev.source, ev.line)):
            continue  # how a wait ended (the watchdog's abort), not a failure of its own
        if ev.rank is None:
            if _is_own_failure(ev, symptom_lines) or (ev.where in local and ev.role == "symptom"):
                unranked.append(ev)
            elif is_cut_wait(ev):
                unranked_waits.append(ev)
            elif ev.role == "symptom" and "launcher" not in ev.captures and (pr := ev.cap_int("peer_rank")) is not None:
                unranked_accuses[pr] = unranked_accuses.get(pr, 0) + 1
            continue
        rw = row(ev.rank)
        rw.host = rw.host or ev.host
        rw.local_rank = rw.local_rank if rw.local_rank is not None else ev.local_rank
        if _is_own_failure(ev, symptom_lines):
            rw.failures.append(ev)
        if ev.role == "symptom" and ev.where in local:
            rw.failures.append(ev)
        elif (ev.role == "symptom" and "launcher" not in ev.captures) or is_cut_wait(ev):
            rw.waits.append(ev)
            if reports_lost_peer(kb, ev):
                rw.losses.append(ev)
            pr = ev.cap_int("peer_rank")
            if pr is not None and pr != ev.rank:
                rw.accuses.add(pr)
        if ev.entry in numeric_entries and ev.role in ("cause", "context", "symptom") and rw.numeric is None:
            rw.numeric = ev
            p = progress_of(ev.text)
            if p is None and ev.rank in counted:
                p = (progress_of(counted[ev.rank].text) or 0) + 0.5
            rw.numeric_step = p
        # (a launcher's line about a rank, "failed (exitcode: 1) local_rank: 1", is no sign of its life)
        if ev.ts is not None and "launcher" not in ev.captures and (rw.last_seen is None or (rw.last_seen.ts or -math.inf) <= ev.ts):
            rw.last_seen = ev
        if ev.role == ACTIVITY:
            if rw.last_active is None or order(rw.last_active, ev) in (-1, None):
                rw.last_active = ev
            if (p := progress_of(ev.text)) is not None and (counted.get(ev.rank) is None or order(counted[ev.rank], ev) in (-1, None)):
                counted[ev.rank] = ev
                rw.progress = p
    for rw in rows.values():
        for f in (rw.failures, rw.waits):
            f.sort(key=lambda e: _order_key(e))

    for r, rec in att.summary.by_rank().items():
        rw = row(r)
        rw.exit = rec
        rw.host = rw.host or rec.host
    sigterm = att.summary.sigterm_pids
    # a report of what a peer sent that no rank could be given (gloo's size check printed
    # without a prefix) is the output of the one rank that aborted with no failure line of its own
    aborted = [rw for rw in rows.values() if not rw.failures and rw.exit is not None and rw.exit.exitcode == -6]
    unranked_witness = len(aborted) == 1 and peer_report(kb, unranked) is not None
    for rw in rows.values():
        # its failure lines are only its report of what a peer sent: it died of the peer's
        # message, which does not tell which of the two strayed
        witness = peer_report(kb, rw.failures) is not None or (unranked_witness and rw is aborted[0])
        rw.end = _end_of(rw, sigterm, att.summary.sigterm_by_source, witness)
    _aborted_with_waiters(rows)
    for r in _unlisted(att.summary, expected):
        rw = row(r)
        if rw.end == End.unknown:
            rw.end = End.clean

    # an exception a rank logged and got past, or a warning it printed and went on from: the
    # rank went on working for a while after it and did not die (log.exception of a retried
    # upload, a skipped record, dynamo falling back to eager at its recompile limit)
    handled = _handled(kb, rows, unranked)
    # ... and the same exception a process logged again and again: it lived on after them
    repeated = _repeated_in_process(rows, unranked)
    handled.update(repeated)
    # a failure line a rank reported as a log record and then trained on past, to later steps,
    # while another rank failed by itself after it: not where the failure started (an optional
    # kernel that fell back, a skipped upload)
    got_past = _got_past(kb, rows, counted, handled)
    handled.update(got_past)
    # ... or a log record a rank worked past, to later steps, and then ended cleanly while other
    # ranks waited: it did not die of it (a "skip the batch on OOM" guard); what they waited for
    # is elsewhere (the rank left them in a collective it never issued: left_early)
    worked_past = _worked_past(kb, rows, counted, handled)
    handled.update(worked_past)
    # a non-finite loss a rank printed, after which the same rank reported finite losses again
    # and no rank died or waited: a bad step the program skipped, not a divergence
    recovered = _recovered_numeric(kb, rows, counted)
    handled.update(recovered)
    # ... and an evaluation metric that is NaN because the evaluation loop ran no batch (tqdm's
    # "0it [00:00, ?it/s]" just above it): a mean over nothing, not a divergence
    empty_eval = _empty_evaluation(kb, events, rows, unranked)
    handled.update(empty_eval)
    # warnings the program printed before the job said its work ended normally: it went on
    # from them to a normal end
    warned_done = _warned_before_success(kb, rows, unranked, att.summary, handled)
    handled.update(warned_done)
    handled.update(teardown)
    if handled:
        for rw in rows.values():
            rw.failures = [f for f in rw.failures if f.where not in handled]
        unranked = [f for f in unranked if f.where not in handled]
    # a rank that died while the others went on stepping without it (an elastic job that
    # re-formed its group): the job outlived it
    outlived = _outlived(events, rows, unranked, att.summary)
    for r in outlived:
        handled.update({f.where: f for f in rows[r].failures})
        rows[r].failures = []
        rows[r].end = End.clean
    # the job stopped from outside while it was still making steps (a person's Ctrl-C, a
    # scheduler's preemption): no hang to read, and the stop's lines are no failure
    stopped = _stopped_working(kb, events, rows, unranked)
    stopped_lines = {e.where: e for e in events if e.role == "symptom" and e.where not in handled} if stopped else {}
    handled.update(stopped_lines)

    # a rank that timed out itself did not vanish: its peers' "lost" reports are collateral
    timed_out = {r for r, rw in rows.items() if any(e.cap_int("timeout_ms") is not None for e in rw.waits)}
    for rw in rows.values():
        rw.accuses -= timed_out

    reports = collect_reports(events)
    for r, rep in reports.items():
        row(r).report = rep
    coll = analyse(events, expected or None, set(att.seen) | set(rows))

    fingerprints: dict[int, Event] = {}
    for e in sorted(events, key=lambda e: (e.cap_int("seq") or -1, e.source, e.line)):
        if e.rank is not None and e.cap_int("seq") is not None and e.captures.get("op") and (
                e.role == "context" or e.cap_int("rank") == e.rank):
            # a DETAIL fingerprint line, or DETAIL's mismatch report, which gives the printing
            # rank's own fingerprint first ("Rank 2 is running collective: CollectiveFingerPrint(
            # SequenceNumber=16, OpType=BROADCAST ...), but Rank 0 is running ...")
            fingerprints[e.rank] = e

    fingerprints.update(_coll_trace_conflict(events))

    if fr is not None:
        for finding in fr.findings:
            if finding.collateral:  # it only waits behind another finding (flightrec/analyze.py)
                continue
            for r in finding.root_ranks:
                # a rank known to be missing only from a gap in the dumps' ranks (gloo) is named
                # by the dumps for its absence alone: where its own log shows it failing, the
                # cause is there and the dumps add nothing to weigh on it; a rank that died
                # without a line of its own (a signal, no traceback) is named by its absence
                if finding.kind == "stuck" and r in fr.gap_missing and (r not in rows or rows[r].failures):
                    continue
                row(r).fr_kinds.add(finding.kind)
    stack_odd: set[int] = set()
    stack_odd_collective: set[int] = set()
    stack_hang = stack_split = stack_past_init = False
    p2p_waits: dict[int, tuple[str, int]] = {}
    p2p_cycle: set[int] = set()
    if att.stacks:
        from ..ingest.stacks import group_by_stack, in_collective, in_init, outliers, outside_collective, p2p_cycles
        from ..ingest.stacks import p2p_waits as waits_of

        p2p_waits = waits_of(att.stacks)
        p2p_cycle = p2p_cycles(p2p_waits)

        groups = group_by_stack(att.stacks, 6)
        odd_groups = outliers(groups)
        stack_odd = {r for g in odd_groups for r in g.ranks}
        # ranks inside another collective than most are a desync only when every rank is in
        # one: while some rank is outside any (busy, stuck in its own code), the others wait
        # in whichever collective their group reached (a TP group in one, DP in another)
        stack_hang = bool(stack_odd) and in_collective(groups[0].where)
        if all(in_collective(g.where) for g in groups):
            stack_odd_collective = {r for g in odd_groups for r in g.ranks}
        else:
            stack_odd_collective = set()
            outside = {r for g in groups if not in_collective(g.where) for r in g.ranks}
            everyone = {r for g in groups for r in g.ranks}
            if 2 * len(outside) <= len(everyone):
                stack_odd = outside
        if not stack_odd:
            # no majority to be odd against (one rank's stack, or two in two places): a rank
            # busy or blocked in its own code (data loading, I/O, a lock), not waiting for its
            # peers, is the one they would be waiting for
            live = [d for d in att.stacks if not d.crash and d.rank is not None and d.main is not None]
            busy = {d.rank for d in live if outside_collective(d.main.frames)}
            ranked = {d.rank for d in live}
            if busy and (len(ranked) == 1 or 2 * len(busy) <= len(ranked)):
                stack_odd = busy
        # the processes stand at different places, all of them in a collective: not the same one
        where = {tuple(d.main.frames[:6]) for d in att.stacks if not d.crash and d.main is not None and d.main.frames}
        stack_split = len(where) > 1 and all(in_collective(w) for w in where)
        stack_past_init = any(d.main is not None and d.main.frames and not in_init(d.main.frames) for d in att.stacks)

    # only a rank with no line of its own here is one an unknown printer waited on: NCCL's
    # proxy threads print "Connection closed by localRank N" / "Proxy Call to rank N failed"
    # about their own rank N when it aborts
    unranked_accuses = {r: n for r, n in unranked_accuses.items() if r not in rows}
    waiting = {r for r, rw in rows.items() if rw.waited}
    ras_dead, ras_behind = suspects_of(att.ras, waiting)
    sites = _wait_sites(events, symptom_lines)
    sent = _sender_reports(events)
    return RankTable(rows, expected or set(rows), att.world_size, coll, fingerprints, unranked, fr, stack_odd, stack_odd_collective,
                     unranked_accuses, ras_dead, ras_behind, att.ras, stack_hang=stack_hang, stack_split=stack_split,
                     stack_past_init=stack_past_init,
                     p2p_waits=p2p_waits, p2p_cycle=p2p_cycle, unranked_waits=unranked_waits,
                     wait_sites=sites,
                     odd_senders={s for _, s in sent if _odd_site({**_crash_sites(att.stacks), **sites}, s)},
                     in_step_senders_of={r for r, s in sent if r is not None and _common_site(sites, s, r)},
                     odd_waiters=_odd_waiters(sites, expected or set(rows)),
                     stop_signal=stopped is None and any(e.role == "symptom" and e.rank is None and e.entry
                                                         and _explains_a_stop(kb, e.entry) for e in events),
                     stopped_working=stopped, stopped_lines=set(stopped_lines),
                     handled=handled, got_past=set(got_past), teardown=set(teardown),
                     recovered=set(recovered), empty_eval=set(empty_eval), repeated=set(repeated), worked_past=set(worked_past), level=_level_with_waiters(rows),
                     outlived=outlived, warned_done=set(warned_done),
                     **_blocked_apart(rows, expected or set(rows)), seen=set(att.seen) | set(rows))


_DIGITS = re.compile(r"\d+")
_TOGETHER = 2.0  # seconds: lines of work this close were printed together (features.MIN_GAP)


def _gist(ev: Event) -> str:
    """What a line of work says, its prefixes and digits aside ("rank # step # loss #.#")."""
    return _DIGITS.sub("#", said(ev.text, None))


def _level_with_waiters(rows: dict[int, RankRow]) -> set[int]:
    """The ranks that neither failed nor reported waiting whose last line of work says what a
    waiting rank's own last line of work says (digits aside), printed within _TOGETHER of it:
    they stood at the point of the program where the waiting ranks began to wait, so they most
    likely wait in the same collective (a longer timeout, a wait that prints nothing) rather
    than being the rank the others wait for, which was elsewhere."""
    marks = [(_gist(rw.last_active), rw.last_active.ts) for rw in rows.values()
             if rw.waits and not rw.failures and rw.last_active is not None and rw.last_active.ts is not None]
    if not marks:
        return set()
    out: set[int] = set()
    for r, rw in rows.items():
        ev = rw.last_active
        if rw.waits or rw.failures or ev is None or ev.ts is None:
            continue
        gist = _gist(ev)
        if any(gist == m and (t := on_one_clock(ev.ts, ts)) is not None and abs(t[0] - t[1]) <= _TOGETHER
               for m, ts in marks):
            out.add(r)
    return out


def only_losses(rw: RankRow) -> bool:
    """Every line in which the rank reported waiting reports a lost peer (a closed or reset
    connection; a traceback's exception line counts with the report it ends in)."""
    lost = {e.where for e in rw.losses}
    return bool(lost) and all(e.where in lost for e in rw.waits)


def _blocked_apart(rows: dict[int, RankRow], expected: set[int]) -> dict[str, set[int]]:
    """Two groups of ranks, each waiting for the other: the ranks that reported waiting (a
    timeout, a traceback cut off in a collective), with no failure of their own, and every
    other rank of the job, two or more, which neither failed nor reported waiting and whose
    last line of work is one and the same message (digits aside: "rank 0 building the metrics
    group") printed within MIN_GAP of each other, a message none of the waiting ranks printed
    as its last, after the waiting ranks' own last lines of work. Those ranks did not go on
    working one by one as stragglers do: they stopped at once, at a step of the program the
    waiting ranks never reached, so they are blocked too, in something the waiting ranks never
    issued (a sub-group only they built, a collective in a branch the others skipped), while
    the waiting ranks wait in an op they never issued. The side that strayed from the
    program's path is the smaller one (features.py), with no way to tell at a tie."""
    waiting = {r for r, rw in rows.items() if rw.waits and not rw.failures}
    stopped = expected - waiting
    if not waiting or len(stopped) < 2 or not stopped <= set(rows):
        return {}
    # a rank blocked in another collective keeps its connections open: waiting ranks that only
    # report a closed or reset connection lost a peer that exited (features.left_early)
    if all(only_losses(rows[r]) for r in waiting):
        return {}
    lasts = [rows[r].last_active for r in sorted(stopped)]
    if any(ev is None or ev.ts is None or rows[ev.rank].waits or rows[ev.rank].failures
           or rows[ev.rank].end in (End.own_death, End.died_waiting) for ev in lasts):
        return {}
    gists = {_gist(ev) for ev in lasts}
    times = [ev.ts for ev in lasts]
    if len(gists) != 1 or max(times) - min(times) > _TOGETHER:
        return {}
    first = min(lasts, key=lambda e: e.ts)
    for r in waiting:
        own = rows[r].last_active
        if own is None or _gist(own) in gists or order(own, first) != -1:
            return {}
    return {"waiting_side": waiting, "stopped_side": stopped}


_TRACEBACK_HEAD = re.compile(r"Traceback \(most recent call last\):")
_LOG_LEVEL = re.compile(r"\b(?:ERROR|WARNING|WARN|CRITICAL|EXCEPTION|FATAL|E|W)\b")


def logged_at(f: Event) -> float | None:
    """When a program logged the exception ``f`` ends: the time of the log record printed just
    before its traceback (``log.exception(...)``, ``logger.error(..., exc_info=True)``). An
    exception Python's own hook prints (uncaught) has no such record: None."""
    ctx = f.context
    for i in range(len(ctx) - 1, 0, -1):
        _, start = parse_prefix(ctx[i])
        if _TRACEBACK_HEAD.match(ctx[i], start):
            rec, at = parse_prefix(ctx[i - 1])
            if rec.ts is not None and _LOG_LEVEL.search(ctx[i - 1], at, at + 40):
                return rec.ts
            return None
    return None


def _worked_after(f: Event, logged: float, active: Event | None, same_second: bool = False) -> bool:
    """The rank's last line of work has a time of its own after the record that logged the
    exception (a traceback's continuation lines have none), and comes after it in the same file
    when both are in one. ``same_second``: in the same file, a line below it with the same
    time (a clock of whole seconds) counts too."""
    if active is None or active.ts is None:
        return False
    if f.source == active.source and active.line <= f.line:
        return False
    later = on_one_clock(logged, active.ts)
    if later is None:
        return False
    return later[1] > later[0] or (same_second and f.source == active.source and later[1] == later[0])


def on_one_clock(x: float, y: float) -> tuple[float, float] | None:
    """Two times on one clock: as they are, or a dated one read without its year beside
    glog's year-less stamp (both are the host's local time: torch's C++ warnings and Python's
    logging records of one process). None when the date has no year-less reading (Feb 29)."""
    if same_clock(x, y):
        return x, y

    def yearless(t: float) -> float | None:
        if t < 1e9:
            return t
        try:
            d = datetime.fromtimestamp(t)
            return (d.replace(year=1970) - datetime(1970, 1, 1)).total_seconds()
        except (ValueError, OverflowError, OSError):
            return None

    a, b = yearless(x), yearless(y)
    return None if a is None or b is None else (a, b)


def _handled(kb: KnowledgeBase, rows: dict[int, RankRow], unranked: list[Event]) -> dict[tuple[str, int], Event]:
    """The lines of failures the program got past (their places): a Python exception a log
    record printed the traceback of, or a warning record (a failure line printed at warning
    level: the program said it carries on) that no entry of numeric divergence reads (a NaN
    loss is a failure however long the run goes on). Every rank went on working after that
    record, none reported waiting for a peer and no launcher record says one died or was
    stopped. Only with two ranks or more: one process's excerpt does not show whether the
    job went on."""
    if len(rows) < 2 or any(rw.end not in (End.clean, End.unknown) or rw.waits for rw in rows.values()):
        return {}
    out: dict[tuple[str, int], Event] = {}
    for f in [f for rw in rows.values() for f in rw.failures] + unranked:
        if f.role == TRACE and f.signature == "python-exception":
            t = logged_at(f)
        elif _reported(kb, f) == "W":
            t = f.ts
        else:
            continue
        # (a rank whose last line came in the same second, below it in the same file, got past
        # it too: ranks that only print their start-up while rank 0 logs the steps)
        if t is not None and all(_worked_after(f, t, rw.last_active, same_second=True) for rw in rows.values()) \
                and any(_worked_after(f, t, rw.last_active) for rw in rows.values()):
            out.setdefault(f.where, f)
    return out


def _logged_traceback(f: Event) -> bool:
    """The exception ``f`` ends was printed by the program as a log record: a record just
    above its traceback (``logged_at``), or a record whose message is the traceback itself
    ("ERROR:2025-11-19 19:07:43,953:Traceback (most recent call last):", the program logging
    traceback.format_exc()). Python's hook for an uncaught exception prints neither."""
    if logged_at(f) is not None:
        return True
    for line in reversed(f.context):
        rec, start = parse_prefix(line)
        if f.pid is not None and rec.pid != f.pid:
            continue  # another process's line, interleaved with this one's traceback
        head = _TRACEBACK_HEAD.search(line, start)
        if head is not None:
            return record_level(line[:head.start()]) is not None
    return False


def process_pid(ev: Event) -> int | None:
    """The pid of the process that printed ``ev``: its prefix's, kept on the event, or read again
    from its line (a traceback cut before its exception line keeps only the line's prefix)."""
    return ev.pid if ev.pid is not None else parse_prefix(ev.text)[0].pid


EXC_TYPE = re.compile(r"([\w.]+(?:Error|Exception|Interrupt|Exit|Warning)|AssertionError)\b")


def _repeated_in_process(rows: dict[int, RankRow], unranked: list[Event]) -> dict[tuple[str, int], Event]:
    """Python exceptions that one process (one pid of one host, from its line prefix: Ray's
    "(Worker pid=N)", vLLM's "(VllmWorkerProcess pid=N)") printed as log records again and
    again, the same exception type each time: a process dies of an exception once, so it lived
    on after all but its last, and the same code logging the same exception once more caught it
    too (an agent's action parser, a retried request). Only where the program prints that
    exception as a log record (``_logged_traceback``) in at least one of its processes of the
    file: Ray folds its workers' repeated lines into "[repeated Nx across cluster]", so a
    process's printing often keeps only its last line. A process that dies after the last one
    still shows it in its exit (a launcher's record)."""
    groups: dict[tuple, list[Event]] = {}
    cut: list[tuple[int, Event]] = []  # (pid, traceback) whose exception line is not there (folded, or the file ends)
    for f in [f for rw in rows.values() for f in rw.failures] + unranked:
        if f.role != TRACE or f.signature != "python-exception":
            continue
        pid = process_pid(f)
        if pid is None:
            continue
        m = EXC_TYPE.match(said(f.text, None))
        if m is None:
            cut.append((pid, f))
            continue
        groups.setdefault((f.source, f.host, pid, m.group(1)), []).append(f)
    logged = {(source, kind) for (source, _h, _p, kind), fs in groups.items() if any(_logged_traceback(f) for f in fs)}
    out: dict[tuple[str, int], Event] = {}
    for (source, _h, _p, kind), fs in groups.items():
        if len({f.line for f in fs}) >= 2 and (source, kind) in logged:
            out.update({f.where: f for f in fs})
    lived = {(source, host, pid) for (source, host, pid, _k), fs in groups.items() if fs[0].where in out}
    out.update({f.where: f for pid, f in cut if (f.source, f.host, pid) in lived})
    return out


def _warned_before_success(kb: KnowledgeBase, rows: dict[int, RankRow], unranked: list[Event], summary,
                           handled: dict[tuple[str, int], Event]) -> dict[tuple[str, int], Event]:
    """Failure lines printed as warnings (``_reported`` "W": the program said it carries on),
    above the job's word that its work ended normally (fact "run-done": a launcher's record that
    every worker exited 0, torchelastic's "Local worker group finished (WorkerState.SUCCEEDED)",
    DeepSpeed's "exits successfully", SageMaker's "Reporting training SUCCESS", or a trainer's
    closing record, MLPerf's run_stop with status success) in the same file, or before it by the
    clock, when nothing else failed: no failed exit record, no failure summary, no rank that
    died, waited or failed with a line that is not such a warning. The program went on from the
    warnings to a normal end (FSDP's "Failed to clone() tensor ... out of memory" while saving a
    state dict it then wrote; NCCL's warning that SHARP could not start, before it fell back)."""
    if summary.failed_reported or any(r.exitcode for r in summary.records):
        return {}
    succeeded = [d for d in summary.done if d.fact == "run-done"]
    if not succeeded or any(rw.end not in (End.clean, End.unknown) or rw.waits for rw in rows.values()):
        return {}
    failures = [f for rw in rows.values() for f in rw.failures if f.where not in handled] + \
        [f for f in unranked if f.where not in handled]
    if not failures or any(_reported(kb, f) != "W" for f in failures):
        return {}

    # above the word in its file or before it by the clock - or, for NCCL's INFO-level traces of
    # an error code, below it: the communication layer's traces as the processes close their
    # communicators after the work ended (a closed socket's "-> 3", then "Abort COMPLETE", while
    # rank 0 writes its last checkpoint) are teardown. A program's own warning after the word
    # still counts (FSDP failing to clone a tensor while it saves the final state dict)
    if not all(any(_below_or_later(f, d) or (_nccl_info_trace(f) and _below_or_later(d, f)) for d in succeeded)
               for f in failures):
        return {}
    return {f.where: f for f in failures}


def _outlived(events: list[Event], rows: dict[int, RankRow], unranked: list[Event], summary) -> dict[int, Event]:
    """The ranks that died by themselves while the job went on without them: in the
    file that holds every line of the rank's failure (its failure lines and the launcher's
    record of its exit), another rank's last three steps (``steps-run``, three rising step
    counters) all come after those lines, with their own time after the failure's where both
    have one. Ranks that train together cannot step on without a dead peer (a collective
    needs every member), so the job re-formed without it (Horovod elastic's scale-in, a
    restarted worker group). Only when nothing else went wrong: no rank waited or lost a
    peer, no failure no rank owns, no failure summary of a launcher, no failure of the
    stepping rank, and the others' failures are outlived too. Returns each such rank with the
    first line of the steps that outlived it."""
    if unranked or summary.failed_reported or any(rw.waits or rw.lost_peer for rw in rows.values()):
        return {}
    failing = {r: rw for r, rw in rows.items() if rw.failures or rw.end in (End.own_death, End.died_waiting)}
    if not failing or len(failing) == len(rows) or any(rw.end != End.own_death for rw in failing.values()):
        return {}  # (a rank that failed but did not die, a NaN loss, steps on with its peers)
    runs = [e for e in events if e.role == STEPS and e.rank is not None and e.rank not in failing]
    out: dict[int, Event] = {}
    for r, rw in failing.items():
        lines = list(rw.failures)
        places = [(f.source, f.line, f.ts) for f in lines]
        if rw.exit is not None:
            places.append((rw.exit.source, rw.exit.line, None))
        if not places or len({p[0] for p in places}) != 1:
            return {}
        source = places[0][0]
        last_line = max(p[1] for p in places)
        ts = max((p[2] for p in places if p[2] is not None), default=None)
        after = [e for e in runs if e.source == source and e.line > last_line and (ts is None or e.ts is None or e.ts > ts)]
        if not after:
            return {}
        out[r] = min(after, key=lambda e: e.line)
    return out


def _got_past(kb: KnowledgeBase, rows: dict[int, RankRow], counted: dict[int, Event],
              handled: dict[tuple[str, int], Event]) -> dict[tuple[str, int], Event]:
    """Failure lines that their rank printed as a log record (at warning or error level, with
    no traceback: the program reported it and carried on), after which that same rank logged
    a later step of work (``counted``: each rank's last line with a step counter), while
    another rank failed by itself after the line."""
    out: dict[tuple[str, int], Event] = {}
    for r, rw in rows.items():
        later = counted.get(r)
        if later is None:
            continue
        for f in _records_before(kb, rw, later, handled):
            if any(g.where not in handled and order(f, g) == -1
                   for r2, rw2 in rows.items() if r2 != r for g in rw2.failures[:1]):
                out.setdefault(f.where, f)
    return out


def _records_before(kb: KnowledgeBase, rw: RankRow, later: Event, handled: dict[tuple[str, int], Event]):
    """The rank's failure lines, not handled yet, that it printed as a log record (``_reported``)
    before ``later``, its last line of work with a step counter: failures it went on from."""
    for f in rw.failures:
        if f.where not in handled and _reported(kb, f) is not None and order(f, later) == -1:
            yield f


def _stopped_working(kb: KnowledgeBase, events: list[Event], rows: dict[int, RankRow],
                     unranked: list[Event]) -> tuple | None:
    """The job was stopped from outside (a launcher's line about a signal it received, an entry
    that explains a stop: "Received Signals.SIGINT death signal, shutting down workers") while it
    was still making steps: some source's last line with a step counter came at most 1.5 times
    its usual time between steps (and at most 2 s when steps come faster) before the stop, on
    one clock, and no rank had failed by itself or reported waiting. A hung job that someone
    killed had stopped reporting steps well before the kill. Returns (the stop's line, the last
    step's line, seconds between them, seconds between steps), or None."""
    if unranked or any(rw.failures or rw.waits for rw in rows.values()):
        return None
    stops = [e for e in events if e.role == "symptom" and e.rank is None and e.entry and e.ts is not None
             and _explains_a_stop(kb, e.entry)]
    if not stops:
        return None
    stop = min(stops, key=lambda e: e.ts)
    for c in (e for e in events if e.role == CADENCE and e.ts is not None):
        try:
            interval = float(c.captures.get("interval", ""))
        except ValueError:
            continue
        times = on_one_clock(c.ts, stop.ts)
        if times is None:
            continue
        gap = times[1] - times[0]
        if 0 <= gap <= max(1.5 * interval, 2.0):
            return stop, c, gap, interval
    return None


def _worked_past(kb: KnowledgeBase, rows: dict[int, RankRow], counted: dict[int, Event],
                 handled: dict[tuple[str, int], Event]) -> dict[tuple[str, int], Event]:
    """Failure lines that their rank printed as a log record (warning or error level, no
    traceback), after which that same rank logged a later step of work and ended cleanly
    (``End.clean``: its exit was clean, or the failure summary leaves it out), while another
    rank reported waiting: the rank went on from the failure it reported and outlived it."""
    if not any(rw.waits for rw in rows.values()):
        return {}
    out: dict[tuple[str, int], Event] = {}
    for r, rw in rows.items():
        later = counted.get(r)
        if later is None or rw.end != End.clean or rw.waits:
            continue
        for f in _records_before(kb, rw, later, handled):
            out.setdefault(f.where, f)
    return out


def _recovered_numeric(kb: KnowledgeBase, rows: dict[int, RankRow], counted: dict[int, Event]) -> dict[tuple[str, int], Event]:
    """The lines of a numeric divergence (an entry of NUMERIC_CLASS, a cause line: "loss is nan")
    after which the same rank's last line of work with a step counter (``counted``) reports a
    finite, non-zero loss: the loss came back, so the non-finite value was one bad step that the
    program skipped or survived (a loss guard that skips the update, an fp16 scaler's skipped
    step), not a divergence, which stays non-finite (or falls to 0.0). Only when every rank
    ended cleanly or is not known to have ended, and none reported waiting for a peer."""
    if any(rw.end not in (End.clean, End.unknown) or rw.waits for rw in rows.values()):
        return {}
    out: dict[tuple[str, int], Event] = {}
    for r, rw in rows.items():
        later = counted.get(r)
        if later is None or not rw.failures:
            continue
        loss = reported_loss(later.text)
        if loss is None or not math.isfinite(loss) or loss == 0.0:
            continue
        for f in rw.failures:
            if (f.role == "cause" and f.entry and kb.get(f.entry).class_ == NUMERIC_CLASS
                    and order(f, later) == -1):
                out.setdefault(f.where, f)
    return out


_EVAL_METRIC = re.compile(r"\b(?:eval|val|valid|validation|test)_?(?:loss|ppl|perplexity)\b", re.I)
_TRAIN_METRIC = re.compile(r"\btrain(?:ing)?_?(?:loss|ppl|perplexity)\b", re.I)
_EMPTY_LOOP_SPAN = 5  # lines above the metric within which the empty loop's bar stands


def _empty_evaluation(kb: KnowledgeBase, events: list[Event], rows: dict[int, RankRow],
                      unranked: list[Event]) -> dict[tuple[str, int], Event]:
    """The non-finite lines of a numeric divergence's entry that report only evaluation metrics
    (eval_loss, val_ppl ...; no training metric on the line) a few lines below a progress bar of
    a loop that ran no iteration (the ``empty-loop-progress`` context line, tqdm's "0it [00:00,
    ?it/s]"): the evaluation averaged over no batch (0/0), which is NaN whatever the training
    did. Only when no rank died or waited."""
    if any(rw.end not in (End.clean, End.unknown) or rw.waits for rw in rows.values()):
        return {}
    empty = [e for e in events if e.role == "context" and e.signature == "empty-loop-progress"]
    if not empty:
        return {}
    out: dict[tuple[str, int], Event] = {}
    for f in [f for rw in rows.values() for f in rw.failures] + unranked:
        if (f.role == "cause" and f.entry and kb.get(f.entry).class_ == NUMERIC_CLASS
                and _EVAL_METRIC.search(f.text) and not _TRAIN_METRIC.search(f.text)
                and any(b.source == f.source and 0 < f.line - b.line <= _EMPTY_LOOP_SPAN for b in empty)):
            out.setdefault(f.where, f)
    return out


def _nccl_info_trace(f: Event) -> bool:
    """NCCL's trace of an error code returned up its stack, printed at INFO level."""
    return record_level(f.text) is None and _NCCL_INFO.search(f.text) is not None


def _reported(kb: KnowledgeBase, f: Event) -> str | None:
    """The level ("W" or "E") of an entry's cause line that the program printed as a log record
    (``record_level``), when no entry of numeric divergence reads it (a NaN loss is a failure
    however long the run goes on); else None."""
    if f.role == WARNED:
        return "W"  # an NCCL WARN record no entry knows
    if f.role != "cause" or not f.entry or kb.get(f.entry).class_ == NUMERIC_CLASS:
        return None
    level = record_level(f.text)
    if level is None and _NCCL_INFO.search(f.text) is not None:
        return "W"  # NCCL's trace of an error code returned up its stack, at INFO level: it carried on
    return level


_WARNING_LEVEL = re.compile(r"\[?(?:WARNING|WARN)\]?(?=[\s:|\]-])|NCCL WARN\b|\[W [\w.]+:\d+\]")
_PY_WARNING = re.compile(r"\S+:\d+: [A-Z]\w*Warning: ")
_ERROR_LEVEL = re.compile(r"\[?ERROR\]?(?=[\s:|\]-])|\[E [\w.]+:\d+\]")


def record_level(text: str) -> str | None:
    """"W" when the line is a record printed at warning level: glog's ``W1206 17:25:37...``
    prefix (or its old ``[W file.cpp:12]`` tag), a logging record whose level is WARNING, NCCL's
    ``NCCL WARN``, or Python's ``warnings`` (``file.py:12: UserWarning: ...``); "E" when it is
    one at error level (a logging record whose level is ERROR, glog's ``E1206 ...``); else None."""
    rec, at = parse_prefix(text)
    level = rec.extra.get("level")
    if level == "W" or _WARNING_LEVEL.search(text, at, at + 48) is not None or _PY_WARNING.match(text, at) is not None:
        return "W"
    if level == "E" or _ERROR_LEVEL.search(text, at, at + 48) is not None:
        return "E"
    return None


def warning_record(text: str) -> bool:
    """The line is a log record at warning level (``record_level``)."""
    return record_level(text) == "W"


def logged_record(text: str) -> bool:
    """The line is a log record at warning or error level (``record_level``)."""
    return record_level(text) is not None


def _unlisted(summary, expected: set[int]) -> set[int]:
    """The ranks a torchrun failure summary leaves out, where it speaks for the whole job: it
    lists every worker of its group that did not exit 0 (SIGTERM'd survivors included), so on
    one node (every record's global rank is its local rank, one host) a rank of the job it
    does not list ran to a clean exit before the failure."""
    blocks = [r for r in summary.records if r.block and not r.srun and r.rank is not None]
    if not blocks or len({(r.source, r.host) for r in blocks}) != 1 or any(r.rank != r.local_rank for r in blocks):
        return set()
    listed = {r.rank for r in blocks}
    unlisted = expected - listed
    # the summary must hold most of the job (a paste of one record says nothing of the rest)
    return unlisted if listed and 2 * len(unlisted) < len(expected) and max(expected) < 64 else set()


def _explains_a_stop(kb: KnowledgeBase, entry_id: str) -> bool:
    """The entry explains a late rank and not a lost one (its rankless symptom lines are the
    launcher's word that the job was stopped while stuck)."""
    explains = {x.value for x in kb.get(entry_id).explains}
    return "straggler" in explains and "dead-peer" not in explains


def _wait_sites(events: list[Event], symptom_lines: set[tuple[str, int]]) -> dict[int, str]:
    """Each rank's line of user code where its last traceback that reports a wait (a
    timeout, a lost peer, a traceback cut off in a collective) stopped."""
    out: dict[int, str] = {}
    for ev in sorted(events, key=time_key):
        if ev.role == TRACE and ev.rank is not None and ev.context and (ev.where in symptom_lines or is_cut_wait(ev)):
            if (site := user_call_site(ev.context, ev.rank)) is not None:
                out[ev.rank] = site
    return out


def _sender_reports(events: list[Event]) -> list[tuple[int | None, int]]:
    """(reporting rank, sender) of every report of a rejected message whose sender is known
    (``sender_rank``, set by attribution for gloo's ring all_reduce)."""
    return [(e.rank, s) for e in events if (s := e.cap_int("sender_rank")) is not None]


def _common_site(sites: dict[int, str], sender: int, reporter: int) -> bool:
    """The sender waited at the one line of user code where every other rank whose wait shows
    a line waited too (two ranks at least), and the reporter did not wait there."""
    others = {r: s for r, s in sites.items() if r != reporter}
    return sender in others and len(others) >= 2 and len(set(others.values())) == 1 and sites.get(reporter) != others[sender]


def _odd_waiters(sites: dict[int, str], expected: set[int]) -> set[int]:
    """The ranks that gave up waiting at lines of user code where no other rank waited, when
    every rank of the job (three at least) shows where it waited, one line is where the rest
    waited together (the only line more than one rank waited at), and they are no more than
    the ranks at that line: one rank in another collective, or the two sides of a send and
    receive that never matched while the others waited in the next collective. Only with every
    rank's site: in a job with several process groups, ranks wait in different groups'
    collectives at different lines, and a few ranks' sites say nothing about the rest."""
    if len(expected) < 3 or not expected <= set(sites):
        return set()
    counts: dict[str, int] = {}
    for site in sites.values():
        counts[site] = counts.get(site, 0) + 1
    shared = [site for site, n in counts.items() if n >= 2]
    if len(shared) != 1:
        return set()
    odd = {r for r, site in sites.items() if site != shared[0]}
    return odd if len(odd) <= counts[shared[0]] else set()


def _crash_sites(stacks) -> dict[int, str]:
    """Each rank whose faulthandler dump shows it died inside a collective: the line of user
    code that called it (innermost frame outside libraries). A rank that rejected a peer's
    message (gloo's size check aborts it) stood somewhere too: if that place is as unusual as
    the sender's, neither side is the odd one."""
    from ..ingest.stacks import in_collective

    out: dict[int, str] = {}
    for d in stacks:
        frames = d.main.frames if d.crash and d.rank is not None and d.main is not None else []
        if frames and in_collective(frames[:6]):
            for f in frames:
                if f.line is not None and not LIBRARY_PATH.search("/" + f.file.lstrip("/")):
                    out.setdefault(d.rank, f"{f.file}:{f.line} in {f.func}")
                    break
    return out


def _odd_site(sites: dict[int, str], rank: int) -> bool:
    """The rank waited at a line of user code where no other rank waited, while every other
    rank whose wait shows a line waited at one same line: it was in another collective."""
    site = sites.get(rank)
    others = {s for r, s in sites.items() if r != rank}
    return site is not None and len(others) == 1 and site not in others


def _coll_trace_conflict(events: list[Event]) -> dict[int, Event]:
    """NCCL's COLL trace ("AllGather: opCount 28d ... count N"): the ranks' lines at the
    first op counter where two ranks enqueued different collectives (op or count), as
    fingerprints with that counter as their sequence number. Traces that agree, or that
    only stop at different counters (a cut paste), give nothing."""
    by_count: dict[int, dict[int, Event]] = {}
    for e in events:
        if e.role != "context" or e.rank is None or "op_count" not in e.captures:
            continue
        try:
            n = int(e.captures["op_count"], 16)
        except ValueError:
            continue
        by_count.setdefault(n, {}).setdefault(e.rank, e)
    for n in sorted(by_count):
        at = by_count[n]
        if len(at) >= 2 and len({(e.captures.get("op"), e.captures.get("value")) for e in at.values()}) > 1:
            out = {}
            for r, e in at.items():
                out[r] = e.copy()
                out[r].captures["seq"] = str(n)
            return out
    return {}


def is_cut_wait(ev: Event) -> bool:
    """A traceback cut off in a barrier or a collective (attribution.py): the rank was
    waiting for its peers there; the exception it would have raised is not shown."""
    return ev.role == TRACE and "waiting" in ev.captures


def _is_own_failure(ev: Event, symptom_lines: set[tuple[str, int]]) -> bool:
    """A line that shows a failure of the rank that printed it: a knowledge-base cause
    (not the launcher's line about its exit), a Python exception or a C++ abort — unless
    the same line is a report of waiting for, or losing, a peer."""
    if ev.role == "cause":
        return "launcher" not in ev.captures
    if ev.role == TRACE and ev.signature in ("python-exception", "cpp-backtrace"):
        name = ev.captures.get("value", "")
        return ev.where not in symptom_lines and not LAUNCHER_EXCEPTIONS.search(name) and not is_cut_wait(ev)
    if ev.role == WARNED:  # a NCCL WARN line no entry knows (not one that reports a lost peer)
        return ev.where not in symptom_lines
    if ev.role == FATAL:
        # "terminate called after throwing ..." whose what() just below is a timeout or lost
        # peer report: the abort is how the wait ended, not a failure of the rank's own
        return ev.where not in symptom_lines and not any((ev.source, ev.line + d) in symptom_lines for d in (1, 2, 3))
    return False


def _order_key(e: Event) -> tuple:
    return (e.ts if e.ts is not None else math.inf, e.source, e.line)


def peer_report(kb: KnowledgeBase, failures: list[Event]) -> Event | None:
    """The report of what a peer sent (a signature with ``reports_peer``: gloo's size check),
    when it and the abort block around it are all of ``failures`` (one rank's, or those no rank
    could be given): those lines say what reached the process, not that it strayed."""
    reports = [f for f in failures if about_peer(kb, f)]
    return reports[0] if reports and all(same_block(f, reports, failures) for f in failures) else None


def same_block(first: Event, lines: list[Event], failures: Sequence[Event] = ()) -> bool:
    """The line is one of ``lines`` of its rank, or in the abort / traceback block they are
    in ("terminate called ..." just above its "what(): ..." line). In a console where several
    ranks print at once the block's lines lie apart: given the rank's ``failures``, a line of
    ``lines`` is in the block too when no failure line of that rank (in that source) lies
    between the two, within a screen (40 lines)."""
    for e in lines:
        if e.rank != first.rank or e.source != first.source:
            continue
        lo, hi = sorted((first.line, e.line))
        if hi - lo <= 3:
            return True
        if hi - lo <= 40 and failures and not any(
                f.rank == first.rank and f.source == first.source and lo < f.line < hi for f in failures):
            return True
    return False


def primary_failure(rw: RankRow) -> Event | None:
    """The rank's first failure of its own, unless it only came after the rank had
    itself reported waiting (then it is what the wait led to). Its first wait line decides,
    or any of its reports of a lost peer: a report may be printed twice (a console line
    without a time, the error file's copy with one), and only some copies can be put in
    order with the failure; a rank that lost a peer and then died (an abort on the way out)
    died of the loss."""
    first_wait = rw.waits[0] if rw.waits else None
    for f in rw.failures:
        if order(first_wait, f) != -1 and not _lost_before(rw, f):
            return f
    return None


def _lost_before(rw: RankRow, f: Event) -> bool:
    """The rank reported losing a peer before its failure line ``f`` (any copy of the report)."""
    return any(order(w, f) == -1 for w in rw.losses)


def _after_loss(rw: RankRow) -> bool:
    """Every failure line of the rank came after it reported losing a peer."""
    return bool(rw.losses and rw.failures) and all(_lost_before(rw, f) for f in rw.failures)


def _end_of(rw: RankRow, sigterm_pids: set[int], sigterm_by_source: dict[str, set[int]], witness: bool = False) -> End:
    rec = rw.exit
    if rec is None or rec.exitcode is None:
        return End.unknown
    code = rec.exitcode
    if code == 0:
        return End.clean
    if code == -15 and _sigterm_from_outside(rec, sigterm_by_source):
        return End.own_death
    if code == -15 or rec.killed_by_launcher or (rec.pid is not None and rec.pid in sigterm_pids and code < 0 and code != -9):
        return End.terminated
    if (rw.waits and not rw.failures) or _after_loss(rw) or witness:
        # it raised (exit 1) or aborted (-6, the NCCL watchdog) after its own timeout or a
        # lost peer (its failure lines all came after it reported the loss), or on a peer's
        # mismatched message: it died of the collective failure, not of its own
        return End.died_waiting
    return End.own_death


_ABORTED_TOGETHER = 10.0  # seconds between launcher records of aborts that ended one wait


def _exit_time(rec) -> float | None:
    """When a launcher's record says the worker ended ("2026-05-20_06:32:05"), in seconds."""
    try:
        return datetime.strptime(rec.time or "", "%Y-%m-%d_%H:%M:%S").timestamp()
    except ValueError:
        return None


def _aborted_with_waiters(rows: dict[int, RankRow]) -> None:
    """A rank with no failure line of its own that exited by SIGABRT (-6) within
    _ABORTED_TOGETHER of a rank whose own SIGABRT ended its reported wait (the NCCL watchdog's
    abort after a collective timed out; torchrun may have sent it SIGTERM meanwhile) most likely
    died of the same timeout: its output is not in the logs (a launcher that shows only rank
    0's), and the watchdog ends every waiting rank this way at about the same moment. A rank
    that aborted by itself does so before the others' timeouts run out, not with them."""
    waited = [t for rw in rows.values() if rw.waits and not rw.failures and rw.exit is not None
              and rw.exit.exitcode == -6 and (t := _exit_time(rw.exit)) is not None]
    if not waited:
        return
    for rw in rows.values():
        if (rw.end == End.own_death and not rw.failures and not rw.waits and rw.exit is not None
                and rw.exit.exitcode == -6 and (t := _exit_time(rw.exit)) is not None
                and any(abs(t - w) <= _ABORTED_TOGETHER for w in waited)):
            rw.end = End.died_waiting


def _sigterm_from_outside(rec, sigterm_by_source: dict[str, set[int]]) -> bool:
    """A worker that died by SIGTERM although the launcher, in the file that records its death,
    lists the workers it sent SIGTERM to and this one is not among them: the signal came from
    outside the job (a node agent, a pre-emption, a kill by hand), which is how it died, not the
    launcher's teardown after another worker failed."""
    sent = sigterm_by_source.get(rec.source)
    return bool(sent) and rec.pid is not None and rec.pid not in sent and not rec.killed_by_launcher


def tail_events(events: list[Event]) -> list[Event]:
    return [e for e in events if e.role in (TAIL, ACTIVITY)]
