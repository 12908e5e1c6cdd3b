"""Stack dumps of hung ranks, and ranks grouped by where they are, like STAT.

A hang leaves every rank blocked somewhere; the few ranks blocked somewhere else are the
ones to look at ("63 ranks in backward at train.py:88; rank 37 in read_shard at
data.py:41"). This reads the dumps engineers take from a live job:

- ``py-spy dump --pid P`` text: ``Process P: cmd`` / ``Thread T (idle|active): "name"`` /
  ``    func (file:line)`` frames, innermost first;
- ``py-spy dump --pid P --json``: a list of threads with ``frames`` (innermost first);
- with ``--locals``, each frame's arguments and locals (kept on the frame: a ``recv``'s
  ``src`` says whom a rank waits for);
- Python's faulthandler: ``Thread 0x... (most recent call first):`` /
  ``  File "file", line N in func``;
- gdb's ``thread apply all bt``: ``Thread 15 (Thread 0x7f00... (LWP 20292)):`` /
  ``#1  0x00007f00ad990a6e in bootstrapNetAccept (...) at bootstrap.cc:106`` (native
  frames: where a thread of NCCL, the CUDA driver or a C++ extension is blocked). Thread 1
  is the process's main thread. A backtrace of a core file ("Program terminated with
  signal ...") is a crash, not a live process.

One dump per rank: the rank comes from the file name (``pyspy_rank3.txt``,
``rank_3/stack.json``), as for logs. Nothing here guesses a rank it cannot read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from types import MappingProxyType
from pathlib import Path

from .dumpfile import Meter, NotRegular, Unusable, loads_json, read_regular
from .names import attribution_from_name

MAX_BYTES = 8 * 1024 * 1024  # a stack dump of one process is kilobytes; more is not one


@dataclass(frozen=True)
class Frame:
    func: str
    file: str
    line: int | None
    # arguments and locals (py-spy --locals), as repr text: not part of where a rank is
    args: MappingProxyType = field(default_factory=lambda: MappingProxyType({}), compare=False, hash=False, repr=False)

    def __str__(self) -> str:
        return f"{self.func} ({self.file}:{self.line})" if self.line is not None else f"{self.func} ({self.file})"


@dataclass
class Thread:
    name: str
    frames: list[Frame]  # innermost first
    active: bool | None = None


@dataclass
class StackDump:
    source: str
    fmt: str  # py-spy | py-spy-json | faulthandler | gdb
    pid: int | None = None
    rank: int | None = None
    threads: list[Thread] = field(default_factory=list)
    # written by a process that was dying (faulthandler's "Fatal Python error: ..."): where it
    # was when it crashed, not a live process's stacks taken from outside
    crash: bool = False

    @property
    def main(self) -> Thread | None:
        """The thread the training loop runs in: MainThread, else the first one dumped."""
        for t in self.threads:
            if t.name == "MainThread":
                return t
        return self.threads[0] if self.threads else None


_PYSPY_PROCESS = re.compile(r"^Process (\d+): ", re.M)
_PYSPY_THREAD = re.compile(r'^Thread (?:0x[0-9A-Fa-f]+|\d+) \((idle|active)[^)]*\)(?:: "([^"]*)")?\s*$')
_PYSPY_FRAME = re.compile(r"^\s{2,}(\S.*?) \(([^()]*?)(?::(\d+))?\)\s*$")
_FH_THREAD = re.compile(r"^(?:Current thread|Thread) (0x[0-9A-Fa-f]+) \(most recent call first\):\s*$")
_FH_FRAME = re.compile(r'^\s+File "([^"]+)", line (\d+) in (\S+)\s*$')
_GDB_THREAD = re.compile(r'^Thread (\d+) \(Thread 0x[0-9A-Fa-f]+ \(LWP (\d+)\)(?: "([^"]*)")?\)(?: "([^"]*)")?:\s*$')
_GDB_FRAME = re.compile(r"^#\d+\s+(?:0x[0-9A-Fa-f]+ in )?([^\s(][^(]*?) \(.*\)(?: at (\S+?):(\d+)| from (\S+))?\s*$")
_GDB_CORE = re.compile(r"^Program terminated with signal |^Thread \d+ \S.* received signal SIG", re.M)


def parse_stack_dump(text: str, source: str = "<text>") -> StackDump | None:
    """The dump in ``text``, or None when it is not one of the formats above."""
    dumps = parse_stack_dumps(text, source)
    if not dumps:
        return None
    if len(dumps) == 1:
        return dumps[0]
    merged = StackDump(source, dumps[0].fmt, dumps[0].pid)  # one file, several processes: all threads
    for d in dumps:
        merged.threads.extend(d.threads)
    return merged


def parse_stack_dumps(text: str, source: str = "<text>") -> list[StackDump]:
    """The dumps in ``text``, one per process: a file written by ``py-spy dump`` holds one,
    a log or an issue thread may hold several pasted one after another. A py-spy dump
    pasted without its ``Process N:`` line is still one (a thread line and its frames); each
    "MainThread" (or ``Process N:`` line) starts the next process. A short line just above
    a process that names a rank ("The stack for rank0:") gives its rank."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        dump = _parse_pyspy_json(stripped, source)
        return [dump] if dump is not None else []
    lines = text.splitlines()
    if _pyspy_text(lines):
        return [d for d in _split_pyspy(lines, source) if d.threads]
    if any(_FH_THREAD.match(ln) for ln in lines):
        return [_parse_faulthandler(text, source)]
    if _thread_then_frame(lines, _GDB_THREAD, _GDB_FRAME):
        return [_parse_gdb(lines, source, bool(_GDB_CORE.search(text)))]
    return []


def _thread_then_frame(lines: list[str], thread: re.Pattern[str], frame: re.Pattern[str]) -> bool:
    """A thread line of a format directly followed by one of its frames."""
    return any(thread.match(a) and frame.match(b) for a, b in zip(lines, lines[1:]))


def _pyspy_text(lines: list[str]) -> bool:
    """A py-spy thread line followed by one of its frames (with or without "Process N:")."""
    return _thread_then_frame(lines, _PYSPY_THREAD, _PYSPY_FRAME)


_RANK_HEADER = re.compile(r"\brank[\s_:=#-]*(\d{1,6})\b", re.I)
_FENCE = re.compile(r"^\s*(?:```|~~~)\w*\s*$")


def _split_pyspy(lines: list[str], source: str) -> list[StackDump]:
    starts: list[int] = []
    main_seen = False
    for i, ln in enumerate(lines):
        if _PYSPY_PROCESS.match(ln):
            starts.append(i)
            main_seen = False
        elif (m := _PYSPY_THREAD.match(ln)):
            if not starts or (m.group(2) == "MainThread" and main_seen):
                starts.append(i)  # (a "Process N:" line above has started it and reset main_seen)
                main_seen = False
            main_seen = main_seen or m.group(2) == "MainThread"
    dumps = []
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        dump = _parse_pyspy_text("\n".join(lines[start:end]), source if len(starts) == 1 else f"{source}#{k + 1}")
        dump.rank = _rank_above(lines, start)
        dumps.append(dump)
    return dumps


def _rank_above(lines: list[str], start: int) -> int | None:
    """The rank a short heading just above a pasted dump names ("The stack for rank0:",
    "rank 3:"), skipping blank lines and code fences; None when there is none."""
    i = start - 1
    while i >= 0 and (not lines[i].strip() or _FENCE.match(lines[i])):
        i -= 1
    if i < 0 or len(lines[i]) > 80 or _PYSPY_FRAME.match(lines[i]) or _PYSPY_THREAD.match(lines[i]):
        return None
    m = _RANK_HEADER.search(lines[i])
    return int(m.group(1)) if m else None


def _parse_pyspy_text(text: str, source: str) -> StackDump:
    dump = StackDump(source, "py-spy")
    if (m := _PYSPY_PROCESS.search(text)):
        dump.pid = int(m.group(1))
    current: Thread | None = None
    block = 0  # indentation of an "Arguments:" / "Locals:" header of the last frame (0: none)
    args: dict[str, str] = {}
    for ln in text.splitlines():
        indent = len(ln) - len(ln.lstrip(" "))
        if block and indent > block and ":" in ln:  # "            src: 5" (py-spy --locals)
            name, _, value = ln.strip().partition(": ")
            args.setdefault(name.rstrip(":"), value)
            continue
        block = 0
        if (m := _PYSPY_THREAD.match(ln)):
            current = Thread(m.group(2) or "", [], m.group(1) == "active")
            dump.threads.append(current)
        elif current is not None and current.frames and ln.strip() in ("Arguments:", "Locals:"):
            block = indent
            if not args:
                args = {}
                f = current.frames[-1]
                current.frames[-1] = Frame(f.func, f.file, f.line, MappingProxyType(args))
        elif current is not None and (m := _PYSPY_FRAME.match(ln)):
            args = {}
            current.frames.append(Frame(m.group(1), m.group(2), int(m.group(3)) if m.group(3) else None))
    return dump


def _parse_pyspy_json(text: str, source: str) -> StackDump | None:
    try:  # bounded like a Flight Recorder dump: items, nesting, size written out
        data = loads_json(text)
        Meter().cost(data, 4 * len(text) + 64)  # a tree parsed from text costs less: this checks nesting
    except Unusable:  # not JSON, or not shaped like any stack dump
        return None
    if not isinstance(data, list) or not all(isinstance(t, dict) and isinstance(t.get("frames"), list) for t in data):
        return None
    dump = StackDump(source, "py-spy-json")
    for t in data:
        if dump.pid is None and isinstance(t.get("pid"), int):
            dump.pid = t["pid"]
        frames = []
        for f in t["frames"]:
            if not isinstance(f, dict):
                continue
            line = f.get("line")
            values = f.get("locals") if isinstance(f.get("locals"), list) else []
            args = {str(v.get("name")): str(v.get("repr")) for v in values if isinstance(v, dict)}
            frames.append(Frame(str(f.get("name", "?")), str(f.get("short_filename") or f.get("filename") or "?"),
                                line if isinstance(line, int) else None, MappingProxyType(args)))
        active = t.get("active")
        dump.threads.append(Thread(str(t.get("thread_name") or ""), frames, active if isinstance(active, bool) else None))
    return dump


def _parse_faulthandler(text: str, source: str) -> StackDump:
    dump = StackDump(source, "faulthandler", crash="Fatal Python error" in text)
    current: Thread | None = None
    for ln in text.splitlines():
        if (m := _FH_THREAD.match(ln)):
            current = Thread(m.group(1), [])
            dump.threads.append(current)
        elif current is not None and (m := _FH_FRAME.match(ln)):
            current.frames.append(Frame(m.group(3), _short(m.group(1)), int(m.group(2))))
    # faulthandler names threads only by id. The main thread is the one whose outermost frame
    # runs the script's module; failing that, the current thread (printed first, "Current
    # thread ..."), which is the main one in most crashes. A native thread that aborted (an
    # uncaught C++ exception in a communication thread) has no Python frames: faulthandler
    # then prints no current thread, and the first thread may be a helper thread.
    main = [t for t in dump.threads if t.frames and t.frames[-1].func == "<module>"]
    pick = main[0] if len(main) == 1 else (dump.threads[0] if dump.threads else None)
    if pick is not None:
        pick.name = "MainThread"
    return dump


def _parse_gdb(lines: list[str], source: str, crash: bool) -> StackDump:
    dump = StackDump(source, "gdb", crash=crash)
    current: Thread | None = None
    for ln in lines:
        if (m := _GDB_THREAD.match(ln)):
            current = Thread("MainThread" if m.group(1) == "1" else (m.group(3) or m.group(4) or f"LWP {m.group(2)}"), [])
            dump.threads.append(current)
        elif current is not None and (m := _GDB_FRAME.match(ln)):
            file = _short(m.group(2)) if m.group(2) else (m.group(4) or "??").rsplit("/", 1)[-1]
            current.frames.append(Frame(m.group(1).strip(), file, int(m.group(3)) if m.group(3) else None))
    return dump


def _short(path: str) -> str:
    """site-packages paths as py-spy shortens them: torch/autograd/graph.py."""
    for marker in ("site-packages/", "dist-packages/"):
        if marker in path:
            return path.split(marker, 1)[1]
    return path


SMALL_LOG = 1024 * 1024  # logs up to this size are searched whole for a faulthandler dump
_HEAD = 64 * 1024


def _pyspy_like(head: str) -> bool:
    """The head of a file could start a py-spy dump: "Process N:", or a JSON list of
    objects ("[" then "{"; only a list of thread objects is read as one, see
    ``parse_stack_dump``). A log whose lines start with "[I1130 ..." or "[rank3]:" is
    not: it is not read whole here."""
    text = head.lstrip()
    if text.startswith("Process "):
        return True
    if not text.startswith("["):
        return False
    rest = text[1:].lstrip()
    return not rest or rest.startswith("{")


def stacks_among(sources) -> tuple[list[StackDump], set[str]]:
    """Stack dumps among log inputs (``ingest.sources.Source``), and the names of those that
    are nothing but a dump (py-spy output: left out of the log scan). A faulthandler dump
    inside a stderr log, or py-spy output pasted among other lines, is read and the log is
    still scanned. Only the head of a large log is read here (py-spy output starts with
    "Process N:" or a JSON list); faulthandler dumps are looked for in logs of up to 1 MB, so
    big logs are not read twice."""
    dumps: list[StackDump] = []
    pure: set[str] = set()

    def wanted(head: bytes, size: int) -> int | None:
        return MAX_BYTES if size <= SMALL_LOG or _pyspy_like(head.decode("utf-8", "replace")) else None

    for src in sources:
        head = src.read_if(wanted, _HEAD)
        if head is None:
            continue
        text = head.decode("utf-8", "replace")
        if "Thread " not in text and "thread 0x" not in text and '"frames"' not in text:
            continue  # the cheap test: every format names its threads or frames
        found = [d for d in parse_stack_dumps(text, src.name) if d.threads]
        if not found:
            continue
        named = attribution_from_name(src.name)
        if len(found) == 1 and found[0].rank is None:
            found[0].rank = named.rank if named.rank is not None else named.local_rank
        dumps.extend(found)
        if found[0].fmt != "faulthandler" and _only_dump(text):
            pure.add(src.name)
    return dumps, pure


_PYSPY_OTHER = re.compile(r"^(?:Python v\d|\s*(?:Arguments|Locals):\s*$|\s{4,}\S+: )")


def _only_dump(text: str) -> bool:
    """The text is a py-spy dump and little else (JSON, or text whose lines are nearly all the
    dump's own), not a log with a dump pasted into it: such a log is still scanned as a log."""
    if text.lstrip().startswith("["):
        return True
    lines = [ln for ln in text.splitlines() if ln.strip()]
    foreign = sum(1 for ln in lines if not (_PYSPY_PROCESS.match(ln) or _PYSPY_THREAD.match(ln)
                                            or _PYSPY_FRAME.match(ln) or _PYSPY_OTHER.match(ln)))
    return foreign <= max(2, len(lines) // 10)


def read_stack_dumps(paths: list[Path]) -> tuple[list[StackDump], list[str]]:
    """The stack dumps among ``paths`` (files, or folders searched recursively), and one
    line per file that could not be read as one."""
    dumps: list[StackDump] = []
    skipped: list[str] = []
    files: list[Path] = []
    for p in paths:
        files.extend(sorted(q for q in p.rglob("*") if not q.is_dir()) if p.is_dir() else [p])
    for f in files:
        try:  # a FIFO or a device is skipped without being opened
            text = read_regular(str(f), MAX_BYTES).decode("utf-8", "replace")
        except Unusable as exc:
            skipped.append(f"{f}: {exc}" if isinstance(exc, NotRegular) else f"{f}: not a stack dump ({exc})")
            continue
        dump = parse_stack_dump(text, str(f))
        if dump is None:
            continue
        named = attribution_from_name(str(f))
        dump.rank = named.rank if named.rank is not None else named.local_rank  # torchrun log dirs: one node
        dumps.append(dump)
    return dumps, skipped


@dataclass
class Group:
    where: tuple[Frame, ...]  # the innermost frames the ranks share, innermost first
    ranks: list[int]
    sources: list[str]  # dumps without a rank, by file


def group_by_stack(dumps: list[StackDump], depth: int = 3) -> list[Group]:
    """Ranks grouped by their main thread's ``depth`` innermost frames, largest group first."""
    groups: dict[tuple[Frame, ...], Group] = {}
    seen: set[int] = set()
    for d in dumps:
        if d.rank is not None:
            if d.rank in seen:
                continue  # one dump per rank (a text and a --json dump of one process)
            seen.add(d.rank)
        main = d.main
        key = tuple(main.frames[:depth]) if main else ()
        g = groups.setdefault(key, Group(key, [], []))
        if d.rank is not None:
            g.ranks.append(d.rank)
        else:
            g.sources.append(d.source)
    out = list(groups.values())
    for g in out:
        g.ranks.sort()
    return sorted(out, key=lambda g: (-(len(g.ranks) + len(g.sources)), g.ranks[:1]))


_COLLECTIVE_FRAME = re.compile(
    r"(?:all_?reduce|all_?gather|reduce_scatter|broadcast|barrier|all_to_all|\bi?send\b|\bi?recv\b|monitored_barrier)"
    r"|distributed_c10d\.py|c10d_logger\.py",
    re.I,
)


def in_collective(frames) -> bool:
    """The stack is inside a torch.distributed collective call (its innermost frames)."""
    return any(_COLLECTIVE_FRAME.search(f.func) or _COLLECTIVE_FRAME.search(f.file) for f in frames)


# frames of a process setting up its process group, a model's wrapper or an engine: a hang
# here is in the job's first collectives (rendezvous, the store barrier, the first broadcast)
_INIT_FRAME = re.compile(
    r"init_process_group|rendezvous|_store_based_barrier|\bnew_group|init_device_mesh|_sync_module_states"
    r"|_sync_params_and_buffers|_verify_param_shape|_broadcast_model|^initialize$|^_init_distributed$|^init_distributed$"
    # NCCL creating a communicator (native frames, from gdb): the first collective of a group
    r"|^ncclCommInitRank|^ncclCommInitAll$|^bootstrapInit$|^initTransportsRank$",
    re.I,
)
# frames that wait for the GPU, which may itself wait in a collective (a backward whose
# gradients DDP all-reduces, a stream synchronize): not known to be outside one
_GPU_WAIT_FRAME = re.compile(r"backward|^synchronize$|^item$|^cpu$|^to$|^tolist$", re.I)


def in_init(frames) -> bool:
    """The stack is setting up distributed training (a process group, DDP, an engine)."""
    return any(_INIT_FRAME.search(f.func) for f in frames)


def outside_collective(frames) -> bool:
    """The stack (innermost frames first) is busy or blocked in its own code: in no
    collective, and in nothing that waits for the GPU (which may be in one)."""
    return bool(frames) and not in_collective(frames[:6]) and not any(_GPU_WAIT_FRAME.search(f.func) for f in frames[:3])


_P2P_FRAME = re.compile(r"^(?:recv|send|irecv|isend)$")


def p2p_waits(dumps: list[StackDump]) -> dict[int, tuple[str, int]]:
    """rank -> (op, peer) for ranks whose main thread is blocked in torch.distributed's
    ``send``/``recv`` and whose dump has the call's arguments (py-spy ``--locals``): ``src``
    / ``dst`` are global ranks. A call made with ``group_src``/``group_dst`` (a rank within
    the group) is left out: the dump does not say which global rank that is."""
    out: dict[int, tuple[str, int]] = {}
    for d in dumps:
        main = d.main
        if d.rank is None or main is None or d.rank in out:
            continue
        for f in main.frames[:4]:
            if _P2P_FRAME.match(f.func) and f.file.endswith("distributed_c10d.py"):
                peer = f.args.get("src" if "recv" in f.func else "dst", "")
                if peer.isdigit():
                    out[d.rank] = (f.func, int(peer))
                break
    return out


def p2p_cycles(waits: dict[int, tuple[str, int]]) -> set[int]:
    """The ranks on a cycle of point-to-point waits: 1 waits in recv from 5 while 5 waits in
    recv from 1 (a send/recv order mismatch). Nothing on the cycle can move; every rank
    waiting on them is collateral."""
    on_cycle: set[int] = set()
    for start in waits:
        seen = [start]
        r = waits[start][1]
        while r in waits and r not in seen:
            seen.append(r)
            r = waits[r][1]
        if r == start and len(seen) > 1:
            on_cycle.update(seen)
    return on_cycle


def describe_waits(waits: dict[int, tuple[str, int]], ranks) -> str:
    """"rank 1 in recv from rank 5, rank 5 in recv from rank 1": what each of ``ranks`` waits in."""
    return ", ".join(f"rank {r} in {waits[r][0]} {'from' if 'recv' in waits[r][0] else 'to'} rank {waits[r][1]}"
                     for r in sorted(ranks))


def outliers(groups: list[Group]) -> list[Group]:
    """The groups apart from the one most ranks are in, when there is a clear majority."""
    if len(groups) < 2:
        return []
    sizes = [len(g.ranks) + len(g.sources) for g in groups]
    return groups[1:] if sizes[0] > sizes[1] else []
