"""Run every entry's examples through the real scanner (semgrep-style rule tests).

A ``match`` line must fire its entry; a ``no_match`` line must not; a line that fires a
second entry fails unless the two are related. ``python -m rankdoctor.kb.check`` prints
one line per problem and exits 1 when there is any.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from .loader import KBError, KnowledgeBase, load_kb


@dataclass(frozen=True)
class ExampleProblem:
    entry: str
    kind: str  # missed | false-match | cross-fire
    text: str
    detail: str = ""

    def __str__(self) -> str:
        extra = f" ({self.detail})" if self.detail else ""
        return f"{self.entry}: {self.kind}{extra}: {self.text[:160]}"


def fired_roles(kb: KnowledgeBase, line: str, scanner=None) -> dict[str, set[str]]:
    """The entries whose signatures fire on ``line`` read alone (several lines, for an entry
    read from a run's numbers), each with the roles that fired."""
    from ..diagnose.attribution import computed_readings
    from ..scan import Scanner, scan_text

    scanner = scanner or Scanner(kb)
    out: dict[str, set[str]] = {}
    result = scan_text(kb, line + "\n", scanner=scanner)
    for e in result.events:
        out.setdefault(e.entry, set()).add(e.role)
    # a computed signature fires where the scan found what it reads (a jump, a rank claimed twice)
    for entry, sig, *_ in computed_readings(kb, result):
        out.setdefault(entry.id, set()).add(sig.role.value)
    return out


def entries_firing(kb: KnowledgeBase, line: str, scanner=None) -> set[str]:
    return set(fired_roles(kb, line, scanner))


def allowed_fires(kb: KnowledgeBase, entry_id: str) -> set[str]:
    """The entries an example line of ``entry_id`` may fire besides it: its related entries,
    and an entry that is the fallback for a kind of line (every NCCL WARN line), which fires
    with the entries that know such a line (the engine reads the line as theirs)."""
    return {entry_id} | kb.related_to(entry_id) | {e.id for e in kb if e.catch_all}


def check_examples(kb: KnowledgeBase) -> list[ExampleProblem]:
    from ..scan import Scanner

    scanner = Scanner(kb)
    problems: list[ExampleProblem] = []
    for e in kb:
        allowed = allowed_fires(kb, e.id)
        for ex in e.examples.match:
            fired = entries_firing(kb, ex.text, scanner)
            if e.id not in fired:
                problems.append(ExampleProblem(e.id, "missed", ex.text))
            extra = fired - allowed
            if extra:
                problems.append(ExampleProblem(e.id, "cross-fire", ex.text, "also fires " + ", ".join(sorted(extra))))
        for ex in e.examples.no_match:
            fired = entries_firing(kb, ex.text, scanner)
            if e.id in fired:
                problems.append(ExampleProblem(e.id, "false-match", ex.text))
    return problems


def main(argv: list[str] | None = None) -> int:
    try:
        kb = load_kb()
    except KBError as exc:
        print(exc, file=sys.stderr)
        return 1
    problems = check_examples(kb)
    for p in problems:
        print(p)
    n_ex = sum(len(e.examples.match) + len(e.examples.no_match) for e in kb)
    print(f"{len(kb)} entries, {n_ex} examples, {len(problems)} problems", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
