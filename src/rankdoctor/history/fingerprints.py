"""Fingerprints: a diagnosis's evidence lines as templates, so that the same failure on
another day, job, host or set of ranks gives the same set of strings (Drain3's idea: mask
the variable tokens, keep the constant words).

The engine's own ``fingerprint`` (diagnose/common.py: rank/time prefixes dropped, numbers
and hex masked) groups one run's lines; across runs the folders, hosts and addresses
differ too, so those are masked first. Only the JSON report is read, so a fingerprint set
can be recomputed from any saved or imported report."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ..diagnose.common import fingerprint

# the order matters: an e-mail holds a host name, a URL or a path may hold an address
_MASKS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"), "<email>"),
    (re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.I), "<url>"),
    # IPv6, before IPv4 and numbers: eight groups, or fewer around one "::" (so a time
    # such as 00:08:28 is not taken for one)
    (re.compile(r"(?<![\w:])(?:(?:[0-9a-f]{1,4}:){7}[0-9a-f]{1,4}|(?:[0-9a-f]{1,4}(?::[0-9a-f]{1,4}){0,6})?::(?:[0-9a-f]{1,4}(?::[0-9a-f]{1,4}){0,6})?)(?![\w:])", re.I), "<ip>"),
    (re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}\b"), "<ip>"),
    # a path: keep the file name (api.py, pair.cc say where), mask the folders (a user's
    # home, a virtualenv, a CI checkout differ from run to run)
    (re.compile(r"(?:~|\.{1,2})?(?:/[\w.@+-]+)+/(?=[\w.@+-])|(?<![\w/])(?:[\w.@+-]+/)+(?=[\w.@+-]+\.\w+\b)"), "<path>/"),
    # a fully qualified host name: three or more labels, the last alphabetic
    (re.compile(r"\b(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.){2,}[a-z]{2,}\b", re.I), "<host>"),
]
_SPACES = re.compile(r"\s+")


def template(text: str) -> str:
    """One evidence line as a template: hosts, addresses, e-mails, URLs and folders masked,
    then the engine's prefix and number masking."""
    for pattern, mask in _MASKS:
        text = pattern.sub(mask, text)
    # torchrun's error summary quotes the worker's lines ('- "E1202 ... failed"'): the
    # quoted line and the line itself are one fingerprint
    return _SPACES.sub(" ", fingerprint(text)).strip(" \"'-")


def fingerprints(report: dict[str, Any]) -> list[str]:
    """The sorted, distinct fingerprints of a rankdoctor.diagnosis/v1 document: for each
    evidence line of every finding, ``signature | template``."""
    return sorted({f"{ev.get('signature', '')} | {template(str(ev.get('text', '')))}" for ev in _evidence(report)})


def _evidence(report: dict[str, Any]) -> Iterable[dict[str, Any]]:
    for finding in report.get("diagnoses") or []:
        yield from finding.get("evidence") or []


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    """|A ∩ B| / |A ∪ B|; 0 for two empty sets (nothing in common to speak of)."""
    sa, sb = set(a), set(b)
    union = sa | sb
    return len(sa & sb) / len(union) if union else 0.0
