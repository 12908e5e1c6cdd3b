"""Which files one diagnosis reads when a log is opened in an editor (a "run").

A rank's log alone rarely tells who started a failure: the initiating line is in one rank's
file and the collateral timeouts in the others'. So an opened log is diagnosed together with
the files of the same run:

* a file of a torchrun ``--log-dir`` tree (``<run_id>/attempt_<n>/<local_rank>/stderr.log``):
  the whole ``<run_id>`` folder, every attempt and rank;
* a log inside a workspace folder: the log files beside it (per-rank files such as
  ``rank_3.log``, SLURM outputs), not the folders below it, which may hold other runs;
* any other log: the file alone.

Everything here only lists folders; nothing is read.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..ingest.sources import walk_files

LOG_SUFFIXES = (".log", ".out", ".err", ".txt")
MAX_FILES = 512  # log files beside an opened one that are read with it
MAX_RUNS = 32  # runs diagnosed when a workspace folder opens
MAX_WALK = 20_000  # files looked at in a workspace folder before giving up on the rest

_ATTEMPT = re.compile(r"attempt_\d+")


@dataclass(frozen=True)
class Run:
    key: str  # the folder (or file) that names the run
    paths: tuple[str, ...]  # what the diagnosis reads


def torchrun_run_dir(path: Path) -> Path | None:
    """The ``<run_id>`` folder when ``path`` lies under ``<run_id>/attempt_<n>/<local_rank>/``."""
    parts = path.parts
    for i in range(len(parts) - 3, 0, -1):
        if _ATTEMPT.fullmatch(parts[i]) and parts[i + 1].isdigit():
            return Path(*parts[:i])
    return None


def is_log(path: Path) -> bool:
    """A file the server diagnoses: a log by its name, or any file of a torchrun tree."""
    return path.name.lower().endswith(LOG_SUFFIXES) or torchrun_run_dir(path) is not None


def _inside(path: Path, folders: list[Path]) -> bool:
    return any(path == f or f in path.parents for f in folders)


def run_of(path: Path, workspace: list[Path]) -> Run:
    """The run an opened file belongs to (see the module's docstring)."""
    tree = torchrun_run_dir(path)
    if tree is not None:
        return Run(str(tree), (str(tree),))
    folder = path.parent
    if _inside(folder, workspace):
        try:
            beside = sorted(str(folder / e.name) for e in os.scandir(folder) if e.is_file() and is_log(Path(e.name)))
        except OSError:
            beside = []
        beside = beside[:MAX_FILES]
        if str(path) not in beside:
            beside.append(str(path))
        return Run(str(folder), tuple(beside))
    return Run(str(path), (str(path),))


def runs_in(folder: Path, workspace: list[Path]) -> list[Run]:
    """The runs among a workspace folder's logs, in the order the walk finds them (at most
    MAX_RUNS; a folder of thousands of files is looked at only up to MAX_WALK)."""
    found: dict[str, Run] = {}
    for n, (path, _size, why) in enumerate(walk_files(str(folder))):
        if n >= MAX_WALK or len(found) >= MAX_RUNS:
            break
        p = Path(path)
        if why is not None or not is_log(p):
            continue
        tree = torchrun_run_dir(p)
        key = str(tree) if tree is not None else str(p.parent)
        if key not in found:
            found[key] = run_of(p, workspace)
    return list(found.values())


def stamp(run: Run) -> tuple:
    """What changes when a file of the run changes (names, sizes, modification times)."""
    out = []
    for given in run.paths:
        files = walk_files(given) if os.path.isdir(given) else [(given, 0, None)]
        for path, _size, why in files:
            if why is None:
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                out.append((path, st.st_size, st.st_mtime_ns))
    return tuple(out)
