"""What runs in the language server's worker processes.

A diagnosis of a large run takes seconds of CPU; in the server's own process it would hold
up hovers and code actions, and a stale one (the file was saved again) could not be stopped.
In a worker process it can: the server kills it (pebble) and starts the new one. Each worker
loads the knowledge base and compiles the scanner once; what it hands back is plain data
(``marks.RunResult``, Markdown text), never the diagnosis's own objects.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from .marks import RunResult, marks_of
from .runs import Run, stamp

if TYPE_CHECKING:
    from ..kb.loader import KnowledgeBase
    from ..scan import Scanner

_kb: "KnowledgeBase | None" = None
_scanner: "Scanner | None" = None
_entries: str | None = None


def init(entries: str | None = None) -> None:
    """Load the knowledge base and compile the scanner (once per worker)."""
    global _kb, _scanner, _entries
    from ..kb.loader import load_kb
    from ..scan import Scanner

    _entries = entries
    _kb = load_kb(Path(entries) if entries else None, check=False)
    _scanner = Scanner(_kb)


def warm() -> None:
    """Nothing: scheduling it starts the workers before the first diagnosis needs them."""


def _ready() -> "tuple[KnowledgeBase, Scanner]":
    if _kb is None or _scanner is None:
        init(_entries)
    assert _kb is not None and _scanner is not None
    return _kb, _scanner


def _diagnose(paths: list[str]):
    from ..pipeline import diagnose_paths
    from ..scan import scan_sources

    kb, scanner = _ready()
    return diagnose_paths(kb, paths, lambda sources: scan_sources(kb, sources, scanner))


def analyse(run: Run) -> RunResult:
    """Diagnose a run's files; the marks of its top diagnosis. Raises InputError/DumpError
    for input that cannot be read."""
    before = stamp(run)
    d, scan, _ = _diagnose(list(run.paths))
    kb, _ = _ready()
    return marks_of(kb, d, scan, run.key, before)


def diagnose_text(text: str, name: str = "selection") -> str:
    """The Markdown report of a piece of text (a selected traceback, a terminal's output).
    The text goes to a private temporary file, read like any log and removed after; the
    report names it ``name``."""
    from ..report.markdown import render_markdown

    with tempfile.TemporaryDirectory(prefix="rankdoctor-lsp-") as tmp:
        path = os.path.join(tmp, f"{name}.log")
        with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(text)
        d, _, _ = _diagnose([path])
    for finding in d.diagnoses:
        for ev in finding.evidence:
            if ev.source == path:
                ev.source = name
    for i in d.inputs:
        if i.path == path:
            i.path = name
    return render_markdown(d)


def _site_key(entries: Path) -> str | None:
    """The knowledge base's cache key and the site's own code and templates: a change to
    any of them makes a new site."""
    from ..kb.cache import fingerprint
    from ..site import build

    key = fingerprint(entries)
    if key is None:
        return None
    here = Path(build.__file__).parent
    parts = [key]
    for path in sorted([here / "build.py", *(here / "templates").glob("*"), *(here / "static").glob("*")]):
        try:
            st = path.stat()
        except OSError:
            return None
        parts.append(f"{path}\0{st.st_size}\0{st.st_mtime_ns}")
    return "\n".join(parts)


def entry_site() -> str:
    """The folder of the static encyclopedia (``rankdoctor site``), built once into the user's
    cache folder (a fresh temporary one when caching is off) and kept per knowledge base and
    site version (the two newest are kept): "Open the encyclopedia entry" opens a page on
    this machine."""
    from ..kb.cache import _name, cache_dir, default_entries_dir
    from ..site.build import build_site

    kb, _ = _ready()
    key = _site_key(Path(_entries) if _entries else default_entries_dir())
    base = cache_dir()
    if base is None or key is None:
        out = Path(tempfile.mkdtemp(prefix="rankdoctor-site-"))
        build_site(kb, out)
        return str(out)
    out = base / f"site-{_name(key)}"
    if (out / "index.html").is_file():
        return str(out)
    # built beside it and renamed: a worker killed half way leaves no half site behind
    base.mkdir(parents=True, exist_ok=True)
    part = Path(tempfile.mkdtemp(prefix=".site-", dir=base))
    build_site(kb, part)
    try:
        os.replace(part, out)
    except OSError:  # another server built it meanwhile
        shutil.rmtree(part, ignore_errors=True)
    older = sorted((p for p in base.glob("site-*") if p != out), key=lambda p: p.stat().st_mtime, reverse=True)
    for stale in older[1:]:
        shutil.rmtree(stale, ignore_errors=True)
    return str(out)
