"""What the app holds while it runs: the knowledge base, one scanner, recent reports."""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from fastapi import HTTPException

from ..diagnose.engine import diagnose
from ..diagnose.model import Diagnosis
from ..events import ScanResult
from ..kb.loader import KnowledgeBase
from ..scan import Scanner, scan_sources
from .samples import Sample
from .uploads import Upload, apply_line_maps

MAX_REPORTS = 32  # reports kept in memory for /report/<id>; the oldest goes first


@dataclass
class Report:
    result: Diagnosis
    scan: ScanResult


@dataclass
class AppState:
    kb: KnowledgeBase
    max_upload_bytes: int
    samples: dict[str, Sample]
    scanner: Scanner = field(init=False)
    reports: "OrderedDict[str, Report]" = field(default_factory=OrderedDict)
    lock: threading.Lock = field(default_factory=threading.Lock)  # one scan at a time: hyperscan scratch is not shared

    def __post_init__(self) -> None:
        self.scanner = Scanner(self.kb)

    def run(self, uploads: list[Upload]) -> Report:
        """Scan and diagnose; 400 with the reason when nothing in the uploads is a text log."""
        from ..ingest.stacks import stacks_among

        with self.lock:
            sources = [u.source() for u in uploads]
            stacks, pure = stacks_among(sources)  # py-spy / faulthandler dumps: evidence, not logs
            scan = scan_sources(self.kb, [s for s in sources if s.name not in pure], self.scanner)
            scan.stacks = stacks
            apply_line_maps(scan, uploads)
            text_inputs = [i for i in scan.inputs if i.bytes and not any("not a text log" in w for w in i.warnings)]
            if not text_inputs and not stacks:
                reasons = [w for i in scan.inputs for w in i.warnings]
                raise HTTPException(400, reasons[0] if reasons else "empty input, nothing to diagnose")
            return Report(diagnose(self.kb, scan), scan)

    def keep(self, report: Report) -> str:
        rid = secrets.token_urlsafe(9)
        with self.lock:
            self.reports[rid] = report
            while len(self.reports) > MAX_REPORTS:
                self.reports.popitem(last=False)
        return rid

    def report(self, rid: str) -> Report:
        found = self.reports.get(rid)
        if found is None:
            raise HTTPException(404, f"no report {rid!r}: reports live in memory, the last {MAX_REPORTS} are kept")
        return found
