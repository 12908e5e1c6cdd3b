"""What the app holds while it runs: the knowledge base, the diagnosis pool, this run's
session token, and recent reports (their finished pages, bounded in count and bytes)."""

from __future__ import annotations

import secrets
from collections import OrderedDict
from dataclasses import dataclass, field

from fastapi import HTTPException

from ..kb.loader import KnowledgeBase
from .limits import Limits
from .pool import DiagnosisPool
from .samples import Sample

MAX_REPORTS = 32  # reports kept in memory for /report/<id>; the oldest goes first
MAX_REPORT_BYTES = 64 << 20  # and fewer when their pages add up to more than this


@dataclass
class Report:
    page: str  # /report/<id>
    download: str  # the self-contained HTML file

    @property
    def size(self) -> int:
        return len(self.page) + len(self.download)


@dataclass
class AppState:
    kb: KnowledgeBase
    limits: Limits
    samples: dict[str, Sample]
    pool: DiagnosisPool = field(init=False)
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    reports: "OrderedDict[str, Report]" = field(default_factory=OrderedDict)
    history: str | None = None  # the incident history file (the reports list its similar incidents)

    def __post_init__(self) -> None:
        self.pool = DiagnosisPool(self.kb, self.limits)

    def keep(self, rid: str, report: Report) -> None:
        self.reports[rid] = report
        while len(self.reports) > MAX_REPORTS or (len(self.reports) > 1 and sum(r.size for r in self.reports.values()) > MAX_REPORT_BYTES):
            self.reports.popitem(last=False)

    def report(self, rid: str) -> Report:
        found = self.reports.get(rid)
        if found is None:
            raise HTTPException(404, f"no report {rid!r}: reports live in memory, the last {MAX_REPORTS} are kept")
        return found
