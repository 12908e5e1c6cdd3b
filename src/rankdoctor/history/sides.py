"""What `compare` compares: each argument is a run's logs (diagnosed now, as `diagnose`
does) or the number of an incident in the history."""

from __future__ import annotations

import re
from pathlib import Path

from .compare import Side
from .store import History, HistoryError

_ID = re.compile(r"#?(\d+)")


class SideError(Exception):
    """An argument that names no readable run or incident; one line."""


def load_side(arg: str, db: Path | None) -> Side:
    if Path(arg).exists():
        from ..api import DumpError, InputError, diagnose
        from . import job_name

        try:
            result = diagnose([arg])
        except (InputError, DumpError) as exc:
            raise SideError(str(exc)) from None
        # as `diagnose` refuses it: nothing but empty or binary files is no run to compare
        skipped = [w for w in result.warnings if ": not a text log" in w]
        readable = [i for i in result.inputs if i.bytes and not any(w.startswith(i.path + ":") for w in skipped)]
        if not readable and not result.diagnoses and not result.ranks_seen:
            raise SideError(skipped[0] if skipped else f"{arg}: empty input, nothing to compare")
        return Side(arg, result.to_json(), job=job_name([arg]))
    m = _ID.fullmatch(arg)
    if m is None:
        raise SideError(f"{arg}: no such file or folder, and not an incident number")
    try:
        found = History(db).get(int(m.group(1)))
    except HistoryError as exc:
        raise SideError(f"{arg}: not a file or folder, and {exc}") from None
    return Side(f"#{found.id} {found.job}", found.report, job=found.job, incident_id=found.id)
