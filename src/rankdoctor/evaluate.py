"""Accuracy on a scenario corpus: top-1 class and initiating rank, per class.

A scenario is a directory holding the evidence of one run and its label:
``case.yaml`` (real logs from issue threads), ``truth.yaml`` or ``expected.yaml`` (lab runs),
each with ``class`` and ``initiating_rank`` (null when the label does not say), optionally
``also_acceptable`` (other classes that count as right). Everything else in the directory is
evidence, except Flight Recorder dumps and command notes.

    python -m rankdoctor.evaluate tests/scenarios [more dirs...]
"""

from __future__ import annotations

import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import yaml

from .kb.loader import KnowledgeBase, load_kb
from .scan import Scanner, scan_sources

LABEL_FILES = ("case.yaml", "truth.yaml", "expected.yaml")
NOT_EVIDENCE = {"case.yaml", "truth.yaml", "expected.yaml", "cmd.txt", "README.md", "readme.md"}


@dataclass
class Outcome:
    case: str
    want_class: str
    want_rank: int | None
    also: list[str]
    got_class: str | None
    got_rank: int | None
    verdict: str

    @property
    def class_ok(self) -> bool:
        if self.want_class in ("none", "healthy", None):
            return self.verdict == "no-failure-found"
        return self.got_class == self.want_class or (self.got_class in self.also)

    @property
    def rank_ok(self) -> bool:
        return self.got_rank == self.want_rank


def find_scenarios(roots: list[Path]) -> list[Path]:
    out = []
    for root in roots:
        for label in LABEL_FILES:
            out.extend(p.parent for p in root.rglob(label))
    return sorted(set(out))


_CLASS_KEYS = ("class", "expected_class", "failure_class", "taxonomy_class")
_RANK_KEYS = ("initiating_rank", "culprit_rank", "faulty_rank", "injected_rank", "rank")


def _find(data: object, keys: tuple[str, ...]) -> tuple[bool, object]:
    """The first of ``keys`` in a label, also inside one level of nesting (truth: {...})."""
    if isinstance(data, dict):
        for k in keys:
            if k in data:
                return True, data[k]
        for v in data.values():
            if isinstance(v, dict):
                found, val = _find(v, keys)
                if found:
                    return found, val
    return False, None


def read_label(case: Path) -> dict:
    for name in LABEL_FILES:
        p = case / name
        if p.is_file():
            data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
            _, klass = _find(data, _CLASS_KEYS)
            if klass is None and isinstance(data, dict) and data.get("healthy"):
                klass = "none"
            _, rank = _find(data, _RANK_KEYS)
            _, also = _find(data, ("also_acceptable",))
            if isinstance(rank, str) and rank.strip().isdigit():
                rank = int(rank)
            return {"class": klass or "none", "rank": rank if isinstance(rank, int) else None, "also": list(also or [])}
    raise FileNotFoundError(case)


def evidence_paths(case: Path) -> list[str]:
    paths = []
    for p in sorted(case.rglob("*")):
        if not p.is_file() or p.name in NOT_EVIDENCE:
            continue
        rel = p.relative_to(case).parts
        if any(part in ("fr", "flight_recorder", "dumps") for part in rel[:-1]) or p.name.startswith(("fr_trace", "nccl_trace")):
            continue
        paths.append(str(p))
    return paths


def run_case(kb: KnowledgeBase, scanner: Scanner, case: Path, paths: list[str] | None = None, use_fr: bool = True) -> Outcome:
    """Diagnose one case as `rankdoctor diagnose <evidence>` would, Flight Recorder dumps
    in the case folder included (``use_fr=False``: logs only)."""
    from .pipeline import diagnose_paths

    label = read_label(case)
    d, _, _ = diagnose_paths(
        kb, paths or evidence_paths(case), lambda sources: scan_sources(kb, sources, scanner), fr=[str(case)], use_fr=use_fr
    )
    top = d.diagnoses[0] if d.diagnoses else None
    return Outcome(
        case.name,
        label["class"],
        label["rank"],
        label["also"],
        top.klass if top else None,
        top.initiating_rank if top else None,
        d.verdict,
    )


def table(outcomes: list[Outcome]) -> str:
    per: dict[str, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        per[o.want_class].append(o)
    lines = [f"{'class':26s} {'cases':>5s} {'class ok':>9s} {'rank ok':>8s}"]
    for k in sorted(per):
        os_ = per[k]
        lines.append(
            f"{k:26s} {len(os_):5d} {sum(o.class_ok for o in os_):5d}/{len(os_):<3d} {sum(o.rank_ok for o in os_):4d}/{len(os_):<3d}"
        )
    n = len(outcomes)
    c = sum(o.class_ok for o in outcomes)
    r = sum(o.rank_ok for o in outcomes)
    lines.append(f"{'TOTAL':26s} {n:5d} {c:5d}/{n:<3d} {r:4d}/{n:<3d}   top-1 class {100 * c / max(n, 1):.1f}%  initiating rank {100 * r / max(n, 1):.1f}%")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    verbose = "-v" in argv
    roots = [Path(a) for a in argv if a != "-v"] or [Path("tests/scenarios")]
    kb = load_kb()
    scanner = Scanner(kb)
    cases = find_scenarios(roots)
    if not cases:
        print(f"no scenarios (directories with {', '.join(LABEL_FILES)}) under {', '.join(map(str, roots))}", file=sys.stderr)
        return 2
    outcomes = []
    for case in cases:
        try:
            o = run_case(kb, scanner, case)
        except Exception as exc:  # a broken case is reported, not fatal
            print(f"{case}: cannot evaluate: {exc}", file=sys.stderr)
            continue
        outcomes.append(o)
        if verbose or not (o.class_ok and o.rank_ok):
            mark = "ok " if o.class_ok and o.rank_ok else "BAD"
            print(
                f"{mark} {case}: want {o.want_class}/{o.want_rank} got {o.got_class}/{o.got_rank} ({o.verdict})"
            )
    print(table(outcomes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
