"""A job its launcher restarted: the first attempt that failed is where it started.

torchrun with ``--max-restarts`` (and any elastic agent) answers a worker's failure by stopping
the whole worker group and starting it again. Each attempt leaves its own failure: the first
one is what made the launcher restart; the later ones are either the same error again (a
deterministic bug fails every attempt alike) or a consequence of restarting (the new workers
cannot connect where the old ones had listened, a half-written checkpoint, a port still held).
The launcher's final summary (``ChildFailedError``) describes only the LAST attempt, so it is
the loudest and least informative part of the log.

``scope`` keeps what the run left up to the end of the first attempt that failed and sets the
rest aside, when that attempt shows a failure of its own (a line that is a failure, not only
the launcher's record of an exit): the later attempts' lines are then told apart from the
cause rather than weighed against it. Attempts are told apart by:

* torchrun's ``--log-dir`` tree: ``<run_id>/attempt_<n>/<local_rank>/...`` (the path);
* the agent's "Worker group FAILED. 2/3 attempts left; will restart worker group" (older
  releases log it at INFO; the attempt that follows starts after that line);
* two or more records "failed (exitcode: N) local_rank: L (pid: P)" of ONE agent (the same pid
  in their glog prefix ``E1206 10:20:26.407000 31628 ...``) about different worker pids: the
  agent logs one such record per failed attempt (several agents writing to one file each have
  their own pid).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..events import Event, Fact, Sample, ScanResult
from .attribution import FATAL, TRACE
from .common import said

RESTART_FACT = "tr-restart"
DONE_FACT = "run-done"
AGENT_FAILED = "tr-agent-failed"
_ATTEMPT_DIR = re.compile(r"attempt_(\d+)[/\\]")
_GLOG_PID = re.compile(r"^[EWIF]\d{4} [\d:.]+ +(\d+) ")


@dataclass(frozen=True)
class Scope:
    attempt: int  # the attempt kept (0-based), the first that failed
    attempts: int  # how many attempts the evidence shows
    left_out: int  # matched lines (events and facts kept by the scan) of the later attempts set aside
    # the job recovered: the last attempt shows no failure of its own and ends with the job's
    # word that its work ended normally (this fact, ``run-done``); the first failure of the
    # attempt kept is then ``first_failure``
    recovered: Fact | None = None
    first_failure: Event | None = None
    # the last attempt had not finished when the evidence ends, but was making steps with no
    # failure line (of its own or a launcher's) after the restart: ``recovered`` is then its last
    # line of work with a step counter
    running: bool = False


def _bounds(facts: list[Fact]) -> dict[str, list[int]]:
    """Per source (one that is not a per-attempt file), the lines after which a new attempt
    begins."""
    out: dict[str, set[int]] = {}
    agents: dict[tuple[str, str], list[Fact]] = {}
    for f in facts:
        if _ATTEMPT_DIR.search(f.source):
            continue
        if f.fact == RESTART_FACT:
            out.setdefault(f.source, set()).add(f.line)
        elif f.fact == AGENT_FAILED and (m := _GLOG_PID.match(f.text)):
            agents.setdefault((f.source, m[1]), []).append(f)
    for (source, _), recs in agents.items():
        recs.sort(key=lambda f: f.line)
        if len({f.captures.get("pid") for f in recs}) < 2:
            continue
        # every record but the last ends an attempt (the last one's attempt ends the run)
        out.setdefault(source, set()).update(f.line for f in recs[:-1])
    return {s: sorted(b) for s, b in out.items()}


def _attempt(item: Event | Fact, bounds: dict[str, list[int]], dirs: dict[str, int | None]) -> int:
    if item.source not in dirs:
        m = _ATTEMPT_DIR.search(item.source)
        dirs[item.source] = int(m[1]) if m else None
    if (n := dirs[item.source]) is not None:
        return n
    b = bounds.get(item.source)
    if not b:
        return 0
    return sum(1 for x in b if x < item.line)


def _own_failure(ev: Event) -> bool:
    """A line that is a failure of the process that printed it, not a launcher's record."""
    if "launcher" in ev.captures:
        return False
    return ev.role in ("cause", FATAL) or (ev.role == TRACE and ev.signature in ("python-exception", "cpp-backtrace"))


def scope(scan: ScanResult) -> tuple[ScanResult, Scope | None]:
    """The scan cut to the first attempt that failed (see the module's doc), or the scan as it
    is (and None) when the evidence shows one attempt, or the first failed one shows no
    failure of its own."""
    facts = scan.facts
    bounds = _bounds(facts)
    # every torchrun --log-dir holds attempt_0: only two attempts' folders, or a restart found
    # in a file, are worth a pass over every line
    if not bounds and len({m[1] for i in scan.inputs if (m := _ATTEMPT_DIR.search(i.path))}) < 2:
        return scan, None
    events = scan.events
    dirs: dict[str, int | None] = {}
    attempts = {_attempt(x, bounds, dirs) for x in (*events, *facts, *(t for t in scan.tails if t.fact == "last-step"))}
    if len(attempts) < 2:
        return scan, None
    failed = sorted({_attempt(e, bounds, dirs) for e in events if _own_failure(e)})
    last = max(attempts)
    # no line of the last attempt reports trouble (of its own or a launcher's)
    last_quiet = not any(e.role != "context" and _attempt(e, bounds, dirs) == last for e in events)
    own_failed = bool(failed)
    if not own_failed:
        # the attempts' failure shows only as the launcher's restart; read on when the last
        # attempt was still making steps at the end (below), else as one attempt
        if not last_quiet:
            return scan, None
        failed = [0]
    first = failed[0]
    done = [f for f in facts if f.fact == DONE_FACT and _attempt(f, bounds, dirs) == last]
    recovered = done[-1] if done and last not in failed else None
    running = False
    if recovered is None and last not in failed and last_quiet:
        # the last attempt made steps and reported no trouble: still running at the end
        steps = [t for t in scan.tails if t.fact == "last-step" and _attempt(t, bounds, dirs) == last]
        if steps:
            recovered, running = max(steps, key=lambda t: (t.source, t.line)), True
    if recovered is None and not own_failed:
        return scan, None  # no failure of a worker's own, and no recovery to tell
    # (for the note: the attempt's first failure line, a peer's report of it included)
    own = [e for e in events if (_own_failure(e) or (e.role == "symptom" and "launcher" not in e.captures))
           and _attempt(e, bounds, dirs) == first] if recovered else []
    first_failure = None
    if recovered and own:  # the earliest: by line within one file, else by time
        one_file = len({e.source for e in own}) == 1
        first_failure = min(own, key=lambda e: (e.line,) if one_file else (e.ts is None, e.ts or 0.0, e.source, e.line))
    out = ScanResult(inputs=scan.inputs, ranks_seen=set(scan.ranks_seen), local_ranks_seen=set(scan.local_ranks_seen),
                     hosts_seen=set(scan.hosts_seen), warnings=list(scan.warnings), stacks=scan.stacks, ras=scan.ras)
    left = 0
    for key, sample in scan.samples.items():
        for seq, item in sample.items():
            if _attempt(item, bounds, dirs) <= first:
                kept = out.samples.get(key)
                if kept is None:
                    kept = out.samples[key] = Sample(sample.cap)
                kept.push(seq, item)
            else:
                left += 1
    out.added = scan.added
    out.tails = [t for t in scan.tails if _attempt(t, bounds, dirs) <= first]
    return out, Scope(first, last + 1, left, recovered, first_failure, running)


def note(s: Scope) -> str:
    if s.recovered is not None:
        d = s.recovered
        what = ""
        if (f := s.first_failure) is not None:
            what = f" (its first failure: {f.source}:{f.line}: \"{said(f.text)}\")"
        ended = ("was still making steps with no failure where the evidence ends" if s.running else "finished")
        return (f"the launcher restarted the workers after attempt {s.attempt} failed{what}, and the last attempt "
                f"(of {s.attempts}) {ended}: {d.source}:{d.line}: \"{said(d.text)}\": the job recovered, "
                f"so that failure is not read as the job's (give rankdoctor the failed attempt's lines alone, e.g. "
                f"its attempt_{s.attempt} folder, to diagnose it)")
    return (f"the launcher restarted the workers ({s.attempts} attempts): the diagnosis reads attempt {s.attempt}, "
            f"the first that failed; {s.left_out} matched lines of the later attempts are left out of the weighing "
            f"(they repeat the first failure, or fail because of the restart)")
