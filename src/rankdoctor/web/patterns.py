"""The patterns the browser uses to pre-filter a large log before anything is sent:
every signature of the knowledge base, the launcher-summary and traceback lines the
engine reads (``facts.py``), and a few broad lines worth keeping around them."""

from __future__ import annotations

import re

from ..facts import FACTS
from ..kb.loader import KnowledgeBase

# Lines kept even when no signature matches: what the engine needs to attribute ranks,
# read launcher summaries and find a failing rank's own exception.
KEEP = {
    "root-cause": r"Root Cause",
    "exitcode": r"exitcode",
    "rank-field": r"\brank\s*:",
    "traceback": r"Traceback \(most recent call last\)",
    "error-or-exception": r"[A-Za-z_]\w*(?:Error|Exception)\b",
    "signal": r"\bSIG(?:TERM|KILL|ABRT|SEGV|BUS|INT|HUP)\b|[Ss]ignal \d+",
    "killed": r"\bKilled\b|out of memory|oom-kill",
    "nccl-warn": r"NCCL WARN",
    "failed": r"\bFAILED\b|\bfailed\b",
}
# Rank prefixes: the first and last line of every rank are kept (its first and last
# sign of life), so a rank that went silent is still seen.
RANK_PREFIXES = [
    r"^\s*\[(?:default|rank)\d+\]:",  # torchrun --tee / distributed excepthook
    r"^\s*\d{1,5}: ",  # srun -l
    r"^\s*\[1,\d+\]<std(?:out|err)>:",  # Open MPI --tag-output
    r"\[rank: ?\d+\]",  # Lightning
    r"^\s*\[pod/[^\]]+\]",  # kubectl logs --prefix
]
CONTEXT = {"before": 3, "after": 2, "traceback": 80, "head": 5, "tail": 5}


def to_js(rx: str) -> str:
    """Python regex syntax the way JavaScript reads it."""
    rx = re.sub(r"\(\?P<", "(?<", rx)
    rx = re.sub(r"\(\?P=(\w+)\)", r"\\k<\1>", rx)
    return rx.replace(r"\Z", "$").replace(r"\A", "^")


def signatures_payload(kb: KnowledgeBase) -> dict:
    sigs = [
        {"entry": e.id, "id": s.id, "role": s.role.value, "regex": to_js(s.regex), "ignore_case": s.ignore_case}
        for e in sorted(kb, key=lambda e: e.id)
        for s in e.signatures
    ]
    facts = [{"id": f"fact:{k}", "regex": to_js(v.lstrip("^")), "ignore_case": False} for k, v in FACTS.items()]
    keep = [{"id": k, "regex": v, "ignore_case": False} for k, v in KEEP.items()]
    return {"signatures": sigs, "keep": facts + keep, "rank_prefixes": RANK_PREFIXES, "context": CONTEXT}
