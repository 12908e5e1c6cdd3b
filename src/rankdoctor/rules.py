"""``rankdoctor rules``: the encyclopedia's cause fingerprints as alerting rules for the
stacks people already run.

- Prometheus: one alerting rule per entry with a cause signature, over the metrics that
  ``rankdoctor watch --metrics-port`` serves (``rankdoctor_fingerprint_hits_total``), plus
  rules on the watch's own diagnosis, silent ranks and a stalled run.
- Loki: one ruler rule per cause signature, a LogQL line-filter pipeline built from the
  literal parts every line the signature matches must contain (``|= "literal"``: the
  cheapest filter Loki has; the longest literals first). A signature whose regex has no
  such literal of ``MIN_LITERAL`` characters falls back to its regex (``|~``) when RE2 can
  run it, else it is left out and named in a comment at the top of the file.

The literals come from Python's own regex parser (``re._parser``), so what counts as a
literal is exactly what ``re`` would match: escapes are resolved, groups flattened, a
repeated atom, a character class or a back-reference ends a literal, an alternation
contributes one literal per branch (a ``|~`` of those alternatives) when every branch has
one. A filter is therefore a necessary condition of the signature: Loki may count a line
the signature would not match (then ``rankdoctor diagnose`` on the logs says what it is),
never miss one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Union

try:  # Python 3.11+
    from re import _constants as _sre  # type: ignore[attr-defined]
    from re import _parser as _sre_parse  # type: ignore[attr-defined]
except ImportError:  # Python 3.10
    import sre_constants as _sre  # type: ignore[no-redef]
    import sre_parse as _sre_parse  # type: ignore[no-redef]

if TYPE_CHECKING:
    from .kb.loader import KnowledgeBase
    from .kb.model import Entry, Signature

MIN_LITERAL = 4  # shorter literals ("NCCL" is the shortest useful one) select too much
MAX_FILTERS = 3  # line filters per signature: the longest ones; more adds little
LOKI_SELECTOR = '{job=~".+"}'  # LogQL needs a stream selector; users narrow it (--selector)
LOKI_RANGE = "5m"
PROMETHEUS_METRIC = "rankdoctor_fingerprint_hits_total"

# a requirement of a regex: one literal, or alternatives (one literal from each branch)
Requirement = Union[str, tuple[str, ...]]

_REPEATS = tuple(getattr(_sre, n) for n in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") if hasattr(_sre, n))
_ZERO_WIDTH = (_sre.AT, _sre.ASSERT, _sre.ASSERT_NOT)


# -- literals a regex requires ------------------------------------------------------------
def requirements(regex: str) -> list[Requirement]:
    """What every string the regex matches contains, in the regex's order: literal runs,
    and alternations whose every branch requires a literal (the longest of each)."""
    parsed = _sre_parse.parse(regex)
    return _walk(parsed)


def _walk(items: Iterable[tuple[Any, Any]]) -> list[Requirement]:
    out: list[Requirement] = []
    run: list[str] = []

    def flush() -> None:
        if run:
            out.append("".join(run))
            run.clear()

    for op, av in items:
        if op is _sre.LITERAL:
            run.append(chr(av))
        elif op is _sre.SUBPATTERN:
            _group, add_flags, del_flags, sub = av
            if (add_flags | del_flags) & _sre.SRE_FLAG_IGNORECASE:
                flush()  # a case change inside: its letters do not spell a literal of this case
                continue
            inner = _walk(sub)
            # a plain group's text joins the run around it when the group is one literal run
            if len(inner) == 1 and isinstance(inner[0], str) and _is_literal(sub):
                run.append(inner[0])
            else:
                flush()
                out.extend(inner)
        elif op in _REPEATS:
            lo, _hi, sub = av
            flush()
            if lo >= 1:
                out.extend(_walk(sub))  # required at least once, but not next to its neighbours
        elif op is _sre.BRANCH:
            flush()
            picks = []
            for branch in av[1]:
                lits = [r for r in _walk(branch) if isinstance(r, str)]
                if not lits:
                    picks = []
                    break
                picks.append(max(lits, key=len))
            if picks:
                out.append(tuple(picks))
        elif op in _ZERO_WIDTH:
            continue  # an anchor or a lookaround consumes nothing: the run goes on
        else:
            flush()  # a class, any character, a category, a back-reference
    flush()
    return out


def _is_literal(sub: Iterable[tuple[Any, Any]]) -> bool:
    return all(op is _sre.LITERAL or op is _sre.SUBPATTERN and _is_literal(av[3]) for op, av in sub)


def _ignores_case(regex: str, ignore_case: bool) -> bool:
    return ignore_case or bool(_sre_parse.parse(regex).state.flags & _sre.SRE_FLAG_IGNORECASE)


def line_filters(regex: str, ignore_case: bool = False) -> list[Requirement]:
    """The line filters for one signature: its required literals (edges' blanks taken off)
    of at least ``MIN_LITERAL`` characters, alternations whose every literal is that long,
    the longest first (the regex's order among equals), at most ``MAX_FILTERS``."""
    found: list[tuple[int, int, Requirement]] = []
    for i, req in enumerate(requirements(regex)):
        if isinstance(req, str):
            lit = req.strip()
            if len(lit) >= MIN_LITERAL:
                found.append((len(lit), i, lit))
        else:
            alts = tuple(dict.fromkeys(a.strip() for a in req))
            if all(len(a) >= MIN_LITERAL for a in alts):
                found.append((min(len(a) for a in alts), i, alts))
    found.sort(key=lambda f: (-f[0], f[1]))
    return [f[2] for f in found[:MAX_FILTERS]]


# -- quoting -------------------------------------------------------------------------------
def go_string(s: str) -> str:
    """A double-quoted string literal as Go (and so LogQL) reads it: JSON's escapes are a
    subset of Go's (backslash, quote, control characters, \\uXXXX), other text stays as it is."""
    return json.dumps(s, ensure_ascii=False)


_RE2_SPECIAL = set("\\.+*?()|[]{}^$")


def re2_escape(s: str) -> str:
    """A literal as an RE2 pattern: only its metacharacters escaped (RE2 reads an escaped
    punctuation mark as itself, but not every escape Python's re.escape writes)."""
    return "".join("\\" + c if c in _RE2_SPECIAL else c for c in s)


def logql_pipeline(filters: list[Requirement], ignore_case: bool) -> str:
    """The line-filter pipeline: ``|= "lit"`` for a literal, ``|~ "(?i)lit"`` for a literal
    of a case-insensitive signature, ``|~ "a|b"`` for alternatives."""
    parts = []
    for f in filters:
        if isinstance(f, str) and not ignore_case:
            parts.append("|= " + go_string(f))
        else:
            alts = [f] if isinstance(f, str) else list(f)
            pattern = "|".join(re2_escape(a) for a in alts)
            parts.append("|~ " + go_string(("(?i)" if ignore_case else "") + pattern))
    return " ".join(parts)


def _re2_ok(regex: str, ignore_case: bool) -> bool:
    import re2

    options = re2.Options()
    options.log_errors = False
    options.case_sensitive = not ignore_case
    try:
        re2.compile(regex, options)
    except re2.error:
        return False
    return True


def _template_text(text: str) -> str:
    """Text shown in a rule annotation, which both Prometheus and Loki expand as a Go
    template: a literal ``{{`` would start an action."""
    return text.replace("{{", '{{ "{{" }}')


# -- the rule files -----------------------------------------------------------------------
def alert_name(entry_id: str) -> str:
    """``nccl-watchdog-timeout`` -> ``RankdoctorNcclWatchdogTimeout`` (a valid alert name)."""
    return "Rankdoctor" + "".join(p[:1].upper() + p[1:] for p in entry_id.split("-"))


def _cause_entries(kb: "KnowledgeBase", only: list[str] | None) -> list["Entry"]:
    if only:
        missing = [e for e in only if e not in kb]
        if missing:
            raise KeyError(", ".join(missing))
        chosen = [kb.get(e) for e in only]
        causeless = [e.id for e in chosen if not any(s.role.value == "cause" for s in e.signatures)]
        if causeless:
            raise ValueError(f"{', '.join(causeless)}: no cause signature (only symptoms or context: what other failures cause)")
    else:
        chosen = list(kb)
    return sorted((e for e in chosen if any(s.role.value == "cause" for s in e.signatures)), key=lambda e: (e.class_, e.id))


_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\bvs)[.!?](?=\s+[A-Z(`\"]|$)")
_DESCRIPTION_MAX = 300


def _first_sentence(text: str) -> str:
    """The summary's first sentence (not cut at "e.g."), at most ``_DESCRIPTION_MAX`` characters."""
    text = " ".join(text.split())
    m = _SENTENCE_END.search(text)
    first = text[: m.end()] if m else text
    return first if len(first) <= _DESCRIPTION_MAX else first[: _DESCRIPTION_MAX - 1].rstrip() + "…"


def prometheus_rules(kb: "KnowledgeBase", only: list[str] | None = None) -> dict[str, Any]:
    """Alerting rules over ``rankdoctor watch``'s metrics: one per entry with a cause
    signature (grouped by class), and the watch's own diagnosis, silence and stall."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for e in _cause_entries(kb, only):
        groups.setdefault(e.class_, []).append(
            {
                "alert": alert_name(e.id),
                "expr": f'{PROMETHEUS_METRIC}{{entry="{e.id}",role="cause"}} > 0',
                "labels": {"severity": e.severity.value},
                "annotations": {
                    "summary": _template_text(e.title) + " on rank {{ $labels.rank }}",
                    "description": _template_text(_first_sentence(e.summary))
                    + " rankdoctor watch saw this entry's cause fingerprint {{ $value }} time(s) on rank {{ $labels.rank }};"
                    + f" `rankdoctor kb show {e.id}` has the fix, `rankdoctor diagnose` on the run's logs says which rank started it.",
                },
            }
        )
    out = [{"name": "rankdoctor-watch", "rules": _watch_rules()}]
    out += [{"name": f"rankdoctor-{klass}", "rules": rules} for klass, rules in sorted(groups.items())]
    return {"groups": out}


def _watch_rules() -> list[dict[str, Any]]:
    return [
        {
            "alert": "RankdoctorDiagnosis",
            "expr": 'rankdoctor_diagnosis_info{verdict!="no-failure-found"} == 1',
            "labels": {"severity": "critical"},
            "annotations": {
                "summary": "{{ $labels.verdict }}: {{ $labels.entry }} ({{ $labels.class }}) started on rank {{ $labels.initiating_ranks }}",
                "description": "rankdoctor watch sees a failure in the run ({{ $labels.verdict }}): entry {{ $labels.entry }},"
                " class {{ $labels.class }}, initiating rank(s) {{ $labels.initiating_ranks }}."
                " `rankdoctor kb show {{ $labels.entry }}` has the fix; an inconclusive one names the fact to collect"
                " (`rankdoctor diagnose` on the logs).",
            },
        },
        {
            "alert": "RankdoctorRankSilent",
            "expr": "rankdoctor_rank_silent == 1",
            "labels": {"severity": "high"},
            "annotations": {
                "summary": "rank {{ $labels.rank }} writes nothing while the other ranks write",
                "description": "Rank {{ $labels.rank }} has written no line for the watch's --silent-after seconds while at"
                " least half of the other ranks wrote: hung, dead or stuck in a collective the others have not reached."
                " Take its stacks now (py-spy dump), before the collective timeout kills the job.",
            },
        },
        {
            "alert": "RankdoctorRunStalled",
            "expr": "rankdoctor_stalled == 1",
            "for": "5m",
            "labels": {"severity": "high"},
            "annotations": {
                "summary": "every rank silent",
                "description": "No rank has written a line for the watch's --silent-after seconds: the run is hung (or finished"
                " without saying so). Dump Flight Recorder traces on all ranks and run `rankdoctor fr` on them.",
            },
        },
    ]


def loki_rules(kb: "KnowledgeBase", only: list[str] | None = None, selector: str = LOKI_SELECTOR) -> tuple[dict[str, Any], list[str]]:
    """Loki ruler rules, one per cause signature, grouped by class; and the signatures left
    out (no literal and no regex RE2 runs), as ``entry/signature: why``."""
    groups: dict[str, list[dict[str, Any]]] = {}
    left_out: list[str] = []
    for e in _cause_entries(kb, only):
        for s in e.signatures:
            if s.role.value != "cause":
                continue
            pipeline = _signature_pipeline(s)
            if pipeline is None:
                left_out.append(f"{e.id}/{s.id}: no literal of {MIN_LITERAL}+ characters, and RE2 cannot run its regex")
                continue
            groups.setdefault(e.class_, []).append(
                {
                    "alert": alert_name(e.id),
                    "expr": f"count_over_time({selector} {pipeline} [{LOKI_RANGE}]) > 0",
                    "labels": {"severity": e.severity.value, "entry": e.id, "class": e.class_, "signature": s.id},
                    "annotations": {
                        "summary": _template_text(e.title),
                        "description": _template_text(_first_sentence(e.summary))
                        + f" {{{{ $value }}}} line(s) in the last {LOKI_RANGE} carry the literal parts of its cause signature {s.id};"
                        + f" `rankdoctor diagnose` on the run's logs confirms it and names the rank, `rankdoctor kb show {e.id}` has the fix.",
                    },
                }
            )
    return {"groups": [{"name": f"rankdoctor-{k}", "rules": r} for k, r in sorted(groups.items())]}, left_out


def _signature_pipeline(s: "Signature") -> str | None:
    icase = _ignores_case(s.regex, s.ignore_case)
    filters = line_filters(s.regex, s.ignore_case)
    if filters:
        return logql_pipeline(filters, icase)
    if _re2_ok(s.regex, icase):
        return "|~ " + go_string(("(?i)" if icase and not s.regex.startswith("(?i)") else "") + s.regex)
    return None


def render(kb: "KnowledgeBase", fmt: str, only: list[str] | None = None, selector: str = LOKI_SELECTOR) -> str:
    """The rule file as YAML text."""
    import yaml


    head = [f"# rankdoctor rules --format {fmt}: generated from the failure encyclopedia; do not edit."]
    if fmt == "prometheus":
        doc = prometheus_rules(kb, only)
        head.append(f"# Rules over the metrics of `rankdoctor watch --metrics-port` ({PROMETHEUS_METRIC} and rankdoctor_*).")
    else:
        doc, left_out = loki_rules(kb, only, selector)
        head.append(f"# Loki ruler rules: LogQL line filters from the literal parts of each cause signature; stream selector {selector}.")
        if left_out:
            head.append("# Cause signatures left out:")
            head += [f"#   {x}" for x in left_out]
    body = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=1 << 16, default_flow_style=False)
    return "\n".join(head) + "\n" + body
