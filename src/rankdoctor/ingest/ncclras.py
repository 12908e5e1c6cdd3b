"""NCCL RAS reports: what NCCL's own health monitor says about a live job.

Since NCCL 2.24 every NCCL process runs a RAS thread; the ``ncclras`` client (or
``echo verbose status | nc localhost 28028``) asks it for a report on the whole job. This
reads that report in the forms NCCL prints it (``src/ras/client_support.cc``):

- text (2.24 and later): the job summary, the communicator table, then ``Errors`` (job
  processes with no data: ``INCOMPLETE``; processes ``DEAD`` to the RAS network; per
  communicator ``#G-C (hash) INCOMPLETE`` missing ranks and ``ERROR`` init/async errors)
  and ``Warnings`` (``TIMEOUT``; ``#G-C (hash) MISMATCH``: ranks with another status or
  other collective operation counts, per collective type since 2.26);
- JSON (``ncclras -f json``, 2.28.7 and later): every rank of every communicator with its
  host, pid, devices, status and collective counts, and the ``missing_ranks`` with
  ``unresponsive`` / ``considered_dead``;
- monitor mode (``ncclras -m``, 2.29): ``[time] PEER_DEAD: Process P on node H managing GPU G``.

Ranks here are ranks of a communicator, named by its hash (the ``commId`` NCCL's INFO init
lines print); ``diagnose/ras.py`` maps them to global ranks. A rank behind in a collective
count on one snapshot is normal on a busy job; two snapshots tell a rank that is stuck
(its counts did not move) from one that is slow (they moved, it still lags): ``track``.
Nothing here raises on bad or cut input: what could be read is returned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum

from .dumpfile import Meter, Unusable, loads_json

MAX_BYTES = 16 * 1024 * 1024  # a verbose report of a large job is megabytes at most
_PREAMBLE = 12  # lines before the report that may be a `date`, a command, a comment


class Trouble(str, Enum):
    """What RAS says about a rank or a process."""

    dead = "dead"  # unreachable over the RAS network for 60 s: declared dead for good
    unresponsive = "unresponsive"  # RAS got no data from it this time (hung, stopped, or dying)
    not_member = "not-member"  # it answered, but not as a member of the communicator (torn down)
    error = "error"  # it reports an NCCL initialization or asynchronous error
    status = "status"  # its communicator status differs from most ranks' (INIT, FINALIZE, ABORT)
    behind = "behind"  # it launched fewer collective operations (of a type) than most ranks
    ahead = "ahead"  # it launched more than most ranks
    stuck = "stuck"  # behind (or still while the others moved), and its counts did not move between snapshots
    slow = "slow"  # behind in both snapshots, though its counts moved


SUSPECT = frozenset({Trouble.dead, Trouble.unresponsive})


@dataclass(frozen=True)
class Note:
    """One finding about one rank of one communicator (``comm``: its hash, 16 hex digits)."""

    comm: str
    rank: int
    trouble: Trouble
    host: str | None = None
    pid: int | None = None
    device: int | None = None  # the CUDA device index
    op: str | None = None  # the collective a count is about ("AllReduce"; None: all of them, NCCL < 2.26)
    count: int | None = None  # operations of that kind it launched (at the earlier snapshot for stuck / slow)
    majority: int | None = None  # ... and most ranks (the most any rank launched, for stuck / slow)
    after: int | None = None  # its count at the later snapshot (stuck / slow)
    detail: str = ""  # the error or status as printed


@dataclass(frozen=True)
class Process:
    """A job process RAS names in its job-wide errors (or a monitor's PEER_DEAD event)."""

    trouble: Trouble  # dead or unresponsive
    pid: int | None
    host: str | None
    gpus: tuple[int, ...] = ()


@dataclass
class Comm:
    hash: str  # 16 hex digits, as the text report prints it
    label: str | None = None  # "#0-0": group and number in the summary table
    size: int | None = None
    secondary: str | None = None  # JSON's "secondary_hash"
    missing: int | None = None  # ranks it has no data from
    # op -> comm rank -> operations launched (JSON: every rank; text: the ranks it lists)
    counts: dict[str, dict[int, int]] = field(default_factory=dict)
    majority: dict[str, int] = field(default_factory=dict)  # op -> the count most ranks have
    where: dict[int, tuple[str | None, int | None, int | None]] = field(default_factory=dict)  # rank -> host, pid, device


@dataclass
class Report:
    source: str
    fmt: str  # text | json | monitor
    version: str | None = None
    time: str | None = None  # when it was taken, as written (JSON timestamp, or a `date` line above the text)
    ts: float | None = None
    order: int = 0  # position among the inputs (orders snapshots without a time)
    job: dict[str, int] = field(default_factory=dict)  # nodes / processes / gpus (text job summary)
    comms: dict[str, Comm] = field(default_factory=dict)
    processes: list[Process] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    timeouts: int = 0
    complete: bool = True  # False: the input ended before the report did, or some part could not be read
    foreign: int = 0  # lines after the report began that are no part of it (someone's log around it)
    preamble: int = 0  # lines above the report
    table_comms: int | None = None  # communicators the summary table counts

    def comm(self, h: str) -> Comm:
        if h not in self.comms:
            self.comms[h] = Comm(h)
        return self.comms[h]

    @property
    def world(self) -> int | None:
        """The job's GPU count: the text summary's total, else every rank JSON lists once."""
        if "gpus" in self.job:
            return self.job["gpus"]
        if self.fmt != "json":  # a text report lists only the odd ranks; an excerpt may lack the job summary
            only = next(iter(self.comms.values())) if self.table_comms == 1 and len(self.comms) == 1 else None
            return only.size if only is not None else None
        seen = {w for c in self.comms.values() for w in c.where.values() if w[1] is not None}
        seen |= {(n.host, n.pid, n.device) for n in self.notes if n.trouble in SUSPECT and n.pid is not None}
        return len(seen) or None


def _hash(text: str) -> str | None:
    try:
        return format(int(text, 16), "016x")
    except (TypeError, ValueError):
        return None


def _int(text) -> int | None:
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


# --- text -------------------------------------------------------------------------------

_VERSION = re.compile(r"^NCCL version (\S+) compiled with CUDA")
_TABLE_HEAD = re.compile(r"^Group\s+Comms\s+Nodes\s+Ranks\s+Ranks\s+Ranks\s+Status\s+Errors")
_TABLE_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+(?:-\d+)?)\s+(\d+)\s+(\d+)\s+([A-Z]+)\s+([A-Z,]+)\s*$")
_COMM_HEAD = re.compile(r"^#(\d+-\d+) \(([0-9a-f]{1,16})\) (INCOMPLETE|ERROR|MISMATCH)\s*$")
_SECTION = re.compile(r"^(INCOMPLETE|DEAD|TIMEOUT)\s*$")
_PROCESS = re.compile(r"^\s+Process (\d+) on node (\S*) managing GPUs? ([\d,]+)")
_DEAD_COUNT = re.compile(r"^\s+\d+ job process(?:es are| is) considered dead")
_TIMEOUTS = re.compile(r"^\s+Encountered (\d+) communication timeouts? while gathering")
_MISSING_RANKS = re.compile(r"^\s+Missing communicator data from (\d+) ranks?\s*$")
_MISSING_LIST = re.compile(r"^\s+The missing ranks?: ([\d,]+)")  # NCCL 2.24 / 2.25
_RANK = re.compile(
    r"^\s+Rank (\d+)(?P<what> has launched up to operation (?P<n>\d+)| has not launched any operations"
    r"| has status (?P<status>[A-Z]+)| reported (?P<error>[^-]+?))?"
    r" -- (?:GPU (?P<dev>\d+)(?: \(NVML \d+\))? managed by process (?P<pid>\d+) on node (?P<host>\S*)|\[process information not found\])"
)
_GROUP = re.compile(r"^\s+(\d+) ranks (?:have launched up to operation (\d+)|have (not) launched any operations|have status ([A-Z]+)|reported (.+?))\s*$")
_DIFFERENT = re.compile(r"^\s+Communicator ranks have different (?:(\w+) operation counts|(status))\s*$")
_ERRORS_ON = re.compile(r"^\s+(Initialization|Asynchronous) errors? on \d+ ranks?")
_UNKNOWN_RANKS = re.compile(r"^\s+(?:The unknown ranks: ([\d,]+)|Rank ([\d,]+) has status ([A-Z]+))\s*$")  # NCCL 2.24
_MONITOR = re.compile(r"^\s*\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\] (PEER_[A-Z_]+): Process (\d+) on node (\S*) managing GPUs? ([\d,]+)")
_STRUCTURE = re.compile(
    r"^(?:Job summary|Communicators\.\.\.|Errors|Warnings|=+|\s+Nodes\s+Processes.*|\(total\).*|\s+per node.*|"
    r"\s+(?:#\s+in group|Processes\s+GPUs|per process).*|[\s\d-]+|No communicator data collected!|\s*\[\.\.\.\]|"
    r"CUDA runtime version \d+, driver version \d+|RAS Monitor Mode.*|\s*\[could not find information on .*|"
    r"\s+Missing communicator data from \d+ job process(?:es)?|The outlier nodes?:|\s+Node \S+ running process.*)\s*$"
)
# a `date` line above a report taken as `{ date -Is; ncclras; }`: ISO, or date's default form
_ISO_TIME = re.compile(r"\b(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)")
_DATE_TIME = re.compile(r"\b[A-Z][a-z]{2} ([A-Z][a-z]{2}) +(\d{1,2}) (\d\d):(\d\d):(\d\d)(?: [A-Z]{2,5}| [+-]\d{4})? (\d{4})\b")
_TITLES = ("Job summary", "Errors", "Warnings")
_SECOND = re.compile(r"^(?:=+|\s+(?:Missing|\d+ job|Encountered))")  # what follows a section title
_MONTHS = {m: i for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split(), 1)}
MARKERS = (
    b"Group     Comms     Nodes", b"considered dead (unreachable via the RAS network)", b"Missing communicator data from",
    b") MISMATCH", b") INCOMPLETE", b'"missing_ranks"', b"RAS Monitor Mode", b"PEER_DEAD: Process ",
)


def _time_of(line: str) -> tuple[str, float] | None:
    parts = None
    if (m := _ISO_TIME.search(line)):
        parts = [int(x) for x in m.groups()]
    elif (m := _DATE_TIME.search(line)) and m.group(1) in _MONTHS:
        mo, d, h, mi, s, y = _MONTHS[m.group(1)], *(int(x) for x in m.groups()[1:])
        parts = [y, mo, d, h, mi, s]
    if parts is None:
        return None
    try:
        dt = datetime(*parts, tzinfo=timezone.utc)  # the report's own clock; only compared with itself
    except ValueError:
        return None
    return dt.strftime("%Y-%m-%d %H:%M:%S"), dt.timestamp()


def parse_ras(text: str, source: str = "<text>") -> Report | None:
    """The RAS report in ``text``, or None when there is none. Never raises."""
    try:
        return _parse(text, source)
    except (RecursionError, MemoryError, ValueError):
        return None


def _parse(text: str, source: str) -> Report | None:
    lines = text.splitlines()
    for i, ln in enumerate(lines[: _PREAMBLE + 1]):
        if ln.lstrip().startswith("{"):
            rep = _parse_json("\n".join(lines[i:]), source)
            if rep is not None:
                rep.preamble = i
                _when(rep, lines[:i])
                return rep
            break
    return _parse_text(lines, source)


def _when(rep: Report, above: list[str]) -> None:
    if rep.ts is not None:
        return
    for ln in reversed(above):
        if (t := _time_of(ln)) is not None:
            rep.time, rep.ts = t
            return


def _parse_text(lines: list[str], source: str) -> Report | None:
    rep = Report(source, "text")
    start: int | None = None
    comm: Comm | None = None  # the communicator whose section this is
    section: str | None = None  # INCOMPLETE | DEAD | TIMEOUT | ERROR | MISMATCH
    op: str | None = None  # the count a MISMATCH block is about ("" = all collectives, NCCL < 2.26)
    group: tuple[str, int | str] | None = None  # ("count", n) | ("status", s) | ("error", e): what listed ranks share
    kind = ""  # Initialization / Asynchronous, in an ERROR block
    sizes: dict[str, int] = {}  # summary table: group -> ranks per communicator
    for i, ln in enumerate(lines):
        if start is None:
            if not (_VERSION.match(ln) or _TABLE_HEAD.match(ln) or _COMM_HEAD.match(ln) or _SECTION.match(ln)
                    or ln.rstrip() in _TITLES or ln.startswith(("Communicators... (", "RAS Monitor Mode")) or _MONITOR.match(ln)):
                continue
            if (_SECTION.match(ln) or ln.rstrip() in _TITLES) and not (i + 1 < len(lines) and _SECOND.match(lines[i + 1])):
                continue  # a bare word on a line of someone's log
            start = i
            rep.preamble = i
            _when(rep, lines[:i])
        if not ln.strip():
            continue
        if (m := _VERSION.match(ln)):
            rep.version = m.group(1)
        elif (m := _MONITOR.match(ln)):
            rep.fmt = "monitor"
            if m.group(2) == "PEER_DEAD":
                rep.processes.append(Process(Trouble.dead, int(m.group(3)), m.group(4) or None, _gpus(m.group(5))))
                rep.time, rep.ts = _time_of(m.group(1)) or (None, None)
        elif _TABLE_HEAD.match(ln):
            pass
        elif (m := _TABLE_ROW.match(ln)):
            sizes[m.group(1)] = int(m.group(5))  # a group's communicators are all of one size
            rep.table_comms = (rep.table_comms or 0) + int(m.group(2))
        elif (m := _COMM_HEAD.match(ln)):
            h = _hash(m.group(2))
            comm = rep.comm(h) if h else None
            if comm is not None:
                comm.label = comm.label or "#" + m.group(1)
            section, op, group, kind = m.group(3), None, None, ""
        elif (m := _SECTION.match(ln)):
            comm, section, op, group = None, m.group(1), None, None
        elif ln.rstrip() in _TITLES or ln.startswith("Communicators..."):
            comm, section, op, group = None, None, None, None
        elif (m := _PROCESS.match(ln)) and section in ("INCOMPLETE", "DEAD") and comm is None:
            trouble = Trouble.dead if section == "DEAD" else Trouble.unresponsive
            rep.processes.append(Process(trouble, int(m.group(1)), m.group(2) or None, _gpus(m.group(3))))
        elif (m := _TIMEOUTS.match(ln)):
            rep.timeouts += int(m.group(1))
        elif comm is not None and (m := _MISSING_RANKS.match(ln)):
            comm.missing = int(m.group(1))
        elif comm is not None and (m := _MISSING_LIST.match(ln)):
            for r in _gpus(m.group(1)):
                rep.notes.append(Note(comm.hash, r, Trouble.unresponsive))
        elif comm is not None and (m := _DIFFERENT.match(ln)):
            group = None
            op = None if m.group(2) else ("" if m.group(1) == "collective" else m.group(1))  # "": all types (NCCL < 2.26)
        elif comm is not None and (m := _ERRORS_ON.match(ln)):
            kind, group = m.group(1), None
        elif comm is not None and (m := _GROUP.match(ln)):
            if m.group(2) is not None or m.group(3):
                value = int(m.group(2)) if m.group(2) is not None else 0
                group = ("count", value)
                if op is not None:
                    comm.majority.setdefault(op, value)  # the groups come most frequent first
            elif m.group(4):
                group = ("status", m.group(4))
            else:
                group = ("error", m.group(5))
        elif comm is not None and (m := _RANK.match(ln)):
            _rank_line(rep, comm, section, op, group, kind, m)
        elif comm is not None and (m := _UNKNOWN_RANKS.match(ln)):
            status = m.group(3) or "UNKNOWN"
            for r in _gpus(m.group(1) or m.group(2)):
                rep.notes.append(Note(comm.hash, r, Trouble.not_member if status in ("UNKNOWN", "NOCOMM") else Trouble.status, detail=status))
        elif _STRUCTURE.match(ln) or _DEAD_COUNT.match(ln):
            _job_line(rep, lines, i)
        else:
            rep.foreign += 1
    if start is None:
        return None
    for c in rep.comms.values():
        if c.size is None and c.label:
            c.size = sizes.get(c.label[1:].split("-")[0])
    _resolve(rep)
    return rep if (rep.comms or rep.processes or rep.notes or rep.version or rep.job or rep.timeouts) else None


def _job_line(rep: Report, lines: list[str], i: int) -> None:
    """The numbers under the job summary's "(total)" headers."""
    head = lines[i - 1] if i else ""
    nums = [int(x) for x in re.findall(r"\d+", lines[i])] if re.fullmatch(r"[\s\d]+", lines[i]) else []
    if "(total)" not in head or not nums:
        return
    if len(nums) == 5 and "per node" in head:
        rep.job.update(nodes=nums[0], processes=nums[3], gpus=nums[4])
    elif len(nums) == 3 and head.split().count("(total)") == 3:
        rep.job.update(nodes=nums[0], processes=nums[1], gpus=nums[2])


def _gpus(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x.isdigit())


def _rank_line(rep: Report, comm: Comm, section, op, group, kind: str, m: re.Match) -> None:
    r = int(m.group(1))
    where = (m.group("host") or None, _int(m.group("pid")), _int(m.group("dev")))
    if where[1] is not None:
        comm.where[r] = where
    note = dict(comm=comm.hash, rank=r, host=where[0], pid=where[1], device=where[2])
    what = m.group("what")
    if section == "INCOMPLETE":
        rep.notes.append(Note(trouble=Trouble.unresponsive, **note))
    elif section == "ERROR":
        err = m.group("error") or (group[1] if group and group[0] == "error" else "")
        rep.notes.append(Note(trouble=Trouble.error, detail=f"{kind} error: {err}".strip(": ") if kind else str(err), **note))
    elif section == "MISMATCH" and op is not None:
        if what and what.startswith(" has launched"):
            n = int(m.group("n"))
        elif what and "not launched" in what:
            n = 0
        elif group and group[0] == "count":
            n = int(group[1])
        else:
            return
        comm.counts.setdefault(op, {})[r] = n
        comm.majority.setdefault(op, n)  # no "N ranks have ..." line above: every group has one rank, most first
    elif section == "MISMATCH":
        status = m.group("status") or (group[1] if group and group[0] == "status" else None)
        if status:
            trouble = Trouble.not_member if status in ("NOCOMM", "UNKNOWN") else Trouble.status
            rep.notes.append(Note(trouble=trouble, detail=str(status), **note))


# --- JSON -------------------------------------------------------------------------------

def _parse_json(text: str, source: str) -> Report | None:
    try:
        data = loads_json(text)
        Meter().cost(data, 4 * len(text) + 64)
    except Unusable:
        return _cut_json(text, source)
    if not isinstance(data, dict) or not isinstance(data.get("communicators"), list):
        return None
    rep = Report(source, "json", version=str(data.get("nccl_version")) if data.get("nccl_version") else None)
    stamp = data.get("timestamp")
    if isinstance(stamp, str) and (t := _time_of(stamp)):
        rep.time, rep.ts = t
    ras = data.get("ras")
    if isinstance(ras, dict) and isinstance(ras.get("timeouts_count"), int):
        rep.timeouts = ras["timeouts_count"]
    for c in data["communicators"]:
        _json_comm(rep, c)
    _resolve(rep)
    return rep


def _cut_json(text: str, source: str) -> Report | None:
    """A JSON report cut short (a paste, a client killed mid-way): the communicators that
    are whole, found by their closing lines, as NCCL indents them."""
    if '"communicators"' not in text:
        return None
    rep = Report(source, "json", complete=False)
    if (m := re.search(r'"nccl_version": "([^"]*)"', text)):
        rep.version = m.group(1)
    if (m := re.search(r'"timestamp": "([^"]*)"', text)) and (t := _time_of(m.group(1))):
        rep.time, rep.ts = t
    for m in re.finditer(r'(?ms)^    \{\n.*?^    \}', text):
        try:
            c = loads_json(m.group(0))
        except Unusable:
            continue
        _json_comm(rep, c)
    _resolve(rep)
    return rep


def _json_comm(rep: Report, c) -> None:
    if not isinstance(c, dict) or not isinstance(c.get("hash"), str) or (h := _hash(c["hash"])) is None:
        rep.complete = False
        return
    comm = rep.comm(h)
    comm.size = c["size"] if isinstance(c.get("size"), int) else None
    comm.secondary = c["secondary_hash"] if isinstance(c.get("secondary_hash"), str) else None
    comm.missing = c["missing_ranks_count"] if isinstance(c.get("missing_ranks_count"), int) else None
    for rk in c.get("ranks") or []:
        if not isinstance(rk, dict) or not isinstance(rk.get("rank"), int):
            rep.complete = False
            continue
        r = rk["rank"]
        where = _json_where(rk)
        comm.where[r] = where
        note = dict(comm=h, rank=r, host=where[0], pid=where[1], device=where[2])
        counts = rk.get("collective_counts")
        if isinstance(counts, dict):
            for op, n in counts.items():
                if isinstance(n, int):
                    comm.counts.setdefault(str(op), {})[r] = n
        st = rk.get("status") if isinstance(rk.get("status"), dict) else {}
        for key, name in (("init_state", "Initialization"), ("async_error", "Asynchronous")):
            v = st.get(key)
            if isinstance(v, int) and v not in (0, 7):  # ncclSuccess, ncclInProgress
                rep.notes.append(Note(trouble=Trouble.error, detail=f"{name} error: {_NCCL_RESULT.get(v, f'ncclResult {v}')}", **note))
        if st.get("abort_flag") is True:
            rep.notes.append(Note(trouble=Trouble.status, detail="ABORT", **note))
    for rk in c.get("missing_ranks") or []:
        if not isinstance(rk, dict) or not isinstance(rk.get("rank"), int):
            rep.complete = False
            continue
        where = _json_where(rk)
        st = rk.get("status") if isinstance(rk.get("status"), dict) else {}
        trouble = Trouble.dead if st.get("considered_dead") is True else (
            Trouble.unresponsive if st.get("unresponsive") is True else Trouble.not_member)
        rep.notes.append(Note(h, rk["rank"], trouble, *where))
    for op, by_rank in comm.counts.items():
        if by_rank:
            values = sorted(by_rank.values())
            comm.majority[op] = max(set(values), key=lambda v: (values.count(v), v))


_NCCL_RESULT = {1: "Unhandled CUDA error", 2: "System error", 3: "Internal error", 4: "Invalid argument",
                5: "Invalid usage", 6: "Remote process error", 8: "Timeout"}  # client_support.cc ncclErrorToString; 8: ncclTimeout (nccl.h)


def _json_where(rk: dict) -> tuple[str | None, int | None, int | None]:
    host = rk.get("host") if isinstance(rk.get("host"), str) and rk.get("host") != "unknown" else None
    pid = rk.get("pid") if isinstance(rk.get("pid"), int) and rk.get("pid", -1) >= 0 else None
    dev = rk.get("cuda_dev") if isinstance(rk.get("cuda_dev"), int) else None
    return host, pid, dev


# --- what the counts and the processes say about ranks -----------------------------------

def _resolve(rep: Report) -> None:
    """Ranks behind or ahead of most ranks' counts; missing ranks of the text report that a
    dead process holds are dead, not merely unresponsive."""
    for comm in rep.comms.values():
        for op, by_rank in comm.counts.items():
            top = comm.majority.get(op)
            if top is None:
                continue
            for r, n in sorted(by_rank.items()):
                if n != top:
                    host, pid, dev = comm.where.get(r, (None, None, None))
                    rep.notes.append(Note(comm.hash, r, Trouble.behind if n < top else Trouble.ahead, host, pid, dev,
                                          op or None, n, top))
    dead_pids = {p.pid for p in rep.processes if p.trouble == Trouble.dead and p.pid is not None}
    only_dead = bool(rep.processes) and all(p.trouble == Trouble.dead for p in rep.processes)
    out = []
    for n in rep.notes:
        if n.trouble == Trouble.unresponsive and (n.pid in dead_pids or (n.pid is None and only_dead)):
            n = Note(n.comm, n.rank, Trouble.dead, n.host, n.pid, n.device, n.op, n.count, n.majority, n.after, n.detail)
        out.append(n)
    rep.notes = out


def track(reports: list[Report]) -> list[Note]:
    """Stuck or slow, from two snapshots of the same job: for each communicator in the
    latest report and the one before it that has it, the ranks whose counts did not move
    while they lagged or the others moved (stuck), and those whose counts moved yet still
    lag (slow). Snapshots are ordered by their time, else by their order among the inputs."""
    snaps = sorted(reports, key=lambda r: (r.ts is None, r.ts or 0.0, r.order))
    out: list[Note] = []
    if len(snaps) < 2:
        return out
    later = snaps[-1]
    for h, now in later.comms.items():
        before = next((s.comms[h] for s in reversed(snaps[:-1]) if h in s.comms and s.comms[h].counts), None)
        if before is None:
            continue
        for op, after in now.counts.items():
            prev = before.counts.get(op, {})
            moved = {r for r in after if r in prev and after[r] != prev[r]}
            top = max(after.values(), default=None)
            for r in sorted(after):
                if r not in prev or top is None:
                    continue
                host, pid, dev = now.where.get(r, (None, None, None))
                still = after[r] == prev[r]
                lags = after[r] < top
                if still and (lags or (moved and r not in moved)):
                    out.append(Note(h, r, Trouble.stuck, host, pid, dev, op or None, prev[r], top, after[r]))
                elif not still and lags and prev[r] < max(prev.values()):
                    out.append(Note(h, r, Trouble.slow, host, pid, dev, op or None, prev[r], top, after[r]))
    return out


# --- among the inputs ----------------------------------------------------------------------

_HEAD = 64 * 1024


def ras_among(sources) -> tuple[list[Report], set[str]]:
    """RAS reports among log inputs (``ingest.sources.Source``), and the names of those that
    are nothing but a report (left out of the log scan). A report pasted into a log is read
    and the log is still scanned. Only files that name a RAS marker in their first 64 KB are
    read whole (up to 16 MB)."""
    reports: list[Report] = []
    pure: set[str] = set()
    for src in sources:
        data = src.read_if(lambda head, size: MAX_BYTES if any(m in head for m in MARKERS) else None, _HEAD)
        if data is None:
            continue
        text = data.decode("utf-8", "replace")
        rep = parse_ras(text, src.name)
        if rep is None:
            continue
        rep.order = len(reports)
        reports.append(rep)
        if rep.preamble <= _PREAMBLE and not rep.foreign:
            pure.add(src.name)
    return reports, pure
