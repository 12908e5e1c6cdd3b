"""Launcher summaries: torchrun's ChildFailedError block and the agent's exit lines, the
DeepSpeed launcher's "exits with return code" line, Composer's crash and exit lines, TGI's
"Shard process was signaled to shutdown with signal N rank=R", srun's task records
("task 5: Exited with exit code 1", "tasks 0,2,6: Killed") and torch.multiprocessing.spawn's
"process 3 terminated with signal SIGSEGV".

The block says which worker exited with which code. Its "Root Cause (first observed
failure)" is only the first exit the agent saw — in a hang that is a waiting rank the
watchdog took down — so it is read as one piece of evidence, never as the answer.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, field

from ..events import Fact

_BLOCK_SPAN = 8  # lines from "[i]:" to "traceback :"

# strsignal() texts srun prints for a task that died of a signal
_SRUN_SIGNALS = {
    "Killed": -9, "Terminated": -15, "Aborted": -6, "Segmentation fault": -11, "Bus error": -7,
    "Floating point exception": -8, "Illegal instruction": -4, "Hangup": -1, "Interrupt": -2,
}


@dataclass
class ExitRecord:
    source: str
    line: int  # first line of the record
    last_line: int
    rank: int | None = None
    local_rank: int | None = None
    host: str | None = None
    exitcode: int | None = None
    pid: int | None = None
    time: str | None = None
    root_cause: bool = False  # listed under "Root Cause (first observed failure)"
    message: str | None = None
    killed_by_launcher: bool = False  # SIGKILL from torchrun after SIGTERM did not end the worker
    block: bool = True  # a multi-line summary record (else one agent log line)
    srun: bool = False  # srun's record of a Slurm task

    @property
    def end(self) -> int:
        """The last line of the record (a summary block spans several)."""
        return max(self.last_line, self.line + _BLOCK_SPAN) if self.block else self.line

    @property
    def signal_name(self) -> str | None:
        if self.exitcode is None or self.exitcode >= 0:
            return None
        try:
            return signal.Signals(-self.exitcode).name
        except ValueError:
            return None


@dataclass
class LauncherSummary:
    records: list[ExitRecord] = field(default_factory=list)
    # the workers the launcher says it sent SIGTERM to ("Sending process N closing signal
    # SIGTERM"), per file that says so: a worker of that file that died by SIGTERM while not on
    # its list got the signal from somewhere else (a node agent, a pre-emption, a kill by hand)
    sigterm_by_source: dict[str, set[int]] = field(default_factory=dict)
    forced_kill_pids: set[int] = field(default_factory=set)
    # torchrun's summary says a worker failed ("train.py FAILED" above its Failures / Root
    # Cause sections), whether or not the paste goes on to say which one and how
    failed_reported: bool = False
    # where the job said its work ended normally (facts "run-done": torchelastic's "worker group
    # successfully finished", DeepSpeed's "exits successfully", a trainer's closing summary), and
    # where NCCL said the program closed a communicator (fact "comm-teardown"): what the
    # communication layer printed after them is teardown when nothing failed before (ranktable)
    done: list[Fact] = field(default_factory=list)

    @property
    def sigterm_pids(self) -> set[int]:
        """Every worker the launcher says it sent SIGTERM to, in any file."""
        return set().union(*self.sigterm_by_source.values())

    def by_rank(self) -> dict[int, ExitRecord]:
        out: dict[int, ExitRecord] = {}
        for r in self.records:
            if r.rank is not None and (r.rank not in out or r.root_cause):
                out[r.rank] = r
        return out

    def root(self) -> ExitRecord | None:
        for r in self.records:
            if r.root_cause:
                return r
        return None


def read_launcher(facts: list[Fact]) -> LauncherSummary:
    summary = LauncherSummary()
    by_source: dict[str, list[Fact]] = {}
    for f in facts:
        if f.fact.startswith(("tr-", "ds-", "lc-")):
            by_source.setdefault(f.source, []).append(f)
        elif f.fact in ("run-done", "comm-teardown"):
            summary.done.append(f)
    for source, items in by_source.items():
        items.sort(key=lambda f: f.line)
        first_of_source = len(summary.records)  # records before it are other sources'
        section = None
        current: ExitRecord | None = None
        for f in items:
            if f.fact == "tr-root-cause":
                section = "root"
                current = None
            elif f.fact == "tr-failures":
                section = "failures"
                current = None
            elif f.fact == "tr-failed-binary":
                summary.failed_reported = True
            elif f.fact == "tr-index":
                current = ExitRecord(source, f.line, f.line, root_cause=(section == "root"))
                summary.records.append(current)
            elif f.fact in ("tr-agent-failed", "ds-exit", "lc-composer-crash", "lc-composer-exit"):
                # a one-line record: torchrun's agent and DeepSpeed name a local rank, Composer a global one
                summary.records.append(
                    ExitRecord(
                        source,
                        f.line,
                        f.line,
                        rank=_i(f.captures.get("rank")),
                        local_rank=_i(f.captures.get("local_rank")),
                        host=f.host,
                        exitcode=_i(f.captures.get("exitcode")),
                        pid=_i(f.captures.get("pid")),
                        time=f.time,
                        root_cause=f.fact == "lc-composer-crash",  # the first crash Composer saw
                        block=False,
                    )
                )
            elif f.fact == "lc-srun-task":
                # one record per task of the list; the first task srun reports ended by itself,
                # a task it reports killed or terminated after that was ended by srun tearing
                # the step down (--kill-on-bad-exit, or the step cancelled)
                code = _i(f.captures.get("exitcode"))
                if code is None:
                    code = _SRUN_SIGNALS.get(f.captures.get("signal") or "")
                after_first = len(summary.records) > first_of_source
                for task in task_ids(f.captures.get("value") or ""):
                    summary.records.append(
                        ExitRecord(source, f.line, f.line, rank=task, host=f.captures.get("host") or f.host,
                                   exitcode=code, time=f.time, block=False,
                                   killed_by_launcher=after_first and code in (-9, -15), srun=True)
                    )
            elif f.fact == "lc-horovod-exit":
                # Horovod prints each worker's non-zero exit as it happens: the first is the
                # first to end; a shell's 128+N is signal N
                code = _shell_status(f.captures.get("exitcode"))
                first = not any(r.root_cause for r in summary.records[first_of_source:])
                summary.records.append(
                    ExitRecord(source, f.line, f.line, rank=_i(f.captures.get("rank")), host=f.host,
                               exitcode=code, time=f.time, root_cause=first, block=False)
                )
            elif f.fact == "lc-pals-rank":
                code = _shell_status(f.captures.get("exitcode"))
                sig = _i(f.captures.get("signal_num"))
                if sig is not None:
                    code = -sig
                after_first = len(summary.records) > first_of_source
                summary.records.append(
                    ExitRecord(source, f.line, f.line, rank=_i(f.captures.get("rank")), host=f.captures.get("host") or f.host,
                               exitcode=code, time=f.time, root_cause=not after_first, block=False,
                               killed_by_launcher=after_first and code in (-9, -15))
                )
            elif f.fact == "lc-spawn-exited":
                # torch.multiprocessing.spawn: the first process join() saw fail; a signal by name
                code = _i(f.captures.get("exitcode"))
                if code is None:
                    code = _signal_code(f.captures.get("signal"))
                summary.records.append(
                    ExitRecord(source, f.line, f.line, local_rank=_i(f.captures.get("local_rank")), host=f.host,
                               exitcode=code, time=f.time, root_cause=True, block=False)
                )
            elif f.fact == "lc-tgi-signal":
                sig = _i(f.captures.get("signal_num"))
                summary.records.append(
                    ExitRecord(source, f.line, f.line, rank=_i(f.captures.get("rank")), host=f.host,
                               exitcode=-sig if sig else None, time=f.time, block=False)
                )
            elif f.fact == "tr-forced-kill":
                pid = _i(f.captures.get("pid"))
                if pid is not None:
                    summary.forced_kill_pids.add(pid)
            elif f.fact in ("tr-sigterm-sent", "lc-composer-sigterm"):
                pid = _i(f.captures.get("pid"))
                if pid is not None:
                    summary.sigterm_by_source.setdefault(source, set()).add(pid)
            elif f.fact in _RECORD_FIELDS:
                if current is None or f.line - current.line > _BLOCK_SPAN or _field_set(current, f.fact):
                    if f.fact not in _OPENING_FIELDS:
                        continue
                    # a record whose "[i]:" line is not in the paste (it starts at its
                    # "rank : 0 (local_rank: 0)" or "exitcode : -11 (pid: 6421)" line), or a
                    # second record without one: those two fields, distinctive enough, open it
                    current = ExitRecord(source, f.line, f.line, root_cause=(section == "root"))
                    summary.records.append(current)
                current.last_line = f.line
                if f.fact == "tr-rank":
                    current.rank = _i(f.captures.get("rank"))
                    current.local_rank = _i(f.captures.get("local_rank"))
                elif f.fact == "tr-host":
                    current.host = f.captures.get("host")
                elif f.fact == "tr-exitcode":
                    current.exitcode = _i(f.captures.get("exitcode"))
                    current.pid = _i(f.captures.get("pid"))
                elif f.fact == "tr-time":
                    current.time = f.captures.get("value")
                elif f.fact == "tr-traceback":
                    current.message = f.captures.get("value")
    if any(not r.srun for r in summary.records):
        # srun started one launcher per node (torchrun, DeepSpeed, Composer, whose own records
        # are here): its task ids are node indices, not ranks
        summary.records = [r for r in summary.records if not r.srun]
    for r in summary.records:
        r.killed_by_launcher = r.killed_by_launcher or (r.pid is not None and r.pid in summary.forced_kill_pids)
    return summary


_RECORD_FIELDS = ("tr-time", "tr-host", "tr-rank", "tr-exitcode", "tr-traceback")
_OPENING_FIELDS = ("tr-rank", "tr-exitcode")  # the fields that open a record whose "[i]:" line is missing


def _field_set(record: ExitRecord, fact: str) -> bool:
    """Whether ``record`` already has the field that ``fact`` gives (then the line is the next record's)."""
    if fact == "tr-rank":
        return record.rank is not None or record.local_rank is not None
    if fact == "tr-exitcode":
        return record.exitcode is not None
    if fact == "tr-host":
        return record.host is not None
    if fact == "tr-time":
        return record.time is not None
    return record.message is not None


def task_ids(text: str, most: int = 65536) -> list[int]:
    """Slurm's ranged task list ("0,2,6", "9-10,12-15") as task ids; an implausible range
    (a cut line, a huge span) gives what was read before it."""
    out: list[int] = []
    for part in text.strip(",-").split(","):
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            break
        a, b = int(lo), int(hi) if hi else int(lo)
        if b < a or len(out) + b - a + 1 > most:
            break
        out.extend(range(a, b + 1))
    return out


def _signal_code(name: str | None) -> int | None:
    """A signal's name as the negative exit code a launcher reports for it (SIGSEGV: -11)."""
    try:
        return -int(signal.Signals[name]) if name else None
    except KeyError:
        return None


def _shell_status(v: str | None) -> int | None:
    """An exit status as a shell reports it (128+N for death by signal N) in the launcher's
    convention (-N)."""
    code = _i(v)
    return 128 - code if code is not None and code > 128 else code


def _i(v: str | None) -> int | None:
    try:
        return int(v) if v not in (None, "") else None
    except ValueError:
        return None
