"""Checks that need more than one entry, or more than pydantic can say.

Each validator is a small function that checks one thing and returns error strings that
name the file they came from (pySigma habit). ``validate_kb`` runs them all.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from .model import KNOWN_CAPTURES
from .taxonomy import CLASS_IDS

if TYPE_CHECKING:
    from .loader import KnowledgeBase

Validator = Callable[["KnowledgeBase"], Iterator[str]]


def _where(kb: "KnowledgeBase", entry_id: str) -> str:
    return str(kb.paths.get(entry_id, entry_id))


def class_is_in_taxonomy(kb: "KnowledgeBase") -> Iterator[str]:
    for e in kb:
        if e.class_ not in CLASS_IDS:
            yield f"{_where(kb, e.id)}: class {e.class_!r} is not a TAXONOMY.md id"


def related_ids_exist(kb: "KnowledgeBase") -> Iterator[str]:
    for e in kb:
        for r in e.related:
            if r not in kb:
                yield f"{_where(kb, e.id)}: related id {r!r} does not exist"


def captures_are_known(kb: "KnowledgeBase") -> Iterator[str]:
    for e in kb:
        for s in e.signatures:
            for name in re.compile(s.regex).groupindex:
                if name not in KNOWN_CAPTURES:
                    yield (
                        f"{_where(kb, e.id)}: signature {s.id}: capture group {name!r} is not one of "
                        f"{sorted(KNOWN_CAPTURES)}"
                    )


def signatures_compile_for_scanner(kb: "KnowledgeBase") -> Iterator[str]:
    from ..scan import hs_compile_one

    for e in kb:
        for s in e.signatures:
            err = hs_compile_one(s.regex, s.ignore_case)
            if err:
                yield f"{_where(kb, e.id)}: signature {s.id}: the scanner cannot compile it: {err}"


def signatures_cannot_stall(kb: "KnowledgeBase") -> Iterator[str]:
    """No signature may make Python's ``re`` backtrack super-linearly on a hostile line
    (``rank\\s*:?\\s*`` then a million spaces: hours); see ``backtrack.py``."""
    from .backtrack import problems

    for e in kb:
        for s in e.signatures:
            for why in problems(s.regex, s.ignore_case):
                yield f"{_where(kb, e.id)}: signature {s.id}: can backtrack super-linearly: {why}"


def every_signature_has_an_example(kb: "KnowledgeBase") -> Iterator[str]:
    for e in kb:
        flags = {s.id: re.compile(s.regex, re.I if s.ignore_case else 0) for s in e.signatures}
        for sig_id, rx in flags.items():
            if not any(rx.search(x.text) for x in e.examples.match):
                yield f"{_where(kb, e.id)}: signature {sig_id} has no `match` example that it matches"


def entry_explains_or_causes(kb: "KnowledgeBase") -> Iterator[str]:
    """An entry must be reachable: a cause signature, a cross-rank finding it explains,
    traceback frames that propose it for an unnamed exception, a context line that becomes a
    cause when it repeats (``repeat_cause``), or at least a symptom (then it can only be
    reported as inconclusive)."""
    for e in kb:
        roles = {s.role.value for s in e.signatures}
        repeats = any(s.repeat_cause for s in e.signatures)
        if not e.explains and not e.traceback_frames and not e.fallback_for and roles == {"context"} and not repeats:
            yield f"{_where(kb, e.id)}: only context signatures and no `explains`: it can never be reported"


def one_fallback_each(kb: "KnowledgeBase") -> Iterator[str]:
    """Each fallback (the generic explanation of a finding or of an unnamed failure) has
    one entry at most, and an entry that is the fallback of a cross-rank finding explains it."""
    owner: dict[str, str] = {}
    for e in kb:
        explains = {x.value for x in e.explains}
        for f in e.fallback_for:
            if f.value in owner:
                yield f"{_where(kb, e.id)}: fallback_for {f.value} is already {owner[f.value]}'s"
            owner[f.value] = e.id
            if f.value in ("desync", "straggler", "dead-peer") and f.value not in explains:
                yield f"{_where(kb, e.id)}: fallback_for {f.value} but `explains` does not list it"


# Where an example line was captured in this checkout (the shared corpus, the scenario
# folders, an absolute path): nothing a reader of the installed tool or the site can open.
_LOCAL_SOURCE = re.compile(r"^(?:\.\./|tests/|/|shared/corpus)|scenarios/")


def example_sources_are_public(kb: "KnowledgeBase") -> Iterator[str]:
    """An example's source is the public thread, upstream code or lab run it comes from,
    never a path in this checkout: the encyclopedia pages show it to people who have none."""
    for e in kb:
        for kind, examples in (("match", e.examples.match), ("no_match", e.examples.no_match)):
            for x in examples:
                source = " ".join(x.source.split())
                if _LOCAL_SOURCE.search(source):
                    yield (
                        f"{_where(kb, e.id)}: {kind} example source names a local path ({source[:80]}); "
                        "cite the public thread, upstream code or lab run instead"
                    )


VALIDATORS: tuple[Validator, ...] = (
    class_is_in_taxonomy,
    related_ids_exist,
    captures_are_known,
    signatures_compile_for_scanner,
    signatures_cannot_stall,
    every_signature_has_an_example,
    entry_explains_or_causes,
    one_fallback_each,
    example_sources_are_public,
)


def validate_kb(kb: "KnowledgeBase") -> list[str]:
    errors: list[str] = []
    for v in VALIDATORS:
        errors.extend(v(kb))
    return errors
