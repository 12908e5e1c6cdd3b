"""From what a run left behind to a diagnosis: logs scanned, Flight Recorder dumps found among
them (or given separately) analysed, both weighed together. The CLI, the evaluation and any
other caller go through here, so they diagnose the same way."""

from __future__ import annotations

from collections.abc import Callable

from .diagnose.engine import diagnose
from .diagnose.model import Diagnosis
from .events import ScanResult
from .flightrec.load import Dump, dumps_near
from .ingest.sources import Source, expand_inputs
from .kb.loader import KnowledgeBase


def diagnose_paths(
    kb: KnowledgeBase,
    paths: list[str],
    scan: Callable[[list[Source]], ScanResult],
    fr: list[str] | None = None,
    use_fr: bool = True,
) -> tuple[Diagnosis, ScanResult, list[Dump]]:
    """Diagnose the logs under ``paths`` with ``scan`` (single or parallel). Dumps inside the
    given folders, and under ``fr``, are evidence too and are left out of the log scan.
    Raises InputError / DumpError for input that cannot be read."""
    dumps, problems, dump_files = dumps_near(paths, fr) if use_fr else ([], [], set())
    result = scan([s for s in expand_inputs(paths) if s.name not in dump_files])
    result.warnings.extend(problems)
    report = None
    if dumps:
        from .flightrec.analyze import analyze

        report = analyze(dumps)
    return diagnose(kb, result, report), result, dumps
