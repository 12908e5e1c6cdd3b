"""The local incident history (``rankdoctor history``, ``diagnose --save``) and run
comparison (``rankdoctor compare``). See README.md beside this file."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .store import History, HistoryError, Incident

if TYPE_CHECKING:
    from ..diagnose.model import Diagnosis

# file names that say nothing about the job: the folder above them names it instead
_GENERIC = {"console", "stderr", "stdout", "log", "logs", "output", "out", "err", "train", "error", "attempt_0"}


def job_name(paths: list[str]) -> str:
    """A job name from the first input: a folder's name, a log file's name without its
    extensions, or the folder holding a file whose name is generic (console.log)."""
    first = next((p for p in paths if p != "-"), None)
    if first is None:
        return "stdin"
    path = Path(first).resolve()
    if path.is_dir():
        return path.name or str(path)
    stem = path.name.split(".", 1)[0]
    if stem.lower() in _GENERIC or stem.lower().startswith(("rank", "stderr", "stdout")):
        return path.parent.name or stem
    return stem


def attach(result: "Diagnosis", paths: list[str], *, job: str | None, db: Path | None, save: bool) -> int | None:
    """Look up the incidents like ``result`` in the history (into ``result.similar``), then
    save ``result`` when asked (it is not its own match). Returns the saved incident's id.
    HistoryError when the history cannot be read or written."""
    from .similar import lookup

    history = History(db)
    report = result.to_json()
    matches = lookup(report, history)
    saved = None
    if save:
        saved = history.add(Incident.from_report(report, job or job_name(paths)))
        matches = matches or []
    result.similar = None if matches is None else [m.to_json() for m in matches]
    return saved


__all__ = ["History", "HistoryError", "Incident", "attach", "job_name"]
