"""Candidate explanations: a rank's own failure, what the ranks' reports say together
(desync, a silent rank, a lost peer, the last sign of life), and bare symptoms."""

from __future__ import annotations

import math
import re

from ..events import Event
from ..kb.loader import KnowledgeBase
from ..kb.model import Entry
from .collectives import CollectiveFinding, minority, compress_ranks, ranks_phrase
from .common import (
    COLLATERAL_EXITS,
    DIAGNOSED_AT,
    Candidate,
    best_explainer,
    event_key,
    explainers,
    sig_weight,
)

def _groups(kb: KnowledgeBase, ev: Event) -> set[str]:
    """Named groups of the signature that matched this event."""
    try:
        return set(re.compile(kb.get(ev.entry).signature(ev.signature).regex).groupindex)
    except KeyError:
        return set()


def accused_ranks(events: list[Event]) -> dict[int, list[Event]]:
    """Ranks that peers say they lost. A rank that itself reported a timeout is not a lost
    peer: its connections closed because its own watchdog took it down."""
    timed_out = {e.rank for e in events if e.role == "symptom" and e.rank is not None and e.cap_int("timeout_ms") is not None}
    out: dict[int, list[Event]] = {}
    for ev in events:
        pr = ev.cap_int("peer_rank")
        if pr is not None and pr != ev.rank and ev.role == "symptom" and pr not in timed_out:
            out.setdefault(pr, []).append(ev)
    return out


def cause_candidates(kb, events, coll, accused, exits, fr_culprits=frozenset()) -> list[Candidate]:
    by_entry: dict[str, list[Event]] = {}
    for ev in events:
        if ev.role == "cause":
            by_entry.setdefault(ev.entry, []).append(ev)
    absent = set(coll.culprits) if coll and coll.kind == "absent" else set()
    desync_culprits = set(coll.culprits) if coll and coll.kind == "desync" else set()
    earliest_ts = min((e.ts for e in events if e.role == "cause" and e.ts is not None), default=None)
    # ranks that themselves report waiting for, or losing, a peer (the launcher's exit lines
    # about a rank do not count: they say how it ended, not what it saw)
    symptom_ranks = {e.rank for e in events if e.role == "symptom" and e.rank is not None and "launcher" not in e.captures}
    # ranks that print a traceback of their own but never report waiting for a peer
    own_failures: dict[int, float | None] = {}
    for e in events:
        if e.role in ("trace", "cause") and e.rank is not None and e.rank not in symptom_ranks:
            prev = own_failures.get(e.rank, math.inf)
            own_failures[e.rank] = min(prev if prev is not None else math.inf, e.ts if e.ts is not None else math.inf)
    out = []
    for entry_id, evs in by_entry.items():
        entry = kb.get(entry_id)
        evs.sort(key=event_key)
        weight = max(sig_weight(kb, e) for e in evs)
        score = 0.55 + 0.3 * weight
        sigs = {e.signature for e in evs}
        score += min(0.08, 0.04 * (len(sigs) - 1))
        ctx = [e for e in events if e.entry == entry_id and e.role == "context"]
        if ctx:
            score += 0.05
        notes: list[str] = []
        ranks = sorted({e.rank for e in evs if e.rank is not None})
        initiating: int | None = None
        votes: dict[int, int] = {}
        for e in evs:
            pr = e.cap_int("peer_rank")
            if pr is not None and pr != e.rank:
                votes[pr] = votes.get(pr, 0) + 1
        names_peer = [e for e in evs if "peer_rank" in _groups(kb, e)]
        if names_peer and not votes and entry.scope.value == "rank":
            # the message normally names the other side ("Rank 1 is running X, but Rank 2 is
            # running Y") but was cut off: the printing rank alone says nothing about who deviated
            initiating = None
            notes.append("the lines that would name the other side are cut off; the printing rank is not necessarily the odd one")
        elif votes and entry.scope.value == "rank":
            # the lines name another rank (e.g. "Rank 1 is running X, but Rank 2 is running Y"):
            # the rank most often named by its peers is the odd one, if the vote is clear
            order = sorted(votes.items(), key=lambda kv: -kv[1])
            clear = order[0][1] >= 2 and (len(order) == 1 or order[0][1] > order[1][1])
            initiating = order[0][0] if clear else None
            notes.append(
                f"rank {initiating} is named by {order[0][1]} peers" if clear else "the ranks name each other; the logs do not say which one deviated"
            )
        elif entry.scope.value == "rank":
            initiating = _pick_initiating(evs, ranks, accused, absent | desync_culprits, symptom_ranks, notes)
            if initiating is not None and not votes and initiating not in accused and initiating not in absent:
                first_ts = evs[0].ts if evs[0].ts is not None else math.inf
                rivals = [r for r, t in own_failures.items() if r != initiating and not (first_ts < (t if t is not None else math.inf))]
                if rivals:
                    notes.append(
                        f"rank(s) {compress_ranks(rivals)} also failed with their own traceback and the logs do not tell which came first"
                    )
                    initiating = None
        if entry.scope.value == "job" and len(ranks) == 1 and ranks[0] not in symptom_ranks and symptom_ranks - {ranks[0]}:
            # a failure that could happen on any rank happened on one, and the others were
            # left waiting for it: that one rank is where this run started failing
            initiating = ranks[0]
            notes.append(f"only rank {initiating} failed; ranks {compress_ranks(symptom_ranks)} were left waiting")
        corroborated = initiating is not None and (initiating in accused or initiating in absent or initiating in fr_culprits)
        if corroborated:
            score += 0.05
            notes.append(f"peers corroborate rank {initiating}: it is the rank they lost or waited for")
        if earliest_ts is not None and evs[0].ts is not None and evs[0].ts <= earliest_ts:
            score += 0.03
        rec = exits.get(initiating) if initiating is not None else None
        if rec and (rec.exitcode == -15 or rec.killed_by_launcher or (rec.exitcode == -6 and initiating in symptom_ranks)):
            # SIGTERM from the launcher, or the NCCL watchdog's abort after a timeout on this
            # rank: it was taken down, not failing by itself
            score -= 0.1
        if weight < 0.8 and ranks and all(r in symptom_ranks for r in ranks):
            # only an exit status, on ranks that themselves report a lost peer or a timeout:
            # they died of the collective failure, not of their own
            score -= 0.3
            notes.append("the exit status belongs to ranks that themselves report timeouts or lost peers")
        out.append(Candidate(entry, min(score, 0.97), initiating, evs + ctx, notes, kind="cause"))
    return out


def _pick_initiating(evs, ranks, accused, suspects, symptom_ranks, notes) -> int | None:
    if len(ranks) == 1:
        return ranks[0]
    own = [r for r in ranks if r not in symptom_ranks]
    if ranks and len(own) == 1:
        notes.append(f"of ranks {compress_ranks(ranks)}, only rank {own[0]} shows no sign of waiting for a peer")
        return own[0]
    if not ranks:
        hinted = [r for r in accused] or sorted(suspects)
        if len(hinted) == 1:
            notes.append(f"the failing line carries no rank; peers point at rank {hinted[0]}")
            return hinted[0]
        return None
    # several ranks show this failure: the first one in time, if times tell
    firsts = {}
    for e in evs:
        if e.rank is not None and e.ts is not None and e.rank not in firsts:
            firsts[e.rank] = e.ts
    if len(firsts) >= 2:
        order = sorted(firsts.items(), key=lambda kv: kv[1])
        if order[0][1] < order[1][1]:
            notes.append(f"rank {order[0][0]} shows it first ({len(ranks)} ranks show it)")
            return order[0][0]
    both = [r for r in ranks if r in accused or r in suspects]
    if len(both) == 1:
        return both[0]
    return None


def crashed_with_exception(kb, rank: int, events: list[Event], extra: list[Event], note: str) -> Candidate | None:
    """A rank named by cross-rank evidence that printed a Python exception of its own."""
    exc = [e for e in events if e.role == "trace" and e.rank == rank and e.signature == "python-exception"]
    if not exc or "worker-python-exception" not in kb:
        return None
    return Candidate(
        kb.get("worker-python-exception"),
        0.78,
        rank,
        exc[-1:] + extra,
        [note, f"rank {rank} ended with its own exception: {exc[-1].captures.get('value', '')}"],
        kind="cause",
    )


def cross_rank_candidates(kb, events, coll: CollectiveFinding | None, accused, cause_cands, exits, expected) -> list[Candidate]:
    out: list[Candidate] = []
    timeouts = [e for e in events if e.role == "symptom"]
    cause_ranks = {c.initiating for c in cause_cands if c.initiating is not None}
    strong_causes = [c for c in cause_cands if c.score >= DIAGNOSED_AT]
    if coll and coll.kind == "desync":
        entry, ctx = best_explainer(kb, "desync", events, "collective-sequence-mismatch")
        culprit = coll.culprits[0] if len(coll.culprits) == 1 else None
        score = 0.55 + 0.35 * coll.strength + (0.05 if ctx else 0.0)
        notes = [coll.detail]
        if culprit is not None:
            notes.append(f"rank {culprit} is the odd one out")
        evs = [coll.reports[r].event for r in sorted(coll.reports, key=lambda r: (r not in coll.culprits, r))]
        out.append(Candidate(entry, min(score, 0.95), culprit, evs + ctx, notes, kind="desync"))
    elif coll and coll.kind == "absent":
        absent = coll.culprits
        dead = [
            r for r in absent
            if r in cause_ranks
            or (exits.get(r) and exits[r].exitcode not in (None, 0, *COLLATERAL_EXITS) and not exits[r].killed_by_launcher)
        ]
        crashed = [c for r in absent if r not in cause_ranks and (c := crashed_with_exception(kb, r, events, [coll.reports[x].event for x in coll.reporting], coll.detail))]
        if crashed and not strong_causes:
            out.extend(crashed)
        elif not dead:
            accused_absent = [r for r in absent if r in accused]
            if accused_absent:
                entry, ctx = best_explainer(kb, "dead-peer", events, "nccl-peer-connection-closed")
                r = accused_absent[0] if len(accused_absent) == 1 else None
                evs = [e for r2 in accused_absent for e in accused[r2]]
                out.append(Candidate(entry, 0.72, r, evs + [coll.reports[x].event for x in coll.reporting], [coll.detail], kind="dead-peer"))
            else:
                entry, ctx = best_explainer(kb, "straggler", events, "rank-zero-straggler")
                # one silent rank is a suspect; several silent ranks are only a guess
                score = (0.55 if len(absent) == 1 else 0.4) + (0.2 if ctx else 0.0) + (0.05 if coll.barrier_like else 0.0)
                r = absent[0] if len(absent) == 1 else None
                notes = [coll.detail]
                if r is not None:
                    notes.append(f"rank {r} shows no failure of its own: it was busy or stuck, not dead")
                if coll.barrier_like:
                    notes.append("the collective is a one-element ALLREDUCE — the shape of a barrier")
                evs = ctx + [coll.reports[x].event for x in coll.reporting]
                out.append(Candidate(entry, min(score, 0.9), r, evs, notes, kind="absent"))
    # peers that lost a connection, and one rank that did not: that rank is the lost peer
    dead_peer_ids = {x.id for x in explainers(kb, "dead-peer")}
    lost = [e for e in events if e.role == "symptom" and e.entry in dead_peer_ids]
    if lost and expected and not out and not strong_causes:
        reporters = {e.rank for e in lost if e.rank is not None}
        silent = sorted(expected - reporters - {e.rank for e in timeouts if e.rank is not None})
        with_exc = [r for r in silent if any(e.role == "trace" and e.rank == r and e.signature == "python-exception" for e in events)]
        named = [r for r in silent if r in accused]  # the reporters' messages name this rank
        if reporters and (len(with_exc) == 1 or len(silent) == 1 or len(named) == 1):
            r = with_exc[0] if len(with_exc) == 1 else (named[0] if len(named) == 1 else silent[0])
            lead = f"{ranks_phrase(reporters)} lost their connection to a peer; "
            if len(silent) == 1:
                note = lead + f"rank {r} is the only one that did not"
            elif len(with_exc) == 1:
                note = lead + f"of the ranks that did not, rank {r} is the one with an error of its own"
            else:
                note = lead + f"their messages name rank {r}"
            cand = crashed_with_exception(kb, r, events, lost[:6], note)
            if cand is None:
                entry, _ = best_explainer(kb, "dead-peer", events, "gloo-peer-connection-lost")
                cand = Candidate(entry, 0.66, r, lost[:6], [note], kind="dead-peer")
            out.append(cand)
        elif reporters and silent:
            entry, _ = best_explainer(kb, "dead-peer", events, "gloo-peer-connection-lost")
            note = f"ranks {compress_ranks(reporters)} lost their connection to a peer; ranks {compress_ranks(silent)} printed nothing about it — one of them died first"
            out.append(Candidate(entry, 0.45, None, lost[:6], [note], [
                f"Which of ranks {compress_ranks(silent)} died first and how: the launcher's console output (exit codes, signals) or `dmesg -T` on their hosts. "
                "Run: torchrun --tee 3 ... 2>&1 | tee console.log"], kind="dead-peer"))
    # TORCH_DISTRIBUTED_DEBUG=DETAIL logs every collective each rank enters: if the ranks'
    # last ones disagree, that is where they parted, even when no timeout was printed yet
    if not out and not strong_causes and (coll is None or coll.kind != "desync"):
        fp = fingerprint_candidate(kb, events)
        if fp:
            out.append(fp)
    # peers naming a dead rank, without timeout reports that tell more
    if accused and not any(c.kind == "dead-peer" for c in out):
        named = sorted(accused)
        if not (set(named) & cause_ranks):
            entry, _ = best_explainer(kb, "dead-peer", events, "nccl-peer-connection-closed")
            r = named[0] if len(named) == 1 else None
            evs = [e for n in named for e in accused[n]]
            out.append(Candidate(entry, 0.62, r, evs, [f"peers report losing rank(s) {compress_ranks(named)}"], kind="dead-peer"))
    # a hang with no report telling who is missing: the rank whose last sign of life is
    # well after everyone else's was still busy while the others waited
    if timeouts and not [c for c in cause_cands if c.score >= DIAGNOSED_AT] and not out and (coll is None or coll.kind == "uniform"):
        act = _last_activity([e for e in events if e.role in ("tail", "trace", "context", "symptom") and "death signal" not in e.text])
        if len(act) >= 2 and act[0][0] - act[1][0] >= 2.0:
            ts, r, ev = act[0]
            entry, ctx = best_explainer(kb, "straggler", events, "rank-zero-straggler")
            note = (
                f"rank {r} was still active {act[0][0] - act[1][0]:.0f} s after the last sign of life of every other rank"
            )
            evs = [ev] + ctx + timeouts[:4]
            out.append(Candidate(entry, 0.62, r, evs, [note], kind="activity"))
    # timeouts that the collective reports cannot explain, with context that can
    if timeouts and not cause_cands and not out:
        for finding in ("desync", "straggler"):
            for entry in explainers(kb, finding):
                ctx = [e for e in events if e.entry == entry.id and e.role == "context"]
                if not ctx:
                    continue
                n = len({e.signature for e in ctx})
                ctx_ranks = {e.rank for e in ctx if e.rank is not None}
                reporting = {e.rank for e in timeouts if e.rank is not None}
                score = 0.42 + 0.06 * min(3, n)
                r = None
                if ctx_ranks and reporting and ctx_ranks < (reporting | ctx_ranks) and len(ctx_ranks) == 1 and ctx_ranks != reporting:
                    r = next(iter(ctx_ranks))
                    score += 0.1
                note = f"{len(ctx)} context line(s) on rank(s) {compress_ranks(ctx_ranks) if ctx_ranks else '?'} point to {entry.title.lower()}"
                out.append(Candidate(entry, min(score, 0.75), r, ctx + timeouts[:4], [note], kind="context"))
    return out


def fingerprint_candidate(kb: KnowledgeBase, events: list[Event]) -> Candidate | None:
    fps = [e for e in events if e.role == "context" and e.rank is not None and e.cap_int("seq") is not None and e.captures.get("op")]
    if len({e.rank for e in fps}) < 2:
        return None
    last: dict[int, Event] = {}
    for e in sorted(fps, key=lambda e: (e.cap_int("seq"), e.source, e.line)):
        last[e.rank] = e  # type: ignore[index]
    shape = {r: (e.captures.get("op"), e.captures.get("value")) for r, e in last.items()}
    if len(set(shape.values())) < 2:
        return None
    culprits, clear = minority(shape)  # type: ignore[arg-type]
    detail = "; ".join(f"rank {r}: SeqNum={e.captures.get('seq')} {e.captures.get('op')} {e.captures.get('value') or ''}".strip() for r, e in sorted(last.items()))
    entry, ctx = best_explainer(kb, "desync", events, "collective-sequence-mismatch")
    r = culprits[0] if clear and len(culprits) == 1 else None
    evs = [last[x] for x in sorted(last, key=lambda x: (x not in culprits, x))]
    return Candidate(entry, 0.55 if clear else 0.5, r, evs, [f"the last collective each rank entered differs ({detail})"], kind="desync")


def refine(kb: KnowledgeBase, c: Candidate, events: list[Event]) -> Candidate:
    """Swap a generic explanation for a more specific one the context supports: a desync
    with torch.compile graph breaks around it is the compile desync, not just "a desync"."""
    findings = [x.value for x in c.entry.explains]
    if not findings:
        return c
    own = len({e.signature for e in events if e.entry == c.entry.id and e.role == "context"})
    best: tuple[int, Entry] | None = None
    for other in explainers(kb, findings[0]):
        if other.id == c.entry.id or other.class_ != c.entry.class_ and c.kind == "cause":
            continue
        n = len({e.signature for e in events if e.entry == other.id and e.role == "context"})
        if n > own and (best is None or n > best[0]):
            best = (n, other)
    if best is None:
        return c
    ctx = [e for e in events if e.entry == best[1].id and e.role == "context"]
    note = f"context lines of {best[1].id} make it the more specific explanation"
    return Candidate(best[1], min(c.score + 0.03, 0.97), c.initiating, c.events + ctx, c.notes + [note], c.missing, c.kind)


def _last_activity(events: list[Event]) -> list[tuple[float, int, Event]]:
    """Each rank's last timestamped line, latest first."""
    last: dict[int, Event] = {}
    for e in events:
        if e.rank is None or e.ts is None:
            continue
        if e.rank not in last or e.ts > last[e.rank].ts:  # type: ignore[operator]
            last[e.rank] = e
    return sorted(((e.ts, r, e) for r, e in last.items()), key=lambda x: -x[0])  # type: ignore[arg-type,return-value]


def symptom_candidates(kb, events, cands, coll) -> list[Candidate]:
    have = {c.entry.id for c in cands}
    by_entry: dict[str, list[Event]] = {}
    for ev in events:
        if ev.role == "symptom" and ev.entry not in have:
            by_entry.setdefault(ev.entry, []).append(ev)
    out = []
    for entry_id, evs in by_entry.items():
        evs.sort(key=event_key)
        ranks = {e.rank for e in evs if e.rank is not None}
        score = min(0.4, 0.3 + 0.02 * len(ranks))
        notes = ["only collateral symptoms were found; the rank that caused them left no evidence here"]
        if coll and coll.kind == "uniform":
            notes.append(coll.detail)
        out.append(Candidate(kb.get(entry_id), score, None, evs, notes, kind="symptom"))
    return out
