"""The diagnosis workers: a small pool of processes (pebble's ProcessPool) that the event
loop awaits, never blocks on.

* At most ``Limits.pending`` diagnoses run or wait at once; the next one is refused at
  once (503) before its body is read.
* Each diagnosis has ``Limits.request_timeout`` seconds of a worker's time: past that its
  worker is killed and replaced, and the request gets one line (503). A request that is
  cancelled (the server is shutting down) kills its worker too.
* Workers are forked from a fork server, not from the server process (which has threads
  by then), and each loads the knowledge base and compiles the scanner once.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from collections.abc import Iterator
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from typing import Any, Callable

from fastapi import HTTPException
from pebble import ProcessExpired, ProcessPool

from ..kb.loader import KnowledgeBase
from . import worker
from .limits import Limits


class DiagnosisPool:
    def __init__(self, kb: KnowledgeBase, limits: Limits):
        self.kb = kb
        self.limits = limits
        self.pending = 0
        self._pool: ProcessPool | None = None

    def start(self) -> ProcessPool:
        """The running pool (a new one if there is none, or the last one broke)."""
        if self._pool is None or not self._pool.active:
            if self._pool is not None:
                self._pool.stop()  # broken (its workers could not start): let it go, start afresh
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(["rankdoctor.web.worker", "rankdoctor.diagnose.engine", "rankdoctor.report.html"])
            self._pool = ProcessPool(max_workers=self.limits.workers, initializer=worker.init, initargs=(self.kb,), context=ctx)
            self._pool.schedule(worker.warm)  # starts the workers now rather than at the first request
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.stop()  # kills the workers, finished or not
            self._pool.join()
            self._pool = None

    @contextmanager
    def slot(self) -> Iterator[None]:
        """A place among the diagnoses running or waiting; 503 when there is none."""
        if self.pending >= self.limits.pending:
            raise HTTPException(
                503,
                f"server busy: {self.pending} diagnoses are running or waiting (at most {self.limits.pending}); retry in a moment",
                headers={"Retry-After": "2"},
            )
        self.pending += 1
        try:
            yield
        finally:
            self.pending -= 1

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` in a worker, within the time budget."""
        future = self.start().schedule(fn, args, timeout=self.limits.request_timeout)
        try:
            return await asyncio.wrap_future(future)  # cancelling this cancels the future: pebble kills the worker
        except FutureTimeout:
            raise HTTPException(
                503,
                f"the diagnosis took longer than {self.limits.request_timeout:g} s and was stopped "
                "(start the server with --request-timeout to allow more, or use `rankdoctor diagnose`)",
            ) from None
        except ProcessExpired as exc:
            raise HTTPException(503, f"the diagnosis worker died (exit status {exc.exitcode}); the input may need more memory than is left") from None
        except worker.Refused as exc:
            raise HTTPException(exc.status, exc.detail) from None
