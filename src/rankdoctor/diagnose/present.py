"""From a weighed answer to the Finding a user reads: evidence grouped across ranks, the
root-cause sentence (speaking of the ranks actually involved), the fix, the facts still
missing, and the reasoning (``-v``)."""

from __future__ import annotations

import math

from typing import TYPE_CHECKING

from .. import claims
from ..events import Event
from ..ingest.prefix import parse_prefix
from .attribution import ACTIVITY, FATAL, TAIL, TRACE, WARNED
from .collectives import compress_ranks, ranks_phrase
from .common import MAX_EVIDENCE, PREFIX_MASK, event_key, fingerprint
from .features import FEATURES, MIN_GAP, left_early, primary_failure
from .hypotheses import Kind
from .model import Evidence, Finding, Step
from .ranktable import End, is_cut_wait, peer_report
from .traceback import user_call_site

if TYPE_CHECKING:
    from .engine import Answer, Weighing
    from .scoring import Weights

_ROLE_ORDER = {"cause": 0, "fr-culprit": 0, TRACE: 0.5, FATAL: 0.5, WARNED: 0.5, "context": 1, ACTIVITY: 1, TAIL: 1.2, "fr": 1, "symptom": 2}
_SHOWN_ROLE = {TRACE: "cause", FATAL: "cause", WARNED: "cause", TAIL: "context", ACTIVITY: "context", "fr-culprit": "cause", "fr": "context"}


def to_finding(kb, a: "Answer", w: "Weighing", weights: "Weights") -> Finding:
    h = a.best.hyp
    entry = h.entry
    table = w.table
    ranks = a.ranks
    init = ranks[0] if ranks else None
    involved = table.waiting_ranks | table.failed_ranks | {r for r, rw in table.rows.items() if rw.exit and rw.exit.exitcode}
    if table.coll:
        involved |= set(table.coll.reporting)
    collateral = sorted(involved - set(ranks))
    if not ranks:  # where it started is not known: a rank with a failure of its own, that waited
        # on no peer first, may be it, so it is not called collateral
        collateral = [r for r in collateral if not (table.row(r).failures and not table.row(r).waits)]
    host = next((table.row(r).host for r in ranks if table.row(r).host), None)
    evidence = _evidence(a, w)
    root = _root_cause(a, w, collateral)
    missing = _missing(a, w, weights)
    notes = _notes(a, w)
    return Finding(
        entry=entry.id,
        klass=entry.class_,
        title=entry.title,
        # class and, when named, rank: what the verdict threshold reads (rounded down, so a
        # shown 0.80 is never an answer that fell short of a 0.80 threshold)
        confidence=math.floor(a.confidence * 100 + 1e-9) / 100,
        initiating_rank=init,
        collateral_ranks=collateral,
        evidence=evidence,
        root_cause=root,
        fix=[Step(s.text, s.command or None) for s in entry.fix],
        verify=Step.from_verify(entry.verify),
        missing=missing,
        initiating_host=host,
        notes=notes,
        initiating_ranks=list(ranks),
        class_confidence=round(a.class_p, 2),
        entry_share=round(a.entry_p, 2),
        reasoning=_breakdown(a, w, weights),
    )


# -- evidence ------------------------------------------------------------------------------


def _evidence(a: "Answer", w: "Weighing") -> list[Evidence]:
    h = a.best.hyp
    table = w.table
    ranks = set(a.ranks)
    events = w.att.events
    picked: list[Event] = []
    for r in sorted(ranks):
        rw = table.row(r)
        first = primary_failure(rw)
        picked += [first] if first else []
        picked += [e for e in rw.failures if e.role == TRACE][:1]
        if rw.last_active is not None and (w.cx and (w.cx.quiet.get(r, 0) > MIN_GAP or w.cx.late.get(r, 0) > MIN_GAP)):
            picked.append(rw.last_active)
    if not ranks and h.kind == Kind.generic:
        picked += table.unranked_failures[:3]  # the failure lines no rank could be given
    entry_lines = [e for e in events if e.entry == h.entry.id]
    entry_lines.sort(key=lambda e: (0 if e.rank in ranks else 1, event_key(e)))
    picked += entry_lines
    if h.kind == Kind.desync and table.coll and table.coll.kind == "desync":
        picked += [table.coll.reports[r].event for r in sorted(table.coll.reports, key=lambda r: (r not in ranks, r))]
    if table.fingerprints and h.kind == Kind.desync:
        picked += [table.fingerprints[r] for r in sorted(table.fingerprints, key=lambda r: (r not in ranks, r))]
    picked += [e for e in events if e.role in ("fr", "fr-culprit") and (not ranks or e.rank in ranks)]
    waits = sorted((e for rw in table.rows.values() if rw.rank not in ranks for e in rw.waits), key=event_key)
    picked += waits
    return _grouped(picked, ranks)


def _grouped(events: list[Event], ranks: set[int]) -> list[Evidence]:
    order = sorted(
        range(len(events)),
        key=lambda i: (
            0 if events[i].rank in ranks else 1,
            _ROLE_ORDER["symptom"] if is_cut_wait(events[i]) else _ROLE_ORDER.get(events[i].role, 3),
            events[i].source.endswith("error.json"),  # torchrun's error.json repeats what stderr said
            event_key(events[i]),
            i,
        ),
    )
    seen_lines: set[tuple[str, int]] = set()
    said: set[tuple] = set()
    unique: list[Event] = []
    for i in order:
        ev = events[i]
        if ev.where in seen_lines:
            continue
        if ev.source.endswith("error.json") and (ev.rank, ev.entry, ev.signature) in said:
            continue
        seen_lines.add(ev.where)
        said.add((ev.rank, ev.entry, ev.signature))
        unique.append(ev)
    groups: dict[tuple[str, str], list[Event]] = {}
    for ev in unique:
        groups.setdefault((ev.signature, fingerprint(ev.text)), []).append(ev)
    out = []
    for evs in list(groups.values())[:MAX_EVIDENCE]:
        ev = evs[0]
        others = sorted({e.rank for e in evs[1:] if e.rank is not None and e.rank != ev.rank})
        role = "symptom" if is_cut_wait(ev) else _SHOWN_ROLE.get(ev.role, ev.role)
        sig = f"{ev.entry}/{ev.signature}" if ev.entry else ev.signature
        # (+ the lines like these that the scanner counted but did not keep: ``folded``)
        repeats = len(evs) - 1 + sum(e.folded for e in evs)
        out.append(Evidence(ev.source, ev.line, ev.rank, ev.time, ev.text, sig, role, repeats, others))
    return out


# -- the root-cause paragraph -----------------------------------------------------------------


def message_of(text: str) -> str:
    """The line without its rank/host/time prefixes."""
    _, at = parse_prefix(text)
    return PREFIX_MASK.sub("", text[at:]).strip()


def _quote(ev: Event) -> str:
    msg = message_of(ev.text)
    return msg if len(msg) <= 240 else msg[:240] + " …"


def _reading(entry, ev: Event) -> str:
    """What a computed signature read across lines (trajectory.py: "lm loss 2.77 -> 7.34 at
    iteration 29050"; claims.py: "global rank 1 announced twice ..."), as a sentence; nothing
    for a line matched by itself."""
    sig = next((s for s in entry.signatures if s.id == ev.signature), None)
    detail = ev.captures.get("value") if sig is not None and sig.computed else None
    if not detail:
        return ""
    read = claims.READS.get(sig.computed, "the run's reported numbers")
    return f" Read from {read}: {detail}."


def _who(ranks: tuple[int, ...], table) -> str:
    if not ranks:
        return "a rank"
    if len(ranks) == 1:
        host = table.row(ranks[0]).host
        return f"rank {ranks[0]}" + (f" on {host}" if host else "")
    return f"ranks {compress_ranks(ranks)}"


def _root_cause(a: "Answer", w: "Weighing", collateral: list[int]) -> str:
    h = a.best.hyp
    table = w.table
    ranks = a.ranks
    who = _who(ranks, table)
    Who = who[0].upper() + who[1:]
    f = a.best.features
    parts: list[str] = []
    first = primary_failure(table.row(ranks[0])) if ranks else None
    if table.hung_by == "stated":
        parts.append("No line shows a failure; the job was said to have hung (--hung), so the logs are read as ending where it stopped.")
    elif table.hung:
        parts.append("No line shows a failure; stack dumps of the live processes were taken, so the job is read as hung where "
                     "they stand.")
    if table.hung and h.kind == Kind.first:
        parts.append("No rank printed a step, a timeout or an error: it stopped before training made progress, in its first "
                     "collective or while setting it up.")
    elif table.hung and h.kind != Kind.straggler:
        pass  # the sentences below describe failure or wait lines, and a stated hang has none
    elif (h.kind in (Kind.own, Kind.generic) and len(ranks) == 1 and w.cx is not None
          and (report := peer_report(w.cx.kb, table.row(ranks[0]).failures)) is not None):
        # its failure is its report of what a peer sent (gloo's size check, and the abort around
        # it), which either side of a mismatch can make: what reached the rank, not that it strayed
        parts.append(f"{Who} reported the mismatch: “{_quote(report)}”. It reports what a peer sent; either side of a "
                     "mismatch can be the one to report it, so the rank that issued the other operation may be where it "
                     "started.")
    elif h.kind in (Kind.own, Kind.generic) and first is not None:
        own = next((e for e in w.att.events if e.entry == h.entry.id and e.rank == ranks[0] and e.role == "cause"), None)
        shown = own if own is not None and f.get("claim_entry_first") else first
        verb = "failed first" if f.get("claim_first") or f.get("claim_sole_failure") else "failed"
        parts.append(f"{Who} {verb}: “{_quote(shown)}”.{_reading(h.entry, shown)}")
        site = _call_site(first, w.att.events, ranks[0])
        if site:
            parts.append(f"It was raised at {site}.")
    elif h.kind in (Kind.own, Kind.generic):
        cause = next((e for e in w.att.events if e.entry == h.entry.id and e.role == "cause"), None)
        if cause is not None:
            parts.append(f"{'The failure' if not ranks else Who}: “{_quote(cause)}”.{_reading(h.entry, cause)}")
    elif h.kind == Kind.desync and ranks and set(ranks) <= table.p2p_cycle:
        from ..ingest.stacks import describe_waits

        parts.append(f"The stack dumps show {describe_waits(table.p2p_waits, table.p2p_cycle)}: they wait on each other, so none of them can move on.")
        if len(ranks) > 1:
            parts.append("Their send/recv calls do not pair up (order, peer or count); the dumps cannot tell which of them posted its calls out of order.")
    elif h.kind == Kind.desync:
        if table.coll and table.coll.kind == "desync":
            parts.append(f"The ranks are in different collectives: {table.coll.detail}.")
        elif len({(e.captures.get('op'), e.captures.get('value')) for e in table.fingerprints.values()}) > 1:
            detail = "; ".join(f"rank {r}: {e.captures.get('op')} {e.captures.get('value') or ''}".strip() for r, e in sorted(table.fingerprints.items()))
            parts.append(f"The last collective each rank entered differs ({detail}).")
        else:
            parts.append("The ranks issued different collectives.")
        if ranks and f.get("claim_reporter_only"):
            # its only failure is its own report of the mismatch, which either side can make
            parts.append(f"{Who} reported the mismatch; either side of a mismatch can be the one to report it, "
                         "so the rank that issued the other operation may be where it started.")
        elif ranks and set(ranks) <= left_early(table):
            they = 'they' if len(ranks) > 1 else 'it'
            if all(table.rows[r].end == End.clean for r in ranks):
                parts.append(f"{Who} ran to a clean exit while the others were still in a collective (the launcher's summary "
                             f"of the failure does not list {'them' if len(ranks) > 1 else 'it'}): {they} "
                             f"had fewer steps to run (uneven inputs, a loop bound or an early return that differs per rank), and "
                             f"the others lost the connection when {they} exited.")
            else:
                parts.append(f"{Who} stopped working before the others lost a connection, while the ranks that did not wait "
                             f"worked on after it: {they} left the collective the waiting ranks were in ({they} had fewer "
                             f"collectives to issue: a skipped step, uneven inputs, an early return that differs per rank), "
                             f"and the launcher then stopped everyone.")
        elif ranks and set(ranks) <= table.odd_waiters:
            others = sorted({s for r, s in table.wait_sites.items() if r not in ranks})
            parts.append(f"{Who} gave up waiting at {', '.join(table.wait_sites[r] for r in ranks)}, where no other rank "
                         f"waited; the others waited at {others[0] if others else 'another line'}: "
                         f"{'they were' if len(ranks) > 1 else 'it was'} in another collective.")
        elif ranks:
            parts.append(f"{Who} took the other path.")
            if f.get("claim_odd_sender"):
                reporters = sorted({e.rank for e in w.att.events if e.cap_int("sender_rank") == ranks[0] and e.rank is not None})
                parts.append(f"{ranks_phrase(reporters).capitalize()} rejected the message it sent (gloo's size check), and it "
                             f"waited at {table.wait_sites[ranks[0]]}, where no other rank waited.")
    elif h.kind == Kind.straggler:
        parts.append(_straggler_sentence(ranks, w))
    elif h.kind == Kind.dead_peer:
        if ranks:
            died = "; its process exited without an error of its own in these logs" if not first else ""
            parts.append(f"Peers lost the connection to {who}{died}.")
        else:
            parts.append("Peers lost the connection to a rank that exited; which one the logs do not say.")
    else:
        parts.append("Only collateral symptoms were found (timeouts, aborts, lost peers); the rank that caused them left no error of its own here.")
    if not ranks and a.rivals and len(a.rivals) >= 1:
        tied = _tied_ranks(a)
        if len(tied) >= 2:
            parts.append(f"The evidence does not tell whether {' or '.join(f'rank {r}' for r in tied[:4])} started it.")
    close: list[int] = []
    if len(ranks) == 1 and a.rivals:
        shares = _rank_shares(a)
        mine, total = shares.get(ranks[0], 0.0), sum(shares.values())
        close = sorted((r for r, p in shares.items() if r != ranks[0] and mine and p >= 0.25 * mine), key=lambda r: -shares[r])[:3]
        if close and total:
            pct = ", ".join(f"rank {r} {shares[r] / total:.0%}" for r in [ranks[0], *close])
            parts.append(
                f"The evidence only leans towards rank {ranks[0]}: {' or '.join(f'rank {r}' for r in close)} "
                f"may have started it instead (share of the weight: {pct})."
            )
    if ranks and collateral and not close:
        parts.append(f"{ranks_phrase(collateral).capitalize()} only show{'s' if len(collateral) == 1 else ''} collateral damage.")
    parts.append(" ".join(h.entry.summary.split()))
    return " ".join(parts)


def _straggler_sentence(ranks: tuple[int, ...], w: "Weighing") -> str:
    table, cx = w.table, w.cx
    coll = table.coll
    who = _who(ranks, table)
    Who = who[0].upper() + who[1:]
    waiting = sorted(table.waiting_ranks - set(ranks))
    at = ""
    if coll and coll.reports:
        rep = next(iter(coll.reports.values()))
        bits = [f"SeqNum={rep.seq}" if rep.seq is not None else "", rep.op or ""]
        at = " in " + " ".join(b for b in bits if b) if any(bits) else ""
    if ranks and cx is not None:
        r = ranks[0]
        rw = table.row(r)
        quiet, late = cx.quiet.get(r, 0.0), cx.late.get(r, 0.0)
        last = rw.last_active or rw.last_seen
        when = f" at {_clock(last)} ({_line_ref(last)})" if last is not None and last.time else ""
        if quiet > MIN_GAP:
            tail = f" while {ranks_phrase(waiting)} waited{at}" if waiting else ""
            return f"{Who} went silent{when}, {quiet:.0f} s before the others{tail}; it printed no error of its own."
        if late > MIN_GAP:
            tail = f" after {ranks_phrase(waiting)} had stopped to wait{at}" if waiting else " after the others stopped"
            return f"{Who} was still working {late:.0f} s{tail}."
        if coll and coll.kind == "absent" and set(ranks) <= set(coll.culprits):
            return f"{coll.detail[0].upper()}{coll.detail[1:]}. {Who} was busy or stuck elsewhere and never arrived."
        if cx.behind and set(ranks) <= cx.behind:
            where_ = f"stopped at step {rw.progress}" if rw.progress is not None else "printed no step counter"
            return f"{Who} {where_} while the others went further{(' and then waited' + at) if waiting else ''}."
        return f"{Who} never joined the collective the others waited in" + (f" ({at[4:]})." if at else ".")
    if coll and coll.detail:
        return f"{coll.detail[0].upper()}{coll.detail[1:]}; the logs do not show which rank they were waiting for."
    return "The ranks timed out waiting for a peer; the logs do not show which rank they were waiting for."


def _clock(ev) -> str:
    """A line's time to the second ("2026-05-01 10:33:12"; a glog time without a year,
    kept as ISO's "--12-02T00:08:28", as "12-02 00:08:28")."""
    t = (ev.time or "").removeprefix("--")
    if "T" in t:
        day, _, clock = t.partition("T")
        return f"{day} {clock[:8]}"
    return t


def _line_ref(ev) -> str:
    return f"last line {ev.source.rsplit('/', 1)[-1]}:{ev.line}"


def _rank_shares(a: "Answer") -> dict[int, float]:
    """The entry's probability on each single rank."""
    by_rank: dict[int, float] = {}
    for s in [a.best, *a.rivals]:
        if len(s.hyp.ranks) == 1:
            by_rank[s.hyp.ranks[0]] = by_rank.get(s.hyp.ranks[0], 0.0) + s.p
    return by_rank


def _tied_ranks(a: "Answer") -> list[int]:
    """Single ranks whose hypotheses hold a similar share of the entry's probability."""
    by_rank = _rank_shares(a)
    if len(by_rank) < 2:
        return []
    top = max(by_rank.values())
    return sorted(r for r, p in by_rank.items() if p >= 0.5 * top)


def _call_site(first: Event, events: list[Event], rank: int) -> str | None:
    candidates = [first] + [e for e in events if e.role == TRACE and e.rank == rank]
    for e in candidates:
        if e.context and (site := user_call_site(e.context, e.rank)):
            return site
    return None


# -- what to collect next ----------------------------------------------------------------------


def _missing(a: "Answer", w: "Weighing", weights: "Weights") -> list[str]:
    h = a.best.hyp
    entry = h.entry
    table = w.table
    out: list[str] = []
    quiet = [r for r in a.ranks if r in table.rows and w.cx is not None and w.cx.quiet.get(r, 0.0) >= MIN_GAP]
    if quiet and h.kind in (Kind.straggler, Kind.dead_peer):
        # its log is here and just stops: what it was doing then is the one missing fact
        rw = table.row(quiet[0])
        last = rw.last_active or rw.last_seen
        since = f" after its last line ({_clock(last)})" if last is not None and last.time else ""
        out.append(
            f"What {ranks_phrase(quiet)} was doing{since}: stuck in a collective, in data loading or I/O, or dead. "
            f"Run: py-spy dump --pid <pid of rank {quiet[0]}> on the live job; on the next run "
            "TORCH_FR_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 TORCH_FR_DUMP_TEMP_FILE=/tmp/fr_ torchrun ... ; rankdoctor fr /tmp/"
        )
    elif (unseen := [r for r in a.ranks if r not in table.rows]) and h.kind in (Kind.straggler, Kind.dead_peer):
        # the others waited for it and it printed nothing here: its own output decides
        out.append(
            f"The output of {ranks_phrase(unseen)}, which printed nothing in these logs while the others waited: "
            "busy (progress lines), stuck (no lines) or dead (an error, a signal)? "
            f"Run: collect its log (torchrun --log-dir logs --tee 3 ... : logs/*/attempt_0/<local_rank>/stderr.log) "
            f"or, on the live job, py-spy dump --pid <pid of rank {unseen[0]}>"
        )
    elif a.confidence < weights.threshold or h.kind in (Kind.symptom, Kind.dead_peer) or not a.ranks:
        if entry.missing:
            out.append(f"{entry.missing.fact} Run: {entry.missing.command}")
    if not a.ranks and entry.scope.value == "rank":
        tied = _tied_ranks(a)
        if tied:
            out.append(
                f"Which of ranks {compress_ranks(tied)} failed first: each rank's output with timestamps. "
                "Run: torchrun --log-dir logs --tee 3 ... (or srun -l), then rankdoctor diagnose logs/"
            )
        else:
            out.append(
                "Which rank failed first: collect every rank's output with rank prefixes and timestamps. "
                "Run: torchrun --log-dir logs --tee 3 ... (or srun -l), then rankdoctor diagnose logs/"
            )
    if table.hung_by == "stacks":
        # stacks of some processes, read as a hang: the odd one out among all ranks' stacks,
        # with each rank's log, is what tells who stopped first
        out.append(
            "Every rank's stack and log, each named by its rank: the ranks stuck somewhere else than the others started it. "
            "Run: for each rank's pid, py-spy dump --pid <pid> > stacks/pyspy_rank<N>.txt, then rankdoctor diagnose logs/ stacks/"
        )
    elif table.hung:
        # only the user's word says it hung: where each rank is stuck is the evidence to take
        # next, while the job still hangs (rankdoctor reads the dumps with the logs)
        out.append(
            "Where each rank is stuck while the job hangs (a collective, data loading, I/O, a lock). Run: for each rank's pid, "
            "py-spy dump --pid <pid> > stacks/pyspy_rank<N>.txt, then rankdoctor diagnose logs/ stacks/ --hung"
        )
    coll = table.coll
    if coll and coll.kind == "absent" and h.kind in (Kind.straggler, Kind.dead_peer):
        silent = [r for r in coll.culprits if r not in table.rows]
        if silent:
            out.append(
                f"The output of {ranks_phrase(silent)}, which never reported: its last lines show whether it was busy, stuck or dead. "
                "Run: py-spy dump --pid <pid> on a live job, or collect logs/attempt_0/<local_rank>/stderr.log"
            )
    if coll and coll.unseen and not a.ranks:
        out.append(
            f"The output of {ranks_phrase(coll.unseen)}, which {'is' if len(coll.unseen) == 1 else 'are'} not in these logs. "
            "Run: collect every rank's log (torchrun --log-dir logs --tee 3 ...) and diagnose them together"
        )
    return out


# -- the reasoning ---------------------------------------------------------------------------------


# features whose sentence needs nothing but the rank's name, in the order they are said
_PLAIN_NOTES = (
    ("claim_fr_mismatch", "the Flight Recorder dumps show {who}'s collectives differ from the others'"),
    ("claim_fr_behind", "the Flight Recorder dumps show {who} behind the others"),
    ("claim_p2p_wait", "stack dumps show {who} blocked in send/recv on each other"),
    ("claim_numeric_first", "{who} printed NaN/inf before any other rank"),
    ("claim_named", "mismatch messages name {who} as the other side"),
    ("claim_most_named", "most of the ranks that report the mismatch name {who} as the one that differs"),
    ("claim_working", "{who} was still making progress and never reported waiting while others waited"),
)


def _notes(a: "Answer", w: "Weighing") -> list[str]:
    """Sentences for the features that carried the answer (text view, ``-v``)."""
    f = a.best.features
    ranks = a.ranks
    table, cx = w.table, w.cx
    out = []
    if not ranks:
        return out
    who = _who(ranks, table)
    rw = table.row(ranks[0])
    if f.get("claim_sole_failure"):
        out.append(f"{who} is the only rank with a failure of its own")
    elif f.get("claim_first"):
        out.append(f"{who} failed by itself before any other rank did")
    if f.get("claim_waited_first"):
        out.append(f"{who} itself reported waiting for a peer")
    if f.get("claim_shared_failure") and cx is not None:
        own = cx.failure_text.get(ranks[0])
        same = sorted(r for r, t in cx.failure_text.items() if t == own and r not in ranks)
        if same:
            out.append(f"{_who(same, table)} raised the same exception word for word: the program may fail the same "
                       f"way on every rank, and which rank printed it first is chance")
    if rw.end == End.own_death and rw.exit is not None:
        out.append(f"the launcher saw {who} exit with {rw.exit.exitcode}" + (f" ({rw.exit.signal_name})" if rw.exit.signal_name else "")
                   + (", a signal it did not send (it names the workers it stopped, and not this one)" if rw.exit.exitcode == -15 else ""))
    if rw.end == End.terminated:
        out.append(f"the launcher stopped {who}; its exit is collateral")
    if f.get("claim_accused"):
        out.append(f"peers name {who} as the rank they lost")
    if f.get("claim_minority") or f.get("claim_fingerprint"):
        out.append(f"{who}'s collective differs from the majority's")
    if f.get("claim_absent"):
        out.append(f"every other rank reports the timed-out collective; {who} never does")
    if f.get("claim_odd_sender"):
        out.append(f"{who} sent the message a peer's gloo size check rejected, while waiting at "
                   f"{table.wait_sites.get(ranks[0], '?')}, where no other rank waited")
    if cx is not None and cx.quiet.get(ranks[0], 0) > MIN_GAP:
        out.append(f"{who} went silent {cx.quiet[ranks[0]]:.0f} s before the others")
    if cx is not None and cx.late.get(ranks[0], 0) > MIN_GAP:
        out.append(f"{who} kept working {cx.late[ranks[0]]:.0f} s after the others stopped")
    out += [text.format(who=who) for name, text in _PLAIN_NOTES if f.get(name)]
    if f.get("others_waiting"):
        out.append(f"{f['others_waiting']:.0%} of the other ranks report waiting for or losing a peer")
    return out


def _breakdown(a: "Answer", w: "Weighing", weights: "Weights") -> list[dict]:
    """The winner's and the runner-up's score, feature by feature (``-v``)."""
    rows = []
    top = a.best
    runner = next((s for s in w.scored if s is not top and not (s.hyp.entry.id == top.hyp.entry.id and s.hyp.ranks == top.hyp.ranks)), None)
    for label, s in (("winner", top), ("runner-up", runner)):
        if s is None:
            continue
        rows.append({
            "label": label,
            "entry": s.hyp.entry.id,
            "ranks": list(s.hyp.ranks),
            "kind": s.hyp.kind.value,
            "p": round(s.p, 3),
            "score": round(s.score, 3),
            "parts": [(k, round(v, 3), FEATURES[k]) for k, v in weights.contributions(s.features)],
        })
    return rows
