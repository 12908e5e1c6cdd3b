"""Cross-rank analysis of Flight Recorder dumps.

Collectives of one process group are matched across ranks by their sequence number
(``collective_seq_id``; ``p2p_seq_id`` for send/recv). At each sequence number every rank
must run the same op with the same sizes and dtypes. The first place they do not is where
the ranks parted; the rank(s) in the minority — or, when shapes agree, the rank whose
Python call site differs — is the culprit. Ranks that never issued the collective the
others wait in are lagging; ranks without a dump are reported with what that hides.
"""

from __future__ import annotations

import ast
import re
from array import array
from dataclasses import dataclass, field
from typing import Any

from ..diagnose.collectives import minority
from ..diagnose.traceback import LIBRARY_PATH
from .load import Dump
from .tracks import DONE, Key, Track

# dtypes of equal size: swapping one for another runs silently and corrupts the values
_DTYPE_BYTES = {
    "Double": 8, "Long": 8, "ComplexFloat": 8,
    "Float": 4, "Int": 4,
    "Half": 2, "BFloat16": 2, "Short": 2,
    "Byte": 1, "Char": 1, "Bool": 1, "Float8_e4m3fn": 1, "Float8_e5m2": 1,
}


_PER_RANK_KEYS = ("op", "sizes", "dtypes", "call_site")  # rankdoctor.fr/v1


@dataclass(frozen=True)
class Op:
    rank: int
    pg: str
    seq: int
    p2p: bool
    name: str  # op without the backend prefix
    in_sizes: str
    in_dtypes: str
    out_sizes: str
    state: str
    done: bool
    call_site: str | None
    record_id: int

    @property
    def shape(self) -> tuple[str, str, str, str]:
        """What every rank of the group must agree on. A rooted collective has a side that only
        its root holds: gather's output list exists on the destination only, scatter's input list
        on the source only, so those sides are left out (the root differs from its peers by design)."""
        if self.name == "gather":
            return (self.name, self.in_sizes, self.in_dtypes, "")
        if self.name == "scatter":
            return (self.name, "", "", self.out_sizes)
        return (self.name, self.in_sizes, self.in_dtypes, self.out_sizes)

    def per_rank(self) -> dict[str, Any]:
        return {
            "op": self.name,
            "sizes": _parse(self.in_sizes),
            "dtypes": _parse(self.in_dtypes),
            "call_site": self.call_site,
            "state": self.state,
            "record": self.record_id,
        }


@dataclass
class Finding:
    kind: str  # missing-ranks | type-mismatch | size-mismatch | dtype-mismatch | extra-collective | stuck | lagging
    process_group: str
    seq: int | None
    op: str | None
    culprit_ranks: list[int]
    detail: str
    per_rank: dict[int, dict[str, Any]] = field(default_factory=dict)
    # set aside by the root-cause pass (analyze._set_collateral_aside): the whole finding only
    # waits behind another, or these of its culprits do. The views and the diagnosis's rank
    # table leave them out
    collateral: bool = False
    collateral_ranks: list[int] = field(default_factory=list)

    @property
    def root_ranks(self) -> list[int]:
        """The culprits the views name: those that do not only wait behind another finding."""
        return [r for r in self.culprit_ranks if r not in self.collateral_ranks]

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "process_group": self.process_group,
            "seq": self.seq,
            "op": self.op,
            "culprit_ranks": self.root_ranks,
            "detail": self.detail,
            "per_rank": {str(r): {k: x for k, x in v.items() if k in _PER_RANK_KEYS} for r, v in sorted(self.per_rank.items())},
        }


@dataclass
class FRReport:
    verdict: str  # mismatch | hang | consistent | inconclusive
    ranks_found: list[int]
    ranks_missing: list[int]
    findings: list[Finding]
    notes: list[str] = field(default_factory=list)
    dumps: list[str] = field(default_factory=list)
    # the missing ranks known only from a gap in the ranks that dumped (no pg_config lists them)
    gap_missing: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": "rankdoctor.fr/v1",
            "verdict": self.verdict,
            "ranks_found": self.ranks_found,
            "ranks_missing": self.ranks_missing,
            "findings": [f.to_json() for f in self.shown],
        }

    @property
    def shown(self) -> list[Finding]:
        """The findings a reader needs: one per root cause (the rest is in the notes)."""
        return [f for f in self.findings if not f.collateral]

    @property
    def exit_code(self) -> int:
        return {"consistent": 0, "mismatch": 1, "hang": 1, "inconclusive": 3}[self.verdict]

    def culprit_ranks(self) -> list[int]:
        return sorted({r for f in self.shown for r in f.root_ranks})

    @property
    def culprit(self) -> int | None:
        for f in self.shown:
            if len(f.root_ranks) == 1:
                return f.root_ranks[0]
        return None


_MAX_LITERAL = 100_000  # ast.literal_eval holds ~220 bytes per character: longer text stays text


def _parse(s: str) -> Any:
    if len(s) > _MAX_LITERAL:
        return s
    try:
        return ast.literal_eval(s)
    except (ValueError, SyntaxError):
        return s


def call_site(frames: Any) -> str | None:
    """The innermost frame that is the user's code (frames are innermost first)."""
    if not isinstance(frames, list):
        return None
    for fr in frames:
        if not isinstance(fr, dict):
            continue
        fn = str(fr.get("filename", ""))
        if fn and not LIBRARY_PATH.search(fn):
            return f"{fn}:{fr.get('line')}"
    return None


def _op(rank: int, t: Track, keys: list[Key], i: int) -> Op:
    k = keys[t.keys[i]]
    state = t.state(i)
    return Op(rank, t.pg, t.seqs[i], False, k.name, k.in_sizes, k.in_dtypes, k.out_sizes, state, t.done(i), k.call_site, t.rids[i])


class _Group:
    """One process group's tracks, rank by rank, with positions by sequence number."""

    def __init__(self, pg: str, dumps: list[Dump]) -> None:
        self.pg = pg
        self.tracks: dict[int, Track] = {}
        self.keys: dict[int, list[Key]] = {}
        for d in dumps:
            t = d.summary.tracks.get(pg)
            if t is not None:
                self.tracks[d.rank] = t
                self.keys[d.rank] = d.summary.keys
        self._pos: dict[int, dict[int, int] | None] = {}

    def position(self, rank: int, seq: int) -> int | None:
        t = self.tracks.get(rank)
        if t is None or not len(t.seqs):
            return None
        if rank not in self._pos:
            self._pos[rank] = None if t.contiguous() else t.index()
        idx = self._pos[rank]
        if idx is None:
            i = seq - t.seqs[0]
            return i if 0 <= i < len(t.seqs) else None
        return idx.get(seq)

    def done(self, rank: int, seq: int) -> bool:
        """The rank's record of collective ``seq`` is done (completed or retired)."""
        i = self.position(rank, seq)
        return i is not None and self.tracks[rank].done(i)

    def at(self, seq: int) -> dict[int, Op]:
        """Every rank's collective at ``seq``, by rank."""
        out = {}
        for r, t in self.tracks.items():
            i = self.position(r, seq)
            if i is not None:
                out[r] = _op(r, t, self.keys[r], i)
        return out

    def last(self, rank: int) -> Op | None:
        t = self.tracks.get(rank)
        if t is None or not len(t.seqs):
            return None
        i = max(range(len(t.seqs)), key=t.seqs.__getitem__) if not t.contiguous() else len(t.seqs) - 1
        return _op(rank, t, self.keys[rank], i)

    def disagreements(self) -> list[int]:
        """The sequence numbers at which not every rank that ran one ran the same collective
        from the same line (a superset of where a finding can be): compared as arrays of ids
        into one table of distinct collectives, a C-speed comparison a rank."""
        table: dict[Key, int] = {}
        ids: dict[int, array] = {}
        for r, t in self.tracks.items():
            if not len(t.seqs):
                continue
            local = [table.setdefault(k, len(table)) for k in self.keys[r]]
            ids[r] = array("l", map(local.__getitem__, t.keys))
        if len(table) <= 1:
            return []
        if not all(self.tracks[r].contiguous() for r in ids):
            return self._disagreements_by_seq(ids)
        windows = {r: (self.tracks[r].seqs[0], self.tracks[r].seqs[-1]) for r in ids}
        glo = min(lo for lo, _ in windows.values())
        ghi = max(hi for _, hi in windows.values())
        ref = array("l", [-1]) * (ghi - glo + 1)
        flo = fhi = None  # the filled part of ref, one interval
        for r in sorted(ids, key=lambda r: windows[r]):
            lo, hi = windows[r]
            g = ids[r]
            if flo is None:
                ref[lo - glo:hi - glo + 1] = g
                flo, fhi = lo, hi
            elif lo > fhi + 1:
                return self._disagreements_by_seq(ids)  # a gap between windows
            elif hi > fhi:
                ref[fhi + 1 - glo:hi + 1 - glo] = g[fhi + 1 - lo:]
                fhi = hi
        out: set[int] = set()
        for r, g in ids.items():
            lo, hi = windows[r]
            mine = ref[lo - glo:hi - glo + 1]
            if g != mine:
                out.update(lo + i for i, (a, b) in enumerate(zip(g, mine)) if a != b)
        return sorted(out)

    def _disagreements_by_seq(self, ids: dict[int, array]) -> list[int]:
        first: dict[int, int] = {}
        odd: set[int] = set()
        for r, g in ids.items():
            for s, x in zip(self.tracks[r].seqs, g):
                if first.setdefault(s, x) != x:
                    odd.add(s)
        return sorted(odd)


class _Job:
    """What every group's analysis reads about the dumps, worked out once."""

    def __init__(self, dumps: list[Dump]) -> None:
        self.dumps = dumps
        # a pg_config key or name -> the ranks it lists (or, for gloo, the ranks place_missing
        # works out)
        self.cfg: dict[str, set[int]] = {}
        for d in dumps:
            for key, cfg in d.pg_config.items():
                r = _cfg_ranks(cfg)
                if r:
                    self.cfg.setdefault(str(key), set()).update(r)
                    if isinstance(cfg.get("name"), str) and cfg["name"] != str(key):
                        self.cfg.setdefault(cfg["name"], set()).update(r)
        # pg_status keys name groups only where they agree with the entries' group ids (or the
        # rank recorded nothing at all: a rank that never issued a collective)
        self.trusted = {d.rank for d in dumps if not d.summary.tracks or _status_keys_match(d)}
        self.idle = {d.rank for d in dumps if not d.summary.tracks}
        self.status_keys = {d.rank: {str(k) for k in d.pg_status} for d in dumps}
        self.missing: set[int] = set()  # ranks without a dump (analyze fills these two in)
        self.last_rid: dict[int, int] = {}  # each rank's last record id in any group

    def place_missing(self, pgs: list[str], groups: dict[str, "_Group"], missing: list[int]) -> None:
        """Put ranks without a dump into the groups they must belong to, where no pg_config
        says (gloo). Groups named alike ("tp0".."tp3", "dp0", "dp1") are a partition of the
        job into groups of one size; when exactly one of them has fewer ranks with records
        than its siblings, the ranks without a dump that no sibling holds are its members."""
        if not missing:
            return
        for siblings in _group_kinds([pg for pg in pgs if not self.pg_members(pg)]).values():
            if len(siblings) < 2:
                continue
            held = {pg: set(groups[pg].tracks) for pg in siblings}
            size = max(len(r) for r in held.values())
            short = [pg for pg in siblings if len(held[pg]) < size]
            placed = set().union(*held.values())
            free = [r for r in missing if r not in placed]
            if len(short) == 1 and free and len(free) == size - len(held[short[0]]):
                self.cfg.setdefault(short[0].partition(":")[0], set()).update(held[short[0]] | set(free))

    def pg_members(self, pg: str) -> set[int]:
        """The ranks of one process group as pg_config lists them (NCCL dumps); empty when no
        dump says (gloo in torch 2.13 leaves pg_config empty). A sub-group's collectives are
        compared only among its members: the other ranks never issue them."""
        pg_id, _, name = pg.partition(":")
        return self.cfg.get(pg_id, set()) | self.cfg.get(name, set())


_PARSED_RANKS: dict[str, Any] = {}


def _cfg_ranks(cfg: Any) -> list[int] | None:
    """The ranks one pg_config entry lists (a list, or its repr as NCCL writes it)."""
    if not isinstance(cfg, dict):
        return None
    r = cfg.get("ranks")
    if isinstance(r, str):
        if r not in _PARSED_RANKS:  # every rank's dump repeats the default group's 1,024 ranks
            if len(_PARSED_RANKS) > 4096:
                _PARSED_RANKS.clear()
            _PARSED_RANKS[r] = _ranks_of(_parse(r))
        return _PARSED_RANKS[r]
    return _ranks_of(r)


def _ranks_of(r: Any) -> list[int] | None:
    return list(r) if isinstance(r, (list, tuple)) and all(isinstance(x, int) for x in r) else None


def _with_gaps(ranks: set[int]) -> set[int]:
    """The job's ranks from those known: every rank below the highest of them too (global
    ranks are 0..world-1, so a gap is a rank that left no dump: gloo's pg_config is empty, and
    the rank that died first is the one without one)."""
    return ranks | set(range(max(ranks) + 1)) if ranks and 0 <= min(ranks) else set(ranks)


def _listed_members(dumps: list[Dump]) -> set[int]:
    """The ranks that dumped and those the default group's pg_config lists."""
    ranks: set[int] = {d.rank for d in dumps}
    for d in dumps:
        for cfg in d.pg_config.values():
            r = _cfg_ranks(cfg)
            if r is not None and cfg.get("desc") in ("default_pg", "", None):
                ranks |= set(r)
    return ranks


def _status_keys_match(d: Dump) -> bool:
    """pg_status speaks of the same group ids as the entries (NCCL); gloo's keys are each
    rank's local group numbers, which are not the ids its entries carry."""
    ids = {pg.split(":", 1)[0] for pg in d.summary.tracks}
    return bool(ids) and ids <= {str(k) for k in d.pg_status}


def _minority(values: dict[int, Any]) -> list[int]:
    """The ranks outside a clear majority (none when the camps are equal)."""
    return minority(values)[0]


def _status(d: Dump, pg_id: str) -> tuple[int | None, int | None]:
    st = d.pg_status.get(pg_id) or d.pg_status.get(str(pg_id))
    if isinstance(st, dict):
        enq = st.get("last_enqueued_collective")
        comp = st.get("last_completed_collective")
        return (enq if isinstance(enq, int) else None, comp if isinstance(comp, int) else None)
    return None, None


def _wrapped_notes(dumps: list[Dump]) -> list[str]:
    wrapped = [(d.rank, d.summary.first_record) for d in dumps if isinstance(d.summary.first_record, int) and d.summary.first_record > 0]
    if len(wrapped) <= 3:
        return [f"rank {r}'s ring buffer wrapped (first record {f}): only the most recent collectives are compared" for r, f in wrapped]
    firsts = sorted(f for _, f in wrapped)
    return [
        f"the ring buffers of {len(wrapped)} of {len(dumps)} ranks wrapped (first records {firsts[0]}–{firsts[-1]}): "
        "only the most recent collectives are compared"
    ]


def analyze(dumps: list[Dump]) -> FRReport:
    found = [d.rank for d in dumps]
    listed = _listed_members(dumps)
    members = _with_gaps(listed)
    missing = sorted(members - set(found))
    report = FRReport("consistent", found, missing, [], dumps=[d.path for d in dumps],
                      gap_missing=sorted(members - listed))
    if missing:
        report.findings.append(
            Finding(
                "missing-ranks",
                "*",
                None,
                None,
                [],
                f"no dump from rank(s) {rank_list(missing)}: they died before dumping (a signal, an abort) "
                "or their dumps were not collected; their collectives cannot be compared",
            )
        )
    if len(dumps) < 2:
        report.verdict = "inconclusive"
        report.notes.append("one dump cannot be compared with anything: collect every rank's dump")
        return report

    job = _Job(dumps)
    pgs = sorted({pg for d in dumps for pg in d.summary.tracks})
    report.notes.extend(_wrapped_notes(dumps))
    groups = {pg: _Group(pg, dumps) for pg in pgs}
    job.place_missing(pgs, groups, missing)
    job.missing = set(missing)
    for g in groups.values():
        for r, t in g.tracks.items():
            if len(t.seqs):
                job.last_rid[r] = max(job.last_rid.get(r, -1), max(t.rids))
    for pg in pgs:
        _analyze_pg(pg, groups[pg], job, report)
    if not any(f.kind in _MISMATCH for f in report.findings) and (odd := _sibling_mismatch(pgs, groups)):
        # the odd collective explains why its group stopped there: not a member that never joined
        report.findings = [f for f in report.findings if not (f.kind == "stuck" and f.process_group == odd.process_group)]
        report.findings.append(odd)

    _set_collateral_aside(report, groups, job)
    kinds = {f.kind for f in report.findings}
    if kinds & {"type-mismatch", "size-mismatch", "dtype-mismatch", "extra-collective"}:
        report.verdict = "mismatch"
    elif kinds & {"stuck", "lagging"}:
        report.verdict = "hang"
    elif missing and not any(d.summary.tracks for d in dumps):
        report.verdict = "inconclusive"
    # a stuck group whose only explanation is a rank without a dump: that rank is the suspect
    for f in report.findings:
        absent = sorted(job.pg_members(f.process_group) & set(missing)) if f.kind == "stuck" else []
        if absent and not f.culprit_ranks:
            f.culprit_ranks = absent
            f.detail += f"; every member that dumped enqueued it, and its member(s) {rank_list(absent)} left no dump: they never joined"
    for f in report.findings:
        if f.kind == "stuck" and not f.culprit_ranks and missing and not any(x.kind == "lagging" for x in report.findings):
            f.culprit_ranks = list(missing)
            f.detail += f"; every rank that dumped is waiting here, so the rank(s) without a dump ({', '.join(map(str, missing))}) never joined"
    return report


def _analyze_pg(pg: str, group: _Group, job: _Job, report: FRReport) -> None:
    ranks_in_pg = sorted(group.tracks)
    if not ranks_in_pg:
        return
    # 1. the first sequence number where the ranks disagree on what they run
    for seq in group.disagreements():
        per = group.at(seq)
        if len(per) < 2:
            continue
        shapes = {r: op.shape for r, op in per.items()}
        if len(set(shapes.values())) > 1:
            report.findings.append(_mismatch(pg, seq, per, group))
            return
        sites = {r: op.call_site for r, op in per.items() if op.call_site}
        if len(set(sites.values())) > 1 and _minority(sites):
            # same shape, different line: one rank is running a different collective that
            # happens to look the same (an extra or a skipped one)
            culprits = _minority(sites)
            last = {r: int(group.tracks[r].seqs[-1]) for r in per}
            if all(last[r] == seq for r in culprits) and all(last[r] > seq for r in per if r not in culprits):
                # ... unless the odd rank stopped right there while the others went on past it:
                # the op completed (nobody moves on before every rank joined it), so it was the
                # same collective reached from another line, and the rank then stopped (its own
                # failure, which the logs show)
                continue
            if all(last[r] > seq for r in per) and len(set(last.values())) == 1:
                # ... or every rank went on past it and every rank's last collective is the same
                # sequence number: the ops paired one to one to the end, so no rank issued one more
                # than the others (DDP's join() shadowing the all_reduces of a rank whose data ran
                # out, a helper that runs the same collective from its own line)
                continue
            counts = {r: len(group.tracks[r].seqs) for r in per}
            detail = (
                f"at seq {seq} every rank runs {per[min(per)].name} with the same shape, but from different lines: "
                + "; ".join(f"{'rank' if len(rs) == 1 else 'ranks'} {rank_list(rs)} at {site}" for site, rs in _by_value({r: op.call_site for r, op in per.items()}))
                + f". Collectives per rank: {'; '.join(f'{rank_list(rs)}: {n}' for n, rs in _by_value(counts))}"
            )
            report.findings.append(
                Finding("extra-collective", pg, seq, per[culprits[0]].name, culprits, detail, {r: op.per_rank() for r, op in sorted(per.items())})
            )
            return
    # 2. how far each rank of the group got
    pg_id = pg.split(":", 1)[0]
    dumps = job.dumps
    members = job.pg_members(pg) or set(ranks_in_pg) | {
        d.rank for d in dumps if d.rank in job.trusted and pg_id in job.status_keys[d.rank]}
    if pg.partition(":")[2] == "default_pg" or pg_id == "0":
        members |= job.idle  # every rank is in the default group
    enq: dict[int, int] = {}
    comp: dict[int, int] = {}
    for d in dumps:
        if d.rank not in members:
            continue
        t = group.tracks.get(d.rank)
        e, c = _status(d, pg_id) if d.rank in job.trusted else (None, None)
        enq[d.rank] = e if e is not None else _max_seq(t)
        comp[d.rank] = c if c is not None else _max_done(t)
    top = max(enq.values())
    if any(t.last_seen_completed and _max_seq(t) == top for r, t in group.tracks.items() if r in enq):
        # a member saw collective `top` end: every member joined it. Those whose dumps show
        # it pending, or not yet issued, dumped before they saw it end (dumps taken at exit,
        # each at its own moment): nothing is stuck here
        return
    lagging = sorted(r for r, v in enq.items() if v < top)
    waiting = sorted(r for r, v in enq.items() if v == top and comp.get(r, -1) < top)
    absent = (members - set(enq)) & job.missing
    if not lagging and not waiting and absent and all(
            (i := group.position(r, top)) is not None and group.tracks[r].rids[i] == job.last_rid.get(r)
            for r in enq):
        # a member left no dump, and every member that dumped did nothing after this group's
        # last collective: gloo retires a collective that failed because a member died (the
        # survivors' copies read done), so the group never finished it; it stopped here,
        # waiting for the member without a dump
        waiting = sorted(enq)
    if waiting and len(waiting) == len(enq) and members <= set(enq) and all(
            group.done(r, top) for r in waiting):
        # every member dumped, issued collective `top` and holds its record retired (the work
        # ended and was released), though pg_status never counted it completed: nobody waited on
        # it - an async collective at the end of a run (DDP's unused-parameter bitmap of the last
        # step) in dumps taken at exit. A collective still running is never retired; a member
        # that died leaves no dump or never issued it
        return
    if lagging and len(lagging) < len(enq):
        ahead = [r for r in enq if enq[r] == top]
        head = group.at(top)
        sample = head.get(ahead[0]) if ahead else None
        per = {r: op.per_rank() for r, op in sorted(head.items())}
        for r in lagging:
            last = group.last(r)
            per[r] = {"op": None, "sizes": None, "dtypes": None, "call_site": last.call_site if last else None,
                      "state": f"last enqueued seq {enq[r]}"}
        # a collective completes only when every member has issued it: a lagging rank that issued a
        # later collective than another lagging rank is blocked in one that rank never issued, so
        # the ranks that stopped earliest are where the group stopped advancing
        first = min(enq[r] for r in lagging)
        stopped = [r for r in lagging if enq[r] == first]
        blocked = [r for r in lagging if enq[r] > first]
        report.findings.append(
            Finding(
                "lagging",
                pg,
                top,
                sample.name if sample else None,
                stopped,
                f"ranks {rank_list(ahead)} issued collective {top}"
                + (f" ({sample.name} at {sample.call_site})" if sample else "")
                + f"; rank(s) {rank_list(stopped)} stopped at {first} and never issued it"
                + (f"; rank(s) {rank_list(blocked)} stopped at {_stops(blocked, enq)}, blocked in a collective "
                   f"that rank(s) {rank_list(stopped)} never issued" if blocked else ""),
                per,
            )
        )
    elif waiting:
        head = group.at(top)
        sample = next(iter(head.values()), None)
        report.findings.append(
            Finding(
                "stuck",
                pg,
                top,
                sample.name if sample else None,
                [],
                f"ranks {rank_list(waiting)} never completed collective {top}"
                + (f" ({sample.name} at {sample.call_site})" if sample else ""),
                {r: op.per_rank() for r, op in sorted(head.items())},
            )
        )


_MISMATCH = frozenset({"type-mismatch", "size-mismatch", "dtype-mismatch", "extra-collective"})


def rank_list(ranks: Any, most: int = 8) -> str:
    """Ranks for a sentence: all of them up to ``most``, else runs and strides
    ("0-7", "3, 11, …, 1019 (128 ranks)"): a thousand numbers help nobody."""
    rs = sorted(set(ranks))
    if len(rs) <= most:
        return ", ".join(map(str, rs))
    runs: list[str] = []
    i = 0
    while i < len(rs):
        j = i
        while j + 1 < len(rs) and rs[j + 1] == rs[j] + 1:
            j += 1
        runs.append(str(rs[i]) if i == j else f"{rs[i]}-{rs[j]}")
        i = j + 1
    if len(runs) <= most:
        return ", ".join(runs)
    step = rs[1] - rs[0]
    if all(b - a == step for a, b in zip(rs, rs[1:])):
        return f"{rs[0]}, {rs[1]}, …, {rs[-1]} ({len(rs)} ranks, every {step})"
    return ", ".join(runs[:most - 2]) + f", …, {runs[-1]} ({len(rs)} ranks)"


def _stops(lagging: list[int], enq: dict[int, int]) -> str:
    seqs = {enq[r] for r in lagging}
    return str(seqs.pop()) if len(seqs) == 1 else ", ".join(str(enq[r]) for r in lagging)


def _by_value(values: dict[int, Any]) -> list[tuple[Any, list[int]]]:
    out: dict[Any, list[int]] = {}
    for r, v in sorted(values.items()):
        out.setdefault(v, []).append(r)
    return list(out.items())


def _set_collateral_aside(report: FRReport, groups: dict[str, _Group], job: _Job) -> None:
    """Keep one finding per root cause; the groups that only wait behind it become one note.

    A rank waits in a group when its latest collective there is not done. A rank that lags
    in group G (never issued G's collective) while it waits in another group H with a
    finding is collateral in G: it cannot issue anything before H's collective ends (NCCL
    queues a rank's collectives on its streams; gloo runs them one at a time). A group where
    every member issued the collective and none completed is collateral when one of its
    members queued it behind a collective still pending in another such group. Collateral
    resolves through such chains down to the root: a rank that lags without waiting anywhere
    (it stopped on its own), a group stuck with nothing before it, or a mismatch. Findings on
    a cycle with no root (ranks waiting on each other) stay as they are."""
    flagged = {f.process_group: f for f in report.findings if f.kind in _MISMATCH or f.kind in ("lagging", "stuck")}
    if len(flagged) < 2:
        return
    # where each rank waits: groups with a finding whose collective it has issued and not done
    waits: dict[int, list[tuple[str, int]]] = {}  # rank -> [(group, record id of its pending collective)]
    # each rank's last record in any group: a rank whose very last record is the collective a
    # stuck group is stuck in did nothing after it, even where that record reads as done (gloo
    # retires a collective that failed because a member died: the survivors' copies end
    # "done" while the group never finished)
    last_rid = job.last_rid
    for pg, f in flagged.items():
        g = groups.get(pg)
        if g is None:
            continue
        for r, t in g.tracks.items():
            n = len(t.seqs)
            if not n:
                continue
            if not t.done(n - 1):
                waits.setdefault(r, []).append((pg, t.rids[n - 1]))
            elif f.kind == "stuck" and t.seqs[n - 1] == f.seq and t.rids[n - 1] == last_rid.get(r):
                waits.setdefault(r, []).append((pg, t.rids[n - 1]))
    settled: dict[str, bool] = {}  # group -> explained by a root (True) / a root itself
    lag_blocked: dict[str, list[int]] = {}
    for pg, f in flagged.items():
        if f.kind in _MISMATCH:
            settled[pg] = True
        elif f.kind == "lagging":
            roots = [r for r in f.culprit_ranks if not any(h != pg for h, _ in waits.get(r, []))]
            if roots:
                settled[pg] = True
            lag_blocked[pg] = [r for r in f.culprit_ranks if r not in roots]
    collateral: set[str] = set()
    changed = True
    while changed:
        changed = False
        for pg, f in flagged.items():
            if pg in collateral or (settled.get(pg) and not lag_blocked.get(pg)):
                continue
            behind = _behind(pg, f, groups, waits, lag_blocked)
            if behind and all(h in collateral or settled.get(h) for h in behind):
                if f.kind == "lagging" and settled.get(pg):
                    # some of its laggards stopped on their own: they stay the culprits
                    f.collateral_ranks = list(lag_blocked[pg])
                    lag_blocked[pg] = []
                else:
                    collateral.add(pg)
                changed = True
            elif f.kind == "stuck" and not behind and pg not in settled:
                settled[pg] = True  # stuck with nothing pending before it: a root
                changed = True
    if not collateral:
        return
    for f in report.findings:
        f.collateral = f.process_group in collateral
    names = sorted(collateral, key=lambda pg: (flagged[pg].kind, pg))
    shown = ", ".join(f"{pg} ({flagged[pg].kind} at seq {flagged[pg].seq})" for pg in names[:4])
    more = f" and {len(names) - 4} more" if len(names) > 4 else ""
    report.notes.append(f"{len(names)} other group(s) only wait behind the finding(s) below (their ranks are queued behind them): {shown}{more}")


def _behind(pg: str, f: Finding, groups: dict[str, _Group], waits: dict[int, list[tuple[str, int]]],
            lag_blocked: dict[str, list[int]]) -> set[str]:
    """The other flagged groups this group's finding waits behind."""
    if f.kind == "lagging":
        ranks = lag_blocked.get(pg, [])
        out = set()
        for r in ranks:
            hs = {h for h, _ in waits.get(r, []) if h != pg}
            if not hs:
                return set()
            out |= hs
        return out
    if f.kind != "stuck" or f.seq is None:
        return set()
    g = groups[pg]
    out = set()
    for r, t in g.tracks.items():
        i = g.position(r, f.seq)
        if i is None or t.done(i):
            continue
        rid = t.rids[i]
        out |= {h for h, hr in waits.get(r, []) if h != pg and hr < rid}
    return out


def _max_seq(t: Track | None) -> int:
    if t is None or not len(t.seqs):
        return -1
    return t.seqs[-1] if t.contiguous() else max(t.seqs)


def _max_done(t: Track | None) -> int:
    if t is None:
        return -1
    if t.contiguous():
        for i in range(len(t.seqs) - 1, -1, -1):
            if t.states[i] & DONE:
                return t.seqs[i]
        return -1
    return max((s for s, st in zip(t.seqs, t.states) if st & DONE), default=-1)


HISTORY = 4  # collectives before a sequence number that show two groups ran the same program
LAST = 8  # a short group's last collectives compared with its siblings


def _ran(group: _Group, history: list[tuple[int, tuple]]) -> bool:
    """Every member of ``group`` that dumped ran these collectives ((sequence number, shape))."""
    return all({op.shape for op in group.at(q).values()} == {want} for q, want in history)


def _group_kinds(pgs: list[str]) -> dict[str, list[str]]:
    """Groups named alike ("dp0".."dp3", "tp_0".."tp_7"), by kind: one group per slice of the job,
    all of one size, running the same program."""
    kinds: dict[str, list[str]] = {}
    for pg in pgs:
        m = re.fullmatch(r"([A-Za-z_]+?)_?\d+", pg.partition(":")[2])
        if m:
            kinds.setdefault(m[1], []).append(pg)
    return kinds


def _siblings(pgs: list[str]) -> list[list[str]]:
    """The kinds of group (``_group_kinds``) with three groups or more: enough to compare one with."""
    return [sorted(v) for _, v in sorted(_group_kinds(pgs).items()) if len(v) >= 3]


def _sibling_mismatch(pgs: list[str], groups: dict[str, _Group]) -> Finding | None:
    """A group that cannot be compared within itself, compared with its siblings. Where a
    member of a group left no dump (it aborted, or its dump was not collected), the members
    that did cannot be checked against it; but groups of one kind run the same program, so
    at one sequence number every sibling runs the same collective. When at least two siblings
    agree there and the short group's ranks ran another one (another dtype, size or op), those
    ranks issued the odd collective - the partner that left no dump is the one that met it
    (gloo's size check aborts the receiving side, which names no sender). Where groups of one
    kind differ by design (a pipeline's stages reduce gradients of other sizes), the siblings
    compared are those that ran what the group ran over its last collectives: then one is enough."""
    for family in _siblings(pgs):
        full = max(len(groups[pg].tracks) for pg in family)
        for pg in family:
            g = groups[pg]
            if not g.tracks or len(g.tracks) >= full:
                continue  # every member dumped: _analyze_pg compared them with each other
            # where it stopped: the group's last collectives (its partner met the odd one and died
            # there), with HISTORY before them to match siblings on - not a dump's whole ring buffer
            seqs = sorted({int(s) for t in g.tracks.values() for s in t.seqs})[-(HISTORY + LAST):]
            history: list[tuple] = []  # the group's own collectives before ``seq``, oldest first
            others = [q for q in family if q != pg]
            for seq in seqs:
                per = g.at(seq)
                mine = {op.shape for op in per.values()}
                if len(mine) != 1:
                    break
                theirs = [groups[q].at(seq) for q in others]
                # siblings that ran what this group ran just before (the last HISTORY collectives):
                # the same program so far, where groups of one kind differ by design (the stages of
                # a pipeline); with two such collectives or more, one sibling is enough to compare with
                recent = history[-HISTORY:]
                alike = [o for q, o in zip(others, theirs) if o and len(recent) >= 2 and _ran(groups[q], recent)]
                if alike:
                    theirs = alike
                history.append((seq, next(iter(mine))))
                shapes = [{op.shape for op in o.values()} for o in theirs if o]
                if len(shapes) < (1 if alike else 2) or any(len(x) != 1 for x in shapes) or len({*map(frozenset, shapes)}) != 1:
                    continue  # the siblings do not agree with each other here: nothing to compare with
                common = next(iter(shapes[0]))
                odd = next(iter(mine))
                if odd == common:
                    continue
                kind = ("type-mismatch" if odd[0] != common[0] else
                        "size-mismatch" if (odd[1], odd[3]) != (common[1], common[3]) else "dtype-mismatch")
                sample = next(iter(per.values()))
                ranks = sorted(per)
                other = next(o for o in theirs if o)
                ref = next(iter(other.values()))
                detail = (f"at seq {seq} {'rank' if len(ranks) == 1 else 'ranks'} {rank_list(ranks)} of {pg} ran "
                          f"{sample.name} {sample.in_sizes} {sample.in_dtypes}"
                          + (f" at {sample.call_site}" if sample.call_site else "")
                          + f", where every sibling group of its kind ({len(shapes)} of them) ran {ref.name} "
                          f"{ref.in_sizes} {ref.in_dtypes}; the group's other member(s) left no dump, so it was "
                          "compared with its siblings (groups of one kind run the same program)")
                return Finding(kind, pg, seq, sample.name, ranks, detail,
                               {r: op.per_rank() for r, op in sorted(per.items())})
    return None


def _unique_sites(pg: str, per: dict[int, Op], group: _Group) -> list[int]:
    """With no majority (two ranks, equal camps): the ranks whose pending call site never
    occurs in any other rank's history. Their collective is one the others never issue
    (an extra, rank-conditional collective); the others' site is ordinary code."""
    history = {r: t.sites for r, t in group.tracks.items()}
    odd = [
        r for r, op in per.items()
        if op.call_site and not any(op.call_site in sites for q, sites in history.items() if q != r)
    ]
    return sorted(odd) if odd and len(odd) < len(per) else []


def _mismatch(pg: str, seq: int, per: dict[int, Op], group: _Group | None = None) -> Finding:
    names = {r: op.name for r, op in per.items()}
    sizes = {r: (op.shape[1], op.shape[3]) for r, op in per.items()}
    dtypes = {r: op.shape[2] for r, op in per.items()}
    if len(set(names.values())) > 1:
        kind, culprits = "type-mismatch", _minority(names)
    elif len(set(sizes.values())) > 1:
        kind, culprits = "size-mismatch", _minority(sizes)
    else:
        kind, culprits = "dtype-mismatch", _minority(dtypes)
    same: dict[str, list[int]] = {}
    for r, op in sorted(per.items()):
        same.setdefault(f"{op.name} {op.in_sizes} {op.in_dtypes} at {op.call_site}", []).append(r)
    desc = "; ".join(f"{'rank' if len(rs) == 1 else 'ranks'} {rank_list(rs)}: {what}" for what, rs in same.items())
    detail = f"at seq {seq} the ranks run different collectives: {desc}"
    if kind == "dtype-mismatch":
        widths = {_DTYPE_BYTES.get(str(_parse(op.in_dtypes)[0]) if isinstance(_parse(op.in_dtypes), list) and _parse(op.in_dtypes) else "", 0) for op in per.values()}
        if len(widths) == 1 and 0 not in widths:
            detail += " — the dtypes have the same size, so the collective runs without an error and silently mixes bit patterns"
    if not culprits and group is not None and (odd := _unique_sites(pg, per, group)):
        culprits = odd
        who = f"rank {odd[0]} runs" if len(odd) == 1 else f"ranks {', '.join(map(str, odd))} run"
        detail += f" — {who} a collective from a line no other rank ever reached: an extra collective"
    if not culprits:
        detail += " (two equal camps: the dumps do not say which side deviated)"
    op = per[culprits[0]].name if culprits else next(iter(per.values())).name
    return Finding(kind, pg, seq, op, culprits, detail, {r: o.per_rank() for r, o in sorted(per.items())})
