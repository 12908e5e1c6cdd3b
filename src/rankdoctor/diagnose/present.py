"""From the winning candidate to the Finding a user reads: evidence grouped across ranks,
the root-cause sentence, the fix, and the facts still missing."""

from __future__ import annotations

from ..events import Event
from .collectives import compress_ranks
from ..ingest.prefix import parse_prefix
from .common import DIAGNOSED_AT, MAX_EVIDENCE, PREFIX_MASK, Candidate, event_key, fingerprint, weak
from .model import Evidence, Finding
from .traceback import user_call_site

def _group(events: list[Event]) -> list[tuple[Event, int, list[int]]]:
    groups: dict[tuple[str, str], list[Event]] = {}
    order: list[tuple[str, str]] = []
    for ev in events:
        k = (ev.signature, fingerprint(ev.text))
        if k not in groups:
            groups[k] = []
            order.append(k)
        groups[k].append(ev)
    out = []
    for k in order:
        evs = groups[k]
        ranks = sorted({e.rank for e in evs[1:] if e.rank is not None and e.rank != evs[0].rank})
        out.append((evs[0], len(evs) - 1, ranks))
    return out


def _evidence(c: Candidate, events: list[Event], initiating: int | None) -> list[Evidence]:
    primary = list(c.events)
    if initiating is not None and c.kind == "cause":
        # the failing rank's own Python exception, even when no entry names it
        primary = [e for e in events if e.role == "trace" and e.rank == initiating][-2:] + primary
    in_primary = {id(e) for e in primary}
    extra = [e for e in events if e.role == "symptom" and id(e) not in in_primary]
    extra.sort(key=event_key)
    ordered = primary + extra
    # the initiating rank's own lines first, then by role, then time
    # an entry's own match before the bare "python exception" of the same line
    role_rank = {"cause": 0, "fr-culprit": 0, "trace": 0.5, "context": 1, "tail": 1, "fr": 1, "symptom": 2}
    ordered.sort(
        key=lambda e: (
            0 if (initiating is not None and e.rank == initiating) else 1,
            role_rank.get(e.role, 3),
            _is_error_file(e.source),  # torchrun's error.json repeats what stderr said: stderr first
            event_key(e),
        )
    )
    seen_lines: set[tuple[str, int]] = set()
    said: set[tuple[int | None, str, str]] = set()
    unique = []
    for ev in ordered:  # one evidence item per log line, whatever matched it
        if (ev.source, ev.line) in seen_lines:
            continue
        if _is_error_file(ev.source) and (ev.rank, ev.entry, ev.signature) in said:
            continue  # the same rank already said this in its own output
        seen_lines.add((ev.source, ev.line))
        said.add((ev.rank, ev.entry, ev.signature))
        unique.append(ev)
    out: list[Evidence] = []
    for ev, n, ranks in _group(unique)[:MAX_EVIDENCE]:
        role = {"trace": "cause", "tail": "context", "fr-culprit": "cause", "fr": "context"}.get(ev.role, ev.role)
        sig = f"{ev.entry}/{ev.signature}" if ev.entry else ev.signature
        out.append(Evidence(ev.source, ev.line, ev.rank, ev.time, ev.text, sig, role, n, ranks))
    return out


def message_of(text: str) -> str:
    """The line without its rank/host/time prefixes."""
    _, at = parse_prefix(text)
    return PREFIX_MASK.sub("", text[at:]).strip()


def _is_error_file(source: str) -> bool:
    return source.endswith("error.json")


def _step(s) -> str:
    return f"{s.text} — `{s.command}`" if s.command else s.text


def to_finding(kb, c: Candidate, events: list[Event], coll, exits, seen: set[int]) -> Finding:
    entry = c.entry
    init = c.initiating
    involved = {e.rank for e in events if e.rank is not None and e.role in ("symptom", "cause")}
    involved |= {r for r, rec in exits.items() if rec.exitcode is not None}
    cause_ranks = {e.rank for e in events if e.role == "cause" and e.rank is not None and e.entry == entry.id}
    if coll:
        involved |= set(coll.reporting)
    if init is not None:
        collateral = sorted(r for r in involved if r != init)
    else:
        collateral = sorted(r for r in involved if r not in cause_ranks)
    evidence = _evidence(c, events, init)
    host = next((e.host for e in c.events if e.rank == init and e.host), None) if init is not None else None

    first = next((e for e in c.events if e.role == "cause"), c.events[0] if c.events else None)
    if c.kind == "cause" and init is not None and first is not None and weak(kb, first):
        exc = [e for e in events if e.role == "trace" and e.rank == init]
        if exc:
            first = exc[-1]
    where = f"rank {init}" + (f" on {host}" if host else "") if init is not None else None
    parts = []
    if c.kind == "cause" and first is not None:
        msg = message_of(first.text)
        if len(msg) > 240:
            msg = msg[:240] + " …"
        parts.append(f"{(where or 'a rank').capitalize()} failed first: “{msg}”.")
    elif c.kind == "desync":
        parts.append(f"The ranks are in different collectives: {c.notes[0]}." + (f" {where.capitalize()} is the odd one out." if where else ""))
    elif c.kind == "absent":
        parts.append(f"{c.notes[0].capitalize()}." + (f" {where.capitalize()} was busy elsewhere and never arrived." if where else ""))
    elif c.kind == "dead-peer":
        parts.append(f"Peers lost the connection to {where or 'a rank'}; its process exited without an error of its own in these logs.")
    elif c.kind in ("fr-desync", "fr-hang"):
        parts.append(c.notes[0] + ("" if c.notes[0].endswith(".") else ".") + (f" {where.capitalize()} is where the ranks parted." if where else ""))
    elif c.kind == "activity":
        parts.append(c.notes[0].capitalize() + "; the others were waiting for it.")
    elif c.kind == "context":
        parts.append(c.notes[0].capitalize() + ".")
    else:
        parts.append("Only collateral symptoms were found (timeouts, aborts); the originating rank's own error is not in these logs.")
    if collateral and init is not None:
        if len(collateral) == 1:
            parts.append(f"Rank {collateral[0]} only shows collateral damage.")
        else:
            parts.append(f"Ranks {compress_ranks(collateral)} only show collateral damage.")
    parts.append(" ".join(entry.summary.split()))
    site = None
    for e in ([first] if first is not None else []) + [e for e in events if e.role == "trace" and e.rank == init and init is not None]:
        if e.context and (site := user_call_site(e.context, e.rank)):
            break
    if site and c.kind == "cause":
        parts.insert(1, f"It was raised at {site}.")
    root_cause = " ".join(parts)

    missing: list[str] = list(c.missing)
    if c.score < DIAGNOSED_AT or c.kind in ("symptom", "context", "dead-peer"):
        if entry.missing:
            missing.append(f"{entry.missing.fact} Run: {entry.missing.command}")
    if init is None and entry.scope.value == "rank" and c.kind in ("cause", "desync", "absent", "activity"):
        missing.append(
            "Which rank failed first: collect every rank's output with rank prefixes and timestamps. "
            "Run: torchrun --log-dir logs --tee 3 ... (or srun -l), then rankdoctor diagnose logs/"
        )
    if coll and coll.kind == "absent" and c.kind in ("absent", "dead-peer"):
        silent = [r for r in coll.culprits if not any(e.rank == r for e in events)]
        if silent:
            missing.append(
                f"The output of rank(s) {compress_ranks(silent)}, which never reported: their last lines show whether they were busy, stuck or dead. "
                f"Run: py-spy dump --pid <pid> on a live job, or collect logs/attempt_0/<local_rank>/stderr.log"
            )
    return Finding(
        entry=entry.id,
        klass=entry.class_,
        title=entry.title,
        confidence=round(c.score, 2),
        initiating_rank=init,
        collateral_ranks=collateral,
        evidence=evidence,
        root_cause=root_cause,
        fix=[_step(s) for s in entry.fix],
        verify=entry.verify,
        missing=missing,
        initiating_host=host,
        notes=c.notes,
    )
