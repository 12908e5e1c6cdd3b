"""From events to a ranked diagnosis.

The engine reasons across ranks in a few small steps, each over plain data:

1. attribute: launcher records give their lines a rank; local ranks become global ranks
   where the logs show the mapping;
2. candidates from causes: a rank's own failure (exception, OOM, assert, signal);
3. candidates from cross-rank findings: collective reports that disagree (desync), a rank
   absent from the timeouts (dead or straggling), peers naming a dead rank;
4. score, rank, and pick the initiating rank; everything else a rank printed about the
   failure is collateral;
5. say what is missing when the evidence is short.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from ..events import Event, ScanResult
from ..kb.loader import KnowledgeBase
from ..kb.model import Entry
from .collectives import CollectiveFinding, _minority, analyse, compress_ranks
from .launcher import LauncherSummary, attribute_events, read_launcher
from .model import Diagnosis, Evidence, Finding, InputInfo
from .traceback import user_call_site

if False:  # typing only
    from ..flightrec.analyze import FRReport

DIAGNOSED_AT = 0.5  # confidence from which a finding is reported as diagnosed
MAX_EVIDENCE = 12
COLLATERAL_EXITS = {-15, -6}  # SIGTERM from the launcher, SIGABRT from the NCCL watchdog
_MASK = re.compile(r"0x[0-9a-fA-F]+|\d+")
_PREFIX_MASK = re.compile(r"^(?:\[[^\]]{0,80}\]:?\s*|\S+:\d+:\d+ \[\d+\] )+")


@dataclass
class Candidate:
    entry: Entry
    score: float
    initiating: int | None
    events: list[Event]
    notes: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    kind: str = "cause"  # cause | desync | absent | dead-peer | context | symptom


def _key(e: Event) -> tuple:
    return (e.ts if e.ts is not None else math.inf, e.source, e.line)


def fingerprint(text: str) -> str:
    """Mask what varies between ranks (numbers, addresses, prefixes) so the same message
    from many ranks groups into one (Drain-style)."""
    return _MASK.sub("#", _PREFIX_MASK.sub("", text)).strip()


# -- attribution ------------------------------------------------------------------------


def _map_local_ranks(events: list[Event], summary: LauncherSummary, scan: ScanResult) -> None:
    pairs: dict[tuple[str | None, int], int] = {}
    for r in summary.records:
        if r.rank is not None and r.local_rank is not None:
            pairs[(r.host, r.local_rank)] = r.rank
    for ev in events:
        if ev.rank is not None and ev.local_rank is not None:
            pairs.setdefault((ev.host, ev.local_rank), ev.rank)
    by_local: dict[int, set[int]] = {}
    for (_h, lr), rk in pairs.items():
        by_local.setdefault(lr, set()).add(rk)
    hosts = {h for (h, _), _ in pairs.items() if h} | {e.host for e in events if e.host and e.local_rank is not None}
    single_node = len(hosts) <= 1 and all(rk == lr for (_h, lr), rk in pairs.items())

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


def _dedupe(events: list[Event]) -> list[Event]:
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


def _world(scan: ScanResult, events: list[Event], summary: LauncherSummary) -> tuple[set[int], int | None]:
    seen = set(scan.ranks_seen)
    seen |= {e.rank for e in events if e.rank is not None}
    seen |= {r.rank for r in summary.records if r.rank is not None}
    size = None
    for f in scan.facts:
        ws = f.captures.get("world_size")
        if ws and ws.isdigit() and 0 < int(ws) <= 1_000_000:
            size = max(size or 0, int(ws))
    return seen, size


# -- the engine -------------------------------------------------------------------------


def _fact_events(scan: ScanResult) -> list[Event]:
    """Python exception lines and each rank's last line, as events the engine can attribute."""
    out = []
    for f in scan.facts:
        if f.fact in ("py-exception", "py-traceback"):
            out.append(Event("", f.fact.replace("py-", "python-"), "trace", f.source, f.line, f.text, f.rank, f.local_rank, f.host, None, None, f.time, f.ts, dict(f.captures), list(f.context)))
    for f in scan.tails:
        out.append(Event("", "last-line", "tail", f.source, f.line, f.text, f.rank, f.local_rank, f.host, None, None, f.time, f.ts, {}))
    return out


def _escalate_repeats(kb: KnowledgeBase, events: list[Event]) -> None:
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


def diagnose(kb: KnowledgeBase, scan: ScanResult, fr: "FRReport | None" = None) -> Diagnosis:
    events = _dedupe(scan.events)
    _escalate_repeats(kb, events)
    events += _fact_events(scan)
    summary = read_launcher(scan.facts)
    attribute_events(events, summary)
    _map_local_ranks(events, summary, scan)
    seen, world_size = _world(scan, events, summary)
    inputs = [InputInfo(i.path, i.bytes, i.lines) for i in scan.inputs]
    warnings = [w for i in scan.inputs for w in i.warnings] + scan.warnings
    ranks_count = world_size or (max(seen) + 1 if seen else 0)

    fr_events = _fr_events(fr) if fr else []
    events += fr_events
    alarming = [e for e in events if e.role in ("cause", "symptom")]
    fr_says = fr is not None and fr.verdict in ("mismatch", "hang")
    if not alarming and not fr_says and not _fingerprint_candidate(kb, events):
        return Diagnosis("no-failure-found", [], ranks_count, sorted(seen), inputs, warnings)

    expected: set[int] | None = None
    if world_size:
        expected = set(range(world_size))
    elif seen:
        expected = set(range(max(seen) + 1))

    coll = analyse(events, expected)
    accused = _accused(events)
    exits = summary.by_rank()
    fr_culprits = set(fr.culprit_ranks()) if fr else set()
    cands = _cause_candidates(kb, events, coll, accused, exits, fr_culprits)
    cands += _cross_rank_candidates(kb, events, coll, accused, cands, exits, expected)
    if fr:
        cands += _fr_candidates(kb, fr, events, cands)
    cands += _symptom_candidates(kb, events, cands, coll)
    cands = [_refine(kb, c, events) for c in cands]

    best: dict[str, Candidate] = {}
    for c in cands:
        if c.entry.id not in best or c.score > best[c.entry.id].score:
            best[c.entry.id] = c
    ranked = sorted(best.values(), key=lambda c: (-c.score, _key(c.events[0]) if c.events else (math.inf,)))
    findings = [_finding(kb, c, events, coll, exits, seen) for c in ranked[:3]]
    verdict = "diagnosed" if findings and findings[0].confidence >= DIAGNOSED_AT else "inconclusive"
    return Diagnosis(verdict, findings, ranks_count, sorted(seen), inputs, warnings)


def _accused(events: list[Event]) -> dict[int, list[Event]]:
    out: dict[int, list[Event]] = {}
    for ev in events:
        pr = ev.cap_int("peer_rank")
        if pr is not None and pr != ev.rank and ev.role == "symptom":
            out.setdefault(pr, []).append(ev)
    return out


def _sig_weight(kb: KnowledgeBase, ev: Event) -> float:
    try:
        return kb.get(ev.entry).signature(ev.signature).weight
    except KeyError:
        return 1.0


def _cause_candidates(kb, events, coll, accused, exits, fr_culprits=frozenset()) -> list[Candidate]:
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
        evs.sort(key=_key)
        weight = max(_sig_weight(kb, e) for e in evs)
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
        if votes and entry.scope.value == "rank":
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
        if rec and (rec.exitcode == -15 or (rec.exitcode == -6 and initiating in symptom_ranks)):
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


def _explainers(kb: KnowledgeBase, finding: str) -> list[Entry]:
    return [e for e in kb if finding in {x.value for x in e.explains}]


def _best_explainer(kb, finding: str, events: list[Event], fallback: str) -> tuple[Entry, list[Event]]:
    best: tuple[int, Entry, list[Event]] | None = None
    for entry in _explainers(kb, finding):
        evs = [e for e in events if e.entry == entry.id]
        n = len({e.signature for e in evs})
        if n and (best is None or n > best[0]):
            best = (n, entry, evs)
    if best:
        return best[1], best[2]
    return kb.get(fallback), []


def _crashed_with_exception(kb, rank: int, events: list[Event], extra: list[Event], note: str) -> Candidate | None:
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


def _cross_rank_candidates(kb, events, coll: CollectiveFinding | None, accused, cause_cands, exits, expected) -> list[Candidate]:
    out: list[Candidate] = []
    timeouts = [e for e in events if e.role == "symptom"]
    cause_ranks = {c.initiating for c in cause_cands if c.initiating is not None}
    strong_causes = [c for c in cause_cands if c.score >= DIAGNOSED_AT]
    if coll and coll.kind == "desync":
        entry, ctx = _best_explainer(kb, "desync", events, "collective-sequence-mismatch")
        culprit = coll.culprits[0] if len(coll.culprits) == 1 else None
        score = 0.55 + 0.35 * coll.strength + (0.05 if ctx else 0.0)
        notes = [coll.detail]
        if culprit is not None:
            notes.append(f"rank {culprit} is the odd one out")
        evs = [coll.reports[r].event for r in sorted(coll.reports, key=lambda r: (r not in coll.culprits, r))]
        out.append(Candidate(entry, min(score, 0.95), culprit, evs + ctx, notes, kind="desync"))
    elif coll and coll.kind == "absent":
        absent = coll.culprits
        dead = [r for r in absent if r in cause_ranks or (exits.get(r) and exits[r].exitcode not in (None, 0, *COLLATERAL_EXITS))]
        crashed = [c for r in absent if r not in cause_ranks and (c := _crashed_with_exception(kb, r, events, [coll.reports[x].event for x in coll.reporting], coll.detail))]
        if crashed and not strong_causes:
            out.extend(crashed)
        elif not dead:
            accused_absent = [r for r in absent if r in accused]
            if accused_absent:
                entry, ctx = _best_explainer(kb, "dead-peer", events, "nccl-peer-connection-closed")
                r = accused_absent[0] if len(accused_absent) == 1 else None
                evs = [e for r2 in accused_absent for e in accused[r2]]
                out.append(Candidate(entry, 0.72, r, evs + [coll.reports[x].event for x in coll.reporting], [coll.detail], kind="dead-peer"))
            else:
                entry, ctx = _best_explainer(kb, "straggler", events, "rank-zero-straggler")
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
    lost = [e for e in events if e.role == "symptom" and e.entry in {x.id for x in _explainers(kb, "dead-peer")}]
    if lost and expected and not out and not strong_causes:
        reporters = {e.rank for e in lost if e.rank is not None}
        silent = sorted(expected - reporters - {e.rank for e in timeouts if e.rank is not None})
        with_exc = [r for r in silent if any(e.role == "trace" and e.rank == r and e.signature == "python-exception" for e in events)]
        if reporters and (len(with_exc) == 1 or len(silent) == 1):
            r = with_exc[0] if len(with_exc) == 1 else silent[0]
            note = (
                f"ranks {compress_ranks(reporters)} lost their connection to a peer; of the ranks that did not, "
                f"rank {r} is the one with an error of its own" if len(silent) > 1 else
                f"ranks {compress_ranks(reporters)} lost their connection to a peer; rank {r} is the only one that did not"
            )
            cand = _crashed_with_exception(kb, r, events, lost[:6], note)
            if cand is None:
                entry, _ = _best_explainer(kb, "dead-peer", events, "gloo-peer-connection-lost")
                cand = Candidate(entry, 0.66, r, lost[:6], [note], kind="dead-peer")
            out.append(cand)
        elif reporters and silent:
            entry, _ = _best_explainer(kb, "dead-peer", events, "gloo-peer-connection-lost")
            note = f"ranks {compress_ranks(reporters)} lost their connection to a peer; ranks {compress_ranks(silent)} printed nothing about it — one of them died first"
            out.append(Candidate(entry, 0.45, None, lost[:6], [note], [
                f"Which of ranks {compress_ranks(silent)} died first and how: the launcher's console output (exit codes, signals) or `dmesg -T` on their hosts. "
                "Run: torchrun --tee 3 ... 2>&1 | tee console.log"], kind="dead-peer"))
    # TORCH_DISTRIBUTED_DEBUG=DETAIL logs every collective each rank enters: if the ranks'
    # last ones disagree, that is where they parted, even when no timeout was printed yet
    if not out and not strong_causes and (coll is None or coll.kind != "desync"):
        fp = _fingerprint_candidate(kb, events)
        if fp:
            out.append(fp)
    # peers naming a dead rank, without timeout reports that tell more
    if accused and not any(c.kind == "dead-peer" for c in out):
        named = sorted(accused)
        if not (set(named) & cause_ranks):
            entry, _ = _best_explainer(kb, "dead-peer", events, "nccl-peer-connection-closed")
            r = named[0] if len(named) == 1 else None
            evs = [e for n in named for e in accused[n]]
            out.append(Candidate(entry, 0.62, r, evs, [f"peers report losing rank(s) {compress_ranks(named)}"], kind="dead-peer"))
    # a hang with no report telling who is missing: the rank whose last sign of life is
    # well after everyone else's was still busy while the others waited
    if timeouts and not [c for c in cause_cands if c.score >= DIAGNOSED_AT] and not out and (coll is None or coll.kind == "uniform"):
        act = _last_activity([e for e in events if e.role in ("tail", "trace", "context", "symptom") and "death signal" not in e.text])
        if len(act) >= 2 and act[0][0] - act[1][0] >= 2.0:
            ts, r, ev = act[0]
            entry, ctx = _best_explainer(kb, "straggler", events, "rank-zero-straggler")
            note = (
                f"rank {r} was still active {act[0][0] - act[1][0]:.0f} s after the last sign of life of every other rank"
            )
            evs = [ev] + ctx + timeouts[:4]
            out.append(Candidate(entry, 0.62, r, evs, [note], kind="activity"))
    # timeouts that the collective reports cannot explain, with context that can
    if timeouts and not cause_cands and not out:
        for finding in ("desync", "straggler"):
            for entry in _explainers(kb, finding):
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


_FR_ROLE = {"type-mismatch": "cause", "size-mismatch": "cause", "dtype-mismatch": "cause", "extra-collective": "cause"}


def _fr_events(fr: "FRReport") -> list[Event]:
    """Flight Recorder findings as evidence lines: one per rank and finding (role fr-...)."""
    out = []
    for f in fr.findings:
        for rank, v in sorted(f.per_rank.items()):
            text = (
                f"[flight recorder] pg {f.process_group} seq {f.seq}: {v.get('op') or '-'} sizes={v.get('sizes')} "
                f"dtypes={v.get('dtypes')} at {v.get('call_site') or '?'} ({v.get('state')})"
            )
            role = "fr-culprit" if rank in f.culprit_ranks else "fr"
            path = next((p for p in fr.dumps if p.endswith(str(rank))), fr.dumps[0] if fr.dumps else "flight-recorder")
            line = int(v["record"]) + 1 if isinstance(v.get("record"), int) else (f.seq or 0) + 1
            out.append(Event("", f"flight-recorder/{f.kind}", role, path, line, text, rank, captures={"finding": f.kind}))
    return out


def _fr_candidates(kb: KnowledgeBase, fr: "FRReport", events: list[Event], cause_cands: list[Candidate]) -> list[Candidate]:
    """What the collective histories say, weighed against the logs."""
    out = []
    fr_evs = [e for e in events if e.role in ("fr", "fr-culprit")]
    for f in fr.findings:
        culprit = f.culprit_ranks[0] if len(f.culprit_ranks) == 1 else None
        evs = [e for e in fr_evs if e.captures.get("finding") == f.kind]
        if f.kind in _FR_ROLE:
            entry, ctx = _best_explainer(kb, "desync", events, "collective-sequence-mismatch")
            score = 0.92 if culprit is not None else 0.8
            out.append(Candidate(entry, score, culprit, evs + ctx, [f"Flight Recorder: {f.detail}"], kind="fr-desync"))
        elif f.kind in ("lagging", "stuck") and f.culprit_ranks:
            if any(c.initiating in f.culprit_ranks and c.score >= DIAGNOSED_AT for c in cause_cands):
                continue  # the logs already name what happened to that rank; FR corroborates it
            if culprit is not None and (crashed := _crashed_with_exception(kb, culprit, events, evs, f"Flight Recorder: {f.detail}")):
                out.append(crashed)
                continue
            finding = "straggler" if f.kind == "lagging" else "dead-peer"
            entry, ctx = _best_explainer(kb, finding, events, "rank-zero-straggler" if finding == "straggler" else "worker-python-exception")
            out.append(Candidate(entry, 0.7 if culprit is not None else 0.55, culprit, evs + ctx, [f"Flight Recorder: {f.detail}"], kind="fr-hang"))
    return out


def _fingerprint_candidate(kb: KnowledgeBase, events: list[Event]) -> Candidate | None:
    fps = [e for e in events if e.role == "context" and e.rank is not None and e.cap_int("seq") is not None and e.captures.get("op")]
    if len({e.rank for e in fps}) < 2:
        return None
    last: dict[int, Event] = {}
    for e in sorted(fps, key=lambda e: (e.cap_int("seq"), e.source, e.line)):
        last[e.rank] = e  # type: ignore[index]
    shape = {r: (e.captures.get("op"), e.captures.get("value")) for r, e in last.items()}
    if len(set(shape.values())) < 2:
        return None
    culprits, clear = _minority(shape)  # type: ignore[arg-type]
    detail = "; ".join(f"rank {r}: SeqNum={e.captures.get('seq')} {e.captures.get('op')} {e.captures.get('value') or ''}".strip() for r, e in sorted(last.items()))
    entry, ctx = _best_explainer(kb, "desync", events, "collective-sequence-mismatch")
    r = culprits[0] if clear and len(culprits) == 1 else None
    evs = [last[x] for x in sorted(last, key=lambda x: (x not in culprits, x))]
    return Candidate(entry, 0.55 if clear else 0.5, r, evs, [f"the last collective each rank entered differs ({detail})"], kind="desync")


def _refine(kb: KnowledgeBase, c: Candidate, events: list[Event]) -> Candidate:
    """Swap a generic explanation for a more specific one the context supports: a desync
    with torch.compile graph breaks around it is the compile desync, not just "a desync"."""
    findings = [x.value for x in c.entry.explains]
    if not findings:
        return c
    own = len({e.signature for e in events if e.entry == c.entry.id and e.role == "context"})
    best: tuple[int, Entry] | None = None
    for other in _explainers(kb, findings[0]):
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


def _symptom_candidates(kb, events, cands, coll) -> list[Candidate]:
    have = {c.entry.id for c in cands}
    by_entry: dict[str, list[Event]] = {}
    for ev in events:
        if ev.role == "symptom" and ev.entry not in have:
            by_entry.setdefault(ev.entry, []).append(ev)
    out = []
    for entry_id, evs in by_entry.items():
        evs.sort(key=_key)
        ranks = {e.rank for e in evs if e.rank is not None}
        score = min(0.4, 0.3 + 0.02 * len(ranks))
        notes = ["only collateral symptoms were found; the rank that caused them left no evidence here"]
        if coll and coll.kind == "uniform":
            notes.append(coll.detail)
        out.append(Candidate(kb.get(entry_id), score, None, evs, notes, kind="symptom"))
    return out


# -- presenting a candidate -------------------------------------------------------------


def _group(events: list[Event]) -> list[tuple[Event, int, list[int]]]:
    groups: dict[tuple[str, str], list[Event]] = {}
    order: list[tuple[str, str]] = []
    for ev in events:
        k = (ev.signature, fingerprint(ev.text))
        if k not in groups:
            groups[k] = []
            order.append(k)
        groups[k].append(ev)
    out = []
    for k in order:
        evs = groups[k]
        ranks = sorted({e.rank for e in evs[1:] if e.rank is not None and e.rank != evs[0].rank})
        out.append((evs[0], len(evs) - 1, ranks))
    return out


def _evidence(c: Candidate, events: list[Event], initiating: int | None) -> list[Evidence]:
    primary = list(c.events)
    if initiating is not None and c.kind == "cause":
        # the failing rank's own Python exception, even when no entry names it
        primary = [e for e in events if e.role == "trace" and e.rank == initiating][-2:] + primary
    extra = [e for e in events if e.role == "symptom" and e not in primary]
    extra.sort(key=_key)
    ordered = primary + extra
    # the initiating rank's own lines first, then by role, then time
    role_rank = {"trace": 0, "cause": 0, "fr-culprit": 0, "context": 1, "tail": 1, "fr": 1, "symptom": 2}
    ordered.sort(key=lambda e: (0 if (initiating is not None and e.rank == initiating) else 1, role_rank.get(e.role, 3), _key(e)))
    seen_lines: set[tuple[str, int]] = set()
    unique = []
    for ev in ordered:  # one evidence item per log line, whatever matched it
        if (ev.source, ev.line) not in seen_lines:
            seen_lines.add((ev.source, ev.line))
            unique.append(ev)
    out: list[Evidence] = []
    for ev, n, ranks in _group(unique)[:MAX_EVIDENCE]:
        role = {"trace": "cause", "tail": "context", "fr-culprit": "cause", "fr": "context"}.get(ev.role, ev.role)
        sig = f"{ev.entry}/{ev.signature}" if ev.entry else ev.signature
        out.append(Evidence(ev.source, ev.line, ev.rank, ev.time, ev.text, sig, role, n, ranks))
    return out


def _weak(kb: KnowledgeBase, ev: Event) -> bool:
    return bool(ev.entry) and _sig_weight(kb, ev) < 0.8


def _step(s) -> str:
    return f"{s.text} — `{s.command}`" if s.command else s.text


def _finding(kb, c: Candidate, events: list[Event], coll, exits, seen: set[int]) -> Finding:
    entry = c.entry
    init = c.initiating
    involved = {e.rank for e in events if e.rank is not None and e.role in ("symptom", "cause")}
    involved |= {r for r, rec in exits.items() if rec.exitcode is not None}
    cause_ranks = {e.rank for e in events if e.role == "cause" and e.rank is not None and e.entry == entry.id}
    if coll:
        involved |= set(coll.reporting)
    if init is not None:
        collateral = sorted(r for r in involved if r != init)
    else:
        collateral = sorted(r for r in involved if r not in cause_ranks)
    evidence = _evidence(c, events, init)
    host = next((e.host for e in c.events if e.rank == init and e.host), None) if init is not None else None

    first = next((e for e in c.events if e.role == "cause"), c.events[0] if c.events else None)
    if c.kind == "cause" and init is not None and first is not None and _weak(kb, first):
        exc = [e for e in events if e.role == "trace" and e.rank == init]
        if exc:
            first = exc[-1]
    where = f"rank {init}" + (f" on {host}" if host else "") if init is not None else None
    parts = []
    if c.kind == "cause" and first is not None:
        msg = _PREFIX_MASK.sub("", first.text).strip()
        if len(msg) > 240:
            msg = msg[:240] + " …"
        parts.append(f"{(where or 'a rank').capitalize()} failed first: “{msg}”.")
    elif c.kind == "desync":
        parts.append(f"The ranks are in different collectives: {c.notes[0]}." + (f" {where.capitalize()} is the odd one out." if where else ""))
    elif c.kind == "absent":
        parts.append(f"{c.notes[0].capitalize()}." + (f" {where.capitalize()} was busy elsewhere and never arrived." if where else ""))
    elif c.kind == "dead-peer":
        parts.append(f"Peers lost the connection to {where or 'a rank'}; its process exited without an error of its own in these logs.")
    elif c.kind in ("fr-desync", "fr-hang"):
        parts.append(c.notes[0] + ("" if c.notes[0].endswith(".") else ".") + (f" {where.capitalize()} is where the ranks parted." if where else ""))
    elif c.kind == "activity":
        parts.append(c.notes[0].capitalize() + "; the others were waiting for it.")
    elif c.kind == "context":
        parts.append(c.notes[0].capitalize() + ".")
    else:
        parts.append("Only collateral symptoms were found (timeouts, aborts); the originating rank's own error is not in these logs.")
    if collateral and init is not None:
        if len(collateral) == 1:
            parts.append(f"Rank {collateral[0]} only shows collateral damage.")
        else:
            parts.append(f"Ranks {compress_ranks(collateral)} only show collateral damage.")
    parts.append(" ".join(entry.summary.split()))
    site = None
    for e in ([first] if first is not None else []) + [e for e in events if e.role == "trace" and e.rank == init and init is not None]:
        if e.context and (site := user_call_site(e.context, e.rank)):
            break
    if site and c.kind == "cause":
        parts.insert(1, f"It was raised at {site}.")
    root_cause = " ".join(parts)

    missing: list[str] = list(c.missing)
    if c.score < DIAGNOSED_AT or c.kind in ("symptom", "context", "dead-peer"):
        if entry.missing:
            missing.append(f"{entry.missing.fact} Run: {entry.missing.command}")
    if init is None and entry.scope.value == "rank" and c.kind in ("cause", "desync", "absent", "activity"):
        missing.append(
            "Which rank failed first: collect every rank's output with rank prefixes and timestamps. "
            "Run: torchrun --log-dir logs --tee 3 ... (or srun -l), then rankdoctor diagnose logs/"
        )
    if coll and coll.kind == "absent" and c.kind in ("absent", "dead-peer"):
        silent = [r for r in coll.culprits if not any(e.rank == r for e in events)]
        if silent:
            missing.append(
                f"The output of rank(s) {compress_ranks(silent)}, which never reported: their last lines show whether they were busy, stuck or dead. "
                f"Run: py-spy dump --pid <pid> on a live job, or collect logs/attempt_0/<local_rank>/stderr.log"
            )
    return Finding(
        entry=entry.id,
        klass=entry.class_,
        title=entry.title,
        confidence=round(c.score, 2),
        initiating_rank=init,
        collateral_ranks=collateral,
        evidence=evidence,
        root_cause=root_cause,
        fix=[_step(s) for s in entry.fix],
        verify=entry.verify,
        missing=missing,
        initiating_host=host,
        notes=c.notes,
    )
