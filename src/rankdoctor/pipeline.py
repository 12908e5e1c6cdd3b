"""From what a run left behind to a diagnosis: logs scanned, Flight Recorder dumps found among
them (or given separately) analysed, both weighed together. The CLI, the evaluation and any
other caller go through here, so they diagnose the same way."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .events import ScanResult
from .flightrec.load import Dump, dumps_near
from .ingest.sources import Source, expand_inputs

if TYPE_CHECKING:
    from .diagnose.model import Diagnosis
    from .kb.loader import KnowledgeBase


def diagnose_paths(
    kb: "KnowledgeBase | Callable[[], KnowledgeBase]",
    paths: list[str],
    scan: Callable[[list[Source]], ScanResult],
    fr: list[str] | None = None,
    use_fr: bool = True,
    hung: bool = False,
) -> "tuple[Diagnosis, ScanResult, list[Dump]]":
    """Diagnose the logs under ``paths`` with ``scan`` (single or parallel). Dumps inside the
    given folders, and under ``fr``, are evidence too and are left out of the log scan.
    ``kb`` may be a function that loads the knowledge base: it is called after the scan
    (the scan may have called it already, while its workers ran). ``hung``: the job is known
    to have stopped making progress (``diagnose --hung``).
    Raises InputError / DumpError for input that cannot be read."""
    # (Flight Recorder dumps are looked for among local paths; objects in storage are logs)
    local = [p for p in paths if "://" not in p]
    dumps, problems, dump_files = dumps_near(local, fr) if use_fr else ([], [], set())
    sources = [s for s in expand_inputs(paths) if s.name not in dump_files]
    from .ingest.ncclras import ras_among
    from .ingest.stacks import stacks_among

    stacks, stack_files = stacks_among(sources)
    ras, ras_files = ras_among([s for s in sources if s.name not in stack_files])
    logs = [s for s in sources if s.name not in stack_files | ras_files]
    # nothing but stack dumps or RAS reports: there are no logs to scan, those are the evidence
    result = scan(logs) if logs or not (stacks or ras) else ScanResult()
    result.stacks = stacks
    result.ras = ras
    result.warnings.extend(problems)
    report = None
    if dumps:
        from .flightrec.analyze import analyze

        report = analyze(dumps)
    from .diagnose.engine import diagnose

    if callable(kb):
        kb = kb()
    return diagnose(kb, result, report, hung=hung), result, dumps
