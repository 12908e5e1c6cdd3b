"""The Python API: what the command line does, as functions that return the report models.

    import rankdoctor

    d = rankdoctor.diagnose(["logs/"], fr=["dumps/"])
    top = d.diagnoses[0] if d.diagnoses else None
    print(d.verdict, top.klass if top else None, top.initiating_rank if top else None)
    print(d.to_json())          # the same document as `rankdoctor diagnose --format json`

    report = rankdoctor.fr(["dumps/"])           # rankdoctor.fr/v1 via report.to_json()
    groups = rankdoctor.stacks(["stacks/"])      # ranks grouped by where their main thread is
    kb = rankdoctor.load_kb()                    # the failure encyclopedia

Input problems raise :class:`InputError` (logs, stack dumps) or :class:`DumpError` (Flight
Recorder dumps); a broken extra entries folder raises :class:`KBError`. Nothing here prints,
exits or writes files, and the inputs are only read.
"""

from __future__ import annotations

from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .flightrec.load import DumpError
from .ingest.sources import InputError
from .kb.loader import KBError

if TYPE_CHECKING:
    from .diagnose.model import Diagnosis
    from .flightrec.analyze import FRReport
    from .kb.loader import KnowledgeBase

def _paths(paths: Any) -> list[str]:
    if isinstance(paths, (str, PathLike)):
        return [str(paths)]
    out = [str(p) for p in paths]
    if not out:
        raise InputError("no input paths given")
    return out


def load_kb(entries: str | PathLike[str] | None = None) -> "KnowledgeBase":
    """The failure encyclopedia shipped with the package (or the one in ``entries``),
    validated."""
    from .kb.loader import load_kb as _load

    return _load(Path(entries) if entries is not None else None)


def diagnose(paths: Any, fr: Any = None, *, entries: str | PathLike[str] | None = None, jobs: int = 1,
             redact: bool = False, redact_job_ids: bool = False, hung: bool = False) -> "Diagnosis":
    """Diagnose the logs (files, folders, archives) under ``paths``; Flight Recorder dumps
    in those folders are found on their own, ``fr`` names more. Stack dumps among the inputs
    (py-spy, faulthandler) and NCCL RAS reports (``ncclras``) are weighed too. ``jobs`` > 1 scans with that many processes.
    ``redact``: diagnose redacted copies (``diagnose --redact``: host names, addresses, user
    names, e-mails and secrets as consistent pseudonyms; ``redact_job_ids``: job ids too).
    ``hung``: the job stopped making progress (``diagnose --hung``): the logs are read as
    ending where it hung, even when no line shows a failure.
    Returns the model `rankdoctor diagnose --format json` prints (``.to_json()``)."""
    from .kb.loader import load_kb as _load
    from .parallel import scan_parallel
    from .pipeline import diagnose_paths
    from .scan import Scanner, scan_sources

    kb = _load(Path(entries) if entries is not None else None, check=False)
    scanner = Scanner(kb)

    def scan(sources):
        if jobs > 1:
            return scan_parallel(kb, sources, jobs=jobs, scanner=scanner)
        return scan_sources(kb, sources, scanner)

    given_fr = _paths(fr) if fr is not None else None
    if redact or redact_job_ids:
        from .redact import new_redactor
        from .redact.session import diagnose_redacted

        result = diagnose_redacted(_paths(paths), given_fr, new_redactor(redact_job_ids), lambda p, f: diagnose_paths(kb, p, scan, f, hung=hung))[0]
        return result
    result, _, _ = diagnose_paths(kb, _paths(paths), scan, given_fr, hung=hung)
    return result


def fr(paths: Any, *, prefix: str | None = None, ranks: list[int] | None = None) -> "FRReport":
    """Compare the collectives each rank's Flight Recorder dump scheduled (``rankdoctor
    fr``). ``report.findings`` name the ranks and call sites where they parted;
    ``report.to_json()`` is the rankdoctor.fr/v1 document."""
    from .flightrec.analyze import analyze

    return analyze(fr_dumps(paths, prefix=prefix, ranks=ranks)[0])


def fr_dumps(paths: Any, *, prefix: str | None = None, ranks: list[int] | None = None) -> tuple[list, list[str]]:
    """The Flight Recorder dumps under ``paths`` and what could not be read of them; a
    DumpError when not one dump is there."""
    from .flightrec.load import load_dumps

    dumps, problems = load_dumps(_paths(paths), prefix=prefix, ranks=ranks)
    if not dumps:
        raise DumpError(problems[0] if problems else "no Flight Recorder dumps found")
    return dumps, problems


@dataclass
class StackGroup:
    """Ranks whose main threads are in one place (innermost frame first)."""

    ranks: list[int]
    unranked_dumps: list[str]
    frames: list[str]
    odd: bool  # the odd one(s) out: somewhere else than most ranks


def stacks(paths: Any, *, depth: int = 3) -> list[StackGroup]:
    """Group stack dumps (py-spy text or --json, faulthandler; one per rank) by where each
    rank's main thread is (``rankdoctor stacks``); the groups flagged ``odd`` are the ranks
    to look at."""
    return stack_groups(paths, depth=depth)[2]


def stack_groups(paths: Any, *, depth: int = 3) -> tuple[list, list[str], list[StackGroup]]:
    """The stack dumps read, the files skipped with why, and the groups (``stacks``)."""
    from .ingest.stacks import group_by_stack, outliers, read_stack_dumps

    given = [Path(p) for p in _paths(paths)]
    missing = [p for p in given if not p.exists()]
    if missing:
        raise InputError(f"{missing[0]}: no such file or directory")
    dumps, skipped = read_stack_dumps(given)
    if not dumps:
        raise InputError(skipped[0] if skipped else "no stack dumps found (py-spy dump text or --json, or faulthandler output)")
    groups = group_by_stack(dumps, depth)
    odd = outliers(groups)
    return dumps, skipped, [StackGroup(list(g.ranks), list(g.sources), [str(f) for f in g.where], g in odd) for g in groups]


__all__ = ["DumpError", "InputError", "KBError", "StackGroup", "diagnose", "fr", "load_kb", "stacks"]
