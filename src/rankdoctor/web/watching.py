"""A watched run in the web app (``rankdoctor serve --watch DIR``).

A ``Watcher`` runs in a thread of the server process; on every update it renders the same
report fragment as /report/<id> (``_report.html``: the diagnosis, the per-rank timeline,
the evidence) from the watch's running scan, and keeps the latest. /watch shows it, and
/watch/events pushes each new one as a server-sent event, which the page puts in place of
the old one (static/watch.js). Rendering happens once per update in the watching thread,
not once per open page."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import AsyncIterator

from jinja2 import PackageLoader

from ..kb.loader import KnowledgeBase
from ..report.html import make_env, report_context
from ..watch import Update, Watcher

KEEP_ALIVE = 15.0  # seconds between comments on a quiet event stream (proxies close idle ones)
CHECK_EVERY = 0.2  # seconds between looks at the latest fragment, per open stream


def _entry_href(entry_id: str) -> str:
    return f"/kb/entries/{entry_id}.html"


class WatchedRun:
    """The watcher and the latest rendered fragment. ``InputError`` for a path that is not
    there, at construction (before the server starts)."""

    def __init__(self, kb: KnowledgeBase, paths: list[str], silent_after: float = 60.0, hung_after: float | None = None):
        self.kb, self.paths = kb, list(paths)
        self.watcher = Watcher(self.paths, kb=kb, silent_after=silent_after, hung_after=hung_after)
        self.watcher.subscribe(self._on_update)
        self._template = make_env(PackageLoader("rankdoctor.web", "templates")).get_template("_watched.html")
        self._lock = threading.Lock()
        self.version = 0
        self.fragment = self._render(None)
        self._thread: threading.Thread | None = None
        self.closing = threading.Event()  # set when the server shuts down: the event streams end

    def start(self) -> None:
        self._thread = threading.Thread(target=self.watcher.run, name="rankdoctor-serve-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.closing.set()
        self.watcher.stop()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def latest(self) -> tuple[int, str]:
        with self._lock:
            return self.version, self.fragment

    def _on_update(self, u: Update) -> None:
        # (the watching thread: the running scan is not being changed while it is read here)
        html = self._render(u)
        with self._lock:
            self.version += 1
            self.fragment = html

    def _render(self, u: Update | None) -> str:
        ctx = {"paths": self.paths, "u": u, "clock": time.strftime("%H:%M:%S", time.localtime(u.at)) if u else None}
        if u is not None:
            ctx.update(report_context(u.diagnosis, self.watcher.result, self.kb, _entry_href))
            ctx["rank_count"] = len(u.ranks)
            ctx["silent"] = sorted(u.silent)
        return self._template.render(**ctx)

    async def events(self) -> AsyncIterator[str]:
        """The event stream of one page: the latest fragment now, then each new one, until
        the server shuts down (the page's EventSource then retries until it is back)."""
        import asyncio

        seen = -1
        quiet_since = time.monotonic()
        while not self.closing.is_set():
            version, html = self.latest()
            if version != seen:
                seen = version
                quiet_since = time.monotonic()
                yield f"id: {version}\nevent: update\ndata: {json.dumps({'version': version, 'html': html})}\n\n"
            elif time.monotonic() - quiet_since >= KEEP_ALIVE:
                quiet_since = time.monotonic()
                yield ": still watching\n\n"
            await asyncio.sleep(CHECK_EVERY)
