"""One pass over the bytes for every signature and structural fact.

All patterns are compiled into a single hyperscan database (in prefilter mode, so every
Python regex feature is allowed: hyperscan finds candidate lines, Python's ``re``
confirms them and reads the named groups). Python work happens only on lines that hit.

No line can stall the scan: ``make check-kb`` rejects patterns on which ``re`` backtracks
super-linearly (``kb/backtrack.py``), a pattern that starts with a repeat only tries where
that repeat's run starts (``start_guarded``), and a line longer than ``LONG_LINE`` is
matched by RE2, in linear time, wherever the pattern is one RE2 can run. Hits are counted
per kind of line and only the first and last occurrences kept (``events.Sample``).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import hyperscan

from .events import LAST, Event, Fact, InputStats, Sample, ScanResult
from .facts import ERROR_FACTS, FACT_PREFILTER, FACTS
from .ingest.names import attribution_from_name
from .ingest.prefix import Attribution, Dialect, clean, iso_time, parse_prefix, progress_of, sniff_dialect, subject_rank
from .ingest.sources import CHUNK, Source, iter_chunks, iter_file_chunks, looks_binary
from .kb import cache
from .trajectory import numeric_jump

if TYPE_CHECKING:
    from .kb.loader import KnowledgeBase

_NAMED = re.compile(r"\(\?P<[A-Za-z_]\w*>")
_BACKREF = re.compile(r"\(\?P=\w+\)")
MAX_TEXT = 2000  # characters of a hit line kept as evidence
# longer lines are matched by RE2 (linear time, but ~10x re's cost per call on a short
# line); below, re's worst case per line is a few ms (bench/memory_hits.md). Every
# scenario's diagnosis is the same with either engine on its long lines.
LONG_LINE = 1024
CONTEXT_LINES = 40  # lines before a cause line kept (tracebacks)
CONTEXT_BYTES = 16 << 10
_SAMPLE_LINES = 100  # lines per chunk sampled for rank prefixes (hit lines add theirs too)
_SAMPLE_BYTES = 64 << 10  # where those lines are looked for first
TAIL_LINES = 200  # lines at the end of each source read for "last sign of life"
# Every prefix of ingest/prefix.py that yields a rank, local rank or host contains one of
# these (torchrun [rankN]: / [defaultN]:, Open MPI, Lightning, kubectl, NCCL host:pid:tid
# [dev], Ray rank=/ip=); srun and host-list dialects are told apart per source and always
# parsed. A sampled line without any of them cannot add to the ranks or hosts seen.
_ATTR_HINT = re.compile(r"\[[A-Za-z_]+\d+\]:|\]<std(?:out|err)>:|\[rank: \d+\]|\[pod/|:\d+:\d+ \[\d+\] |rank=\d+ pid=|pid=\d+, ip=")
# (also after the one space a pasted tqdm bar's carriage return became: "... 3.12s/it] [rank1]:...",
# "... 14.05it/s] [rank1]:..."; any other text before a spaced prefix is a prefix of the same
# record, such as a log viewer's time stamp)
_GLUED = r"(?=\[(?:rank|default)\d+\]:)"
_INTERLEAVED = re.compile(rf"(?<=\S){_GLUED}|(?<=/s\]) {_GLUED}|(?<=/it\]) {_GLUED}")


def split_interleaved(text: str) -> list[str]:
    """A line that holds two ranks' records, glued where a carriage return or a missing
    newline was (a tqdm bar, then "[default2]:[E ...] Watchdog caught ..."), as its records."""
    return _INTERLEAVED.split(text) if "[rank" in text[1:] or "[default" in text[1:] else [text]


# PyTorch C++ messages name their rank inside the message: "[Rank 1] ..." (older releases,
# default group) or "[PG ID 0 PG GUID 0(default_pg) Rank 1]" / "[PG 0 (default_pg) Rank 1]".
# A line that reports trouble rather than work (the "activity" of a rank is its last other line).
ERRORISH = re.compile(
    r"(?i)error|exception|traceback|timed? ?out(?!\s*[=:]\s*\d)|watchdog|abort|fatal|fail|killed|sig(?:term|kill|abrt|segv|bus)|"
    r"^\s*(?:File \"|\^+$|\[?[EF]\d{4} |what\(\)|terminate called|Exception raised from|frame #)"
)
_EXCEPTION_LINE = re.compile(FACTS["py-exception"])
# a message that reports an error that ended something: a level word or "Error:" at its start, a
# failed/aborted/killed process, an exception's name; a warning that mentions an error is no end
END_ERROR = re.compile(
    # (Intel oneCCL's level marker, after its own timestamp: "2024:03:27-22:24:25:(86734) |CCL_ERROR| ...")
    r"^(?:\[?(?:ERROR|FATAL|CRITICAL)\]?[\s:]|(?i:error|fatal)\s*:)|\|CCL_(?:ERROR|FATAL)\||"
    r"\b(?:failed|Aborted|Killed|core dumped|Segmentation fault|[A-Z]\w*(?:Error|Exception))\b"
)
WARNISH = re.compile(r"(?i)\bwarn(?:ing)?\b|^\[?W\d{4} |^\[W ")
_IN_MESSAGE_RANK = re.compile(r"\[(?:PG ID 0 PG GUID 0\(default_pg\) |PG 0 \(default_pg\) )?Rank (\d+)\]")


def to_hs(regex: str) -> bytes:
    """Translate a Python regex into the dialect hyperscan reads (prefilter mode): named
    groups become plain groups, back-references any text, and only the part from the
    longest top-level literal on is kept (see ``prefilter``)."""
    rx = _NAMED.sub("(?:", regex)
    rx = _BACKREF.sub(".*", rx)
    rx = _cr_before_end(rx)
    if rx.startswith("^"):
        rx = rx[1:]
        while rx.startswith(("\\s*", "\\s+", " *", " +")):
            rx = rx[3:] if rx[2] in "*+" else rx[2:]
    return prefilter(rx).encode("utf-8")


def _cr_before_end(rx: str) -> str:
    """``$`` (outside a character class) as ``\\r?$``: hyperscan's multi-line ``$`` holds only
    before a newline, so in a file with Windows line ends (CRLF) a pattern that ends its line
    ("train.py FAILED[ \\t]*$") would miss the line the scanner's check (which reads the line
    without its carriage return) accepts."""
    out: list[str] = []
    i, n, in_class = 0, len(rx), False
    while i < n:
        c = rx[i]
        if c == "\\":
            out.append(rx[i:i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]" or (out and out[-1] == "[")
        elif c == "[":
            in_class = True
        elif c == "$":
            out.append("\\r?$")
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


_QUANT = re.compile(r"(?:[*+?]|\{\d*(?:,\d*)?\})[?+]?")


def _atoms(rx: str) -> list[tuple[int, int, str | None]] | None:
    """The top-level atoms of a regex as (start, end, literal char or None), a quantified
    atom counting as not literal; None when the regex has a top-level ``|`` or is not
    something this reader follows (then it is used as it is)."""
    atoms: list[tuple[int, int, str | None]] = []
    i, n = 0, len(rx)
    while i < n:
        c = rx[i]
        lit: str | None = None
        if c == "\\":
            if i + 1 >= n:
                return None
            nxt = rx[i + 1]
            lit = nxt if not nxt.isalnum() else None
            j = i + 2
        elif c == "[":
            j = _class_end(rx, i)
        elif c == "(":
            j = _group_end(rx, i)
        elif c == "|":
            return None
        elif c in ")]":
            return None
        else:
            lit = None if c in ".^$" else c
            j = i + 1
        if j is None:
            return None
        q = _QUANT.match(rx, j)
        if q:
            lit, j = None, q.end()
        atoms.append((i, j, lit))
        i = j
    return atoms


def _class_end(rx: str, i: int) -> int | None:
    j = i + 1
    if j < len(rx) and rx[j] == "^":
        j += 1
    if j < len(rx) and rx[j] == "]":
        j += 1
    while j < len(rx):
        if rx[j] == "\\":
            j += 2
            continue
        if rx[j] == "]":
            return j + 1
        j += 1
    return None


def _group_end(rx: str, i: int) -> int | None:
    depth, j = 0, i
    while j < len(rx):
        c = rx[j]
        if c == "\\":
            j += 2
            continue
        if c == "[":
            k = _class_end(rx, j)
            if k is None:
                return None
            j = k
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return None


def prefilter(rx: str, min_literal: int = 4) -> str:
    """The part of a top-level concatenation from its longest plain literal on.

    Every line the whole regex matches also matches this suffix, so it is a valid
    prefilter (``re`` confirms each hit line); hyperscan then starts from a literal
    instead of running an automaton for a leading ``[\\w.-]+: \\S+@`` over every byte."""
    atoms = _atoms(rx)
    if not atoms or rx.startswith("(?") and not rx.startswith(("(?:", "(?P", "(?=", "(?!", "(?<")):
        return rx  # a global inline flag leads the pattern: leave it whole
    best_len, best_at, run_len, run_at = 0, 0, 0, 0
    for k, (_s, _e, lit) in enumerate(atoms):
        if lit is None:
            run_len = 0
            continue
        if run_len == 0:
            run_at = k
        run_len += 1
        if run_len > best_len:
            best_len, best_at = run_len, run_at
    if best_len < min_literal or best_at == 0:
        return rx
    return rx[atoms[best_at][0] :]


_HS_FLAGS = hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_MULTILINE | hyperscan.HS_FLAG_ALLOWEMPTY


def hs_compile_one(regex: str, ignore_case: bool = False) -> str | None:
    """None when hyperscan accepts the pattern, else its error message."""
    db = hyperscan.Database()
    flags = _HS_FLAGS | (hyperscan.HS_FLAG_CASELESS if ignore_case else 0)
    try:
        db.compile(expressions=[to_hs(regex)], ids=[0], elements=1, flags=[flags])
    except hyperscan.error as exc:
        return str(exc)
    return None


def _database(exprs: list[bytes], flags: list[int]) -> hyperscan.Database:
    """The compiled database for these patterns; compiled once, then loaded from the user's
    cache (``~/.cache/rankdoctor``, keyed by the patterns and the hyperscan version;
    RANKDOCTOR_CACHE=0 turns it off). Anything wrong with the cache: compile again."""
    key = repr((hyperscan.__version__, exprs, flags))
    data = cache.load("hs", key)
    if isinstance(data, bytes):
        try:
            return hyperscan.loadb(data, hyperscan.HS_MODE_BLOCK)
        except (hyperscan.error, TypeError, ValueError):
            pass
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(expressions=exprs, ids=list(range(len(exprs))), elements=len(exprs), flags=flags)
    try:
        cache.store("hs", key, hyperscan.dumpb(db))
    except hyperscan.error:
        pass
    return db


_np = None  # numpy, once a large input asked for it (``vector_count``)


def vector_count() -> None:
    """Count newlines with numpy from now on: about three times ``bytes.count`` (which
    compares byte by byte), worth its ~65 ms import only on large inputs. Called before
    scan workers fork, so they share the import."""
    global _np
    if _np is None:
        try:
            import numpy
        except ImportError:  # pragma: no cover - numpy is a dependency
            return
        _np = numpy


def count_newlines(data: bytes, n: int, start: int = 0) -> int:
    """Newlines in ``data[start:n]``."""
    if _np is not None and n - start >= 1 << 16:
        return int(_np.count_nonzero(_np.frombuffer(data, _np.uint8, n - start, start) == 10))
    return data.count(b"\n", start, n)


@dataclass
class Cursor:
    """Where a scan stands in a source: lines before the next chunk, the bytes just
    before it (context for tracebacks), the source's prefix dialect (sniffed from its
    first chunk)."""

    line_base: int = 0
    tail: bytes = b""  # the last bytes of the chunk before the next one (context)
    dialect: Dialect | None = None
    end: bytes = b""  # the source's last CONTEXT_BYTES so far, over chunks: its tail at the end


def sniff_chunk(chunk: bytes) -> Dialect:
    """The prefix dialect of a source, from its first chunk."""
    head = chunk[:65536].decode("utf-8", "replace").split("\n")[:200]
    return sniff_dialect(head)


_LEAD_GROUP = re.compile(r"\(\?(?:P<\w+>|:)")
_LEAD_REPEAT = re.compile(r"(\\[wdsSWD]|\[(?:\\.|[^\]\\])+\]|\.)(?:[+*]|\{\d+,\})")


def start_guarded(regex: str) -> str:
    """The same pattern, with each alternative that starts with a greedy repeat of one
    character class (``\\w+ : invalid``, ``(?P<host>[\\w.-]+): ``) tried only where a run
    of that class starts: ``(?<!\\w)\\w+``. ``re.search`` would otherwise start that
    repeat at every character of a long run and scan to its end each time (quadratic).
    The first match is the same: a match starting inside a run also starts one
    character earlier, so the leftmost one starts where the run does."""
    inserts: list[tuple[int, str]] = []

    def visit(lo: int, hi: int) -> None:
        for at in _alternatives(regex, lo, hi):
            group = _LEAD_GROUP.match(regex, at)
            if group:
                end = _group_end(regex, at)
                if end is not None:
                    visit(group.end(), end - 1)
                continue
            rep = _LEAD_REPEAT.match(regex, at)
            if rep:
                inserts.append((at, f"(?<!{rep.group(1)})"))

    visit(0, len(regex))
    for at, guard in reversed(inserts):
        regex = regex[:at] + guard + regex[at:]
    return regex


def _alternatives(rx: str, lo: int, hi: int) -> list[int]:
    """Where the top-level alternatives of ``rx[lo:hi]`` start."""
    starts, j, depth = [lo], lo, 0
    while j < hi:
        c = rx[j]
        if c == "\\":
            j += 2
            continue
        if c == "[":
            j = _class_end(rx, j) or hi
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            starts.append(j + 1)
        j += 1
    return starts


class Pattern:
    """One signature or structural fact; its Python regex is compiled when a line first
    hits it (most patterns never hit: compiling all ~400 would cost each run 30 ms)."""

    __slots__ = ("kind", "entry", "signature", "role", "regex", "flags", "_rx", "_linear")

    def __init__(self, kind: str, entry: str, signature: str, role: str, regex: str, flags: int = 0):
        self.kind, self.entry, self.signature, self.role, self.regex, self.flags = kind, entry, signature, role, regex, flags
        self._rx: re.Pattern[str] | None = None
        self._linear: object = None  # the RE2 pattern, False when RE2 cannot run this one

    @property
    def rx(self) -> re.Pattern[str]:
        if self._rx is None:
            self._rx = re.compile(start_guarded(self.regex), self.flags)
        return self._rx

    def search(self, text: str):
        """``re.search``, or RE2's on a line longer than ``LONG_LINE`` (the same match on
        ASCII text; RE2's ``\\w``, ``\\d``, ``\\s`` are ASCII-only)."""
        if len(text) > LONG_LINE:
            if self._linear is None:
                self._linear = _re2_pattern(self.regex, self.flags)
            if self._linear is not False:
                return self._linear.search(text)  # type: ignore[attr-defined]
        return self.rx.search(text)


def _re2_pattern(regex: str, flags: int) -> object:
    """The pattern compiled by RE2, or False when it uses what RE2 cannot do (lookarounds)."""
    import re2

    options = re2.Options()
    options.log_errors = False  # (else RE2 prints the refusal on stderr)
    options.case_sensitive = not flags & re.I
    try:
        return re2.compile(regex, options)
    except re2.error:
        return False


# (entry id, signature id, role, Python regex, ignore case, hyperscan expression)
Row = tuple[str, str, str, str, bool, bytes]


def pattern_table(kb: "KnowledgeBase") -> list[Row]:
    """Every signature of the knowledge base as the scanner needs it (plain data: cached)."""
    return [(e.id, s.id, s.role.value, s.regex, s.ignore_case, to_hs(s.regex)) for e in kb for s in e.signatures
            if s.computed is None]  # a computed signature is read from a run's numbers (trajectory.py), not line by line


def scanner_for(directory: Path | None, load_kb: Callable[[], "KnowledgeBase"]) -> "Scanner":
    """The scanner for the entries in ``directory`` (default: the installed ones), from the
    pattern table cached for exactly these entry files and this code when there is one (no
    YAML parsed, no pydantic imported; the compiled database comes from its own cache, see
    ``_database``); ``load_kb`` is called only when there is not."""
    return Scanner(table=table_for(directory, load_kb))


def table_for(directory: Path | None, load_kb: Callable[[], "KnowledgeBase"]) -> list[Row]:
    """``scanner_for``'s pattern table (what another engine's workers build a scanner from)."""
    directory = directory or cache.default_entries_dir()
    key = cache.fingerprint(directory)
    table = cache.load("patterns", key)
    if not isinstance(table, list):
        table = pattern_table(load_kb())
        cache.store("patterns", key, table)
    return table


class Scanner:
    def __init__(self, kb: "KnowledgeBase | None" = None, *, table: list[Row] | None = None):
        """From a knowledge base, or from its pattern table (``pattern_table``)."""
        if table is None:
            if kb is None:
                raise TypeError("Scanner needs a knowledge base or a pattern table")
            table = pattern_table(kb)
        self.patterns: list[Pattern] = []
        exprs: list[bytes] = []
        flags: list[int] = []
        for entry, sig, role, regex, ignore_case, expr in table:
            self.patterns.append(Pattern("sig", entry, sig, role, regex, re.I if ignore_case else 0))
            exprs.append(expr)
            flags.append(_HS_FLAGS | (hyperscan.HS_FLAG_CASELESS if ignore_case else 0))
        for fid, regex in FACTS.items():
            self.patterns.append(Pattern("fact", "", fid, "fact", regex))
            exprs.append(FACT_PREFILTER[fid].encode() if fid in FACT_PREFILTER else to_hs(regex))
            flags.append(_HS_FLAGS)
        self.db = _database(exprs, flags)
        self._scratch = hyperscan.Scratch(self.db)
        self.db.scratch = self._scratch

    # -- the byte pass ---------------------------------------------------------------
    def hits(self, data: bytes) -> dict[int, set[int]]:
        """Map line-end offset -> pattern ids that ended on that line."""
        found: dict[int, set[int]] = {}
        find = data.find
        size = len(data)

        def on_match(pid: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
            # `to` is the end of the match; the line is the one containing to-1
            end = find(b"\n", max(to - 1, 0))
            if end < 0:
                end = size
            s = found.get(end)
            if s is None:
                found[end] = {pid}
            else:
                s.add(pid)

        if data:
            self.db.scan(data, match_event_handler=on_match)
        return found

    # -- a whole source ---------------------------------------------------------------
    def scan_source(self, source: Source, chunk_size: int = CHUNK) -> ScanResult:
        result = ScanResult()
        stats = InputStats(path=source.name, warnings=list(source.warnings))
        result.inputs.append(stats)
        base = self.note_name(source.name, result)
        cur = Cursor()
        stream = None
        try:
            if source.path is not None:  # a plain file: positioned reads, no copies
                chunks = iter_file_chunks(source.path, 0, None, chunk_size)
            else:
                stream = source.opener()
                chunks = iter_chunks(stream, chunk_size)
        except OSError as exc:
            stats.warnings.append(f"{source.name}: cannot read: {exc.strerror or exc}")
            return result
        try:
            if not self.scan_chunks(chunks, source.name, base, result, stats, cur):
                return result
        except (OSError, EOFError, ValueError) as exc:  # truncated gzip/zstd, damaged archive
            stats.warnings.append(f"{source.name}: input ends early ({exc}); read what was intact")
        finally:
            if stream is not None:
                stream.close()
        self.finish(source.name, base, result, stats, cur)
        return result

    def note_name(self, name: str, result: ScanResult) -> Attribution:
        """Rank / local rank that the file name gives (``rank_3.log``, ``attempt_0/3/``)."""
        base = attribution_from_name(name)
        if base.rank is not None:
            result.ranks_seen.add(base.rank)
        if base.local_rank is not None:
            result.local_ranks_seen.add(base.local_rank)
        return base

    def scan_chunks(
        self, chunks: Iterable[tuple[bytes, int]], name: str, base: Attribution, result: ScanResult, stats: InputStats, cur: "Cursor"
    ) -> bool:
        """Scan newline-aligned chunks, advancing ``cur``; False when the source is not text.

        Each chunk is ``(data, n)``: the chunk is ``data[:n]``; bytes after ``n`` (the start
        of a line the next chunk holds whole) are scanned with it but their hits ignored.

        ``cur`` may start mid-file (a byte range of a split file: its dialect, the bytes
        before it, line numbers relative to the range), see ``parallel.py``.
        """
        for chunk, n in chunks:
            if cur.dialect is None:
                # (the bytes after n are this source's too: a short first line is not the
                # whole sample)
                if looks_binary(chunk[:65536]):
                    stats.warnings.append(f"{name}: not a text log (binary data); skipped")
                    stats.bytes = n
                    return False
                cur.dialect = sniff_chunk(chunk[: min(n, 65536)])
            newlines = self._scan_chunk(chunk, n, cur.line_base, cur.tail, name, base, cur.dialect, result)
            stats.bytes += n
            cur.line_base += newlines
            cur.tail = chunk[max(0, n - CONTEXT_BYTES) : n]
            # the stream's last CONTEXT_BYTES: a short chunk (a file's last line without its
            # newline comes alone) keeps the end of the one before it
            cur.end = cur.tail if n >= CONTEXT_BYTES else (cur.end + chunk[:n])[-CONTEXT_BYTES:]
        return True

    def finish(self, name: str, base: Attribution, result: ScanResult, stats: InputStats, cur: "Cursor") -> None:
        """After a source's last chunk: its line count and each rank's last sign of life."""
        tail = cur.end
        stats.lines = cur.line_base + (0 if not tail or tail.endswith(b"\n") else 1)
        if tail and cur.dialect is not None:
            self._note_tail(tail, stats.lines, name, base, cur.dialect, result)

    @staticmethod
    def _note_tail(tail: bytes, total_lines: int, name: str, base: Attribution, dialect: Dialect, result: ScanResult) -> None:
        """Each rank's last signs of life in this source: its last timestamped line
        ("tail") and its last line that is not an error report ("activity": normal output,
        a progress counter), so a rank that went quiet early can be told from one that
        was still working while the others waited."""
        lines = tail.decode("utf-8", "replace").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        lines = lines[-TAIL_LINES:]
        first_no = total_lines - len(lines) + 1
        # a source whose last line reports an error (not a warning) ended in a failure, whether
        # or not any entry knows the message ("Error: failed to run torchrun ...")
        for i in range(len(lines) - 1, -1, -1):
            if lines[i].strip():
                text = clean(lines[i])
                a, at = parse_prefix(text, dialect)
                message = text[at:].strip()
                if END_ERROR.search(message) and not WARNISH.search(message):
                    a = a.merged_over(base)
                    result.tails.append(Fact("end-error", name, first_no + i, text[:MAX_TEXT], a.rank, a.local_rank, a.host, a.time, a.ts, {}))
                break
        # a jump of the loss or a collapse of the loss scale in the numbers the run reports
        jump = numeric_jump(lines)
        if jump is not None:
            text = clean(lines[jump.index])
            a, _ = parse_prefix(text, dialect)
            a = a.merged_over(base)
            result.tails.append(Fact("numeric-jump", name, first_no + jump.index, text[:MAX_TEXT], a.rank, a.local_rank,
                                     a.host, a.time, a.ts, {"signature": jump.detector, "value": jump.detail}))
        last: dict[tuple, Fact] = {}
        work: dict[tuple, list[_TailLine]] = {}  # each rank's lines outside tracebacks, in order
        in_traceback: set[tuple] = set()
        steps: list[tuple[float, int, str, Attribution]] = []  # lines with a step counter and their time, any rank
        bar = _Bar()  # the source's last tqdm progress bar (bars carry no clock of their own)
        stamped: float | None = None  # the time of the last timestamped line so far
        seen: list[tuple] = []  # every line of the tail with a message, of any rank or none
        segments = ((i, seg) for i, raw in enumerate(lines) for seg in split_interleaved(clean(raw)))
        for seq, (i, text) in enumerate(segments):
            a, at = parse_prefix(text, dialect)
            a = a.merged_over(base)
            message = text[at:].strip()
            # a step line with no clock of its own ("Epoch: [0]  [ 240/10009]  eta: ...", printed
            # between stamped records of the same run) was printed after the last stamped line
            # before it: that time, a lower bound, stands for it
            if (when := a.ts if a.ts is not None else stamped) is not None and message and progress_of(message) is not None:
                steps.append((when, first_no + i, text, a))
            if "it]" in message or "it/s" in message:
                bar.read(message, first_no + i, a, stamped)
            if message:
                seen.append((first_no + i, text, a, message))
            if a.ts is not None:
                stamped = a.ts
            if a.rank is None and a.local_rank is None:
                a.rank = subject_rank(message)
                if a.rank is None:
                    continue
                result.ranks_seen.add(a.rank)
            key = (a.rank, a.local_rank, a.host)
            if a.ts is not None:
                last[key] = Fact("tail", name, first_no + i, text[:MAX_TEXT], a.rank, a.local_rank, a.host, a.time, a.ts, {})
            if message.startswith("Traceback (most recent call last)"):
                in_traceback.add(key)  # its frames and code lines are not work
                continue
            if key in in_traceback:
                if _EXCEPTION_LINE.match(message):
                    in_traceback.discard(key)
                continue
            if message:
                work.setdefault(key, []).append(_TailLine(seq, first_no + i, text, a, message))
        result.tails.extend(last.values())
        cadence = _cadence(steps)
        if cadence is not None:
            (ts, no, text, a), interval = cadence
            result.tails.append(Fact("cadence", name, no, text[:MAX_TEXT], None, None, a.host, a.time, ts,
                                     {"interval": f"{interval:.3f}"}))
        # the source's last line of work with a step counter, of any rank or none (how far a
        # restarted job's last attempt got: restarts.scope); of a long line, tqdm's redraws glued
        # by carriage returns, its end says how far it got
        for no, text, a, message in reversed(seen):
            end = message[-_END:]
            if progress_of(end) is not None and not ERRORISH.search(end):
                result.tails.append(Fact("last-step", name, no, text[:MAX_TEXT], a.rank, a.local_rank, a.host, a.time, a.ts, {}))
                break
        if (est := bar.cadence()) is not None and (cadence is None or est[0] > cadence[0][0]):
            ts, interval = est
            result.tails.append(Fact("cadence", name, bar.line, bar.text[:MAX_TEXT], None, None, bar.attr.host, None, ts,
                                     {"interval": f"{interval:.3f}", "estimated": "tqdm"}))

        def is_work(ln: _TailLine) -> bool:
            return not ERRORISH.search(ln.message)

        def is_counted(ln: _TailLine) -> bool:
            return progress_of(ln.message) is not None and is_work(ln)

        active = _last_passing(work, is_work)
        counted = _last_passing(work, is_counted)
        result.tails.extend(ln.fact(name) for ln in active.values())
        # the last line of work with a step counter, when a later line of work has none
        # ("rank 1 finished"): how far each rank got
        result.tails.extend(ln.fact(name) for k, ln in counted.items() if ln is not active.get(k))
        # where each rank's last three steps began (ranktable._outlived: a job that went on
        # stepping after a rank died had re-formed without it)
        for lns in work.values():
            if (run := _last_steps(lns, is_counted)) is not None:
                ln, first, last = run
                a = ln.attr
                result.tails.append(Fact("steps-run", name, ln.line, ln.text[:MAX_TEXT], a.rank, a.local_rank, a.host,
                                         a.time, a.ts, {"first": str(first), "last": str(last)}))

    def _scan_chunk(
        self,
        chunk: bytes,
        n: int,
        line_base: int,
        tail: bytes,
        name: str,
        base: Attribution,
        dialect: Dialect,
        result: ScanResult,
    ) -> int:
        """Scan one chunk (``chunk[:n]``, see ``scan_chunks``); returns its newlines, counted
        once: up to the last hit line while the hits are numbered, then the rest."""
        self._sample_ranks(chunk, n, dialect, result)
        # every line the scanner sees ends with a newline (the last line of a file too)
        found = self.hits(chunk if n < len(chunk) or chunk.endswith(b"\n") else chunk + b"\n")
        if not found:
            return count_newlines(chunk, n)
        counted_to = 0
        lineno = line_base
        whole = n == len(chunk)
        # the lines before a cause (its traceback) are read when the chunk is done, only for
        # occurrences that are kept: not once per line of a line repeated a million times
        later: dict[int, tuple[list, deque]] = {}
        for end in sorted(found):
            if end >= n and not whole:
                break  # a line of the next chunk
            start = chunk.rfind(b"\n", 0, end) + 1
            lineno += count_newlines(chunk, start, counted_to)
            counted_to = start
            raw = chunk[start:end]
            self._hit_line(raw, lineno + 1, found[end], start, name, base, dialect, result, later)
        shared: dict[str, str] = {}  # neighbouring causes share their lines' strings
        for kept, last in later.values():
            for item, start in (*kept, *last):
                item.context = [shared.setdefault(ln, ln) for ln in _lines_before(chunk, start, tail)]
        return lineno - line_base + count_newlines(chunk, n, counted_to)

    def _sample_ranks(self, chunk: bytes, n: int, dialect: Dialect, result: ScanResult) -> None:
        # Ranks seen: a bounded sample of line prefixes per chunk (hit lines add theirs too):
        # the first _SAMPLE_LINES lines, each cut at 200 bytes, decoded at once.
        lines = chunk[: min(n, _SAMPLE_BYTES)].split(b"\n", _SAMPLE_LINES)
        if len(lines) > _SAMPLE_LINES:
            lines.pop()  # the rest of the block
        elif n > _SAMPLE_BYTES:  # long lines: fewer than _SAMPLE_LINES in the block
            lines, pos = [], 0
            while len(lines) < _SAMPLE_LINES and pos < n:
                nxt = chunk.find(b"\n", pos, n)
                lines.append(chunk[pos : min(nxt if nxt >= 0 else n, pos + 200)])
                pos = n if nxt < 0 else nxt + 1
        joined = b"\n".join([ln[:200] for ln in lines if ln]).decode("utf-8", "replace")
        if not (dialect.srun or dialect.hosts):
            # parse_prefix is the costly part; lines without any rank/host prefix shape skip it
            if not _ATTR_HINT.search(joined):
                return
            texts = [t for t in map(clean, joined.split("\n")) if _ATTR_HINT.search(t)]
        else:
            texts = [clean(t) for t in joined.split("\n")] if joined else []
        for text in texts:
            a, _ = parse_prefix(text, dialect)
            self._note_attr(a, result)

    @staticmethod
    def _note_attr(a: Attribution, result: ScanResult) -> None:
        if a.rank is not None:
            result.ranks_seen.add(a.rank)
        if a.local_rank is not None:
            result.local_ranks_seen.add(a.local_rank)
        if a.host:
            result.hosts_seen.add(a.host)

    def _hit_line(
        self,
        raw: bytes,
        lineno: int,
        pids: set[int],
        start: int,
        name: str,
        base: Attribution,
        dialect: Dialect,
        result: ScanResult,
        later: dict[int, tuple[list, deque]],
    ) -> None:
        """The events and facts of one line that hyperscan says may match; those that need
        the lines before them go into ``later`` (per kind of line, the last ``LAST``)."""
        text = clean(raw.decode("utf-8", "replace").replace("\x00", ""))
        segments = split_interleaved(text)
        parsed = []
        for seg in segments:
            a, msg_at = parse_prefix(seg, dialect)
            parsed.append((seg, a.merged_over(base), seg[msg_at:], a.rank if len(segments) == 1 else None))
        for pid in sorted(pids):
            pat = self.patterns[pid]
            for seg, attr, message, own_rank in parsed:
                m = pat.search(message if pat.kind == "fact" else seg)
                if not m:
                    continue
                caps = {k: v for k, v in m.groupdict().items() if v is not None}
                shown = seg if len(seg) <= MAX_TEXT else seg[:MAX_TEXT] + " …"
                if m.end() > MAX_TEXT and pat.kind != "fact":  # a glued line (tqdm redraws): keep its start and the hit
                    shown = seg[:200] + " … " + seg[m.start():m.start() + MAX_TEXT - 200]
                if pat.kind == "fact":
                    if attr.device is not None:
                        caps.setdefault("prefix_device", str(attr.device))
                    if attr.pid is not None:
                        caps.setdefault("prefix_pid", str(attr.pid))
                    fact = Fact(pat.signature, name, lineno, shown, attr.rank, attr.local_rank, attr.host, attr.time, attr.ts, caps)
                    sample = result.add_fact(fact)
                    if pat.signature in ERROR_FACTS:
                        _read_before(fact, sample, start, later)
                    break
                # the line's own global-rank prefix ([rankN]:, MPI, Lightning) names the printer
                # (a "[Rank N]" inside the message may be local to its process group), unless
                # ranks' output interleaved within the line: then the message's own rank wins
                # the line's time: its prefix's, else the one the message gives itself (``at``)
                time, ts = (attr.time, attr.ts) if attr.ts is not None or "at" not in caps else _message_time(caps["at"])
                rank = own_rank if own_rank is not None else _int(caps.get("rank"), attr.rank)
                if rank is None and (rm := _IN_MESSAGE_RANK.search(seg)):
                    rank = int(rm.group(1))
                if rank is None and attr.local_rank is None:
                    rank = subject_rank(message)
                ev = Event(
                    entry=pat.entry,
                    signature=pat.signature,
                    role=pat.role,
                    source=name,
                    line=lineno,
                    text=shown,
                    rank=rank,
                    local_rank=_int(caps.get("local_rank"), attr.local_rank),
                    host=caps.get("host") or attr.host,
                    pid=_int(caps.get("pid"), attr.pid),
                    device=_int(caps.get("device"), attr.device),
                    time=time,
                    ts=ts,
                    captures=caps,
                )
                sample = result.add_event(ev)
                if pat.role == "cause":
                    _read_before(ev, sample, start, later)
                self._note_attr(attr, result)
                if rank is not None and "rank" not in caps:
                    result.ranks_seen.add(rank)
                break


def _cadence(steps: list[tuple[float, int, str, "Attribution"]]) -> tuple[tuple, float] | None:
    """How often a source's output reported a step near its end: its last line with a step
    counter ("iteration 5/500000", "step 11 loss ...", of any rank) and a time (its own, or the
    time of the stamped line before it), and the median time between such lines (the last eight
    gaps between distinct times, on the last line's clock: dated and yearless stamps are not
    compared). None with fewer than three such lines."""
    if len(steps) < 3:
        return None
    last = max(steps, key=lambda s: (s[0], s[1]))
    dated = last[0] >= 1e9
    times = sorted({s[0] for s in steps if (s[0] >= 1e9) == dated})
    gaps = [b - a for a, b in zip(times, times[1:]) if b > a][-8:]
    if not gaps:
        return None
    gaps.sort()
    return last, gaps[len(gaps) // 2]


# a tqdm progress bar as it redraws: "12/9125 [17:22<211:55:37, 83.72s/it]", "3/50 [00:02<00:41,
# 1.12it/s, loss=2.1]" (elapsed [H:]MM:SS, the rate per iteration or iterations per second)
_TQDM = re.compile(r"(?P<n>\d+)/\d+ \[(?:(?P<h>\d+):)?(?P<m>\d+):(?P<s>\d\d)<[^,\]]*,\s*"
                   r"(?:(?P<rate>\d+(?:\.\d+)?)(?P<unit>s/it|it/s)|\?it/s)[^\]]*\]")


_END = 512  # characters of a long line's ends read for a tqdm bar or a step counter (glued redraws)


@dataclass
class _Bar:
    """A source's last tqdm bar, and when it began as far as the log's clock tells: the time of
    the last timestamped line before the bar's first redraw, when that redraw had counted at most
    one step (the bar had just begun; a line stamped while a bar ran would put its start too late).
    A new bar begins where the elapsed time goes back."""
    start: float | None = None
    elapsed: float = -1.0
    rate: float | None = None  # seconds per iteration, by the bar's last redraw
    line: int = 0
    text: str = ""
    attr: Attribution | None = None

    def read(self, message: str, line: int, attr: Attribution, stamped: float | None) -> None:
        if len(message) > 2 * _END:  # many redraws glued: the first and the last tell
            found = [m for m in (_TQDM.search(message[:_END]),) if m] + list(_TQDM.finditer(message[-_END:]))[-1:]
        else:
            found = list(_TQDM.finditer(message))
        for m in found:
            elapsed = int(m["h"] or 0) * 3600 + int(m["m"]) * 60 + int(m["s"])
            if elapsed < self.elapsed or self.attr is None:  # a new bar
                self.start = stamped if int(m["n"]) <= 1 else None
            self.elapsed, self.line, self.text, self.attr = elapsed, line, m.group(0), attr
            if m["rate"] is not None and float(m["rate"]) > 0:
                r = float(m["rate"])
                self.rate = r if m["unit"] == "s/it" else 1.0 / r

    def cadence(self) -> tuple[float, float] | None:
        """(about when the bar last counted a step, seconds between steps), or None."""
        if self.start is None or self.rate is None:
            return None
        return self.start + self.elapsed, self.rate


@dataclass
class _TailLine:
    seq: int  # segment number within the tail (input order)
    line: int
    text: str
    attr: Attribution
    message: str

    def fact(self, source: str) -> Fact:
        a = self.attr
        return Fact("activity", source, self.line, self.text[:MAX_TEXT], a.rank, a.local_rank, a.host, a.time, a.ts, {})


_STEPS_RUN = 3  # distinct step counters, each above the one before, that make a run of steps


def _last_steps(lines: list[_TailLine], counted: Callable[[_TailLine], bool]) -> tuple[_TailLine, int, int] | None:
    """A rank's last ``_STEPS_RUN`` steps: the line where the first of its last three distinct
    step counters first appears, when the counters rise from there to its last step line (no
    counter goes back), with that counter and the last. None with fewer."""
    values: list[int] = []  # distinct counters, from the last step line back
    start: _TailLine | None = None
    for ln in reversed(lines):
        if not counted(ln):
            continue
        v = progress_of(ln.message)
        if v is None:
            continue
        if values and v > values[-1]:
            break  # the counter went back: an earlier run
        if not values or v < values[-1]:
            if len(values) == _STEPS_RUN:
                break
            values.append(v)
        start = ln
    if len(values) < _STEPS_RUN or start is None:
        return None
    return start, values[-1], values[0]


def _last_passing(lines: dict[tuple, list[_TailLine]], passes: Callable[[_TailLine], bool]) -> dict[tuple, _TailLine]:
    """For each rank, its last line that ``passes``, the ranks in the order of their first
    such line: what a dict updated line by line in input order would hold. The test runs
    from both ends of each rank's lines until it passes (``ERRORISH`` costs ~0.5 us a
    character; a tail's 200 lines are mostly work, so this tests a few of them)."""
    found: list[tuple[int, tuple, _TailLine]] = []
    for key, lns in lines.items():
        first = next((ln for ln in lns if passes(ln)), None)
        if first is not None:
            found.append((first.seq, key, next(ln for ln in reversed(lns) if passes(ln))))
    found.sort(key=lambda f: f[0])
    return {key: ln for _, key, ln in found}


_MESSAGE_TIME = re.compile(r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?")


def _message_time(text: str) -> tuple[str | None, float | None]:
    """The time a message gives itself (a signature's ``at`` capture: Slurm's "CANCELLED AT
    2024-05-02T03:11:09"), as a prefix's time would read; (None, None) when it is no such time."""
    m = _MESSAGE_TIME.fullmatch(text.strip())
    if not m:
        return None, None
    iso, ts = iso_time(*(int(g) for g in m.groups()[:6]), m[7] or "")
    return (iso, ts) if ts else (None, None)


def _int(v: str | None, default: int | None) -> int | None:
    if v is None:
        return default
    try:
        return int(v)
    except ValueError:
        return default


def _read_before(item: Event | Fact, sample: Sample, start: int, later: dict[int, tuple[list, deque]]) -> None:
    """Note that an occurrence needs the lines before it, read when its chunk is done: if
    it is among the first of its kind, or among the last ``LAST`` of this chunk (the only
    ones of the chunk that can still be kept)."""
    kept, last = later.setdefault(id(sample), ([], deque(maxlen=LAST)))
    (kept if sample.first[-1][1] is item else last).append((item, start))


def _lines_before(chunk: bytes, start: int, tail: bytes) -> list[str]:
    lo = max(0, start - CONTEXT_BYTES)
    window = chunk[lo:start]
    if lo == 0 and tail:
        window = tail[-(CONTEXT_BYTES - len(window)) :] + window if len(window) < CONTEXT_BYTES else window
    lines = window.decode("utf-8", "replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [clean(ln)[:400] for ln in lines[-CONTEXT_LINES:]]


def scan_sources(
    kb: "KnowledgeBase | None", sources: Iterable[Source], scanner: Scanner | None = None, *, chunk_size: int = CHUNK
) -> ScanResult:
    scanner = scanner or Scanner(kb)
    total = ScanResult()
    for src in sources:
        total.extend(scanner.scan_source(src, chunk_size))
    return total


def scan_text(kb: "KnowledgeBase | None", text: str | bytes, name: str = "<text>", scanner: Scanner | None = None) -> ScanResult:
    import io

    data = text.encode("utf-8") if isinstance(text, str) else text
    return scan_sources(kb, [Source(name, lambda: io.BytesIO(data), len(data))], scanner)


def iter_events(result: ScanResult) -> Iterator[Event]:
    yield from result.events
