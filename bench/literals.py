"""The longest literal substring of each signature regex, for a comparable rg/grep workload.

A "literal" is a run of characters that every match must contain, in order and next to
each other: literal characters (and groups with one alternative, not repeated) chain;
anything else (a class, a wildcard, an alternation, a repeat, an optional part, an
assertion) ends the run. Case-insensitive signatures are written as they appear (``rg
-F`` / ``grep -F`` match case-sensitively) — a literal search finds at least the lines a
case-sensitive pattern finds.

    python bench/literals.py OUT.txt [--entries DIR] [--facts]   # prints kept/skipped counts
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

try:  # Python 3.11+
    from re import _constants as C, _parser as P  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as C  # type: ignore[no-redef]
    import sre_parse as P  # type: ignore[no-redef]

MIN_LEN = 4


def _runs(items) -> list[str]:
    """Maximal literal runs of a parsed sequence; the current run is the last element."""
    runs: list[str] = [""]
    for op, av in items:
        if op is C.LITERAL:
            runs[-1] += chr(av)
        elif op is C.SUBPATTERN:
            sub = av[-1]  # (group, add_flags, del_flags, pattern)
            if av[1] or av[2]:  # inline flags such as (?i:...) change what a literal means
                runs.append("")
                continue
            inner = _runs(sub)
            if len(inner) == 1:
                runs[-1] += inner[0]
            else:
                runs[-1] += inner[0]
                runs.extend(inner[1:-1])
                runs.append(inner[-1])
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT) and av[0] >= 1:
            # the repeated part occurs at least once: its literals are required, but they
            # do not chain with what comes before or after
            inner = _runs(av[2])
            runs.extend(inner)
            runs.append("")
        elif op is C.BRANCH:
            runs.append("")  # alternatives: no single required literal
        elif op is C.AT and av in (C.AT_BEGINNING, C.AT_BEGINNING_STRING, C.AT_END, C.AT_END_STRING):
            runs.append("")
        else:  # IN, ANY, NOT_LITERAL, optional repeats, assertions, group references
            runs.append("")
    return runs


def longest_literal(regex: str, flags: int = 0) -> str:
    """The longest run of characters that every match of ``regex`` contains ("" if none)."""
    parsed = P.parse(regex, flags)
    if parsed.state.flags & re.IGNORECASE and not flags & re.IGNORECASE:
        flags |= re.IGNORECASE  # a global (?i) — still written as it appears
    best = max(_runs(list(parsed)), key=len)
    return best


def literals_for(regexes: list[str], min_len: int = MIN_LEN) -> tuple[list[str], int]:
    """(unique literals of length >= min_len in first-seen order, number of regexes skipped)."""
    out: list[str] = []
    seen: set[str] = set()
    skipped = 0
    for rx in regexes:
        lit = longest_literal(rx)
        if len(lit) < min_len or "\n" in lit:
            skipped += 1
            continue
        if lit not in seen:
            seen.add(lit)
            out.append(lit)
    return out, skipped


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--entries", type=Path, default=None)
    ap.add_argument("--facts", action="store_true", help="also the structural fact patterns the scanner runs")
    a = ap.parse_args(argv)
    from rankdoctor.kb.loader import load_kb

    kb = load_kb(a.entries)
    regexes = [s.regex for e in kb for s in e.signatures]
    n_sig = len(regexes)
    if a.facts:
        from rankdoctor.facts import FACTS

        regexes += list(FACTS.values())
    lits, skipped = literals_for(regexes)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text("".join(lit + "\n" for lit in lits), encoding="utf-8")
    print(f"{a.out}: {len(lits)} literals from {len(regexes)} regexes ({n_sig} signatures"
          f"{', ' + str(len(regexes) - n_sig) + ' facts' if a.facts else ''}); {skipped} skipped (no literal of {MIN_LEN}+ characters)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
