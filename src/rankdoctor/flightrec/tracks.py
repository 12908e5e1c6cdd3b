"""One rank's collectives per process group, in a few arrays: what the cross-rank analysis reads.

A 2,000-entry dump unpickles into 2,000 dicts of about 20 keys, each with its list of
frames; a thousand ranks' worth does not fit in memory (about 3 GB). So each dump is
summarized as it is read and its entries are let go: per group, the sequence numbers in
record order, for each an index into the rank's small table of distinct collectives (op,
sizes, dtypes, call site), its state and its record id.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Any

from ..diagnose.traceback import LIBRARY_PATH

# state codes (one byte an entry); DONE is added when the entry completed or was retired
SCHEDULED, STARTED, COMPLETED, OTHER = 0, 1, 2, 3
DONE = 4
_STATE_CODE = {"scheduled": SCHEDULED, "started": STARTED, "completed": COMPLETED}
STATE_NAME = {SCHEDULED: "scheduled", STARTED: "started", COMPLETED: "completed"}

_MAX_FRAMES = 4096  # a strict summary refuses more (torch keeps about 40 frames)
_MAX_DIMS = 4096  # numbers in one entry's sizes
_I64 = (-(1 << 63), (1 << 63) - 1)


class NotTorchShaped(ValueError):
    """A field is not of the type torch writes (strict summaries only)."""


@dataclass(frozen=True)
class Key:
    """What every rank must agree on at a sequence number, plus where it was called."""

    name: str  # the op without the backend prefix
    in_sizes: str  # repr of input_sizes, as the JSON report shows it
    in_dtypes: str
    out_sizes: str
    call_site: str | None

    @property
    def shape(self) -> tuple[str, str, str, str]:
        return (self.name, self.in_sizes, self.in_dtypes, self.out_sizes)


@dataclass
class Track:
    """One group's collectives on one rank (p2p ones only add their call sites)."""

    pg: str
    seqs: array = field(default_factory=lambda: array("q"))
    keys: array = field(default_factory=lambda: array("l"))
    states: bytearray = field(default_factory=bytearray)
    rids: array = field(default_factory=lambda: array("q"))
    state_names: dict[int, str] = field(default_factory=dict)  # index -> a state torch does not define
    sites: set[str] = field(default_factory=set)
    last_seen_completed: bool = False  # its latest collective: state completed, seen within its timeout
    _contiguous: bool | None = None

    def contiguous(self) -> bool:
        """Sequence numbers that go up by one (a ring buffer keeps the latest run of them)."""
        if self._contiguous is None:
            n = len(self.seqs)
            self._contiguous = n == 0 or (
                self.seqs[-1] - self.seqs[0] == n - 1 and self.seqs == array("q", range(self.seqs[0], self.seqs[0] + n)))
        return self._contiguous

    def index(self) -> dict[int, int]:
        """seq -> position (the later entry where a number repeats)."""
        return {s: i for i, s in enumerate(self.seqs)}

    def state(self, i: int) -> str:
        code = self.states[i] & 3
        return self.state_names.get(i, "?") if code == OTHER else STATE_NAME[code]

    def done(self, i: int) -> bool:
        return bool(self.states[i] & DONE)


@dataclass
class Summary:
    keys: list[Key]
    tracks: dict[str, Track]
    first_record: int | None  # record_id of the first entry (> 0: the ring buffer wrapped)
    backend: str | None


def pg_key(e: dict[str, Any]) -> str:
    pg = e.get("process_group")
    if isinstance(pg, (list, tuple)) and len(pg) == 2:
        return f"{pg[0]}:{pg[1]}"
    return f"{e.get('pg_id', '?')}:?"


def _sizes_ok(v: Any) -> bool:
    if type(v) is not list or len(v) > _MAX_DIMS:
        return False
    for s in v:
        if type(s) is not list or len(s) > 64:
            return False
        for i in s:
            if type(i) is not int:
                return False
    return True


def _dtypes_ok(v: Any) -> bool:
    if type(v) is not list or len(v) > _MAX_DIMS:
        return False
    for x in v:
        if type(x) is not str:
            return False
    return True


def _strict_check(e: dict[str, Any], prof: Any, frames: Any) -> bool:
    pg = e.get("process_group")
    if not (
        (prof is None or type(prof) is str)
        and type(e.get("pg_id", 0)) is int
        and type(e.get("state", "")) is str
        and _sizes_ok(e.get("input_sizes", []))
        and _sizes_ok(e.get("output_sizes", []))
        and _dtypes_ok(e.get("input_dtypes", []))
    ):
        return False
    if pg is not None:
        if type(pg) not in (tuple, list):
            return False
        for x in pg:
            if type(x) is not str and type(x) is not int:
                return False
    return frames is None or (type(frames) is list and len(frames) <= _MAX_FRAMES)


def _frames_ok(frames: list[Any]) -> bool:
    """Frames are dicts of strings and numbers (checked once a distinct list of frames)."""
    for fr in frames:
        if type(fr) is not dict:
            return False
        for v in fr.values():
            if type(v) is not str and type(v) is not int:
                return False
    return True


def summarize(entries: list[Any], strict: bool = False) -> Summary:
    """The tracks of one dump. ``strict``: the entries come from the fast reader, which has not
    measured them; any field that is not of the type torch writes raises :class:`NotTorchShaped`
    (the caller then reads the dump the guarded way, which measures everything)."""
    keys: dict[tuple[Any, ...], int] = {}
    tracks: dict[str, Track] = {}
    pgs: dict[Any, str] = {}
    names: dict[Any, tuple[str, str | None]] = {}
    sites: dict[tuple[int, ...], str | None] = {}
    library: dict[str, bool] = {}
    first_record: int | None = None
    backend: str | None = None
    last: dict[str, tuple[int, dict[str, Any]]] = {}
    lo, hi = _I64
    for i, e in enumerate(entries):
        if type(e) is not dict:
            continue
        if first_record is None:
            rid0 = e.get("record_id")
            first_record = rid0 if isinstance(rid0, int) else None
        p2p = bool(e.get("is_p2p"))
        seq = e.get("p2p_seq_id") if p2p else e.get("collective_seq_id")
        if seq is None and not p2p:
            seq = e.get("seq_id")
        if not isinstance(seq, int) or not lo <= seq <= hi:
            continue
        prof = e.get("profiling_name")
        frames = e.get("frames")
        if strict and not _strict_check(e, prof, frames):
            raise NotTorchShaped(f"entry {i}")
        got = names.get(prof) if type(prof) is str or prof is None else None
        if got is None:
            name = str(prof or "?")
            b = None
            if ":" in name:
                b, name = name.split(":", 1)
            got = (name, b)
            if type(prof) is str or prof is None:
                names[prof] = got
        name = got[0]
        if backend is None and got[1] is not None:
            backend = got[1]
        site = None
        if type(frames) is list:
            fid = tuple(map(id, frames))
            if fid in sites:
                site = sites[fid]
            else:
                if strict and not _frames_ok(frames):
                    raise NotTorchShaped(f"entry {i}: frames")
                for fr in frames:
                    if not isinstance(fr, dict):
                        continue
                    fn = str(fr.get("filename", ""))
                    lib = library.get(fn)
                    if lib is None:
                        lib = library[fn] = bool(LIBRARY_PATH.search(fn))
                    if fn and not lib:
                        site = f"{fn}:{fr.get('line')}"
                        break
                sites[fid] = site
        pgv = e.get("process_group")
        try:
            pg = pgs[pgv]
        except (KeyError, TypeError):
            pg = pg_key(e)
            try:
                pgs[pgv] = pg
            except TypeError:  # a list: not a dict key
                pass
        t = tracks.get(pg)
        if t is None:
            t = tracks[pg] = Track(pg)
        if site:
            t.sites.add(site)
        if p2p:
            continue
        key = (name, repr(e.get("input_sizes")), repr(e.get("input_dtypes")), repr(e.get("output_sizes")), site)
        k = keys.get(key)
        if k is None:
            k = keys[key] = len(keys)
        state = e.get("state", "?")
        code = _STATE_CODE.get(state, OTHER) if type(state) is str else OTHER
        if code == OTHER:
            t.state_names[len(t.seqs)] = str(state)
        if state == "completed" or e.get("retired"):
            code |= DONE
        rid = e.get("record_id", i)
        t.seqs.append(seq)
        t.keys.append(k)
        t.states.append(code)
        t.rids.append(rid if type(rid) is int and lo <= rid <= hi else i)
        prev = last.get(pg)
        if prev is None or seq >= prev[0]:
            last[pg] = (seq, e)
    for pg, (_, e) in last.items():
        tracks[pg].last_seen_completed = _seen_completed(e)
    table = [Key(*k) for k, _ in sorted(keys.items(), key=lambda kv: kv[1])]
    return Summary(table, tracks, first_record, backend)


def _seen_completed(e: dict[str, Any]) -> bool:
    """NCCL's watchdog saw the collective's end event (every peer joined it) within its timeout.
    gloo's dumps (torch 2.13) leave every state 'scheduled': never true there."""
    if e.get("state") != "completed":
        return False
    start, end, timeout = e.get("time_created_ns"), e.get("time_discovered_completed_ns"), e.get("timeout_ms")
    if not (isinstance(start, int) and isinstance(end, int) and isinstance(timeout, int)) or end <= 0:
        return False
    return 0 <= end - start <= timeout * 1_000_000
