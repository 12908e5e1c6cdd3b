"""The guard's side thread: fold this rank's collectives, publish them, compare the ranks.

Everything runs off the training thread and talks only to the c10d store (a TCP key-value
server separate from the collectives' transport), so it keeps working while a collective is
stuck. Each poll: read the new FR entries, fold each into its group's running hash, publish
this rank's state under ``rankdoctor_guard/s/<rank>``, read every rank's state and compare.
The first rank to see a divergence wins ``store.add("reported", 1) == 1`` and prints the one
fingerprint line; every rank that sees the report afterwards dumps / aborts as configured.
"""

from __future__ import annotations

import atexit
import collections
import hashlib
import json
import os
import sys
import threading
import time
from dataclasses import dataclass

import torch.distributed as dist

from rankdoctor.guard.compare import Divergence, find_divergence
from rankdoctor.guard.options import GuardOptions
from rankdoctor.guard.record import Collective, dump_bytes, read_own_record


@dataclass
class _Track:
    """One process group as this rank sees it."""

    desc: str
    n: int = 0
    cum: str = ""
    base: int = 1  # the collective the hash chain starts at (later than 1 after a gap)
    since: float = 0.0
    window: collections.deque = None  # [seq, cumulative hash, text]

    def fold(self, c: Collective, sites: bool, size: int) -> None:
        if self.window is None:
            self.window = collections.deque(maxlen=size)
        if c.seq != self.n + 1:
            # Collectives this rank never saw (the ring overwrote them before a poll, or the
            # guard started late): restart the chain; ranks with other bases compare texts.
            self.base, self.cum = c.seq, ""
        text = c.describe(sites)
        self.cum = hashlib.blake2b(f"{self.cum}|{text}".encode(), digest_size=8).hexdigest()
        self.n = c.seq
        self.since = time.time()
        self.window.append([c.seq, self.cum, text])


class Guard:
    def __init__(self, opts: GuardOptions, group=None):
        store = dist.distributed_c10d._get_default_store()
        self.store = dist.PrefixStore("rankdoctor_guard/", store)
        self.opts = opts
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self.only_group = None if group is None else str(group.group_name)
        self.tracks: dict[str, _Track] = {}
        self.last_record = -1
        self.lost = 0  # collectives the ring buffer overwrote before a poll read them
        self.done: str | None = None
        self.divergence: Divergence | None = None
        self.report_seen = False
        self._keys = [f"s/{r}" for r in range(self.world)]
        self._all_published = False
        self._lock = threading.Lock()  # one poll at a time (side thread, atexit, final step)
        self._stop = threading.Event()
        self._closed = False
        self._last_key, self._last_sent = None, 0.0
        self.cpu_seconds = 0.0  # CPU time of the side thread's polls (bench/guard.py reads it)
        # torch's first dump of recorded Python frames imports torch._inductor (its frame
        # symbolizer consults inductor's code cache): 2-4 s once on a plain DDP job, ~10 s on a
        # loaded machine. Imported here, before training, so that no poll is that late.
        import torch._inductor  # noqa: F401

        self._publish({}, ready=False)
        self._thread = threading.Thread(target=self._run, name="rankdoctor-guard", daemon=True)
        self._thread.start()
        atexit.register(self.close)

    # -- one poll -------------------------------------------------------------------------
    def poll(self, done: str | None = None) -> Divergence | None:
        """One round; ``done`` ("exited", "final") marks this rank as issuing nothing more.

        It is set under the lock, after the wait: a round already running read the recorder
        before the rank's last collectives and must not publish that stale count as final.
        """
        with self._lock:
            if self._closed:
                return self.divergence
            if done:
                self.done = done
            new, in_flight, oldest = read_own_record(self.last_record)
            if self.last_record >= 0 and oldest > self.last_record + 1:
                self.lost += oldest - self.last_record - 1
            for c in new:
                if self.only_group is not None and c.group != self.only_group:
                    continue
                track = self.tracks.setdefault(c.group, _Track(c.group_desc, since=time.time()))
                track.fold(c, self.opts.sites, self.opts.window)
                self.last_record = max(self.last_record, c.record_id)
            if new:
                self.last_record = max(self.last_record, max(c.record_id for c in new))
            busy = {}
            now_ns = time.time_ns()
            for group, _seq, created in in_flight:
                busy[group] = max(busy.get(group, 0.0), (now_ns - created) / 1e9)
            self._publish(busy)
            return self._compare()

    def _publish(self, busy: dict, ready: bool = True) -> None:
        # Half-second steps: a state that did not change is not sent again (it still is,
        # every few seconds, as the heartbeat that tells a live rank from a gone one).
        busy = {g: round(b * 2) / 2 for g, b in busy.items()}
        key = (ready, self.done, tuple((n, t.n) for n, t in self.tracks.items()), tuple(sorted(busy.items())))
        now = time.time()
        if key == self._last_key and now - self._last_sent < 2.0:
            return
        self._last_key, self._last_sent = key, now
        state = {"rank": self.rank, "t": now, "done": self.done, "ready": ready, "groups": {
            name: {"desc": t.desc, "n": t.n, "base": t.base, "since": t.since, "busy": busy.get(name),
                   "w": list(t.window or [])}
            for name, t in self.tracks.items()}}
        self.store.set(f"s/{self.rank}", json.dumps(state, separators=(",", ":")))

    def _states(self) -> dict[int, dict] | None:
        if not self._all_published:
            self._all_published = self.store.check(self._keys)
            if not self._all_published:
                return None
        return {r: json.loads(v) for r, v in enumerate(self.store.multi_get(self._keys))}

    def _compare(self) -> Divergence | None:
        if self.store.check(["report"]):
            self._on_report(None)
            return self.divergence
        states = self._states()
        if states is None:
            return None
        found = find_divergence(states, self.world, time.time(), self.opts.stall)
        if found is not None:
            self._on_report(found)
        return found

    # -- reporting ------------------------------------------------------------------------
    def _on_report(self, found: Divergence | None) -> None:
        if self.report_seen:
            return
        self.report_seen = True
        if found is not None and self.store.add("reported", 1) == 1:
            self.divergence = found
            print(found.line(), file=sys.stderr, flush=True)
            self.store.set("report", found.line())
        if self.opts.dump_dir:
            self._dump()
            if self.opts.abort:
                self._await_dumps()
        if self.opts.abort:
            sys.stderr.flush()
            sys.stdout.flush()
            os._exit(self.opts.abort_code)

    def _await_dumps(self, limit: float = 5.0) -> None:
        """Before aborting, wait (a few seconds at most) until every rank has written its dump:
        the first rank to exit makes the launcher stop the others, and a rank stopped while it
        writes leaves only its unfinished .tmp file."""
        try:
            self.store.add("dumped", 1)
            deadline = time.monotonic() + limit
            while self.store.add("dumped", 0) < self.world and time.monotonic() < deadline:
                time.sleep(0.05)
        except Exception:  # a store that is gone (rank 0 exited): abort now
            pass

    def _dump(self) -> None:
        """This rank's Flight Recorder record as fr_trace_rank_<rank> (`rankdoctor fr` reads it)."""
        os.makedirs(self.opts.dump_dir, exist_ok=True)
        path = os.path.join(self.opts.dump_dir, f"fr_trace_rank_{self.rank}")
        with open(path + ".tmp", "wb") as f:
            f.write(dump_bytes())
        os.replace(path + ".tmp", path)

    def _run(self) -> None:
        wait = self.opts.interval
        while not self._stop.wait(wait):
            try:
                started = time.thread_time()
                self.poll()
                # Torch dumps the whole ring on every read: with a big buffer (torch's default
                # is 2000 entries, ~25 ms of CPU a read) poll less often, at most ~2 % of one
                # core. CPU time, not wall time: waiting on the store costs the job nothing.
                spent = time.thread_time() - started
                self.cpu_seconds += spent
                wait = max(self.opts.interval, 50 * spent)
            except Exception as exc:  # a dead store (rank 0 gone) ends the guard, not the job
                if not self._stop.is_set():
                    print(f"rankdoctor guard: stopped ({type(exc).__name__}: {exc})", file=sys.stderr, flush=True)
                return
            if self.report_seen and not self.opts.abort:
                return

    def close(self, done: str = "exited") -> None:
        """Last poll as the process leaves: a rank that exits can no longer catch up."""
        if self._stop.is_set():
            return
        try:
            self.poll(done)
            if self.opts.dump_dir and not self.report_seen and getattr(sys, "last_value", None) is not None:
                self._dump()  # leaving on an uncaught exception: keep this rank's record too
        except Exception:
            pass
        self._stop.set()
        with self._lock:
            self._closed = True  # no poll may touch the store or the recorder from now on
        if threading.current_thread() is not self._thread:
            # Torch tears the store and recorder down next; a poll still running then
            # ends the process with "terminate called without an active exception".
            self._thread.join(timeout=5)

    def finish(self, steps: int, timeout: float) -> bool:
        """After the last checked step: wait until every rank is final, compare, report.

        Returns True when every rank got there and no divergence was found.
        """
        deadline = time.time() + timeout
        while time.time() < deadline:
            self.poll("final")
            if self.report_seen:
                return False
            states = self._states() or {}
            if len(states) == self.world and all(s.get("done") == "final" for s in states.values()):
                if self.store.add("ok", 1) == 1:
                    count = sum(t.n for t in self.tracks.values())
                    print(f"rankdoctor guard: no asymmetric collective in {steps} steps "
                          f"({count} collectives in {len(self.tracks)} group(s) on {self.world} ranks)",
                          file=sys.stderr, flush=True)
                return True
            time.sleep(self.opts.interval)
        print(f"rankdoctor guard: not every rank reached step {steps} within {timeout:.0f} s",
              file=sys.stderr, flush=True)
        return False
