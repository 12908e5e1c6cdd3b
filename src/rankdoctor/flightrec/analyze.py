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
from dataclasses import dataclass, field
from typing import Any

from ..diagnose.collectives import minority
from ..diagnose.traceback import LIBRARY_PATH
from .load import Dump

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

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "process_group": self.process_group,
            "seq": self.seq,
            "op": self.op,
            "culprit_ranks": self.culprit_ranks,
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

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": "rankdoctor.fr/v1",
            "verdict": self.verdict,
            "ranks_found": self.ranks_found,
            "ranks_missing": self.ranks_missing,
            "findings": [f.to_json() for f in self.findings],
        }

    @property
    def exit_code(self) -> int:
        return {"consistent": 0, "mismatch": 1, "hang": 1, "inconclusive": 3}[self.verdict]

    def culprit_ranks(self) -> list[int]:
        return sorted({r for f in self.findings for r in f.culprit_ranks})

    @property
    def culprit(self) -> int | None:
        for f in self.findings:
            if len(f.culprit_ranks) == 1:
                return f.culprit_ranks[0]
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


def _pg_key(e: dict[str, Any]) -> str:
    pg = e.get("process_group")
    if isinstance(pg, (list, tuple)) and len(pg) == 2:
        return f"{pg[0]}:{pg[1]}"
    return f"{e.get('pg_id', '?')}:?"


def ops_of(d: Dump) -> list[Op]:
    out = []
    for i, e in enumerate(d.entries):
        p2p = bool(e.get("is_p2p"))
        seq = e.get("p2p_seq_id") if p2p else e.get("collective_seq_id", e.get("seq_id"))
        if not isinstance(seq, int):
            continue
        name = str(e.get("profiling_name") or "?")
        name = name.split(":", 1)[1] if ":" in name else name
        state = str(e.get("state", "?"))
        out.append(
            Op(
                rank=d.rank,
                pg=_pg_key(e),
                seq=seq,
                p2p=p2p,
                name=name,
                in_sizes=repr(e.get("input_sizes")),
                in_dtypes=repr(e.get("input_dtypes")),
                out_sizes=repr(e.get("output_sizes")),
                state=state,
                done=state == "completed" or bool(e.get("retired")),
                call_site=call_site(e.get("frames")),
                record_id=int(e.get("record_id", i)) if isinstance(e.get("record_id", i), int) else i,
            )
        )
    return out


def _cfg_ranks(cfg: Any) -> list[int] | None:
    """The ranks one pg_config entry lists (a list, or its repr as NCCL writes it)."""
    if not isinstance(cfg, dict):
        return None
    r = cfg.get("ranks")
    if isinstance(r, str):
        r = _parse(r)
    return list(r) if isinstance(r, (list, tuple)) and all(isinstance(x, int) for x in r) else None


def _members(dumps: list[Dump]) -> set[int]:
    """Ranks of the job: pg_config when it lists them, else the ranks that dumped."""
    ranks: set[int] = {d.rank for d in dumps}
    for d in dumps:
        for cfg in d.pg_config.values():
            r = _cfg_ranks(cfg)
            if r is not None and cfg.get("desc") in ("default_pg", "", None):
                ranks |= set(r)
    return ranks


def _pg_members(pg: str, dumps: list[Dump]) -> set[int]:
    """The ranks of one process group as pg_config lists them (NCCL dumps); empty when no
    dump says (gloo in torch 2.13 leaves pg_config empty). A sub-group's collectives are
    compared only among its members: the other ranks never issue them."""
    pg_id, _, name = pg.partition(":")
    out: set[int] = set()
    for d in dumps:
        for key, cfg in d.pg_config.items():
            r = _cfg_ranks(cfg)
            if r and (str(key) in (pg_id, name) or cfg.get("name") in (pg_id, name)):
                out |= set(r)
    return out


def _status_keys_match(d: Dump, ops: list[Op]) -> bool:
    """pg_status speaks of the same group ids as the entries (NCCL); gloo's keys are each
    rank's local group numbers, which are not the ids its entries carry."""
    ids = {o.pg.split(":", 1)[0] for o in ops}
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


def analyze(dumps: list[Dump]) -> FRReport:
    found = [d.rank for d in dumps]
    members = _members(dumps)
    missing = sorted(members - set(found))
    report = FRReport("consistent", found, missing, [], dumps=[d.path for d in dumps])
    if missing:
        report.findings.append(
            Finding(
                "missing-ranks",
                "*",
                None,
                None,
                [],
                f"no dump from rank(s) {', '.join(map(str, missing))}: they died before dumping (a signal, an abort) "
                "or their dumps were not collected; their collectives cannot be compared",
            )
        )
    if len(dumps) < 2:
        report.verdict = "inconclusive"
        report.notes.append("one dump cannot be compared with anything: collect every rank's dump")
        return report

    by_rank = {d.rank: ops_of(d) for d in dumps}
    pgs = sorted({op.pg for ops in by_rank.values() for op in ops})
    for d in dumps:
        if d.entries and isinstance(d.entries[0].get("record_id"), int) and d.entries[0]["record_id"] > 0:
            report.notes.append(
                f"rank {d.rank}'s ring buffer wrapped (first record {d.entries[0]['record_id']}): only the most recent collectives are compared"
            )
    for pg in pgs:
        _analyze_pg(pg, by_rank, dumps, report)

    kinds = {f.kind for f in report.findings}
    if kinds & {"type-mismatch", "size-mismatch", "dtype-mismatch", "extra-collective"}:
        report.verdict = "mismatch"
    elif kinds & {"stuck", "lagging"}:
        report.verdict = "hang"
    elif missing and not any(ops for ops in by_rank.values()):
        report.verdict = "inconclusive"
    # a stuck group whose only explanation is a rank without a dump: that rank is the suspect
    for f in report.findings:
        if f.kind == "stuck" and not f.culprit_ranks and missing and not any(x.kind == "lagging" for x in report.findings):
            f.culprit_ranks = list(missing)
            f.detail += f"; every rank that dumped is waiting here, so the rank(s) without a dump ({', '.join(map(str, missing))}) never joined"
    return report


def _analyze_pg(pg: str, by_rank: dict[int, list[Op]], dumps: list[Dump], report: FRReport) -> None:
    seqs: dict[tuple[bool, int], dict[int, Op]] = {}
    for rank, ops in by_rank.items():
        for op in ops:
            if op.pg == pg:
                seqs.setdefault((op.p2p, op.seq), {})[rank] = op
    ranks_in_pg = sorted({r for per in seqs.values() for r in per})
    if not ranks_in_pg:
        return
    # 1. the first sequence number where the ranks disagree on what they run
    for (p2p, seq) in sorted(seqs):
        per = seqs[(p2p, seq)]
        if p2p or len(per) < 2:
            continue
        shapes = {r: op.shape for r, op in per.items()}
        if len(set(shapes.values())) > 1:
            report.findings.append(_mismatch(pg, seq, per, by_rank))
            return
        sites = {r: op.call_site for r, op in per.items() if op.call_site}
        if len(set(sites.values())) > 1 and _minority(sites):
            # same shape, different line: one rank is running a different collective that
            # happens to look the same (an extra or a skipped one)
            culprits = _minority(sites)
            counts = {r: len([o for o in by_rank[r] if o.pg == pg and not o.p2p]) for r in per}
            detail = (
                f"at seq {seq} every rank runs {per[ranks_in_pg[0]].name} with the same shape, but from different lines: "
                + "; ".join(f"rank {r} at {op.call_site}" for r, op in sorted(per.items()))
                + f". Collectives per rank: {', '.join(f'{r}: {n}' for r, n in sorted(counts.items()))}"
            )
            report.findings.append(
                Finding("extra-collective", pg, seq, per[culprits[0]].name, culprits, detail, {r: op.per_rank() for r, op in sorted(per.items())})
            )
            return
    # 2. how far each rank of the group got
    pg_id = pg.split(":", 1)[0]
    # pg_status keys name groups only where they agree with the entries' group ids (or the
    # rank recorded nothing at all: a rank that never issued a collective)
    trusted = {d.rank for d in dumps if not by_rank[d.rank] or _status_keys_match(d, by_rank[d.rank])}
    members = _pg_members(pg, dumps) or set(ranks_in_pg) | {
        d.rank for d in dumps if d.rank in trusted and pg_id in {str(k) for k in d.pg_status}}
    if pg.partition(":")[2] == "default_pg" or pg_id == "0":
        members |= {d.rank for d in dumps if not by_rank[d.rank]}  # every rank is in the default group
    enq: dict[int, int] = {}
    comp: dict[int, int] = {}
    for d in dumps:
        if d.rank not in members:
            continue
        ops = [o for o in by_rank[d.rank] if o.pg == pg and not o.p2p]
        e, c = _status(d, pg_id) if d.rank in trusted else (None, None)
        enq[d.rank] = e if e is not None else max((o.seq for o in ops), default=-1)
        done = [o.seq for o in ops if o.done]
        comp[d.rank] = c if c is not None else max(done, default=-1)
    top = max(enq.values())
    lagging = sorted(r for r, v in enq.items() if v < top)
    waiting = sorted(r for r, v in enq.items() if v == top and comp.get(r, -1) < top)
    if lagging and len(lagging) < len(enq):
        ahead = [r for r in enq if enq[r] == top]
        head = seqs.get((False, top), {})
        sample = head.get(ahead[0]) if ahead else None
        per = {r: op.per_rank() for r, op in sorted(head.items())}
        for r in lagging:
            last = max((o for o in by_rank[r] if o.pg == pg and not o.p2p), key=lambda o: o.seq, default=None)
            per[r] = {"op": None, "sizes": None, "dtypes": None, "call_site": last.call_site if last else None,
                      "state": f"last enqueued seq {enq[r]}"}
        report.findings.append(
            Finding(
                "lagging",
                pg,
                top,
                sample.name if sample else None,
                lagging,
                f"ranks {', '.join(map(str, ahead))} issued collective {top}"
                + (f" ({sample.name} at {sample.call_site})" if sample else "")
                + f"; rank(s) {', '.join(map(str, lagging))} stopped at {', '.join(str(enq[r]) for r in lagging)} and never issued it",
                per,
            )
        )
    elif waiting:
        head = seqs.get((False, top), {})
        sample = next(iter(head.values()), None)
        report.findings.append(
            Finding(
                "stuck",
                pg,
                top,
                sample.name if sample else None,
                [],
                f"ranks {', '.join(map(str, waiting))} never completed collective {top}"
                + (f" ({sample.name} at {sample.call_site})" if sample else ""),
                {r: op.per_rank() for r, op in sorted(head.items())},
            )
        )


def _unique_sites(pg: str, per: dict[int, Op], by_rank: dict[int, list[Op]]) -> list[int]:
    """With no majority (two ranks, equal camps): the ranks whose pending call site never
    occurs in any other rank's history. Their collective is one the others never issue
    (an extra, rank-conditional collective); the others' site is ordinary code."""
    history = {r: {o.call_site for o in ops if o.pg == pg and o.call_site} for r, ops in by_rank.items()}
    odd = [
        r for r, op in per.items()
        if op.call_site and not any(op.call_site in sites for q, sites in history.items() if q != r)
    ]
    return sorted(odd) if odd and len(odd) < len(per) else []


def _mismatch(pg: str, seq: int, per: dict[int, Op], by_rank: dict[int, list[Op]] | None = None) -> Finding:
    names = {r: op.name for r, op in per.items()}
    sizes = {r: (op.in_sizes, op.out_sizes) for r, op in per.items()}
    dtypes = {r: op.in_dtypes for r, op in per.items()}
    if len(set(names.values())) > 1:
        kind, culprits = "type-mismatch", _minority(names)
    elif len(set(sizes.values())) > 1:
        kind, culprits = "size-mismatch", _minority(sizes)
    else:
        kind, culprits = "dtype-mismatch", _minority(dtypes)
    desc = "; ".join(f"rank {r}: {op.name} {op.in_sizes} {op.in_dtypes} at {op.call_site}" for r, op in sorted(per.items()))
    detail = f"at seq {seq} the ranks run different collectives: {desc}"
    if kind == "dtype-mismatch":
        widths = {_DTYPE_BYTES.get(str(_parse(op.in_dtypes)[0]) if isinstance(_parse(op.in_dtypes), list) and _parse(op.in_dtypes) else "", 0) for op in per.values()}
        if len(widths) == 1 and 0 not in widths:
            detail += " — the dtypes have the same size, so the collective runs without an error and silently mixes bit patterns"
    if not culprits and by_rank is not None and (odd := _unique_sites(pg, per, by_rank)):
        culprits = odd
        who = f"rank {odd[0]} runs" if len(odd) == 1 else f"ranks {', '.join(map(str, odd))} run"
        detail += f" — {who} a collective from a line no other rank ever reached: an extra collective"
    if not culprits:
        detail += " (two equal camps: the dumps do not say which side deviated)"
    op = per[culprits[0]].name if culprits else next(iter(per.values())).name
    return Finding(kind, pg, seq, op, culprits, detail, {r: o.per_rank() for r, o in sorted(per.items())})
