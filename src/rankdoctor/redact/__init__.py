"""Redaction: share a log or a diagnosis without its host names, addresses, user names,
e-mail addresses, credentials (and, when asked, job ids), each replaced by a consistent
pseudonym (``host-3`` everywhere in one report). See detect.py for what is found, and
redactor.py for how it is replaced.

    from rankdoctor.redact import new_redactor, redact_paths
    done = redact_paths(["logs/"], Path("shareable/"), new_redactor())
    print(done.replaced)                     # {"host": 12, "ipv4": 3, "hf-token": 1, ...}
"""

from __future__ import annotations

import re
from functools import cache

from .redactor import Redactor
from .tree import Redacted, redact_bytes, redact_paths, refuse_output

# words log messages use that are also common host or user names; never replaced outside a
# name's own context (the knowledge base's signature words are added to these)
_LOG_WORDS = frozenset(
    "worker master main node server client trainer train test gpu cpu cuda nccl gloo torch python pytorch ubuntu debian "
    "docker admin default rank local global error warning info debug launcher agent store process device export test tester "
    "guest runner builder less user public storage shared data model models work workspace project projects code src opt "
    "app apps given cannot".split()
)


@cache
def keep_words() -> frozenset[str]:
    """Lower-case words that the knowledge base's signatures look for: a host or user
    name that is one of them is replaced only where it stands as a name."""
    from ..kb.loader import load_kb

    words: set[str] = set(_LOG_WORDS)
    try:
        kb = load_kb(None, check=False)
    except Exception:  # noqa: BLE001 - a broken knowledge base: the base words still hold
        return frozenset(words)
    for e in kb:
        for s in e.signatures:
            words.update(w.lower() for w in re.findall(r"[A-Za-z][A-Za-z_]{2,}", s.regex))
    return frozenset(words)


def new_redactor(job_ids: bool = False) -> Redactor:
    """A redactor for one report."""
    return Redactor(job_ids=job_ids, keep_words=keep_words())


__all__ = ["Redacted", "Redactor", "keep_words", "new_redactor", "redact_bytes", "redact_paths", "refuse_output"]
