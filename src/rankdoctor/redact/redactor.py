"""Replace what is private with consistent pseudonyms: the same host is ``host-3`` in every
file, line and path of one report.

Two passes over everything that will be redacted together: ``learn`` finds the private
values (detect.py) and the host and user names worth replacing everywhere; ``seal`` gives
each a pseudonym in the order they were first seen; ``apply`` replaces them. A name learned
in one context (an NCCL prefix) is replaced in free text too, unless it is a word that log
messages use (``worker``, ``ubuntu`` where the knowledge base says it means something):
such names are replaced only where they stand as names.

Pseudonyms keep the shape the log reader relies on: a host name stays a host name
(``host-3``; ``hostc`` for one without digits or hyphens, so a line prefix that was not a
host prefix does not become one), an IPv4 address stays an address (documentation ranges,
RFC 5737), an IPv6 one stays IPv6 (2001:db8::/32, RFC 3849), and each line keeps its line
number (a PEM key body is replaced line by line).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from . import detect

_GLOBAL_KINDS = {"host", "user"}  # names also replaced outside their contexts (when distinctive)
_SECRET_KINDS_SHAPE = re.compile(r"^[\w\-+/=.]+$")
_HEX_ID = re.compile(r"[0-9a-f]{32,}|[0-9A-F]{32,}")
_KEY_LINES = re.compile(r"((?:\\[nrt]|\s)+)")  # a PEM body's line breaks, real or JSON-escaped


def _letters(n: int) -> str:
    """1 -> a, 26 -> z, 27 -> aa."""
    out = ""
    while n > 0:
        n, r = divmod(n - 1, 26)
        out = chr(97 + r) + out
    return out


def _ipv4_pool() -> Iterable[str]:
    for net in ("192.0.2", "198.51.100", "203.0.113"):
        for i in range(1, 255):
            yield f"{net}.{i}"
    for a in range(256):
        for b in range(1, 255):
            yield f"240.0.{a}.{b}"  # reserved (class E): never a real host


class Redactor:
    """One report's worth of pseudonyms. ``keep_words``: lower-case words that log
    messages use (the knowledge base's), never replaced outside a name's own context."""

    def __init__(self, job_ids: bool = False, keep_words: frozenset[str] = frozenset()):
        self.job_ids = job_ids
        self.keep_words = keep_words
        self.seen: dict[str, str] = {}  # value -> kind, in the order first seen
        self.pseudonym: dict[str, str] = {}
        self.counts: Counter[str] = Counter()  # replacements made, by kind
        self._numbers: Counter[str] = Counter()
        self._ipv4 = iter(())
        self._global: re.Pattern[str] | None = None
        self._global_secrets: re.Pattern[str] | None = None
        self._sealed = False
        self._short: dict[str, str] = {}
        self._memo: dict[int, list] = {}  # the spans of each text learned, reused by apply (one detection a text)

    # -- pass 1 ----------------------------------------------------------------------------
    def learn(self, text: str) -> None:
        """Note the private values in ``text`` (call for every text before ``seal``)."""
        spans = list(self._spans(text))
        if len(text) > 256:
            self._memo[hash(text)] = spans
        for _s, _e, kind, value in spans:
            self.seen.setdefault(value, kind)
        for h in detect.prefix_hosts(text):
            self.seen.setdefault(h, "host")

    def learn_obj(self, obj: Any) -> None:
        """Learn from every string in plain data (a dump: thousands of strings, few distinct)."""
        self.learn("\n".join(sorted(set(_strings(obj)))))

    def seal(self) -> None:
        """Give every learned value its pseudonym, and build the pattern that finds the
        names and secrets to replace everywhere."""
        taken = set(self.seen)
        self._ipv4 = (ip for ip in _ipv4_pool() if ip not in taken)
        for value, kind in self.seen.items():
            self._name(value, kind, taken)
        everywhere = [v for v, k in self.seen.items() if self._everywhere(v, k)]
        # names end where a name does (node1 is not in node12, nor in my-node1); a secret is
        # found wherever it stands (worker-<id>*out), between letters and digits only
        self._global = _literal_pattern([v for v in everywhere if self.seen[v] in _GLOBAL_KINDS], _NAME_CHAR)
        self._global_secrets = _literal_pattern([v for v in everywhere if self.seen[v] not in _GLOBAL_KINDS], _ALNUM)
        self._sealed = True

    def _everywhere(self, value: str, kind: str) -> bool:
        if kind not in _GLOBAL_KINDS:
            return kind not in ("ipv4", "ipv6", "email") and len(value) >= 6 and bool(_SECRET_KINDS_SHAPE.match(value))
        low = value.lower()
        if low in self.keep_words or len(value) < 3:
            return False
        if kind == "host":
            return bool(re.search(r"[\d\-.]", value)) or len(value) >= 5
        return bool(re.search(r"[\d_\-.]", value)) or len(value) >= 5

    def _name(self, value: str, kind: str, taken: set[str] | None = None) -> str:
        got = self.pseudonym.get(value)
        if got is not None:
            return got
        taken = taken if taken is not None else set(self.seen)
        while True:
            self._numbers[kind] += 1
            n = self._numbers[kind]
            if kind == "host":
                name = f"host-{n}" if re.search(r"[\d\-]", value) else f"host{_letters(n)}"
            elif kind == "user":
                name = f"user-{n}" if re.search(r"[\d\-_]", value) else f"user{_letters(n)}"
            elif kind == "ipv4":
                name = next(self._ipv4)
            elif kind == "ipv6":
                name = f"2001:db8::{n:x}"
            elif kind == "email":
                name = f"user-{n}@example.invalid"
            elif kind in ("job", "pod"):
                name = f"{kind}-{n}"
            elif _HEX_ID.fullmatch(value):
                # a hex id keeps its shape (Ray's actor and node ids: signatures read them as hex)
                name = f"{n:x}".rjust(len(value), "0")
            else:
                name = f"REDACTED-{kind}-{n}"
            if name not in taken:
                break
        self.pseudonym[value] = name
        return name

    # -- pass 2 ----------------------------------------------------------------------------
    def apply(self, text: str, marks: list[tuple[int, int, str, str]] | None = None) -> str:
        """``text`` with every private value replaced. ``marks`` (when given) receives
        ``(start, end, kind, original)`` of each replacement in the returned text."""
        if not self._sealed:
            raise RuntimeError("seal() before apply()")
        if marks is None and len(text) <= 256:  # file and folder names repeat: each is redacted once
            got = self._short.get(text)
            if got is None:
                got = self._short[text] = self._apply(text, None)
            return got
        return self._apply(text, marks)

    def _apply(self, text: str, marks: list[tuple[int, int, str, str]] | None) -> str:
        memo = self._memo.pop(hash(text), None) if len(text) > 256 else None
        spans = list(self._spans(text)) if memo is None else list(memo)
        for rx, inside in ((self._global, _NAME_CHAR), (self._global_secrets, _ALNUM)):
            if rx is not None:
                spans.extend((m.start(), m.end(), self.seen[m[0]], m[0]) for m in _bounded(rx, inside, text))
        if not spans:
            return text
        spans.sort(key=lambda s: (s[0], -(s[1] - s[0])))
        out: list[str] = []
        pos = 0
        shift = 0
        for start, end, kind, value in spans:
            if start < pos:
                continue  # inside a longer match already replaced
            kind = self.seen.get(value, kind)
            if kind == "private-key":
                name = self._name(value, kind)  # line by line: the lines keep their numbers
                new = "".join(p if i % 2 else (name if p else "") for i, p in enumerate(_KEY_LINES.split(value)))
            else:
                new = self._name(value, kind)
            out.append(text[pos:start])
            if marks is not None:
                marks.append((start + shift, start + shift + len(new), kind, value))
            out.append(new)
            shift += len(new) - (end - start)
            pos = end
            self.counts[kind] += 1
        out.append(text[pos:])
        return "".join(out)

    def apply_obj(self, obj: Any, _done: dict[str, str] | None = None) -> Any:
        """A copy of plain data (a Flight Recorder dump) with every string redacted (each
        distinct string once: a dump repeats its frames' file names thousands of times)."""
        done = _done if _done is not None else {}
        if isinstance(obj, str):
            got = done.get(obj)
            if got is None:
                got = done[obj] = self.apply(obj)
            return got
        if isinstance(obj, dict):
            return {self.apply_obj(k, done): self.apply_obj(v, done) for k, v in obj.items()}
        if isinstance(obj, list):
            return [self.apply_obj(v, done) for v in obj]
        if isinstance(obj, tuple):
            return tuple(self.apply_obj(v, done) for v in obj)
        return obj

    def _spans(self, text: str):
        yield from detect.secrets(text)
        yield from detect.shapes(text)
        yield from detect.contexts(text, self.job_ids)

    def replaced(self) -> dict[str, int]:
        """How many replacements of each kind were made."""
        return dict(sorted(self.counts.items()))


def _strings(obj: Any) -> Iterable[str]:
    stack = [obj]
    while stack:
        o = stack.pop()
        if isinstance(o, str):
            yield o
        elif isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, (list, tuple)):
            stack.extend(o)


_NAME_CHAR = re.compile(r"[\w\-]")  # a name ends where these do: node1 is not in node12 nor my-node1
_ALNUM = re.compile(r"[A-Za-z0-9]")  # a secret is found wherever it stands (worker-<id>*out)


def _bounded(rx: re.Pattern[str], inside: re.Pattern[str], text: str):
    """The matches of ``rx`` not preceded by a character of ``inside`` (checked here, not by
    a lookbehind in front of the pattern: that would be tried at every position)."""
    pos = 0
    while (m := rx.search(text, pos)) is not None:
        if m.start() and inside.match(text, m.start() - 1):
            pos = m.start() + 1
            continue
        yield m
        pos = m.end()


def _literal_pattern(words: list[str], inside: re.Pattern[str]) -> re.Pattern[str] | None:
    """One pattern for many literals, as a trie (an alternation of thousands of words would
    be tried one by one at every position), bounded so that ``node1`` is not found inside
    ``node12``."""
    if not words:
        return None
    trie: dict = {}
    for w in words:
        node = trie
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    # built bottom-up without recursion: a token of thousands of characters (a base64 config
    # on a launcher's command line) is a chain of as many trie nodes
    order: list[dict] = []
    stack = [trie]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(sub for ch, sub in node.items() if ch)
    built: dict[int, str] = {}
    for node in reversed(order):  # every node after all of its children
        branches = [re.escape(ch) + built.pop(id(sub)) for ch, sub in sorted(node.items()) if ch]
        if not branches:
            built[id(node)] = ""
            continue
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        built[id(node)] = f"(?:{body})?" if "" in node else body
    try:
        return re.compile(built[id(trie)] + f"(?!{inside.pattern})")
    except (RecursionError, re.error):
        # words that are prefixes of each other a thousand deep nest the trie's optional groups
        # deeper than re's parser goes: a flat alternation, longest first, finds the same words
        flat = "|".join(re.escape(w) for w in sorted(set(words), key=len, reverse=True))
        return re.compile(f"(?:{flat})(?!{inside.pattern})")
