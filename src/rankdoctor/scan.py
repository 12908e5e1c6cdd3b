"""One pass over the bytes for every signature and structural fact.

All patterns are compiled into a single hyperscan database (in prefilter mode, so every
Python regex feature is allowed: hyperscan finds candidate lines, Python's ``re``
confirms them and reads the named groups). Python work happens only on lines that hit.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import hyperscan

from .events import Event, Fact, InputStats, ScanResult
from .facts import FACTS
from .ingest.names import attribution_from_name
from .ingest.prefix import Attribution, Dialect, clean, parse_prefix, sniff_dialect
from .ingest.sources import CHUNK, Source, iter_chunks, looks_binary
from .kb.loader import KnowledgeBase

_NAMED = re.compile(r"\(\?P<[A-Za-z_]\w*>")
_BACKREF = re.compile(r"\(\?P=\w+\)")
MAX_TEXT = 2000  # characters of a hit line kept as evidence
CONTEXT_LINES = 40  # lines before a cause line kept (tracebacks)
CONTEXT_BYTES = 16 << 10
_SAMPLE_LINES = 100  # lines per chunk sampled for rank prefixes (hit lines add theirs too)
TAIL_LINES = 200  # lines at the end of each source read for "last sign of life"
# Every prefix of ingest/prefix.py that yields a rank, local rank or host contains one of
# these (torchrun [rankN]: / [defaultN]:, Open MPI, Lightning, kubectl, NCCL host:pid:tid
# [dev], Ray rank=/ip=); srun and host-list dialects are told apart per source and always
# parsed. A sampled line without any of them cannot add to the ranks or hosts seen.
_ATTR_HINT = re.compile(r"\[[A-Za-z_]+\d+\]:|\]<std(?:out|err)>:|\[rank: \d+\]|\[pod/|:\d+:\d+ \[\d+\] |rank=\d+ pid=|pid=\d+, ip=")
_INTERLEAVED = re.compile(r"(?<=\S)(?=\[rank\d+\]:)")
# PyTorch C++ messages name their rank inside the message: "[Rank 1] ..." (older releases,
# default group) or "[PG ID 0 PG GUID 0(default_pg) Rank 1]" / "[PG 0 (default_pg) Rank 1]".
_IN_MESSAGE_RANK = re.compile(r"\[(?:PG ID 0 PG GUID 0\(default_pg\) |PG 0 \(default_pg\) )?Rank (\d+)\]")


def to_hs(regex: str) -> bytes:
    """Translate a Python regex into the dialect hyperscan reads (prefilter mode)."""
    rx = _NAMED.sub("(?:", regex)
    rx = _BACKREF.sub(".*", rx)
    if rx.startswith("^"):
        rx = rx[1:]
        while rx.startswith(("\\s*", "\\s+", " *", " +")):
            rx = rx[3:] if rx[2] in "*+" else rx[2:]
    return rx.encode("utf-8")


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


def _cache_dir() -> Path | None:
    if os.environ.get("RANKDOCTOR_CACHE", "1") in ("0", "off", "no"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rankdoctor"


def _database(exprs: list[bytes], flags: list[int]) -> hyperscan.Database:
    """The compiled database for these patterns; compiled once, then loaded from the user's
    cache (``~/.cache/rankdoctor``, keyed by the patterns and the hyperscan version;
    RANKDOCTOR_CACHE=0 turns it off). Anything wrong with the cache: compile again."""
    key = hashlib.sha256(repr((hyperscan.__version__, exprs, flags)).encode()).hexdigest()[:40]
    cache = _cache_dir()
    path = cache / f"hs-{key}.db" if cache else None
    if path is not None:
        try:
            return hyperscan.loadb(path.read_bytes(), hyperscan.HS_MODE_BLOCK)
        except (OSError, hyperscan.error, TypeError, ValueError):
            pass
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(expressions=exprs, ids=list(range(len(exprs))), elements=len(exprs), flags=flags)
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}")
            tmp.write_bytes(hyperscan.dumpb(db))
            os.replace(tmp, path)
        except (OSError, hyperscan.error):
            pass
    return db


@dataclass
class Cursor:
    """Where a scan stands in a source: lines before the next chunk, the bytes just
    before it (context for tracebacks), the source's prefix dialect (sniffed from its
    first chunk)."""

    line_base: int = 0
    tail: bytes = b""
    dialect: Dialect | None = None


def sniff_chunk(chunk: bytes) -> Dialect:
    """The prefix dialect of a source, from its first chunk."""
    head = chunk[:65536].decode("utf-8", "replace").split("\n")[:200]
    return sniff_dialect(head)


@dataclass(frozen=True)
class Pattern:
    kind: str  # "sig" or "fact"
    entry: str
    signature: str
    role: str
    rx: re.Pattern[str]


class Scanner:
    def __init__(self, kb: KnowledgeBase):
        self.patterns: list[Pattern] = []
        exprs: list[bytes] = []
        flags: list[int] = []
        for e in kb:
            for s in e.signatures:
                self.patterns.append(Pattern("sig", e.id, s.id, s.role.value, re.compile(s.regex, re.I if s.ignore_case else 0)))
                exprs.append(to_hs(s.regex))
                flags.append(_HS_FLAGS | (hyperscan.HS_FLAG_CASELESS if s.ignore_case else 0))
        for fid, regex in FACTS.items():
            self.patterns.append(Pattern("fact", "", fid, "fact", re.compile(regex)))
            exprs.append(to_hs(regex))
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
        try:
            stream = source.opener()
        except OSError as exc:
            stats.warnings.append(f"{source.name}: cannot read: {exc}")
            return result
        try:
            with stream:
                if not self.scan_chunks(iter_chunks(stream, chunk_size), source.name, base, result, stats, cur):
                    return result
        except (OSError, EOFError, ValueError) as exc:  # truncated gzip/zstd, damaged archive
            stats.warnings.append(f"{source.name}: input ends early ({exc}); read what was intact")
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
        self, chunks: Iterable[bytes], name: str, base: Attribution, result: ScanResult, stats: InputStats, cur: "Cursor"
    ) -> bool:
        """Scan newline-aligned chunks, advancing ``cur``; False when the source is not text.

        ``cur`` may start mid-file (a byte range of a split file: its dialect, the bytes
        before it, line numbers relative to the range), see ``parallel.py``.
        """
        for chunk in chunks:
            if cur.dialect is None:
                if looks_binary(chunk[:65536]):
                    stats.warnings.append(f"{name}: not a text log (binary data); skipped")
                    stats.bytes = len(chunk)
                    return False
                cur.dialect = sniff_chunk(chunk)
            self._scan_chunk(chunk, cur.line_base, cur.tail, name, base, cur.dialect, result)
            stats.bytes += len(chunk)
            cur.line_base += chunk.count(b"\n")
            cur.tail = chunk[-CONTEXT_BYTES:]
        return True

    def finish(self, name: str, base: Attribution, result: ScanResult, stats: InputStats, cur: "Cursor") -> None:
        """After a source's last chunk: its line count and each rank's last sign of life."""
        tail = cur.tail
        stats.lines = cur.line_base + (0 if not tail or tail.endswith(b"\n") else 1)
        if tail and cur.dialect is not None:
            self._note_tail(tail, stats.lines, name, base, cur.dialect, result)

    @staticmethod
    def _note_tail(tail: bytes, total_lines: int, name: str, base: Attribution, dialect: Dialect, result: ScanResult) -> None:
        """Keep the last timestamped line of each rank in this source: its last sign of life."""
        lines = tail.decode("utf-8", "replace").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        lines = lines[-TAIL_LINES:]
        first_no = total_lines - len(lines) + 1
        last: dict[tuple, Fact] = {}
        for i, raw in enumerate(lines):
            text = clean(raw)
            a, _ = parse_prefix(text, dialect)
            a = a.merged_over(base)
            if a.ts is None or (a.rank is None and a.local_rank is None):
                continue
            last[(a.rank, a.local_rank, a.host)] = Fact(
                "tail", name, first_no + i, text[:MAX_TEXT], a.rank, a.local_rank, a.host, a.time, a.ts, {}
            )
        result.tails.extend(last.values())

    def _scan_chunk(
        self,
        chunk: bytes,
        line_base: int,
        tail: bytes,
        name: str,
        base: Attribution,
        dialect: Dialect,
        result: ScanResult,
    ) -> None:
        self._sample_ranks(chunk, dialect, result)
        found = self.hits(chunk)
        if not found:
            return
        counted_to = 0
        lineno = line_base
        for end in sorted(found):
            start = chunk.rfind(b"\n", 0, end) + 1
            lineno += chunk.count(b"\n", counted_to, start)
            counted_to = start
            raw = chunk[start:end]
            self._hit_line(raw, lineno + 1, found[end], chunk, start, tail, name, base, dialect, result)

    def _sample_ranks(self, chunk: bytes, dialect: Dialect, result: ScanResult) -> None:
        # Ranks seen: a bounded sample of line prefixes per chunk (hit lines add theirs too).
        pos = 0
        texts = []
        for _ in range(_SAMPLE_LINES):
            nxt = chunk.find(b"\n", pos)
            line = chunk[pos : (nxt if nxt >= 0 else len(chunk))][:200]
            if line:
                texts.append(clean(line.decode("utf-8", "replace")))
            if nxt < 0:
                break
            pos = nxt + 1
        if not (dialect.srun or dialect.hosts):
            # parse_prefix is the costly part; lines without any rank/host prefix shape skip it
            if not _ATTR_HINT.search("\n".join(texts)):
                return
            texts = [t for t in texts if _ATTR_HINT.search(t)]
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
        chunk: bytes,
        start: int,
        tail: bytes,
        name: str,
        base: Attribution,
        dialect: Dialect,
        result: ScanResult,
    ) -> None:
        text = clean(raw.decode("utf-8", "replace").replace("\x00", ""))
        segments = _INTERLEAVED.split(text) if "[rank" in text[1:] else [text]
        parsed = []
        for seg in segments:
            a, msg_at = parse_prefix(seg, dialect)
            parsed.append((seg, a.merged_over(base), seg[msg_at:]))
        for pid in sorted(pids):
            pat = self.patterns[pid]
            for seg, attr, message in parsed:
                m = pat.rx.search(message if pat.kind == "fact" else seg)
                if not m:
                    continue
                caps = {k: v for k, v in m.groupdict().items() if v is not None}
                shown = seg if len(seg) <= MAX_TEXT else seg[:MAX_TEXT] + " …"
                if pat.kind == "fact":
                    fact = Fact(pat.signature, name, lineno, shown, attr.rank, attr.local_rank, attr.host, attr.time, attr.ts, caps)
                    if pat.signature == "py-exception":
                        fact.context = _lines_before(chunk, start, tail)
                    result.facts.append(fact)
                    break
                rank = _int(caps.get("rank"), attr.rank)
                if rank is None and (rm := _IN_MESSAGE_RANK.search(seg)):
                    rank = int(rm.group(1))
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
                    time=attr.time,
                    ts=attr.ts,
                    captures=caps,
                )
                if pat.role == "cause":
                    ev.context = _lines_before(chunk, start, tail)
                result.events.append(ev)
                self._note_attr(attr, result)
                if rank is not None and "rank" not in caps:
                    result.ranks_seen.add(rank)
                break


def _int(v: str | None, default: int | None) -> int | None:
    if v is None:
        return default
    try:
        return int(v)
    except ValueError:
        return default


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
    kb: KnowledgeBase, sources: Iterable[Source], scanner: Scanner | None = None, *, chunk_size: int = CHUNK
) -> ScanResult:
    scanner = scanner or Scanner(kb)
    total = ScanResult()
    for src in sources:
        total.extend(scanner.scan_source(src, chunk_size))
    return total


def scan_text(kb: KnowledgeBase, text: str | bytes, name: str = "<text>", scanner: Scanner | None = None) -> ScanResult:
    import io

    data = text.encode("utf-8") if isinstance(text, str) else text
    return scan_sources(kb, [Source(name, lambda: io.BytesIO(data), len(data))], scanner)


def iter_events(result: ScanResult) -> Iterator[Event]:
    yield from result.events
