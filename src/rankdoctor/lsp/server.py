"""`rankdoctor lsp`: a language server (LSP over stdio, pygls) for failed runs' logs.

* Opening or saving a log diagnoses its run (``runs.py``) in a worker process (``work.py``)
  and publishes the top diagnosis's lines (``marks.py``): the initiating line as an error
  (a warning when the verdict is inconclusive), every other evidence line, on any rank's
  file, as information linked to it. A workspace folder's runs are diagnosed when it opens.
* Typing changes nothing (the server asks for no edits: logs are read, and a large file is
  not sent again on every key); a save diagnoses the run again and stops the diagnosis of
  it still running, whose answer would be stale.
* Hover on a marked line: the entry's summary, fix and verify command. Code actions: open
  the encyclopedia entry (a page of the static site built into the cache folder, or the
  ``entryUrl`` the client configured) and copy the verify command (a client command: LSP
  has no clipboard; the server shows the command too).
* ``rankdoctor.diagnoseText``: the Markdown report of a selection or a terminal's output.

Nothing leaves the machine: the files are read where they are.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pebble import ProcessExpired, ProcessPool
from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from .. import __version__
from ..diagnose.model import Step
from ..flightrec.load import DumpError
from ..ingest.sources import InputError
from ..report.markdown import _code, _prose, _step
from . import work
from .marks import ERROR, INFORMATION, WARNING, FindingInfo, Line, Mark, RunResult
from .runs import Run, is_log, run_of, runs_in, stamp

OPEN_ENTRY = "rankdoctor.openEntry"
COPY_VERIFY = "rankdoctor.copyVerifyCommand"
DIAGNOSE_TEXT = "rankdoctor.diagnoseText"
MAX_TEXT = 64 << 20  # characters of a selection diagnosed
_ENTRY_ID = re.compile(r"[a-z0-9][a-z0-9-]*")
_SEVERITY = {ERROR: types.DiagnosticSeverity.Error, WARNING: types.DiagnosticSeverity.Warning, INFORMATION: types.DiagnosticSeverity.Information}


class RankdoctorServer(LanguageServer):
    def __init__(self) -> None:
        # no text synchronisation: the server reads the files from disk on open and save
        super().__init__("rankdoctor", __version__, text_document_sync_kind=types.TextDocumentSyncKind.None_)
        self.options: dict[str, Any] = {}
        self.pool: ProcessPool | None = None
        self.tasks: dict[str, asyncio.Task] = {}  # run key -> its diagnosis in flight
        self.results: dict[str, RunResult] = {}  # run key -> its last answer
        self.published: dict[str, set[str]] = {}  # run key -> the files it marked
        self.site: str | None = None
        self.default_entries: str | None = None
        self.scans: set[asyncio.Task] = set()  # workspace folders being diagnosed

    # -- workers ------------------------------------------------------------------------

    def start_pool(self) -> ProcessPool:
        if self.pool is None or not self.pool.active:
            workers = int(self.options.get("workers") or min(2, os.cpu_count() or 1))
            # forked from a fork server, not from this process, which runs threads by now
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(["rankdoctor.lsp.work", "rankdoctor.diagnose.engine"])
            self.pool = ProcessPool(max_workers=workers, initializer=_worker_init, initargs=(self.options.get("entries") or self.default_entries,), context=ctx)
            self.pool.schedule(work.warm)
        return self.pool

    async def in_worker(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` in a worker; cancelling the caller kills the worker (pebble)."""
        return await asyncio.wrap_future(self.start_pool().schedule(fn, args))

    def shutdown(self) -> None:
        if self.pool is not None:
            self.pool.stop()
            self.pool.join(timeout=5)
            self.pool = None
        super().shutdown()

    # -- runs ---------------------------------------------------------------------------

    def workspace_folders(self) -> list[Path]:
        out = [Path(p) for f in self.workspace.folders.values() if (p := to_fs_path(f.uri))]
        if not out and self.workspace.root_path:
            out.append(Path(self.workspace.root_path))
        return out

    def diagnose_run(self, run: Run, *, again: bool) -> None:
        """Diagnose ``run`` in a worker. ``again`` (a save): stop the one in flight, its answer
        would be stale; else (an open) let it finish."""
        old = self.tasks.get(run.key)
        if old is not None and not old.done():
            if not again:
                return
            old.cancel()
        self.tasks[run.key] = asyncio.get_running_loop().create_task(self._diagnose(run))

    async def _diagnose(self, run: Run) -> None:
        me = asyncio.current_task()
        try:
            result = await self.in_worker(work.analyse, run)
        except asyncio.CancelledError:
            raise
        except ProcessExpired as exc:
            self.say(types.MessageType.Warning, f"rankdoctor: the diagnosis of {run.key} stopped (worker exit status {exc.exitcode})")
            return
        except Exception as exc:  # InputError, DumpError, a damaged file: one line, never a traceback
            self.say(types.MessageType.Warning, f"rankdoctor: {run.key}: {' '.join(str(exc).split())[:300]}")
            return
        finally:
            if self.tasks.get(run.key) is me:
                del self.tasks[run.key]
        self.results[run.key] = result
        self.publish(result)

    def scan(self, folders: list[Path]) -> None:
        """Diagnose the runs among these workspace folders' logs in the background, one at a
        time, so a file the user opens meanwhile gets a worker at once."""
        if self.options.get("scanWorkspace", True) is not False and folders:
            task = asyncio.get_running_loop().create_task(self._scan(folders))
            self.scans.add(task)
            task.add_done_callback(self.scans.discard)

    async def _scan(self, folders: list[Path]) -> None:
        everyone = self.workspace_folders()
        for folder in folders:
            for run in await asyncio.to_thread(runs_in, folder, everyone):
                self.diagnose_run(run, again=False)
                task = self.tasks.get(run.key)
                if task is not None:
                    await asyncio.wait({task})  # done, or stopped by a save: next run

    def publish(self, result: RunResult) -> None:
        by_path: dict[str, list[types.Diagnostic]] = {}
        for m in result.marks:
            by_path.setdefault(m.at.path, []).append(self.diagnostic(m, result.finding))
        for path in self.published.get(result.key, set()) - by_path.keys():
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=from_fs_path(path), diagnostics=[]))
        for path, diags in by_path.items():
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=from_fs_path(path), diagnostics=diags))
        self.published[result.key] = set(by_path)

    def range_of(self, at: Line) -> types.Range:
        enc = str(self.server_capabilities.position_encoding or types.PositionEncodingKind.Utf16)
        width = at.widths[{"utf-8": 0, "utf-16": 1, "utf-32": 2}.get(enc, 1)]
        return types.Range(types.Position(at.line, 0), types.Position(at.line, width))

    def diagnostic(self, m: Mark, f: FindingInfo | None) -> types.Diagnostic:
        related = [
            types.DiagnosticRelatedInformation(types.Location(from_fs_path(at.path), self.range_of(at)), msg) for at, msg in m.related
        ]
        template = self.options.get("entryUrl")
        href = template.replace("{id}", f.entry) if f and isinstance(template, str) else None
        return types.Diagnostic(
            range=self.range_of(m.at),
            message=m.message,
            severity=_SEVERITY[m.severity],
            code=f.entry if f else None,
            code_description=types.CodeDescription(href) if href else None,
            source="rankdoctor",
            related_information=related or None,
            data={"entry": f.entry if f else None, "initiating": m.initiating},
        )

    def marks_at(self, path: str, first: int, last: int) -> list[tuple[Mark, FindingInfo]]:
        return [
            (m, r.finding)
            for r in self.results.values()
            if r.finding is not None
            for m in r.marks
            if m.at.path == path and first <= m.at.line <= last
        ]

    def say(self, kind: types.MessageType, message: str) -> None:
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    async def entry_url(self, entry: str) -> str:
        template = self.options.get("entryUrl")
        if isinstance(template, str) and template:
            return template.replace("{id}", entry)
        if self.site is None:
            self.site = await self.in_worker(work.entry_site)
        page = Path(self.site) / "entries" / f"{entry}.html"
        if not page.is_file():
            raise JsonRpcInvalidParams(f"{entry}: no such encyclopedia entry")
        return page.as_uri()


def _worker_init(entries: str | None) -> None:
    # the server speaks LSP on stdout: whatever a worker might print goes to stderr instead
    os.dup2(2, 1)
    work.init(entries)


server = RankdoctorServer()


@server.feature(types.INITIALIZE)
def initialize(ls: RankdoctorServer, params: types.InitializeParams) -> None:
    opts = params.initialization_options
    ls.options = dict(opts) if isinstance(opts, dict) else {}


@server.feature(types.INITIALIZED)
def initialized(ls: RankdoctorServer, params: types.InitializedParams) -> None:
    ls.start_pool()
    ls.scan(ls.workspace_folders())


@server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
def folders_changed(ls: RankdoctorServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
    # pygls has updated ls.workspace.folders already
    ls.scan([Path(p) for f in params.event.added if (p := to_fs_path(f.uri))])


async def _opened(ls: RankdoctorServer, uri: str, again: bool) -> None:
    path = to_fs_path(uri)
    if not path or not uri.startswith("file:") or not is_log(Path(path)):
        return
    run = await asyncio.to_thread(run_of, Path(path), ls.workspace_folders())
    known = ls.results.get(run.key)
    if not again and known is not None and known.stamp == await asyncio.to_thread(stamp, run):
        ls.publish(known)  # unchanged since it was diagnosed
        return
    ls.diagnose_run(run, again=again)


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
async def did_open(ls: RankdoctorServer, params: types.DidOpenTextDocumentParams) -> None:
    await _opened(ls, params.text_document.uri, again=False)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
async def did_save(ls: RankdoctorServer, params: types.DidSaveTextDocumentParams) -> None:
    await _opened(ls, params.text_document.uri, again=True)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: RankdoctorServer, params: types.DidCloseTextDocumentParams) -> None:
    """The marks stay: they belong to the run, whose other files may still be open."""


def _hover_text(m: Mark, f: FindingInfo) -> str:
    out = [
        f"**{_prose(f.title)}** · {_code(f.entry)} · {_code(f.klass)}",
        "",
        f"rankdoctor: {f.verdict}, confidence {f.confidence:.2f}. This line: {_prose(m.message)}",
    ]
    if f.summary:
        out += ["", f"**Summary.** {_prose(f.summary)}"]
    if f.fix:
        out += ["", "**Fix**", ""] + [f"{i}. {_step(Step(t, c))}" for i, (t, c) in enumerate(f.fix, 1)]
    text, command = f.verify
    if command or text:
        out += ["", "**Verify:** " + _step(Step(text, command))]
    if f.missing:
        out += ["", "**Missing facts — collect next**", ""] + [f"- {_prose(x)}" for x in f.missing]
    return "\n".join(out)


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls: RankdoctorServer, params: types.HoverParams) -> types.Hover | None:
    path = to_fs_path(params.text_document.uri)
    line = params.position.line
    found = ls.marks_at(path or "", line, line)
    if not found:
        return None
    m, f = found[0]
    return types.Hover(types.MarkupContent(types.MarkupKind.Markdown, _hover_text(m, f)), ls.range_of(m.at))


@server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]))
def code_action(ls: RankdoctorServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    path = to_fs_path(params.text_document.uri) or ""
    actions: list[types.CodeAction] = []
    done: set[str] = set()
    for m, f in ls.marks_at(path, params.range.start.line, params.range.end.line):
        if f.entry in done:
            continue
        done.add(f.entry)
        diags = [d for d in params.context.diagnostics if d.source == "rankdoctor" and d.range.start.line == m.at.line]
        title = f"rankdoctor: Open the encyclopedia entry {f.entry}"
        actions.append(types.CodeAction(title, kind=types.CodeActionKind.QuickFix, diagnostics=diags or None,
                                        command=types.Command(title, OPEN_ENTRY, arguments=[f.entry])))
        if f.verify[1]:
            title = f"rankdoctor: Copy the verify command ({f.verify[1][:60]})"
            actions.append(types.CodeAction(title, kind=types.CodeActionKind.QuickFix, diagnostics=diags or None,
                                            command=types.Command(title, COPY_VERIFY, arguments=[f.verify[1]])))
    return actions


@server.command(OPEN_ENTRY)
async def open_entry(ls: RankdoctorServer, entry: str) -> str:
    """Open the entry's page (window/showDocument, in the browser); returns its URL."""
    if not isinstance(entry, str) or not _ENTRY_ID.fullmatch(entry):
        raise JsonRpcInvalidParams(f"{entry!r}: not an encyclopedia entry id")
    url = await ls.entry_url(entry)
    caps = ls.client_capabilities.window
    if caps is not None and caps.show_document is not None and caps.show_document.support:
        shown = await ls.window_show_document_async(types.ShowDocumentParams(uri=url, external=True))
        if shown.success:
            return url
    ls.say(types.MessageType.Info, f"rankdoctor: {entry}: {url}")
    return url


@server.command(COPY_VERIFY)
def copy_verify(ls: RankdoctorServer, command: str) -> str:
    """The verify command, returned and shown: an editor that handles this command itself
    (the VS Code extension) puts it on the clipboard."""
    ls.say(types.MessageType.Info, f"rankdoctor verify: {command}")
    return command


@server.command(DIAGNOSE_TEXT)
async def diagnose_text(ls: RankdoctorServer, text: str) -> str:
    """The Markdown report of ``text`` (a selection, a terminal's output)."""
    if not isinstance(text, str) or not text.strip():
        raise JsonRpcInvalidParams("nothing to diagnose: select a traceback or a terminal's output first")
    if len(text) > MAX_TEXT:
        raise JsonRpcInvalidParams(f"the text is longer than {MAX_TEXT >> 20} M characters; run `rankdoctor diagnose` on the file instead")
    try:
        return await ls.in_worker(work.diagnose_text, text)
    except ProcessExpired as exc:
        raise JsonRpcInternalError(f"the diagnosis worker died (exit status {exc.exitcode})") from None
    except (InputError, DumpError) as exc:
        raise JsonRpcInvalidParams(" ".join(str(exc).split())[:300]) from None


def serve_stdio(entries: str | None = None) -> None:
    """Serve one client on stdin/stdout until it exits. ``entries``: another knowledge base
    (the client's ``entries`` initialization option wins)."""
    if entries:
        server.default_entries = entries
    try:
        server.start_io()
    finally:
        if server.pool is not None:
            server.pool.stop()
