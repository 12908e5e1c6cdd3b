"""What the evidence says about one hypothesis, as named numbers.

Each feature is one piece of reasoning, written once and computed the same way for every
hypothesis: how strongly the entry's own lines fired, whether the claimed rank failed by
itself and first, how it ended, whether its peers lost it or waited for it, whether it
went quiet or kept working while they waited, whether its collective differs. The
features do not decide anything: ``scoring.py`` turns them into one score with weights
fitted on the labelled corpus (``make fit``).

All features are between 0 and 1 (counts are capped) so their weights can be compared.
"""

from __future__ import annotations

import bisect
import math
import re
from dataclasses import dataclass, field

from ..events import Event
from ..kb.loader import KnowledgeBase
from .attribution import ACTIVITY, FATAL, TRACE
from .hypotheses import MISMATCH_CLASSES, STRONG, Hypothesis, Kind, desync_strength, main_process_busy, most_named, named_by_peers, smaller_side, unnamed_failures_cut
from .ranktable import (
    FR_HANG, FR_MISMATCH, NUMERIC_CLASS, End, RankRow, RankTable, about_peer, fingerprint_minority, fingerprints_ahead,
    first_collective_hang, first_collective_stated, only_losses, order, primary_failure, reports_lost_peer, same_block,
    same_clock, warning_record,
)

# name -> what it means (the order is the order of the weight vector)
FEATURES: dict[str, str] = {
    # the entry's own lines, anywhere
    "entry_cause": "strongest weight of the entry's cause lines that fired (0 when none)",
    "entry_strong": "a cause line of the entry with weight >= 0.8 fired",
    "entry_signatures": "how many of the entry's cause/symptom signatures fired (capped at 4, /4)",
    "entry_context": "how many of the entry's context signatures fired (capped at 3, /3)",
    "entry_symptom_only": "the entry fired only symptom lines (timeouts, lost peers)",
    "entry_none": "none of the entry's lines fired (it is proposed as a finding's generic explanation)",
    "entry_beside_cause": "the entry fired only symptom lines, while another entry's strong cause line (weight >= 0.8) fired in the same run: the symptom may be that cause's consequence",
    "entry_displaced": "none of the entry's lines fired (it is a finding's fallback), while another entry that explains the same finding has lines of its own here",
    "entry_launcher_only": "the entry's cause lines are all the launcher's lines about an exit",
    "entry_repeats": "the entry's cause comes from a line that kept repeating",
    "entry_warned": "every cause line of the entry is a record the program printed at warning level (glog's W, a WARNING record, a Python warning): it said it carries on",
    # how it was proposed
    "kind_own": "proposed from the entry's own cause lines",
    "kind_symptom": "proposed from the entry's symptom lines alone",
    "kind_desync": "proposed as an explanation of ranks in different collectives",
    "kind_straggler": "proposed as an explanation of a rank missing, silent or busy while the others wait",
    "kind_dead_peer": "proposed as an explanation of peers losing a rank",
    "kind_first": "proposed as an explanation of a hang in the job's first collective",
    "kind_generic": "proposed for a failure line no entry names",
    "kind_generic_framed": "proposed for an exception no entry names whose traceback passes through the code this entry is about (its traceback_frames), or raised right after the rank said it was doing what this entry is about (its activity_lines)",
    "generic_cut": "proposed for a failure line no entry names, and every such line is a traceback cut off before its exception line (or a backtrace without its message): the frames say where it failed, not what",
    "generic_beside_cause": "proposed for a failure line no entry names (an unknown or cut-off exception, an abort), while another entry's strong cause line (weight >= 0.8) fired in the same run: the unknown failure may be that cause's own report",
    # the cross-rank finding the entry explains, as strong as the table shows it
    "finding_desync": "the entry explains a desync, and the reports, fingerprints, dumps or lines show one",
    "finding_fr_mismatch": "the entry explains a desync, and the Flight Recorder dumps show the ranks' collectives differ",
    "finding_absent": "the entry explains a straggler/lost peer, and the ranks' timeout reports agree while some rank never reports",
    "finding_lost_peer": "the entry explains a lost peer, and peers report losing a rank",
    "finding_lost_not_late": "the entry explains a late rank, not a dead one, yet peers report losing a rank (a closed connection, a remote process that exited)",
    "finding_quiet": "the entry explains a straggler, and some rank went quiet early or worked on while the others waited",
    "finding_first_collective": "the entry explains a hang in the job's first collective, and every timeout report is at SeqNum 0 or 1",
    "finding_first_stated": "the entry explains a hang in the job's first collective, and the job was said to have hung (--hung) before any rank printed a step, a timeout or a failure",
    "stop_alone": "the entry's lines include a stop from outside (a signature with stop: a scheduler's time limit, a launcher's death signal, a person's Ctrl-C), and the run's only failure lines are such stops: no rank failed, waited or timed out, no other line of any entry fired, and nobody said the job hung - the stop says the run was ended, not that it had stopped making progress",
    "stated_hang": "no line shows a failure or a timeout: the job was only said to have hung (--hung, or watch --hung-after saw no line for that long), so the answer rests on where the logs end",
    "finding_p2p_wait": "the entry explains ranks waiting in send/recv on each other, and stack dumps show such a cycle",
    "finding_fr_hang": "the entry explains a straggler/lost peer, and the Flight Recorder shows ranks behind or stuck",
    # the claimed rank(s)
    "claim": "the hypothesis names where it started",
    "claim_set": "it names more than one rank (several started it together)",
    "claim_job_share": "the share of the job's known ranks that a claim of two or more ranks names (a claim of nearly every rank says where nothing started)",
    "claim_entry_here": "the entry's lines fired on the claimed rank",
    "claim_entry_only_here": "the entry's cause fired on the claimed rank(s) and on no other",
    "claim_entry_first": "the entry's line is the claimed rank's first own failure (a chained error later does not count)",
    "claim_own_failure": "the claimed rank shows a failure of its own (exception, abort, cause line, death)",
    "claim_sole_failure": "the claimed rank(s) and no other failed by themselves",
    "claim_first": "the claimed rank's own failure came before every other rank's, as far as times or line order tell",
    "claim_preceded": "another rank failed by itself before the claimed rank did",
    "claim_waited_first": "the claimed rank itself reported a timeout or a lost peer before (or without) failing by itself",
    "claim_exit_odd": "the launcher's exit records set the claimed ranks apart: they share an exit code no other rank has, while the others (two or more) all share another (a rank stopped with SIGTERM among ranks whose watchdogs aborted them, a rank that raised among ranks stopped)",
    "claim_own_death": "the launcher saw the claimed rank die by itself (non-zero exit or a signal not sent by the launcher)",
    "claim_died_waiting": "the claimed rank exited after reporting its own timeout or lost peer (what it waited for killed it)",
    "claim_own_unbacked": "an own-failure hypothesis whose claimed rank shows no failure line of its own (only the launcher's exit record)",
    "claim_warned": "the claimed ranks' own failures are records printed at warning level (the program said it carries on), not an exception, an error record or a death",
    "claim_failure_cut": "the claimed rank's failure lines include a traceback cut off before its exception line (or a backtrace without its message) and no exception line: what it died of is not shown",
    "claim_terminated": "the launcher stopped the claimed rank (SIGTERM, or SIGKILL after SIGTERM)",
    "claim_root_exit": "torchrun's 'Root Cause (first observed failure)' names the claimed rank",
    "claim_root_own_death": "torchrun's Root Cause names the claimed rank and it died by itself without having waited for a peer first",
    "claim_accused": "share of the accusations (peers naming the rank they lost) that name the claimed rank",
    "claim_minority": "the claimed ranks are the ones whose watchdog reports are the odd ones out (different collective, SeqNum or counters), times how clear that is (a partial match counts by overlap)",
    "claim_absent": "the claimed ranks are the ones that never report the timed-out collective every other rank reports (a partial match counts by overlap)",
    "claim_fingerprint": "the claimed ranks are the ones whose last collective fingerprint (DETAIL) differs from the majority's (by overlap)",
    "claim_fingerprint_ahead": "the claimed rank's last collective fingerprint has a higher sequence number than every other rank's",
    "claim_died_not_late": "the entry explains a late rank, not a dead one, yet the claimed rank died by itself (the launcher saw it, or its own exception, abort or signal line)",
    "claim_gone_not_late": "peers report the claimed rank gone (a closed or reset connection, a lost store), yet the entry explains a late rank, not a dead one",
    "claim_named": "mismatch messages name the claimed rank as the other side",
    "claim_most_named": "every rank reports the entry's mismatch, and more than half of the others name the claimed rank as the one that differs (it names one of them)",
    "claim_smaller_side": "the ranks that report a mismatch and those that do not are split unevenly, and the claim is the smaller side",
    "claim_reporter_only": "the claimed rank's own failure is only its report of a collective mismatch (either side of a mismatch can be the one to report it)",
    "claim_sender_in_step": "the claimed rank rejected a message (gloo's size check) from a sender that waited at the line where every other waiting rank waited, and it did not: its own op was the odd one",
    "claim_verdict": "a line of the entry that compared every rank's collective history (signature names_culprit: rankdoctor guard) names the claimed rank as where they diverged",
    "claim_odd_sender": "the entry explains ranks in different collectives, and the claimed rank sent the message a peer's size check rejected (gloo's ring all_reduce) while waiting at a line of user code where no other rank waited (the others all at one line): it is the side that strayed",
    "claim_reported_odd_sender": "the claimed rank's line reports what a peer sent (gloo's size check), and that peer waited at a line of user code where no other rank waited: the peer strayed, the claimed rank only received its message",
    "claim_main_busy": "the claimed rank is rank 0, which reports no wait, while lines of long work (progress, checkpoint writes) carry no rank: frameworks print those from the main process",
    "claim_stack_odd": "stack dumps show the claimed ranks' main threads somewhere else than most ranks' (by overlap)",
    "claim_p2p_wait": "stack dumps (with call arguments) show the claimed ranks blocked in send/recv on each other, a cycle nobody on it can leave (by overlap)",
    "claim_ras_dead": "NCCL RAS reports the claimed ranks' processes dead or unresponsive, or has no data from them (by overlap)",
    "claim_ras_behind": "NCCL RAS shows the claimed ranks' collective counts stuck between two snapshots, or behind the other ranks' while those wait (by overlap)",
    "claim_quiet": "the claimed rank stopped working well before the others (log of the gap, 10 min = 1)",
    "claim_late": "the claimed rank kept working after every other rank had stopped (log of the gap)",
    "claim_behind": "the claimed rank's step counter is behind every other rank's",
    "claim_behind_desync": "the entry explains ranks in different collectives and the claimed rank's step counter is behind every other rank's",
    "claim_working": "the claimed rank's last line is a line of work with a step counter, and it neither failed nor reported waiting, while other ranks waited",
    "claim_blocked_apart": "the entry explains ranks in different collectives, and the claimed ranks are the smaller of two sides blocked apart: the ranks that waited in a collective, and the ranks that stopped together after a line of work the waiting ones never got to",
    "claim_stopped_together": "the entry explains a late rank, and the claimed ranks are among ranks that stopped together after one line of work the waiting ranks never got to (blocked, not busy)",
    "claim_fr_mismatch": "the Flight Recorder dumps show the claimed rank's collectives differ from the others'",
    "claim_fr_behind": "the claimed ranks are the ones the Flight Recorder dumps show behind, stuck or without a dump while the others wait (by overlap)",
    "claim_outlived": "the claimed rank was left waiting by peers that ended without any failure, launcher stop or silence, having counted more steps: they finished, so it was in a collective they never issued",
    "claim_left_clean": "the claimed rank ended without any failure, launcher stop or silence, ahead in steps of a rank that lost it (it finished; it did not crash or lag)",
    "claim_shared_failure": "share of the other ranks that failed by themselves with the claimed rank's own exception, word for word (the program fails the same way everywhere; who printed it first is chance)",
    "claim_numeric_first": "the claimed rank printed NaN/inf/overflow before any other rank",
    "claim_unseen": "the claimed rank printed nothing at all",
    "claim_job_scope": "the entry is job-wide (every rank fails the same way), yet a rank is named",
    "claim_job_scope_sole": "the entry is job-wide, but the claimed rank is the only one that failed by itself",
    "others_waiting": "share of the other ranks that report waiting for or losing a peer (what the claim explains)",
    "others_failed": "share of the other ranks that failed by themselves (what the claim does not explain)",
    "claim_explains_all": "the claimed rank is the only one that failed by itself, times the share of the others that report waiting for or losing a peer",
    # no rank named
    "norank_job_scope": "the entry is job-wide and no rank is named",
    "norank_spread": "the entry's cause fired on two or more ranks",
    "norank_unranked": "none of the entry's lines can be given a rank (for an unknown failure's answer: the run's failure lines are all rankless)",
    "norank_unexplained_failure": "some rank failed by itself, or a failure line no rank could be given fired, with a line that is not this entry's (the answer leaves it unexplained)",
    "norank_first_known": "the entry's cause fired on two or more ranks and the timestamps show one of them first",
    "norank_failed_share": "the share of the job's known ranks that failed by themselves (an exception, an abort, a death of their own), when two or more did: failing everywhere at once is the job's failure, not one rank's",
    "norank_same_failure": "an answer from failure lines (not from symptoms alone) when two or more ranks failed by themselves (or, where no rank did, two or more rankless tracebacks ended), every one of them with the same exception, word for word (the program fails the same way everywhere)",
    "norank_numeric_first": "a rank printed NaN/inf/overflow before any other rank (so a rank could be named)",
    "norank_most_named": "the ranks report the entry's mismatch and most of them name one rank as the one that differs (so a rank could be named)",
}

# the finding a hypothesis was proposed for (hypotheses.FINDING_KIND the other way round)
_KIND_FINDING = {Kind.desync: "desync", Kind.straggler: "straggler", Kind.dead_peer: "dead-peer", Kind.first: "first-collective"}

# STRONG (hypotheses): a cause line of at least that weight is a strong one (entry_strong, entry_beside_cause)
_GAP_FULL = 600.0  # seconds: NCCL's default collective timeout; a gap this long counts fully
MIN_GAP = 2.0  # seconds: below this, ranks stopped together


@dataclass
class EntryLines:
    """What one entry's lines show, the same for every hypothesis about that entry: read
    once per entry, not once per hypothesis (a noisy run has thousands of lines of one
    entry and dozens of hypotheses)."""

    events: list[Event]
    causes: list[Event]
    weights: list[float]  # of its distinct cause signatures
    signatures: set[str]  # of its cause and symptom lines
    context_signatures: set[str]
    any_symptom: bool
    launcher_only: bool  # every cause line is the launcher's
    repeats: bool  # a cause line comes from a line that kept repeating
    ranks_with_lines: set[int | None]  # of its cause, symptom and context lines
    unranked: bool  # none of its lines has a rank
    cause_ranks: set[int]
    cause_places: set[tuple[str, int]]  # (source, line) of its cause lines
    places: set[tuple[int | None, str, int]]  # (rank, source, line) of all its lines
    first_by_time: int | None  # _first_by_time(causes)
    self_naming: list[Event]  # cause lines whose ``rank`` capture is the printing rank
    most_named: int | None = None  # hypotheses.most_named(causes): the rank most reporters name

    @property
    def strong(self) -> bool:
        """A cause line of weight >= STRONG fired."""
        return any(w >= STRONG for w in self.weights)


def entry_lines(kb: KnowledgeBase, evs: list[Event]) -> EntryLines:
    causes = [e for e in evs if e.role == "cause"]
    return EntryLines(
        events=evs,
        causes=causes,
        weights=[_weight(kb, e) for e in {e.signature: e for e in causes}.values()],
        signatures={e.signature for e in evs if e.role in ("cause", "symptom")},
        context_signatures={e.signature for e in evs if e.role == "context"},
        any_symptom=any(e.role == "symptom" for e in evs),
        launcher_only=all("launcher" in e.captures for e in causes),
        repeats=any("repeats" in e.captures for e in causes),
        ranks_with_lines={e.rank for e in evs if e.role in ("cause", "symptom", "context")},
        unranked=all(e.rank is None for e in evs),
        cause_ranks={e.rank for e in causes if e.rank is not None},
        cause_places={(e.source, e.line) for e in causes},
        places={(e.rank, e.source, e.line) for e in evs},
        first_by_time=_first_by_time(causes),
        self_naming=[e for e in causes if e.rank is not None and e.cap_int("rank") == e.rank],
        most_named=most_named(causes),
    )


@dataclass
class Context:
    """What every hypothesis of one run is compared against, computed once."""

    kb: KnowledgeBase
    table: RankTable
    by_entry: dict[str, EntryLines]
    failed: dict[int, Event]  # rank -> first own failure not preceded by its own wait
    waiting: set[int]
    quiet: dict[int, float]
    late: dict[int, float]
    behind: set[int]
    numeric_first: int | None
    accusations: dict[int, int]
    named: dict[int, int]
    fingerprint_odd: set[int]
    finding: dict[str, float]
    timeout: float  # seconds: the collective timeout the ranks waited out, else 600
    outlived: tuple[set[int], set[int]]  # ranks left waiting by peers that finished; those peers
    gone: dict[int, int]  # rank -> lines of peers that report it gone (connection closed/reset), not late
    main_busy: set[int]  # {0} when unranked lines of long work appear while other ranks wait
    desync_entries: frozenset[str]  # entries of the collective-desync class
    explainers: dict[str, frozenset[str]]  # entry id -> the findings it explains (of the entries whose lines fired)
    strong_causes: frozenset[str]  # entries with a strong cause line (EntryLines.strong) here
    unnamed_cut: bool  # every failure line no entry names is a traceback cut before its exception line
    stop_alone: bool = False  # the run's only failure lines are rankless stops from outside (_stop_alone)
    failure_text: dict[int, str] = field(default_factory=dict)  # rank -> its own failure's exception, word for word (_exception_text)
    known: frozenset[int] = frozenset()  # the job's ranks: those expected and those with a row
    failing: frozenset[int] = frozenset()  # ranks that failed by themselves: an own failure line, or a death of their own
    unranked_failed: tuple[Event, ...] = ()  # failure lines no rank could be given (not NCCL warnings)


def context(kb: KnowledgeBase, table: RankTable, events: list[Event]) -> Context:
    grouped: dict[str, list[Event]] = {}
    for e in events:
        if e.entry:
            grouped.setdefault(e.entry, []).append(e)
    by_entry = {entry: entry_lines(kb, evs) for entry, evs in grouped.items()}
    failed = {r: f for r, rw in table.rows.items() if (f := primary_failure(rw)) is not None}
    # a rank that failed by itself before it waited is not waiting on anyone: its waits followed its own failure
    waiting = {r for r, rw in table.rows.items() if rw.waits and r not in failed}
    quiet, late = quiet_gaps(table)
    return Context(
        kb, table, by_entry, failed, waiting, quiet, late, steps_behind(table), _numeric_first(table),
        table.accusations(), named_by_peers(events), fingerprint_minority(table), _findings(kb, table, events),
        timeout_seconds(table), outlived_peers(table), _gone(kb, events), main_process_busy(kb, table, events),
        frozenset(e.id for e in kb if e.class_ == "collective-desync"),
        {eid: frozenset(x.value for x in kb.get(eid).explains) for eid in by_entry},
        frozenset(eid for eid, ln in by_entry.items() if ln.strong),
        unnamed_failures_cut(kb, table, events),
        _stop_alone(kb, table, by_entry, failed, waiting),
        {r: t for r, f in failed.items() if (t := _exception_text(f)) is not None},
        frozenset(table.expected | set(table.rows)),
        frozenset(set(failed) | {r for r, rw in table.rows.items() if rw.end == End.own_death}),
        tuple(ev for ev in table.unranked_failures if ev.role in (TRACE, FATAL, "cause")),
    )


def _exit_odd(table: RankTable, rows: list[RankRow], others: set[int]) -> float:
    """1 when every claimed rank and every other rank has an exit code, the claimed ranks one
    code and the others (two or more) another."""
    mine = {rw.exit.exitcode if rw.exit else None for rw in rows}
    theirs = {table.rows[r].exit.exitcode if r in table.rows and table.rows[r].exit else None for r in others}
    return float(len(others) >= 2 and len(mine) == 1 and len(theirs) == 1 and None not in mine | theirs and mine != theirs)


_EXCEPTION = re.compile(r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Interrupt|Exit)\b.*")


def _exception_text(ev: Event) -> str | None:
    """The exception a failure line reports, from its type on ("RuntimeError: Input type (float)
    ..."), without the rank prefix or time in front: the same text on two ranks is one failure
    the program had everywhere. Numbers count: an out-of-memory message names its GPU and sizes,
    and blanking them was measured worse (cross-validated confident wrong 66 against 58 of 3516).
    None for a line that names no exception type (an abort, a launcher's record)."""
    m = _EXCEPTION.search(ev.text)
    return m.group(0).rstrip() if m else None


def _is_stop(kb: KnowledgeBase, ev: Event) -> bool:
    """A rankless line of a signature marked ``stop`` (the job was ended from outside)."""
    if ev.rank is not None or not ev.entry:
        return False
    sig = kb.signature(ev.entry, ev.signature)
    return sig is not None and sig.stop


def _stop_alone(kb: KnowledgeBase, table: RankTable, by_entry: dict[str, EntryLines], failed: dict[int, Event],
                waiting: set[int]) -> bool:
    """The run's only failure lines (cause and symptom lines of any entry) are stops from outside,
    no rank failed or waited, no failure line without a rank (an exception no entry names) is
    there, and the job was not said to have hung: what ended it is known, not whether it had
    stopped making progress before."""
    if failed or waiting or table.hung or table.unranked_failures:
        return False
    lines = [e for ln in by_entry.values() for e in ln.events if e.role in ("cause", "symptom")]
    return bool(lines) and all(_is_stop(kb, e) for e in lines)


_NO_LINES = EntryLines([], [], [], set(), set(), False, True, False, set(), True, set(), set(), set(), None, [])


def featurize(h: Hypothesis, cx: Context) -> dict[str, float]:
    entry = h.entry
    lines = cx.by_entry.get(entry.id, _NO_LINES)
    evs, causes = lines.events, lines.causes
    f: dict[str, float] = {}

    f["entry_cause"] = max(lines.weights, default=0.0)
    f["entry_strong"] = float(lines.strong)
    f["entry_signatures"] = min(len(lines.signatures), 4) / 4
    f["entry_context"] = min(len(lines.context_signatures), 3) / 3
    f["entry_symptom_only"] = float(bool(evs) and not causes and lines.any_symptom)
    f["entry_none"] = float(not evs)
    beside = bool(cx.strong_causes - {entry.id})  # another entry's strong cause line fired here
    f["entry_beside_cause"] = float(f["entry_symptom_only"] and beside)
    if not evs and h.kind in _KIND_FINDING:
        finding = _KIND_FINDING[h.kind]
        f["entry_displaced"] = float(any(
            eid != entry.id and finding in cx.explainers.get(eid, ()) for eid in cx.by_entry))
    f["entry_launcher_only"] = float(bool(causes) and lines.launcher_only)
    f["entry_repeats"] = float(lines.repeats)
    f["entry_warned"] = float(bool(causes) and entry.class_ != NUMERIC_CLASS and all(warned_cause(e) for e in causes))

    for k in Kind:
        f["kind_" + k.name] = float(h.kind == k)
    f["kind_generic_framed"] = float(h.kind == Kind.generic and bool(entry.traceback_frames or entry.activity_lines))
    f["generic_beside_cause"] = float(h.kind == Kind.generic and beside)
    f["generic_cut"] = float(h.kind == Kind.generic and cx.unnamed_cut)

    explains = {x.value for x in entry.explains}
    f["finding_desync"] = cx.finding["desync"] if "desync" in explains else 0.0
    f["finding_fr_mismatch"] = cx.finding["fr_mismatch"] if "desync" in explains else 0.0
    hang = explains & {"straggler", "dead-peer"}
    f["finding_absent"] = cx.finding["absent"] if hang else 0.0
    f["finding_lost_peer"] = cx.finding["lost_peer"] if "dead-peer" in explains else 0.0
    f["finding_quiet"] = cx.finding["quiet"] if "straggler" in explains else 0.0
    f["finding_lost_not_late"] = cx.finding["lost_peer"] if "straggler" in explains and "dead-peer" not in explains else 0.0
    f["finding_fr_hang"] = cx.finding["fr_hang"] if hang else 0.0
    f["finding_first_collective"] = cx.finding["first"] if "first-collective" in explains else 0.0
    f["finding_p2p_wait"] = cx.finding["p2p_wait"] if "p2p-wait" in explains else 0.0
    f["finding_first_stated"] = cx.finding["first_stated"] if "first-collective" in explains else 0.0
    f["stated_hang"] = cx.finding["stated"]
    f["stop_alone"] = float(cx.stop_alone and any(_is_stop(cx.kb, e) for e in evs))

    ranks = h.ranks
    if ranks:
        f.update(_claim(h, cx, lines))
    else:
        cause_ranks = lines.cause_ranks
        f["norank_job_scope"] = float(entry.scope.value == "job")
        f["norank_spread"] = float(len(cause_ranks) >= 2)
        # a failure no entry names is the generic entry's own line: where the run's failures are
        # all rankless, none of its lines can be given a rank either
        generic_unranked = h.kind == Kind.generic and not cx.failed and bool(cx.unranked_failed)
        f["norank_unranked"] = float((bool(evs) and lines.unranked) or generic_unranked)
        # failure lines this answer does not explain: a rank's own, or one no rank could be given
        # (three processes' tracebacks pasted without prefixes, then the scheduler's time limit)
        other = [*cx.failed.values(), *(() if h.kind == Kind.generic else cx.unranked_failed)]
        f["norank_unexplained_failure"] = float(any(ev.where not in lines.cause_places for ev in other))
        f["norank_first_known"] = float(len(cause_ranks) >= 2 and lines.first_by_time is not None)
        failing, known = cx.failing, cx.known
        f["norank_failed_share"] = len(failing) / len(known) if len(failing) >= 2 and known else 0.0
        # the same exception word for word from several processes: ranks' own failures, and
        # rankless tracebacks (each its own block) when no rank failed
        said = [*cx.failure_text.values()] if cx.failed else [_exception_text(ev) for ev in cx.unranked_failed if ev.role == TRACE]
        n = len(cx.failed) if cx.failed else len(said)
        f["norank_same_failure"] = float(h.kind in (Kind.own, Kind.generic) and n >= 2 and len(said) == n
                                         and None not in said and len(set(said)) == 1)
        f["norank_numeric_first"] = float(cx.numeric_first is not None and entry.class_ == NUMERIC_CLASS)
        f["norank_most_named"] = float(entry.class_ in MISMATCH_CLASSES and lines.most_named is not None)
    return {k: f.get(k, 0.0) for k in FEATURES}


def _claim(h: Hypothesis, cx: Context, lines: EntryLines) -> dict[str, float]:
    table = cx.table
    causes = lines.causes
    ranks = set(h.ranks)
    rows = [table.row(r) for r in sorted(ranks)]
    known = cx.known
    others = known - ranks
    explains = {x.value for x in h.entry.explains}
    f: dict[str, float] = {"claim": 1.0, "claim_set": float(len(ranks) > 1)}
    f["claim_job_share"] = len(ranks) / len(known) if len(ranks) > 1 and known else 0.0
    f["claim_entry_here"] = float(ranks <= lines.ranks_with_lines)
    cause_ranks = lines.cause_ranks
    f["claim_entry_only_here"] = float(bool(cause_ranks) and cause_ranks <= ranks)
    f["claim_entry_first"] = float(all(_entry_first(cx.failed.get(r), lines.places) for r in ranks))
    f["claim_own_failure"] = float(all(r in cx.failed or table.row(r).end == End.own_death for r in ranks))
    failing = cx.failing
    f["claim_sole_failure"] = float(failing == ranks and bool(others))
    firsts = [cx.failed[r] for r in ranks if r in cx.failed]
    rivals = [e for r, e in cx.failed.items() if r not in ranks]
    if firsts and rivals:
        earliest = min(firsts, key=_tkey)
        rel = [order(earliest, e) for e in rivals]
        f["claim_first"] = float(all(x == -1 for x in rel))
        f["claim_preceded"] = float(any(order(e, earliest) == -1 for e in rivals))
    f["claim_waited_first"] = float(all(rw.waits and (rw.rank not in cx.failed) for rw in rows))
    f["claim_exit_odd"] = _exit_odd(table, rows, others)
    own = {cx.failure_text[r] for r in ranks if r in cx.failure_text}
    if own and others:
        f["claim_shared_failure"] = sum(cx.failure_text.get(r) in own for r in others) / len(others)
    f["claim_own_death"] = float(all(rw.end == End.own_death for rw in rows))
    f["claim_died_waiting"] = float(all(rw.end == End.died_waiting for rw in rows))
    f["claim_own_unbacked"] = float(h.kind in (Kind.own, Kind.generic) and not any(r in cx.failed for r in ranks))
    f["claim_warned"] = float(bool(firsts) and len(firsts) == len(ranks) and all(warned_cause(e) for e in firsts)
                              and not any(rw.end == End.own_death for rw in rows))
    f["claim_failure_cut"] = float(bool(rows) and all(_only_cut(rw) for rw in rows))
    f["claim_terminated"] = float(any(rw.end == End.terminated for rw in rows))
    f["claim_root_exit"] = float(any(rw.exit is not None and rw.exit.root_cause for rw in rows))
    f["claim_root_own_death"] = float(f["claim_root_exit"] and all(rw.end == End.own_death and not rw.waits for rw in rows))
    total_acc = sum(cx.accusations.values())
    if total_acc:
        f["claim_accused"] = sum(cx.accusations.get(r, 0) for r in ranks) / total_acc
    coll = table.coll
    if coll and coll.kind == "desync" and coll.culprits:
        f["claim_minority"] = coll.strength * _cover(ranks, set(coll.culprits))
    if coll and coll.kind == "absent":
        # counted in full where these logs show at least half of the job's ranks, less where they
        # show fewer: two ranks' lines from an eight-rank job cannot single one of the two out
        shown = len(coll.reporting) + len(coll.culprits)
        f["claim_absent"] = _cover(ranks, set(coll.culprits)) * min(1.0, 2 * shown / max(1, shown + len(coll.unseen)))
    f["claim_fingerprint"] = _cover(ranks, cx.fingerprint_odd)
    f["claim_fingerprint_ahead"] = float(ranks <= fingerprints_ahead(table))
    late_only = "straggler" in explains and "dead-peer" not in explains
    f["claim_died_not_late"] = float(late_only and all(rw.end == End.own_death or rw.rank in cx.failed for rw in rows))
    gone = sum(cx.gone.get(r, 0) for r in ranks)
    if gone and "dead-peer" not in explains:
        f["claim_gone_not_late"] = gone / max(1, sum(cx.gone.values()))
    f["claim_most_named"] = float(h.entry.class_ in MISMATCH_CLASSES and len(ranks) == 1
                                  and lines.most_named in ranks)
    total_named = sum(cx.named.values())
    if total_named:
        f["claim_named"] = sum(cx.named.get(r, 0) for r in ranks) / total_named
    f["claim_main_busy"] = float(ranks == {0} and 0 in cx.main_busy)
    f["claim_stack_odd"] = _cover(ranks, table.stack_odd)
    f["claim_p2p_wait"] = _cover(ranks, table.p2p_cycle)
    f["claim_ras_dead"] = _cover(ranks, table.ras_dead)
    f["claim_ras_behind"] = _cover(ranks, table.ras_behind)
    f["claim_quiet"] = min(_gap_score(cx.quiet.get(r, 0.0), cx.timeout) for r in ranks)
    f["claim_late"] = min(_gap_score(cx.late.get(r, 0.0), cx.timeout) for r in ranks)
    f["claim_behind"] = float(ranks <= cx.behind)
    # ranks in different collectives: the one that stopped short of its peers' progress is the
    # one in the op they never issued (whichever side of the pair reported the mismatch)
    f["claim_behind_desync"] = f["claim_behind"] * float("desync" in explains)
    f["claim_blocked_apart"] = float("desync" in explains and ranks == smaller_side(table))
    f["claim_stopped_together"] = float("straggler" in explains and bool(table.stopped_side) and ranks <= table.stopped_side)
    f["claim_working"] = float(bool(others & cx.waiting) and all(
        rw.progress is not None and not rw.waits and not rw.own_failure for rw in rows))
    if h.entry.class_ in MISMATCH_CLASSES and table.expected:
        # a report about an unnamed peer (gloo's size check) comes from whichever rank
        # received the odd op, not from one side of the job: it splits no sides
        reporters = {e.rank for e in causes if e.rank is not None and not about_peer(cx.kb, e)} & table.expected
        # only a rank whose lines are here can be seen not to report it
        silent = (table.expected & table.seen) - reporters
        if reporters and silent and len(reporters) != len(silent):
            small = reporters if len(reporters) < len(silent) else silent
            f["claim_smaller_side"] = float(ranks == small)
    desync_entries = cx.desync_entries
    f["claim_reporter_only"] = float(
        h.entry.id in desync_entries  # (then every cause line is a desync entry's)
        and all(r in cx.failed and same_block(cx.failed[r], causes, table.rows[r].failures) for r in ranks)
        and not f.get("claim_minority") and not f.get("claim_named")
        # a line that names the rank in its own words ("rank 1 issued ...") is a verdict about
        # that rank, not the printing rank's report of what reached it
        and not any(_names_own_rank(e, ranks) for e in lines.self_naming)
    )
    f["claim_verdict"] = float(any(_names_own_rank(e, ranks) and _names_culprit(cx.kb, e) for e in lines.self_naming))
    f["claim_odd_sender"] = float("desync" in explains and len(ranks) == 1 and ranks <= table.odd_senders)
    f["claim_sender_in_step"] = float("desync" in explains and len(ranks) == 1 and ranks <= table.in_step_senders_of)
    f["claim_reported_odd_sender"] = float(bool(table.odd_senders) and any(
        e.rank in ranks and (s := e.cap_int("sender_rank")) in table.odd_senders and s not in ranks for e in causes))
    f["claim_fr_mismatch"] = float(all(rw.fr_kinds & FR_MISMATCH for rw in rows))
    f["claim_fr_behind"] = _cover(ranks, {r for r, rw in table.rows.items() if rw.fr_kinds & FR_HANG})
    outlived, left = cx.outlived
    f["claim_outlived"] = float(ranks <= outlived)
    f["claim_left_clean"] = float(ranks <= left)
    f["claim_numeric_first"] = float(cx.numeric_first is not None and cx.numeric_first in ranks)
    f["claim_unseen"] = float(all(r not in table.rows for r in ranks))
    f["claim_job_scope"] = float(h.entry.scope.value == "job")
    f["claim_job_scope_sole"] = f["claim_job_scope"] * f["claim_sole_failure"]
    if others:
        f["others_waiting"] = len(others & cx.waiting) / len(others)
        # a numeric failure spreads: once the claimed rank went non-finite first, the gradient
        # all-reduce hands NaN to every other rank, so their later NaN lines are what the
        # claim explains, not failures of their own
        spread = {r for r, rw in table.rows.items() if rw.numeric is not None} if (
            h.entry.class_ == NUMERIC_CLASS and f["claim_numeric_first"]) else set()
        f["others_failed"] = len(others & (failing - spread)) / len(others)
        f["claim_explains_all"] = f["claim_sole_failure"] * f["others_waiting"]
    return f


_NCCL_WARN = re.compile(r"NCCL WARN\b")


def warned_cause(ev: Event) -> bool:
    """A cause line the program printed as a record at warning level (``warning_record``): it
    said it carries on. Not NCCL's WARN, which is how NCCL reports its errors."""
    return ev.role == "cause" and warning_record(ev.text) and _NCCL_WARN.search(ev.text) is None


def _only_cut(rw: RankRow) -> bool:
    """The rank's failure lines include a traceback cut off before its exception line (or a
    C++ backtrace without its message) and no exception line: what it died of is not shown."""
    return any("cut" in e.captures for e in rw.failures) and not any(
        e.role == TRACE and "cut" not in e.captures for e in rw.failures)


def _names_own_rank(ev: Event, ranks: frozenset[int] | set[int]) -> bool:
    """A line of one of the claimed ranks that names that same rank in its own words (its
    ``rank`` capture): what it says is about the rank, not a report of what reached it."""
    return ev.rank in ranks and ev.cap_int("rank") == ev.rank


def _names_culprit(kb: KnowledgeBase, ev: Event) -> bool:
    sig = kb.signature(ev.entry, ev.signature)
    return sig is not None and sig.names_culprit


def _entry_first(first: Event | None, places: set[tuple[int | None, str, int]]) -> bool:
    """The entry fired on the line of the rank's first own failure, or on a line of the
    same traceback just before it (an exception's message is often matched a line above);
    ``places``: (rank, source, line) of the entry's lines."""
    if first is None:
        return False
    return any((first.rank, first.source, first.line - d) in places for d in range(4))


def _cover(claimed: set[int], group: set[int]) -> float:
    """How well the claimed ranks match a group a finding singles out (1: exactly those
    ranks; half of them, or twice as many: 0.5; none of them: 0)."""
    return len(claimed & group) / len(claimed | group) if group else 0.0


def _weight(kb: KnowledgeBase, ev: Event) -> float:
    sig = kb.signature(ev.entry, ev.signature)
    return sig.weight if sig is not None else 1.0


def _first_by_time(events: list[Event]) -> int | None:
    """The rank whose line came strictly before every other rank's, by timestamps of one
    clock (None when two ranks tie or the lines have no times)."""
    firsts: dict[int, float] = {}
    for e in events:
        if e.rank is not None and e.ts is not None:
            firsts[e.rank] = min(firsts.get(e.rank, math.inf), e.ts)
    if len(firsts) < 2 or len({ts >= 1e9 for ts in firsts.values()}) > 1:
        return None
    order_ = sorted(firsts.items(), key=lambda kv: kv[1])
    return order_[0][0] if order_[1][1] - order_[0][1] > 0 else None


def _tkey(e: Event) -> tuple:
    return (e.ts if e.ts is not None else math.inf, e.source, e.line)


def _gap_score(gap: float, full: float = _GAP_FULL) -> float:
    """A gap on a log scale, counting fully from ``full`` seconds: the job's collective
    timeout when the ranks report it (being a whole timeout ahead or behind is as clear
    as it gets), else NCCL's default of 10 minutes."""
    return 0.0 if gap < MIN_GAP else min(1.0, math.log1p(gap) / math.log1p(max(full, MIN_GAP + 1)))


def timeout_seconds(table: RankTable) -> float:
    """The collective timeout the ranks report waiting out (the shortest), else 10 min."""
    ms = [t for rw in table.rows.values() for e in rw.waits if (t := e.cap_int("timeout_ms")) is not None and t > 0]
    return min(ms) / 1000.0 if ms else _GAP_FULL


def quiet_gaps(table: RankTable) -> tuple[dict[int, float], dict[int, float]]:
    """Seconds by which each rank's last work came before the other ranks' (quiet early:
    it hung, died or fell behind) and after every other rank's (late: it was still busy
    while they waited). Only ranks whose last work has a time on one clock count."""
    last: dict[int, float] = {}
    for r, rw in table.rows.items():
        ev = rw.last_active or _last_non_wait(rw)
        if ev is not None and ev.ts is not None:
            last[r] = ev.ts
    if len(last) < 2:
        return {}, {}
    clocks = {ts >= 1e9 for ts in last.values()}
    if len(clocks) > 1:
        return {}, {}
    quiet: dict[int, float] = {}
    late: dict[int, float] = {}
    # the median and the maximum of the OTHER ranks' times, read off one sorted list (the
    # list without one copy of this rank's time), so a thousand ranks cost one sort
    ordered = sorted(last.values())
    n = len(ordered)
    m = n - 1  # how many others
    for r, ts in last.items():
        at = bisect.bisect_left(ordered, ts)  # the copy of ts left out
        lo, hi = _nth_other(ordered, at, (m - 1) // 2), _nth_other(ordered, at, m // 2)
        quiet[r] = max(0.0, (lo + hi) / 2 - ts)
        late[r] = max(0.0, ts - _nth_other(ordered, at, m - 1))
    # a rank is "quiet" only against a majority that went on: with two ranks, both are
    # measured against each other, so only the earlier one gets a gap
    return quiet, late


def _nth_other(ordered: list[float], left_out: int, k: int) -> float:
    """The k-th smallest of ``ordered`` once the element at ``left_out`` is removed."""
    return ordered[k] if k < left_out else ordered[k + 1]


def _gone(kb: KnowledgeBase, events: list[Event]) -> dict[int, int]:
    """Ranks that peers report gone: lines of entries that explain a lost peer and not a late
    one (a closed or reset connection) naming the other side."""
    out: dict[int, int] = {}
    for e in events:
        pr = e.cap_int("peer_rank")
        if e.role != "symptom" or pr is None or pr == e.rank or not e.entry:
            continue
        explains = {x.value for x in kb.get(e.entry).explains}
        if "dead-peer" in explains and "straggler" not in explains:
            out[pr] = out.get(pr, 0) + 1
    return out


def left_early(table: RankTable) -> set[int]:
    """Ranks that left the job early: each ran to a clean exit (the launcher's summary of the
    failure leaves it out) with no failure and no wait of its own, while every other rank
    either failed waiting for a peer or losing one (one at least lost its connection: the
    exit closed it) or was stopped by the launcher. A rank that exits while its peers still
    issue collectives had fewer steps to run than they did (uneven inputs, a loop bound that
    differs per rank, a return on some condition): a desync that started on it. At most half
    of the job. Where no rank exited cleanly (the launcher stopped them all), the ranks that
    stopped working before the others lost a connection (``_left_before_loss``)."""
    gone = {r for r, rw in table.rows.items() if rw.end == End.clean and not rw.failures and not rw.waits}
    others = [rw for r, rw in table.rows.items() if r not in gone]
    if not gone or not others or 2 * len(gone) > len(table.rows):
        return _left_before_loss(table)
    if not any(rw.lost_peer for rw in others):
        return set()
    if not all((rw.waited and not rw.failures) or rw.end == End.terminated for rw in others):
        return set()
    return gone


def _left_before_loss(table: RankTable) -> set[int]:
    """Ranks that left while their peers were still in a collective with them, where the
    launcher then stopped everyone (so no rank's exit is clean): the ranks that only waited
    report nothing but lost connections (a peer's process exited), and of the ranks with no
    failure and no wait, the ones whose last line of work came before every such report the
    logs can place beside it (by time, or by line order in one file), while the others' came
    after one of them (they worked on: not the ones lost). At most half of the job, and only
    where some rank worked on past the loss."""
    waiting = [rw for rw in table.rows.values() if rw.waits and not rw.failures]
    if not waiting or not all(only_losses(rw) for rw in waiting):
        return set()
    # (a rank that died by itself, even without a line of its own, is where the loss came from)
    if any(rw.failures or rw.end == End.own_death for rw in table.rows.values()):
        return set()
    losses = [ev for rw in waiting for ev in rw.losses]
    before, after = set(), set()
    for rw in table.rows.values():
        if rw.waits:  # (no rank failed: checked above)
            continue
        placed = [o for ev in losses if (o := order(rw.last_active, ev)) is not None]
        if not placed:
            return set()  # a rank the logs cannot place: no answer
        (after if any(o >= 0 for o in placed) else before).add(rw.rank)
    if not before or not after or 2 * len(before) > len(table.rows):
        return set()
    return before


def outlived_peers(table: RankTable) -> tuple[set[int], set[int]]:
    """Ranks left waiting by peers that finished, and those peers.

    A rank that lost its peers (they closed the connection; it names them, or else every other
    rank counts), or timed out waiting for them, while each of them shows no failure of its
    own, was not stopped by the launcher, did not wait on anyone, did not go quiet before it
    and had counted more steps than it, was not left by a crash or a straggler: the peers ran
    their program to the end (closing their connections as they exited, or leaving the waiting
    rank to its timeout), so the waiting rank was in a collective they never issued (an extra
    collective: a desync that started on it), unless one rank finished and every other rank was
    left waiting for it. A timeout alone does not say the peers exited (a
    peer busy past the timeout leaves it too), so there each peer must also have exited cleanly
    (the launcher's exit 0) or printed its last line before the waiting rank's first timeout
    report (when that report has no time: within MIN_GAP of the waiting rank's last timed
    line); a busy peer's lines go on while the other waits.
    """
    waiting: set[int] = set()
    peers: set[int] = set()
    accusers = [rw for rw in table.rows.values() if (rw.accuses or rw.lost_peer or rw.waits) and rw.progress is not None]
    if not accusers:
        return waiting, peers
    quiet, _ = quiet_gaps(table)
    everyone = table.expected | set(table.rows)
    for rw in accusers:
        # a peer it does not name could be any other rank: then every other rank must have
        # finished, except those the launcher stopped: they were still running when it lost
        # its peer (torchrun stops the survivors after the first failure), so none of them
        # closed the connection
        stopped = {r for r, other in table.rows.items() if other.end == End.terminated}
        lost = rw.accuses or (everyone - {rw.rank} - stopped)
        if not lost:
            continue
        timed_out_only = not (rw.accuses or rw.lost_peer)
        bound = min((w.ts for w in rw.waits if w.ts is not None), default=None)
        if bound is None and rw.last_seen is not None and rw.last_seen.ts is not None:
            bound = rw.last_seen.ts + MIN_GAP
        finished = []
        for p in lost:
            peer = table.rows.get(p)
            finished.append(
                peer is not None and not peer.failures and not peer.waits
                and peer.end in (End.clean, End.unknown) and quiet.get(p, 0.0) < MIN_GAP
                and peer.progress is not None and peer.progress > rw.progress
                and (not timed_out_only or peer.end == End.clean or _ended_by(peer, bound))
            )
        if all(finished):
            waiting.add(rw.rank)
            peers |= lost
    # one rank finished and every other rank (two at least) was left waiting for it or lost it:
    # the odd one is the rank that finished (it issued a collective fewer: a batch it skipped, a
    # loop that ended sooner), not the many that were all in the same next collective (left_early
    # reads it)
    left = {r for r, other in table.rows.items() if other.waits or other.lost_peer}
    if waiting and len(peers) == 1 and len(left) >= 2 and left == set(table.rows) - peers:
        return set(), set()
    # the peers it lost stopped working before its loss report while the ranks that did not wait
    # worked on past it: at the loss the job had not finished; those peers left early (left_early
    # reads it), whichever side of a two-rank group issued the odd collective
    if waiting and peers and _left_before_loss(table) == peers:
        return set(), set()
    return waiting, peers


def _ended_by(rw: RankRow, ts: float | None) -> bool:
    """The rank's last line came no later than ``ts`` (both on one clock)."""
    last = rw.last_seen
    return ts is not None and last is not None and last.ts is not None and same_clock(last.ts, ts) and last.ts <= ts


def _last_non_wait(rw: RankRow) -> Event | None:
    return None if rw.last_seen is None or rw.last_seen in rw.waits else rw.last_seen


def steps_behind(table: RankTable) -> set[int]:
    """The ranks whose step counter is behind every other rank's. A rank that printed lines
    of work but no counter at all is behind too (it stopped before its first step) when
    more ranks print counters than not, or when it is the only one without a counter and
    a rank other than 0 prints one. Jobs that print progress on rank 0 only, or on one rank
    per node, have most ranks without a counter, and those are not behind."""
    prog: dict[int, float] = {r: rw.progress for r, rw in table.rows.items() if rw.progress is not None}
    silent = [r for r, rw in table.rows.items() if rw.progress is None and rw.last_active is not None]
    if prog and (len(prog) >= 2 and len(silent) < len(prog) or len(silent) == 1 and any(r != 0 for r in prog)):
        prog.update({r: -1 for r in silent})
    if len(prog) < 2:
        return set()
    lo = min(prog.values())
    others_lo = sorted(prog.values())[1]
    if lo < others_lo:
        return {r for r, p in prog.items() if p == lo}
    return set()


def _numeric_first(table: RankTable) -> int | None:
    """The rank that printed NaN/inf/overflow before every other rank that did. Steps decide
    first: a rank whose loss went non-finite a step before the others is where it started
    (DDP spreads it through the gradients at the next step), while ranks that go
    non-finite at the same step share the cause (the weights or the learning rate), however
    their lines are spread in time. Without steps, timestamps or one file's line order."""
    rows = [rw for rw in table.rows.values() if rw.numeric is not None]
    if len(rows) < 2:
        return rows[0].rank if rows and len(table.rows) > 1 else None

    def before(a, b) -> bool:
        if a.numeric_step is not None and b.numeric_step is not None:
            return a.numeric_step < b.numeric_step
        return order(a.numeric, b.numeric) == -1

    for rw in rows:
        if all(before(rw, other) for other in rows if other is not rw):
            return rw.rank
    return None


def _findings(kb: KnowledgeBase, table: RankTable, events: list[Event]) -> dict[str, float]:
    coll = table.coll
    desync = desync_strength(kb, table, events)
    absent = float(bool(coll and coll.kind == "absent"))
    lost = float(any(rw.accuses for rw in table.rows.values()) or any(reports_lost_peer(kb, e) for e in events))
    quiet, late = quiet_gaps(table)
    full = timeout_seconds(table)
    q = max([_gap_score(g, full) for g in list(quiet.values()) + list(late.values())] or [0.0])
    fr_hang = float(table.fr is not None and any(f.kind in FR_HANG for f in table.fr.findings))
    fr_mismatch = float(table.fr is not None and any(f.kind in FR_MISMATCH for f in table.fr.findings))
    # (the engine marks a table hung only when no line shows a failure or a wait)
    return {"first": float(first_collective_hang(table)), "first_stated": float(first_collective_stated(table)),
            "stated": float(table.hung), "desync": desync, "p2p_wait": float(bool(table.p2p_cycle)), "fr_mismatch": fr_mismatch, "absent": absent, "lost_peer": lost, "quiet": q if table.waiting_ranks else 0.0, "fr_hang": fr_hang}


__all__ = ["FEATURES", "Context", "context", "featurize", "outlived_peers", "primary_failure", "quiet_gaps", "steps_behind", "ACTIVITY", "FATAL", "TRACE", "same_clock"]
