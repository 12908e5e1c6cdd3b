"""Compare the ranks' published collective histories and find the first divergence.

Pure functions over the plain dicts each rank publishes to the c10d store (see core.py):

    {"rank": 2, "t": <wall time>, "done": null | "exited" | "final",
     "groups": {"0": {"desc": "default_pg", "n": 41, "since": <time n last grew>,
                      "w": [[seq, cumulative hash, "all_reduce(float32[16]) at train.py:30"], ...],
                      "busy": <seconds its oldest in-flight collective has waited> | null}}}

``n`` counts the group's collectives, ``w`` is the window of the latest ones, each with the
running hash of the rank's whole history up to it. Two ranks agree up to collective m exactly
when their hashes at m agree; the window then locates the first collective that differs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

LINE_PREFIX = "rankdoctor guard:"


@dataclass(frozen=True)
class Divergence:
    group: str  # the group's description, e.g. "default_pg"
    seq: int  # the first collective number (1-based, per group) at which ranks differ
    culprits: tuple[int, ...]
    culprit_text: str  # "issued all_reduce(float32[]) at train.py:49 (in a compiled graph)"
    others: tuple[int, ...]
    other_text: str
    extra: tuple[tuple[tuple[int, ...], str], ...] = field(default=())  # further minorities

    def line(self) -> str:
        """The one fingerprint line (entries/collectives/guard-asymmetric-collective.yaml)."""
        text = (f"{LINE_PREFIX} collective desync in group {self.group} at collective "
                f"#{self.seq}: {_ranks(self.culprits)} {self.culprit_text}")
        for ranks, what in self.extra:
            text += f"; {_ranks(ranks)} {what}"
        return text + f"; {_ranks(self.others)} {self.other_text}"


def _ranks(ranks) -> str:
    ranks = sorted(ranks)
    return f"rank {ranks[0]}" if len(ranks) == 1 else "ranks " + ",".join(map(str, ranks))


def _window(group: dict) -> dict[int, tuple[str, str]]:
    return {seq: (cum, text) for seq, cum, text in group.get("w", [])}


def _recurs(group: dict, text: str, seq: int) -> bool:
    """Did this rank issue the same collective (op, shapes, site) earlier? Then it is routine."""
    return any(t == text and s < seq for s, _, t in group.get("w", []))


GONE_AFTER = 10.0  # seconds without a published state: the process is gone (killed, aborted)


def _settled(state: dict, now: float) -> str | None:
    """Why a rank will issue nothing more on its own, or None while it may still catch up."""
    if state.get("done"):
        return state["done"]  # "exited" / "final"
    if state.get("ready") and now - state.get("t", now) >= GONE_AFTER:
        return "stopped publishing"
    busy = [g.get("busy") for g in state.get("groups", {}).values() if g.get("busy") is not None]
    if busy and max(busy) >= 1.0:
        return "blocked in another collective"
    return None


def _first_difference(groups: dict[int, dict], m: int, strict: bool = False) -> int | None:
    """The first collective number whose texts differ; ``strict``: None when none does."""
    windows = {r: _window(g) for r, g in groups.items()}
    lo = max((min(w) for w in windows.values() if w), default=m)
    for seq in range(lo, m + 1):
        # A rank whose record skipped this collective (a gap) has no say about it.
        if len({w[seq][1] for w in windows.values() if seq in w}) > 1:
            return seq
    return None if strict else lo  # differed before every window: the earliest still visible


def _having(groups: dict[int, dict], seq: int) -> dict[int, dict]:
    return {r: g for r, g in groups.items() if seq in _window(g)} or groups


def _partition(groups: dict[int, dict], seq: int, missing: str) -> list[tuple[tuple[int, ...], str]]:
    """Ranks grouped by what they issued as collective ``seq``: majority first."""
    by_text: dict[str, list[int]] = {}
    for rank, group in groups.items():
        text = _window(group).get(seq, (None, None))[1]
        by_text.setdefault(f"issued {text}" if text else missing, []).append(rank)
    ranked = sorted(by_text.items(), key=lambda kv: (
        -len(kv[1]),
        # On a tie the side whose collective is routine (issued before) is the normal one;
        # between a novel extra collective and ranks that issue nothing, the extra one is odd.
        not any(_recurs(groups[r], kv[0][len("issued "):], seq) for r in kv[1]),
        not kv[0].startswith("issued nothing"),
        min(kv[1])))
    return [(tuple(sorted(r)), text) for text, r in ranked]


def _divergence(desc: str, seq: int, parts) -> Divergence:
    (others, other_text), (culprits, culprit_text), *extra = parts
    return Divergence(desc, seq, culprits, culprit_text, others, other_text, tuple(extra))


def find_divergence(states: dict[int, dict], world: int, now: float, stall: float) -> Divergence | None:
    """The first collective at which the ranks of some group differ, or None.

    Two kinds: (1) two ranks issued different collectives as the same number (caught as soon
    as both have published it); (2) a rank issued a collective the others do not issue while
    they are finished, exited, blocked elsewhere or idle for ``stall`` seconds.
    """
    names = sorted({name for s in states.values() for name in s.get("groups", {})})
    for name in names:
        members = {r: s["groups"][name] for r, s in states.items() if name in s.get("groups", {})}
        desc = next(iter(members.values())).get("desc") or name
        if desc == "default_pg":  # every rank is a member, including one that never issued yet
            for rank, state in states.items():
                members.setdefault(rank, {"n": 0, "since": state.get("t", now), "w": []})
        if len(members) < 2:
            continue
        m = min(g["n"] for g in members.values())
        hashes = {r: _window(g).get(m, (None,))[0] for r, g in members.items() if m > 0}
        comparable = {r: members[r] for r, h in hashes.items() if h is not None}
        if len({g.get("base", 1) for g in comparable.values()}) > 1:
            # Hash chains that start at different collectives cannot be compared: compare
            # what the windows show, collective by collective.
            seq = _first_difference(comparable, m, strict=True)
            if seq is not None:
                return _divergence(desc, seq, _partition(_having(comparable, seq), seq, "issued nothing"))
        elif len({hashes[r] for r in comparable}) > 1:
            seq = _first_difference(comparable, m)
            return _divergence(desc, seq, _partition(_having(comparable, seq), seq, "issued nothing"))
        ahead = {r for r, g in members.items() if g["n"] > m}
        behind = {r: states[r] for r in members if members[r]["n"] == m}
        if not ahead:
            continue
        waits = [_settled(s, now) or ("idle" if now - members[r].get("since", now) >= stall else None)
                 for r, s in behind.items()]
        if None in waits:
            continue
        definitive = all(w in ("exited", "final") for w in waits)
        # Otherwise a rank ahead must be waiting in its extra collective: on its way back from
        # an in-flight op a rank is briefly ahead in every healthy job.
        if not definitive and not any((members[r].get("busy") or 0) >= 0.5 for r in ahead):
            continue
        reason = ", ".join(sorted(set(waits)))
        last = _window(members[min(behind)]).get(m, (None, None))[1]
        after = f"collective #{m}" + (f" ({last})" if last else "")
        missing = f"issued nothing after {after} [{reason}]"
        return _divergence(desc, m + 1, _partition(members, m + 1, missing))
    return None
