"""Which regexes can make Python's ``re`` backtrack super-linearly on one line.

``re`` is a backtracking engine: ``rank\\s*:?\\s*(?P<rank>\\d+)`` on ``rank`` followed by a
million spaces tries every way of splitting the spaces between the two ``\\s*`` (hours),
and ``(\\w+\\s?)*`` tries every way of cutting a word into iterations (exponential). Two
shapes cause it, and ``problems`` finds both on the parsed pattern:

- two unbounded repeats that can each take a run of the same character ``c``, with nothing
  between them that needs a character other than ``c``, and something after them that
  can still fail (``\\s*:?\\s*\\d``, ``\\s* \\s*x``, ``.*\\s+x``; ``\\w+(?:.*?y)?`` at the end
  of a pattern is fine: once ``\\w+`` has matched, the match cannot fail any more);
- a repeat (more than once) of a body that holds an unbounded repeat and no required
  part that the repeat cannot take (``(\\w+\\s?)*``; ``(\\d+,)*`` is fine: ``,`` ends
  every iteration).

Character classes are compared on a sample alphabet (ASCII and a few non-ASCII letters,
digits and spaces), which is what the knowledge base's classes are made of. The scanner
also runs lines longer than ``scan.LONG_LINE`` through a linear-time engine, so what this
check cannot see costs a bounded amount per line, never hours.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

try:  # Python 3.11+
    from re import _constants as _c, _parser as _p  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _p  # type: ignore[no-redef]

Chars = frozenset[str]
ALPHABET: Chars = frozenset([chr(i) for i in range(128)] + ["\xa0", "\u2003", "é", "Ж", "٣"])
_NONE: Chars = frozenset()
_POSSESSIVE = getattr(_c, "POSSESSIVE_REPEAT", None)  # Python 3.11+: a++ never gives back
_REPEATS = {_c.MAX_REPEAT, _c.MIN_REPEAT, _POSSESSIVE} - {None}
_CATEGORIES = {
    _c.CATEGORY_DIGIT: r"\d", _c.CATEGORY_NOT_DIGIT: r"\D",
    _c.CATEGORY_SPACE: r"\s", _c.CATEGORY_NOT_SPACE: r"\S",
    _c.CATEGORY_WORD: r"\w", _c.CATEGORY_NOT_WORD: r"\W",
}


@lru_cache(maxsize=None)
def _category(cat: object) -> Chars:
    rx = re.compile(_CATEGORIES.get(cat, r"[\s\S]"))
    return frozenset(ch for ch in ALPHABET if rx.fullmatch(ch))


def _cased(chars: set[str], ignore_case: bool) -> Chars:
    if ignore_case:
        chars = chars | {ch.lower() for ch in chars} | {ch.upper() for ch in chars}
    return frozenset(chars) & ALPHABET


def _atom(op: object, av, ic: bool) -> Chars | None:
    """The characters a one-character atom matches (None: not such an atom)."""
    if op is _c.LITERAL:
        return _cased({chr(av)}, ic)
    if op is _c.NOT_LITERAL:
        return ALPHABET - _cased({chr(av)}, ic)
    if op is _c.ANY:
        return ALPHABET - {"\n"}
    if op is not _c.IN:
        return None
    chars: set[str] = set()
    negate = False
    for iop, iav in av:
        if iop is _c.NEGATE:
            negate = True
        elif iop is _c.LITERAL:
            chars.add(chr(iav))
        elif iop is _c.RANGE:
            chars |= {ch for ch in ALPHABET if iav[0] <= ord(ch) <= iav[1]}
        elif iop is _c.CATEGORY:
            chars |= _category(iav)
    got = _cased(chars, ic)
    return ALPHABET - got if negate else got


@dataclass
class _Node:
    """What the check needs to know of a piece of a pattern."""

    nullable: bool  # it can match the empty string
    sure: bool  # ... and taking the empty string cannot fail (no anchor or lookaround on the way)
    chars: Chars  # every character it can take
    runs: Chars  # characters c such that it can match a string of c alone (or nothing)
    # unbounded repeats that can start its match: what each repeats alone, and whether
    # nothing after it inside this piece can fail
    heads: list[tuple[Chars, bool]] = field(default_factory=list)
    tails: list[Chars] = field(default_factory=list)  # ... and that can end it
    inner: list[Chars] = field(default_factory=list)  # the characters of every unbounded repeat inside it


class _Checker:
    def __init__(self, ignore_case: bool):
        self.ic = ignore_case
        self.found: list[str] = []

    def seq(self, items, then_sure: bool) -> _Node:
        """A concatenation; ``then_sure``: what follows it in the pattern cannot fail."""
        nodes: list[_Node] = []
        sure_after: list[bool] = []
        sure = then_sure
        for op, av in reversed(items):  # each item is checked knowing what follows it
            sure_after.append(sure)
            nodes.append(self.item(op, av, sure))
            sure = sure and nodes[-1].sure
        nodes.reverse()
        sure_after.reverse()
        # open repeats: what a run could still be split on, up to here
        open_: list[Chars] = []
        for node, after in zip(nodes, sure_after):
            for h, then in node.heads:
                shared = next((o & h for o in open_ if o & h), None)
                # (the second repeat followed only by what cannot fail: once it matches, so
                # does the pattern, and the first is not made to give back more than once)
                if shared and not (then and after):
                    self.found.append(_describe("two unbounded repeats in a row can both take", shared))
                    break
            open_ = [o & node.runs for o in open_ if o & node.runs]
            # a repeat followed only by what cannot fail is never made to give back
            open_ += node.tails if not after else []
        heads: list[tuple[Chars, bool]] = []
        for i, n in enumerate(nodes):
            rest_sure = all(m.sure for m in nodes[i + 1 :])
            heads += [(h, then and rest_sure) for h, then in n.heads]
            if not n.nullable:
                break
        tails: list[Chars] = []
        for n in reversed(nodes):
            tails += n.tails
            if not n.nullable:
                break
        runs = ALPHABET
        for n in nodes:
            runs &= n.runs
        return _Node(
            all(n.nullable for n in nodes),
            all(n.sure for n in nodes),
            frozenset().union(*(n.chars for n in nodes)),
            runs,
            heads,
            tails,
            [u for n in nodes for u in n.inner],
        )

    def item(self, op: object, av, then_sure: bool) -> _Node:
        atom = _atom(op, av, self.ic)
        if atom is not None:
            return _Node(False, False, atom, atom)
        if op is _c.AT:
            return _Node(True, False, _NONE, ALPHABET)
        if op in (_c.ASSERT, _c.ASSERT_NOT):
            self.seq(av[1], True)  # a lookaround's own pattern, checked on its own
            return _Node(True, False, _NONE, ALPHABET)
        if op is _c.SUBPATTERN:
            _group, add, remove, items = av
            outer, self.ic = self.ic, (self.ic or bool(add & re.I)) and not remove & re.I  # (?i:...)
            try:
                return self.seq(items, then_sure)
            finally:
                self.ic = outer
        if op is getattr(_c, "ATOMIC_GROUP", None):
            node = self.seq(av, then_sure)
            return _Node(node.nullable, node.sure, node.chars, node.runs)  # gives nothing back
        if op is _c.BRANCH:
            alts = [self.seq(a, then_sure) for a in av[1]]
            return _Node(
                any(a.nullable for a in alts),
                any(a.sure for a in alts),
                frozenset().union(*(a.chars for a in alts)),
                frozenset().union(*(a.runs for a in alts)),
                [h for a in alts for h in a.heads],
                [t for a in alts for t in a.tails],
                [u for a in alts for u in a.inner],
            )
        if op in _REPEATS:
            lo, hi, items = av
            body = self.seq(items, False)
            if hi == _c.MAXREPEAT or hi > 1:
                self._nested(body, items)
            nullable = lo == 0 or body.nullable
            runs = ALPHABET if lo == 0 else body.runs
            sure = lo == 0 or body.sure
            if hi != _c.MAXREPEAT or op is _POSSESSIVE:
                return _Node(nullable, sure, body.chars, runs, body.heads, body.tails, body.inner)
            # what a run of one character can be split on: \d+ any digit, (?:,\d+)* none
            run = body.chars & body.runs
            return _Node(nullable, sure, body.chars, runs, [(run, True)] if run else [], [run] if run else [], [body.chars, *body.inner])
        # a back-reference, a conditional: anything, and it can fail
        return _Node(True, False, ALPHABET, ALPHABET)

    def _nested(self, body: _Node, items) -> None:
        """A repeated body holding an unbounded repeat is safe only when every iteration
        needs a character that none of its unbounded repeats can take (``(\\d+,)*``)."""
        if not body.inner:
            return
        taken = frozenset().union(*body.inner)
        while len(items) == 1 and items[0][0] is _c.SUBPATTERN:  # (\d+,)* holds (?:\d+,)
            items = items[0][1][-1]
        quiet = _Checker(self.ic)  # (the body's own problems are reported by ``seq``)
        if not any(not n.nullable and not n.chars & taken for n in (quiet.item(op, av, False) for op, av in items)):
            self.found.append(_describe("a repeated group holds an unbounded repeat that can take", taken))


def _describe(what: str, chars: Chars) -> str:
    shown = "".join(sorted(chars))
    return f"{what} {shown[:12]!r}{'…' if len(shown) > 12 else ''}"


def problems(regex: str, ignore_case: bool = False) -> list[str]:
    """Why ``re`` could backtrack super-linearly on some line with this pattern (empty:
    neither shape is in it)."""
    parsed = _p.parse(regex, re.I if ignore_case else 0)
    checker = _Checker(ignore_case or bool(parsed.state.flags & re.I))
    checker.seq(parsed, True)
    return list(dict.fromkeys(checker.found))
