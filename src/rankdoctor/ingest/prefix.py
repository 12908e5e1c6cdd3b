"""Who printed a line, and when: rank / local rank / host / time from line prefixes.

Prefixes stack (``gpu-q-49: [default0]:[rank12]:[E817 17:40:34.227 ProcessGroupNCCL.cpp:1515] ...``)
so they are peeled one at a time from the start of the line. Formats are the ones seen in
real logs (../shared/LOGFORMATS.md): a ``grep`` file-name prefix, torchrun ``[rankN]:`` (global) and ``[defaultN]:``
(local), ``srun -l`` ``N: ``, Open MPI ``[1,N]<stderr>:`` (Horovod ``[N]<stderr>:``), Lightning ``[rank: N]``,
pdsh/DeepSpeed host prefixes, kubectl ``--prefix``, Ray actor prefixes, glog and ISO
timestamps, NCCL's ``host:pid:tid [dev]``, torch_npu's ``[ERROR] <time> (PID:p, Device:d, RankID:r)``,
dmesg.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")

_MONTHS = {m: i for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split(), 1)}


@dataclass
class Attribution:
    rank: int | None = None
    local_rank: int | None = None
    host: str | None = None
    pid: int | None = None
    device: int | None = None
    time: str | None = None  # ISO 8601 when the format allows, else as printed
    ts: float | None = None  # sortable seconds; comparable within one time domain
    extra: dict[str, str] = field(default_factory=dict)

    def merged_over(self, base: "Attribution") -> "Attribution":
        """This line's attribution, falling back to ``base`` (from the file name)."""
        return Attribution(
            rank=self.rank if self.rank is not None else base.rank,
            local_rank=self.local_rank if self.local_rank is not None else base.local_rank,
            host=self.host or base.host,
            pid=self.pid if self.pid is not None else base.pid,
            device=self.device if self.device is not None else base.device,
            time=self.time or base.time,
            ts=self.ts if self.ts is not None else base.ts,
            extra={**base.extra, **self.extra},
        )


def _iso(y: int, mo: int, d: int, h: int, mi: int, s: int, frac: str = "") -> tuple[str, float]:
    frac = (frac or "")[:6]
    try:
        dt = datetime(y, mo, d, h, mi, s, int(frac.ljust(6, "0")) if frac else 0)
    except ValueError:
        return f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}", 0.0
    text = dt.isoformat(timespec="microseconds" if frac else "seconds")
    return text, dt.timestamp() if y > 1970 else (dt - datetime(1970, 1, 1)).total_seconds()


iso_time = _iso  # (ISO 8601 text, sortable seconds) of a time's fields, as a prefix's time reads


# Each prefix regex is applied at the current position (re.match with pos).
_P_KUBECTL = re.compile(r"\[pod/(?P<host>[^/\]\s]+)/[^\]\s]*\] ")
_P_ISO = re.compile(
    r"\[?(?P<y>\d{4})(?P<sep>[-/])(?P<mo>\d{2})(?P=sep)(?P<d>\d{2})[T _](?P<h>\d{2}):(?P<mi>\d{2})(?::(?P<s>\d{2}))?"
    r"(?:[.,](?P<f>\d+))?(?:Z|[+-]\d{2}:?\d{2})?\]?(?: - | \| |:? ?)"
)
_P_RANK = re.compile(r"\[rank(?P<rank>\d+)\]: ?")
_P_DEFAULT = re.compile(r"\[(?:default|[A-Za-z_]+)(?P<local_rank>\d+)\]: ?")
# (Open MPI's --tag-output "[job,rank]<stream>:"; Horovod's own launcher writes "[rank]<stream>:",
# horovod/runner/common/util/safe_shell_exec.py prefix_connection)
_P_MPI = re.compile(r"\[(?:\d+,)?(?P<rank>\d+)\]<(?:stdout|stderr)>: ?")
_P_LIGHTNING = re.compile(r"\[rank: (?P<rank>\d+)\] ?")
# Determined wraps each worker's stream as "[rank=N] " (determined's worker_process_wrapper.py); a
# log viewer's empty bracket pair before it ("[] [rank=0] ...", a field with no value) says nothing
_P_RANK_EQ = re.compile(r"\[rank=(?P<rank>\d+)\] ?")
# a logging format that puts the rank behind the time: "[%(asctime)s][rank-{rank}] %(message)s", and
# AMD Primus's "[20260511 03:22:17][rank-7/8][INFO]    [----module_utils.py:227] : " (rank/world size,
# then the level); the time's compact "YYYYMMDD HH:MM:SS" form is _P_DATE_COMPACT
_P_RANK_DASH = re.compile(r"\[rank-(?P<rank>\d+)(?:/\d+)?\](?:\[(?P<lvl>DEBUG|INFO|WARNING|ERROR|CRITICAL)\])? *")
_P_DATE_COMPACT = re.compile(r"\[(?P<y>\d{4})(?P<mo>\d{2})(?P<d>\d{2}) (?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})\](?=\[rank-)")
_P_EMPTY = re.compile(r"\[\] ")
# ... behind the log record's container id (its first 8 hex digits, bare or in brackets, or
# "<none>" when the record has none) and its timestamp: "<none> [2022-07-13 05:54:27] [d2997185]
# [rank=15] ..." and "[2024-02-27T21:35:28.419846Z] fa88a9df [rank=5] || ..." (the CLI's "||"
# before the message)
_P_DET_CID = re.compile(r"(?:<none>|\[[0-9a-f]{8}\]|[0-9a-f]{8}) (?=\[(?:rank=\d|\d{4}-))")
_P_DET_SEP = re.compile(r"\|\| ?")
# torch_npu's (Ascend) error header: "[ERROR] 2024-08-28-16:15:00 (PID:15597, Device:2, RankID:2) ERR00100
# PTA call acl api failed" (RankID is the RANK of the process, -1 before it is known); the CANN
# error code lines under it ("EL0004: ... Failed to allocate memory.") are that rank's
_P_NPU_ERR = re.compile(
    r"\[(?:ERROR|WARNING|INFO)\] (?P<y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2})-(?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2}) "
    r"\(PID:(?P<pid>\d+), Device:(?P<device>-?\d+), RankID:(?P<rank>-?\d+)\) "
)
# Ray's worker prefix: "(RayWorkerWrapper pid=123, ip=10.0.0.5) ", an actor whose repr has its own
# name in parentheses ("(ActorWorker(actor_train-1) pid=18175, ip=...) ") or its rank in brackets
# (NeMo-RL's "(MegatronPolicyWorker[rank=0] pid=1892406, ip=10.65.5.217) ", RLinf's "(EnvGroup(rank=1)
# pid=49603) "), a bare task's "(pid=4242) "
_P_RAY = re.compile(
    r"\((?:(?P<actor>[A-Za-z_][\w.:-]*(?:\((?:rank=(?P<actor_rank2>\d+)|[\w.:-]*)\)|\[rank=(?P<actor_rank>\d+)\])?)(?: rank=(?P<rank>\d+))? )?"
    r"pid=(?P<pid>\d+)(?:, ip=(?P<ip>[\w.:-]+))?\) "
)
_P_GLOG = re.compile(
    r"\[?(?P<lvl>[IWEFVD])(?P<mo>\d{1,2}?)(?P<d>\d{2}) (?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})(?:\.(?P<f>\d+))?"
    r"(?: +(?P<tid>\d+))?(?: (?P<file>[\w./-]+:\d+))?\] ?"
)
_P_NCCL = re.compile(r"(?P<host>[\w.-]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<device>\d+)\] ")
# the logging format of k2/icefall, lhotse and WeNet once a process group exists:
# "%(asctime)s %(levelname)s [%(filename)s:%(lineno)d] ({rank}/{world_size}) %(message)s"
# (icefall/utils.py setup_logger): "2023-08-27 11:00:45,004 INFO [train.py:958] (3/4) Training started"
_P_PYLOG_RANK = re.compile(r"(?P<lvl>INFO|WARNING|ERROR|DEBUG|CRITICAL) \[[\w.-]+:\d+\] \((?P<rank>\d+)/(?P<world>\d+)\) ")
_P_DMESG_T = re.compile(
    r"\[(?:\w{3}) (?P<mon>\w{3}) +(?P<d>\d{1,2}) (?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2}) (?P<y>\d{4})\] "
)
_P_DMESG = re.compile(r"\[ *\+?(?P<up>\d+\.\d+)\] ")
_WEEKDAYS = frozenset(("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"))
# Open MPI's --timestamp-output: ctime()'s date glued to the --tag-output tag that follows
# ("Fri Jun 19 09:00:59 2020[1,0]<stdout>:...")
_P_CTIME = re.compile(
    r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?P<mon>[A-Z][a-z]{2}) +(?P<d>\d{1,2}) (?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2}) "
    r"(?P<y>\d{4})(?=\[)"
)


def _ctime_at(text: str, pos: int) -> "re.Match[str] | None":
    """Open MPI's (or Horovod's) ctime() stamp at ``pos``; the weekday is tested first, cheaply."""
    if text[pos + 3:pos + 4] == " " and text[pos:pos + 3] in _WEEKDAYS:
        return _P_CTIME.match(text, pos)
    return None


# a log collector's clock without a date, with milliseconds, in front of a bracketed prefix
# ("10:41:43.105 [rank3]: Traceback ..."): only before "[", so a message that starts with a
# time of its own is left alone
_P_CLOCK = re.compile(r"(?P<h>[01]\d|2[0-3]):(?P<mi>[0-5]\d):(?P<s>[0-5]\d)[.,](?P<f>\d{3,6}) (?=\[)")
_GLOG_LEVELS = frozenset("IWEFVD")
_P_SRUN = re.compile(r" {0,4}(?P<rank>\d{1,5}) ?: ")
# `grep pattern *.log` across files puts the file name first: "LOG1.0.txt:host:pid:tid [0] NCCL INFO ..."
_P_GREPFILE = re.compile(r"(?P<file>[\w.-]+(?:/[\w.-]+)*\.(?:log|txt|out|err))[:-](?=\S)")
_P_PIPE = re.compile(r" *\| ")  # CI log viewers
# a log pasted as a Markdown block quote ("> [rank3]: ..."), or as comments in a script or
# config ("# [rank0]: Traceback ...": the marker and one space; "#0 0x..." frames do not match)
_P_QUOTE = re.compile(r" {0,3}[>#](?: |$)")
_P_PYTEST = re.compile(r"E {3,}(?=\S)")  # pytest's failure report ("E       RuntimeError: ...")
# an exception line a reporter set in Markdown bold ("**RuntimeError: Connection reset by peer**")
_P_BOLD_EXC = re.compile(r"\*\*(?=[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Failure)\b)")
_P_SPACE = re.compile(r"[ \t]+")
_HEX = frozenset("0123456789abcdef")


@dataclass(frozen=True)
class Dialect:
    """Per-source prefix styles that cannot be told from one line alone."""

    srun: bool = False
    hosts: frozenset[str] = frozenset()
    pipe: bool = False
    quote: bool = False
    pytest: bool = False


def parse_prefix(text: str, dialect: Dialect = Dialect()) -> tuple[Attribution, int]:
    """Return the attribution read from ``text``'s prefixes and where the message starts."""
    a = Attribution()
    pos = 0
    n = len(text)
    for _ in range(12):  # prefixes stack, but never deeper than this
        if pos >= n:
            break
        m = _P_SPACE.match(text, pos)
        if m and pos > 0:
            pos = m.end()
        elif m and (_P_ISO.match(text, m.end()) or _P_RANK.match(text, m.end())
                    or _ctime_at(text, m.end())):
            # a pasted line indented before its timestamp (" 2025-02-18 12:54 [rank13]:...",
            # "    Tue Sep  8 09:24:20 2020[0]<stdout>:...") or its rank ("    [rank0]: Traceback
            # ...": a log pasted as an indented Markdown code block); other indented lines
            # (traceback frames) keep their indentation
            pos = m.end()
        if pos == 0 and text.startswith("^C"):  # a terminal's echo of Ctrl-C glued to the next line
            pos = 2
            continue
        if dialect.pipe and (m := _P_PIPE.match(text, pos)):
            pos = m.end()
            continue
        if dialect.quote and pos == 0 and (m := _P_QUOTE.match(text)):
            pos = m.end()
            continue
        if dialect.pytest and pos == 0 and (m := _P_PYTEST.match(text)):
            pos = m.end()
            continue
        if text.startswith("**", pos) and (m := _P_BOLD_EXC.match(text, pos)):
            pos = m.end()
            continue
        if dialect.hosts:
            colon = text.find(": ", pos, pos + 80)
            if colon > 0 and text[pos:colon] in dialect.hosts:
                a.host = text[pos:colon]
                pos = colon + 2
                continue
            if (m := _P_HOST_PIPE.match(text, pos)) and m["host"] in dialect.hosts:
                a.host = m["host"]
                pos = m.end()
                continue
        if pos == 0 and (m := _P_GREPFILE.match(text)):
            from .names import attribution_from_name  # names.py imports this module

            named = attribution_from_name(m["file"])
            a.rank = named.rank
            a.local_rank = named.local_rank
            a.extra["file"] = m["file"]
            pos = m.end()
            continue
        if dialect.srun and a.rank is None and (m := _P_SRUN.match(text, pos)):
            a.rank = int(m["rank"])
            pos = m.end()
            continue
        # each prefix below can start only with the characters its test names: a line's
        # message (where every line ends up) is not tried against a dozen regexes
        c = text[pos] if pos < n else ""
        bracket = c == "["
        if bracket and (m := _P_RANK.match(text, pos)):
            a.rank = int(m["rank"])
        elif bracket and (m := _P_DEFAULT.match(text, pos)):
            a.local_rank = int(m["local_rank"])
        elif bracket and (m := _P_MPI.match(text, pos)):
            a.rank = int(m["rank"])
        elif bracket and (m := _P_LIGHTNING.match(text, pos)):
            a.rank = int(m["rank"])
        elif bracket and (m := _P_RANK_EQ.match(text, pos)):
            a.rank = int(m["rank"])
        elif bracket and (m := _P_EMPTY.match(text, pos)):
            pass
        elif bracket and (m := _P_RANK_DASH.match(text, pos)):
            a.rank = int(m["rank"])
            if m["lvl"]:
                a.extra["level"] = m["lvl"][0]
        elif bracket and (m := _P_DATE_COMPACT.match(text, pos)):
            a.time, a.ts = _iso(int(m["y"]), int(m["mo"]), int(m["d"]), int(m["h"]), int(m["mi"]), int(m["s"]))
        elif (bracket or c == "<" or c in _HEX) and (m := _P_DET_CID.match(text, pos)):
            pass
        elif c == "|" and a.rank is not None and (m := _P_DET_SEP.match(text, pos)):
            pass
        elif bracket and (m := _P_NPU_ERR.match(text, pos)):
            a.time, a.ts = _iso(int(m["y"]), int(m["mo"]), int(m["d"]), int(m["h"]), int(m["mi"]), int(m["s"]))
            a.pid = int(m["pid"])
            if int(m["rank"]) >= 0:
                a.rank = int(m["rank"])
            if int(m["device"]) >= 0:
                a.device = int(m["device"])
        elif bracket and (m := _P_KUBECTL.match(text, pos)):
            a.host = m["host"]
        elif (bracket or c.isdecimal()) and (m := _P_ISO.match(text, pos)):  # (\d is isdecimal)
            # a log viewer's "2025-02-18 12:54 " stamp may stop at the minute
            a.time, a.ts = _iso(int(m["y"]), int(m["mo"]), int(m["d"]), int(m["h"]), int(m["mi"]), int(m["s"] or 0), m["f"] or "")
        elif c.isdecimal() and (m := _P_CLOCK.match(text, pos)):
            if a.time is None:  # no date: sortable within the day, like glog's stamp within the run
                iso, a.ts = _iso(1970, 1, 1, int(m["h"]), int(m["mi"]), int(m["s"]), m["f"])
                a.time = iso[11:]
        elif (bracket or c in _GLOG_LEVELS) and (m := _P_GLOG.match(text, pos)) and (m["file"] or m["tid"] or bracket):
            # glog has no year: keep month-day, sortable within the run
            iso, ts = _iso(1970, int(m["mo"]), int(m["d"]), int(m["h"]), int(m["mi"]), int(m["s"]), m["f"] or "")
            if a.time is None:  # a dated stamp before it on the line (a log collector's) stays the line's time
                a.time = "--" + iso[5:]
                a.ts = ts
            a.extra["level"] = m["lvl"]
        elif c in "IWEDC" and (m := _P_PYLOG_RANK.match(text, pos)):
            a.rank = int(m["rank"])
            a.extra["level"] = m["lvl"][0]
        elif not bracket and (m := _P_NCCL.match(text, pos)):
            a.host = a.host or m["host"]
            a.pid = int(m["pid"])
            a.device = int(m["device"])
        elif c == "(" and (m := _P_RAY.match(text, pos)):
            a.pid = int(m["pid"])
            if (rank := m["rank"] or m["actor_rank"] or m["actor_rank2"]) is not None:
                a.rank = int(rank)
            if m["ip"]:
                a.host = a.host or m["ip"]
            if m["actor"]:
                a.extra["actor"] = m["actor"]
        elif c in "MTWFS" and (m := _ctime_at(text, pos)):
            a.time, a.ts = _iso(int(m["y"]), _MONTHS.get(m["mon"], 1), int(m["d"]), int(m["h"]), int(m["mi"]), int(m["s"]))
        elif bracket and (m := _P_DMESG_T.match(text, pos)):
            mon = _MONTHS.get(m["mon"], 1)
            a.time, a.ts = _iso(int(m["y"]), mon, int(m["d"]), int(m["h"]), int(m["mi"]), int(m["s"]))
        elif bracket and (m := _P_DMESG.match(text, pos)):
            a.extra["uptime"] = m["up"]
        else:
            break
        pos = m.end()
    return a, pos


_SNIFF_SRUN = re.compile(r" {0,4}\d{1,5} ?: ")
# a host name, or an IPv4 address (DeepSpeed's pdsh launcher prefixes each line with the
# hostfile's name for the node, often its address: "192.168.13.81: [rank19]:[E808 ...")
_IPV4_RX = r"\d{1,3}(?:\.\d{1,3}){3}"
_SNIFF_HOST = re.compile(r"([A-Za-z][\w.-]{1,62}|" + _IPV4_RX + r")(?:: | +\| )")
_IPV4 = re.compile(_IPV4_RX)
# docker compose / SageMaker style "service-or-host | message"
_P_HOST_PIPE = re.compile(r"(?P<host>[A-Za-z][\w.-]{1,62}) +\| ?")
# A message whose subject is the printing rank: training scripts and frameworks print
# "rank 2 step 6: loss is inf", "[Rank 3] ...", "Rank 0: ...", "rank=1 ...", after an
# optional level and logger name ("WARNING train: "). Only the message's first words are
# read, so "Rank 0 is running collective ..., but Rank 1 ..." inside a mismatch report and
# torchrun's "rank      : 1 (local_rank: 1)" summary are not taken for the printer.
_SUBJECT_RANK = re.compile(
    r"(?:\[[IWEF] [\w.]+:\d+\]\s*)?"  # an old glog tag without a time: "[E ProcessGroupNCCL.cpp:737] "
    r"(?:\[?(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL|FATAL)\]?\s*[:|-]?\s*)?"
    r"(?:[A-Za-z_][\w.<>-]{0,40}\s*(?::|\s-)\s+)?"
    r"[\[(]?(?i:rank)(?:\s*[=#]\s*|\s+)(?P<rank>\d{1,6})(?:\s*/\s*\d{1,6})?[\])]?(?=[\s:,;]|$)"
    r"(?!\s*(?:is running|failed to pass|did not|has not|timed out|is not))"
)


_PROGRESS = re.compile(
    r"(?i)\b(?:global[_ ]?step|step|iter(?:ation)?|it|batch|epoch)\b\s*[:=#]?\s*\[?(\d+)(?:\s*/\s*\d+)?"
    r"|\b(\d+)\s*/\s*(\d+)\s*\["  # tqdm: " 37/100 ["
)


def progress_of(text: str) -> int | None:
    """The step / iteration / epoch counter a line of work reports (None without one)."""
    m = _PROGRESS.search(text)
    if not m:
        return None
    v = m.group(1) or m.group(2)
    return int(v) if v and len(v) < 10 else None


def subject_rank(message: str) -> int | None:
    """The rank a message says printed it, from its first words (None when it does not)."""
    m = _SUBJECT_RANK.match(message)
    return int(m["rank"]) if m else None


_NOT_HOSTS = re.compile(
    r"(?i)^(?:.*(?:error|exception|warning|warn|info|debug|notice|critical|fatal|traceback)|"
    r"note|hint|usage|step|epoch|loss|rank|time|host|exitcode|error_file|traceback|root cause)$"
)


def sniff_dialect(sample_lines: list[str]) -> Dialect:
    """Decide from the first lines of a source whether it uses srun or host prefixes."""
    lines = [ANSI_RE.sub("", ln) for ln in sample_lines if ln.strip()]
    if not lines:
        return Dialect()
    srun = sum(1 for ln in lines if _SNIFF_SRUN.match(ln)) >= max(3, len(lines) // 2)
    pipe = sum(1 for ln in lines if _P_PIPE.match(ln)) >= max(3, len(lines) * 3 // 4)
    quote = sum(1 for ln in lines if _P_QUOTE.match(ln)) >= max(3, len(lines) * 3 // 4)
    # pytest's report of a failed test: the exception and its frames behind "E" and spaces
    pytest = sum(1 for ln in lines if _P_PYTEST.match(ln)) >= 2
    counts: dict[str, int] = {}
    for ln in lines:
        m = _SNIFF_HOST.match(ln)
        if m and (any(c.isdigit() for c in m[1]) or "-" in m[1]) and not _NOT_HOSTS.match(m[1]):
            counts[m[1]] = counts.get(m[1], 0) + 1
    covered = sum(counts.values())
    hosts: frozenset[str] = frozenset()
    # many distinct "word: " starts are prose, not hosts; addresses are hosts however many
    if counts and covered >= max(3, len(lines) // 2) and (
        len(counts) <= max(1, covered // 3) or all(_IPV4.fullmatch(h) for h in counts)
    ):
        hosts = frozenset(counts)
    if quote:  # what the quote marker hides: the prefixes behind it
        inner = sniff_dialect([_P_QUOTE.sub("", ln, count=1) for ln in lines])
        return Dialect(srun=inner.srun, hosts=inner.hosts, pipe=pipe or inner.pipe, quote=True, pytest=inner.pytest)
    return Dialect(srun=srun, hosts=hosts, pipe=pipe, pytest=pytest)


def clean(text: str) -> str:
    """Strip ANSI colour codes; of carriage-return-glued segments keep them all, joined by
    a space, so a tqdm bar glued to an error line does not hide the error."""
    if "\x1b" in text:
        text = ANSI_RE.sub("", text)
    if "\r" in text:
        text = " ".join(seg for seg in text.split("\r") if seg.strip())
    return text
