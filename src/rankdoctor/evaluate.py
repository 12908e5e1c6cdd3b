"""Accuracy on a scenario corpus: top-1 class and initiating rank, per class.

A scenario is a directory holding the evidence of one run and its label:
``case.yaml`` (real logs from issue threads), ``truth.yaml`` or ``expected.yaml`` (lab runs),
each with ``class`` and ``initiating_rank`` (null when the label does not say), optionally
``also_acceptable`` (other classes that count as right) and ``also_acceptable_ranks`` (rank
sets that also count as right where the evidence cannot single out the culprit from its
partners, e.g. the two ranks of a send/recv deadlock). Everything else in the directory is
evidence, except Flight Recorder dumps and command notes.

    python -m rankdoctor.evaluate tests/scenarios [more dirs...]
"""

from __future__ import annotations

import re
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
    want_ranks: list[int] | None = None  # several initiating ranks (the label's initiating_ranks)
    got_ranks: list[int] | None = None
    confidence: float | None = None
    also_ranks: list[list[int]] | None = None  # the label's also_acceptable_ranks

    @property
    def failed_run(self) -> bool:
        return self.want_class not in ("none", "healthy", None)

    @property
    def class_ok(self) -> bool:
        if not self.failed_run:
            return self.verdict == "no-failure-found"
        return self.got_class == self.want_class or (self.got_class in self.also)

    @property
    def rank_labelled(self) -> bool:
        return bool(self.want_ranks) or self.want_rank is not None

    @property
    def rank_ok(self) -> bool:
        """The labelled initiating rank(s); a label without one (the thread does not show
        where it started) accepts any answer."""
        got = sorted(self.got_ranks or ([] if self.got_rank is None else [self.got_rank]))
        if got and got in (self.also_ranks or []):
            return True
        if self.want_ranks:
            return sorted(self.got_ranks or ([] if self.got_rank is None else [self.got_rank])) == sorted(self.want_ranks)
        return self.want_rank is None or self.got_rank == self.want_rank

    @property
    def ok(self) -> bool:
        return self.class_ok and self.rank_ok

    @property
    def confident_wrong(self) -> bool:
        """``diagnosed`` with a wrong class, or naming a rank that is not the labelled one."""
        if not self.failed_run:
            return False
        named_wrong = self.rank_labelled and self.got_rank is not None and not self.rank_ok
        return self.verdict == "diagnosed" and (not self.class_ok or named_wrong)

    @property
    def called_healthy(self) -> bool:
        return self.failed_run and self.verdict == "no-failure-found"


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
    """A case's label (case.yaml or label.yaml): ``class`` (a TAXONOMY id; ``healthy: true`` for
    a run that did not fail), ``initiating_rank`` / ``initiating_ranks``, ``also_acceptable``
    classes, ``also_acceptable_ranks`` rank sets, ``label_confidence``, and ``hung: true`` where
    the report says the job hung (it is then diagnosed as ``diagnose --hung`` would)."""
    for name in LABEL_FILES:
        p = case / name
        if p.is_file():
            data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
            _, klass = _find(data, _CLASS_KEYS)
            if klass is None and isinstance(data, dict) and data.get("healthy"):
                klass = "none"
            _, rank = _find(data, _RANK_KEYS)
            _, also = _find(data, ("also_acceptable",))
            _, ranks = _find(data, ("initiating_ranks",))
            if isinstance(rank, str) and rank.strip().isdigit():
                rank = int(rank)
            ranks = sorted(r for r in ranks if isinstance(r, int)) if isinstance(ranks, list) else []
            if ranks and not isinstance(rank, int):
                rank = ranks[0]
            _, conf = _find(data, ("label_confidence",))
            _, also_ranks = _find(data, ("also_acceptable_ranks",))
            also_ranks = [sorted(x) for x in also_ranks or [] if isinstance(x, list) and all(isinstance(r, int) for r in x)]
            # the report says the job hung (the user would run diagnose --hung): part of the evidence
            _, hung = _find(data, ("hung",))
            return {"class": klass or "none", "rank": rank if isinstance(rank, int) else None, "also": list(also or []),
                    "ranks": ranks if len(ranks) > 1 else [], "confidence": conf, "also_ranks": also_ranks,
                    "hung": hung is True}
    raise FileNotFoundError(case)


def _is_dump(case: Path, p: Path) -> bool:
    """A Flight Recorder dump of the case: in an fr/ flight_recorder/ dumps/ folder, or named so."""
    return any(part in ("fr", "flight_recorder", "dumps") for part in p.relative_to(case).parts[:-1]) or p.name.startswith(
        ("fr_trace", "nccl_trace"))


def evidence_paths(case: Path) -> list[str]:
    return [str(p) for p in sorted(case.rglob("*")) if p.is_file() and p.name not in NOT_EVIDENCE and not _is_dump(case, p)]


def has_dumps(case: Path) -> bool:
    """The case folder holds Flight Recorder dumps next to its logs."""
    return any(p.is_file() and _is_dump(case, p) for p in case.rglob("*"))


def weigh_case(kb: KnowledgeBase, scanner: Scanner, case: Path, paths: list[str] | None = None, use_fr: bool = True):
    """Every hypothesis of one case with its features, as `rankdoctor diagnose` weighs them."""
    from .pipeline import diagnose_paths

    d, _, _ = diagnose_paths(
        kb, paths or evidence_paths(case), lambda sources: scan_sources(kb, sources, scanner), fr=[str(case)], use_fr=use_fr,
        hung=read_label(case)["hung"],
    )
    return d.weighing


def run_case(kb: KnowledgeBase, scanner: Scanner, case: Path, paths: list[str] | None = None, use_fr: bool = True) -> Outcome:
    """Diagnose one case as `rankdoctor diagnose <evidence>` would, Flight Recorder dumps
    in the case folder included (``use_fr=False``: logs only)."""
    from .pipeline import diagnose_paths

    label = read_label(case)
    d, _, _ = diagnose_paths(
        kb, paths or evidence_paths(case), lambda sources: scan_sources(kb, sources, scanner), fr=[str(case)], use_fr=use_fr,
        hung=label["hung"],
    )
    return _outcome(case, label, d)


def _outcome(case: Path, label: dict, d) -> Outcome:
    """The case's label beside the top diagnosis of ``d``."""
    top = d.diagnoses[0] if d.diagnoses else None
    return Outcome(
        case.name,
        label["class"],
        label["rank"],
        label["also"],
        top.klass if top else None,
        top.initiating_rank if top else None,
        d.verdict,
        label["ranks"] or None,
        list(top.initiating_ranks) if top else None,
        top.confidence if top else None,
        label["also_ranks"],
    )


VIEWS = ("all", "logs only", "dumps only", "stacks only")


def fault_kind(case: Path) -> str:
    """The lab fault a run injected, from its folder name: the matrix's variants of one fault
    (world size, culprit ranks, layout, step, console options) are one kind."""
    return re.sub(r"-(?:w\d+\b|tp\d+dp\d+|pp\d+tp\d+dp\d+).*$", "", case.name)


def view_outcomes(kb: KnowledgeBase, scanner: Scanner, case: Path, whole: Outcome | None = None) -> dict[str, Outcome]:
    """The case diagnosed from each kind of evidence it holds on its own: its logs, its
    Flight Recorder dumps, its stack dumps, and all of them (``whole``: that last one, when
    run_case has made it already; the views it cannot make are left out)."""
    from .ingest.sources import expand_inputs
    from .ingest.stacks import stacks_among
    from .pipeline import diagnose_paths

    label = read_label(case)
    paths = evidence_paths(case)
    _, stack_files = stacks_among(expand_inputs(paths))
    stack_paths = [p for p in paths if p in stack_files]
    logs = [p for p in paths if p not in stack_files]
    views: dict[str, tuple[list[str], bool]] = {"all": (paths, True)}
    if has_dumps(case) or stack_paths:
        views["logs only"] = (logs, False)
    if has_dumps(case):
        views["dumps only"] = ([], True)
    if stack_paths:
        views["stacks only"] = (stack_paths, False)
    out = {"all": whole} if whole is not None else {}
    for name, (ps, use_fr) in views.items():
        if name not in out:
            d, _, _ = diagnose_paths(kb, ps, lambda sources: scan_sources(kb, sources, scanner), fr=[str(case)], use_fr=use_fr,
                                     hung=label["hung"])
            out[name] = _outcome(case, label, d)
    return out


def evidence_table(rows: list[tuple[Path, dict[str, Outcome]]]) -> str:
    """Per lab fault kind and per kind of evidence: class right and rank right."""
    per: dict[str, dict[str, list[Outcome]]] = defaultdict(lambda: defaultdict(list))
    for case, views in rows:
        for v, o in views.items():
            per[fault_kind(case)][v].append(o)
            per["TOTAL"][v].append(o)

    def cell(os_: list[Outcome]) -> str:
        if not os_:
            return "-"
        failed = [o for o in os_ if o.failed_run]
        lab = [o for o in failed if o.rank_labelled]
        healthy = [o for o in os_ if not o.failed_run]
        if not failed:
            return f"healthy {sum(o.got_class is None for o in healthy)}/{len(healthy)}"
        return f"{sum(o.class_ok for o in failed)}/{len(failed)} {sum(o.rank_ok for o in lab)}/{len(lab)}"

    lines = [f"{'lab fault (class right, rank right)':34s} " + " ".join(f"{v:>14s}" for v in VIEWS)]
    for k in sorted(per, key=lambda k: (k == "TOTAL", k)):
        lines.append(f"{k:34s} " + " ".join(f"{cell(per[k][v]):>14s}" for v in VIEWS))
    return "\n".join(lines)


def table(outcomes: list[Outcome]) -> str:
    """Per labelled class: runs, class right, rank right (where the label has a rank)."""
    per: dict[str, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        per[o.want_class].append(o)
    lines = [f"{'class':26s} {'cases':>5s} {'class ok':>9s} {'rank ok':>8s}"]

    def row(name: str, os_: list[Outcome]) -> str:
        lab = [o for o in os_ if o.rank_labelled]
        return (f"{name:26s} {len(os_):5d} {sum(o.class_ok for o in os_):5d}/{len(os_):<3d} "
                f"{sum(o.rank_ok for o in lab):4d}/{len(lab):<3d}")

    for k in sorted(per):
        lines.append(row(k, per[k]))
    lines.append(row("TOTAL", outcomes))
    return "\n".join(lines)


def summary(outcomes: list[Outcome]) -> dict:
    failed = [o for o in outcomes if o.failed_run]
    lab = [o for o in failed if o.rank_labelled]
    return {
        "runs": len(outcomes), "failed": len(failed),
        "class": sum(o.class_ok for o in failed), "rank": sum(o.rank_ok for o in lab), "rank_labelled": len(lab),
        "confident_wrong": sum(o.confident_wrong for o in failed), "called_healthy": sum(o.called_healthy for o in failed),
        "healthy_ok": sum(o.class_ok for o in outcomes if not o.failed_run), "healthy": len(outcomes) - len(failed),
    }


def summary_line(name: str, s: dict) -> str:
    pct = lambda a, b: f"{a}/{b}" + (f" {100 * a / b:.0f}%" if b else "")  # noqa: E731
    return (f"{name:28s} runs {s['runs']:3d}  class {pct(s['class'], s['failed']):>11s}  rank {pct(s['rank'], s['rank_labelled']):>10s}"
            f"  confident wrong {s['confident_wrong']}/{s['failed']}  called healthy {s['called_healthy']}/{s['failed']}"
            + (f"  healthy ok {s['healthy_ok']}/{s['healthy']}" if s["healthy"] else ""))


# -- the regression lock -----------------------------------------------------------------
#
# tests/scenarios/expected.tsv holds one row per labelled scenario: its label, the result
# the engine gave when the row was written, and "ok" or "miss" with the reason. CI
# (tests/test_lock.py) fails when an "ok" case stops being right (or loses its
# "diagnosed" verdict), when a miss gets worse (confidently wrong, or called healthy), and
# when a miss gets fixed without the table saying so. `make lock` rewrites the table from
# the current results, keeping the reasons of misses that are still misses.

LOCK_COLUMNS = ("case", "label", "result", "verdict", "status", "reason")
NO_REASON = "(reason not written yet)"


def case_key(case: Path, root: Path) -> str:
    return case.relative_to(root).as_posix()


def _fmt_answer(klass: str | None, rank: int | None, ranks: list[int] | None) -> str:
    where = ",".join(map(str, ranks)) if ranks and len(ranks) > 1 else ("-" if rank is None else str(rank))
    return f"{klass or '-'}@{where}"


def lock_row(key: str, o: Outcome, reason: str = "") -> dict:
    return {
        "case": key,
        "label": _fmt_answer(o.want_class, o.want_rank, o.want_ranks),
        "result": _fmt_answer(o.got_class, o.got_rank, o.got_ranks),
        "verdict": o.verdict,
        "status": "ok" if o.ok else "miss",
        "reason": "" if o.ok else (reason or NO_REASON),
    }


def read_lock(path: Path) -> dict[str, dict]:
    rows: dict[str, dict] = {}
    if not path.is_file():
        return rows
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        if parts[0] == "case":
            continue
        parts += [""] * (len(LOCK_COLUMNS) - len(parts))
        rows[parts[0]] = dict(zip(LOCK_COLUMNS, parts))
    return rows


def write_lock(path: Path, rows: list[dict]) -> None:
    head = (
        "# Regression lock: every labelled scenario under tests/scenarios, its label (class@rank),\n"
        "# the engine's answer when this table was written, and ok / miss (a known miss, with why).\n"
        "# CI (tests/test_lock.py) fails on any regression. Rewrite with `make lock`; review the diff.\n"
    )
    body = ["\t".join(LOCK_COLUMNS)] + ["\t".join(r[c] for c in LOCK_COLUMNS) for r in sorted(rows, key=lambda r: r["case"])]
    path.write_text(head + "\n".join(body) + "\n", encoding="utf-8")


def judge(row: dict, o: Outcome) -> str | None:
    """Why the current outcome is a regression against the locked row (None: it is not)."""
    now = f"{_fmt_answer(o.got_class, o.got_rank, o.got_ranks)} ({o.verdict})"
    if row["status"] == "ok":
        if not o.ok:
            return f"was right ({row['result']}, {row['verdict']}), now {now}; label {row['label']}"
        if row["verdict"] == "diagnosed" and o.verdict != "diagnosed":
            return f"was right and diagnosed, now only {o.verdict}"
        return None
    if not row["reason"] or row["reason"] == NO_REASON:
        return "a known miss needs its reason in expected.tsv"
    if o.ok:
        return f"the known miss is fixed ({now}): mark it ok (make lock)"
    was_cw = row["verdict"] == "diagnosed" and row["result"] != row["label"]
    if o.confident_wrong and not was_cw:
        return f"was an honest miss ({row['result']}, {row['verdict']}), now confidently wrong: {now}"
    if o.called_healthy and row["verdict"] != "no-failure-found":
        return f"was {row['result']} ({row['verdict']}), now called healthy"
    return None


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m rankdoctor.evaluate", description="Accuracy on labelled scenarios.")
    ap.add_argument("roots", nargs="*", type=Path, default=[Path("tests/scenarios")])
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per case, right or wrong")
    ap.add_argument("--lock", type=Path, help="rewrite this regression lock table from the current results")
    a = ap.parse_args(argv)
    kb = load_kb()
    scanner = Scanner(kb)
    cases = find_scenarios(a.roots)
    if not cases:
        print(f"no scenarios (directories with {', '.join(LABEL_FILES)}) under {', '.join(map(str, a.roots))}", file=sys.stderr)
        return 2
    outcomes: list[tuple[Path, Outcome]] = []
    for case in cases:
        try:
            o = run_case(kb, scanner, case)
        except Exception as exc:  # a broken case is reported, not fatal
            print(f"{case}: cannot evaluate: {exc}", file=sys.stderr)
            continue
        outcomes.append((case, o))
        if a.verbose or not o.ok or o.confident_wrong:
            print(_outcome_line(case, o))
    only = [o for _, o in outcomes]
    print()
    print(table(only))
    print()
    by_set: dict[str, list[Outcome]] = defaultdict(list)
    for case, o in outcomes:
        by_set[case.parent.name].append(o)
    for name in sorted(by_set):
        print(summary_line(name, summary(by_set[name])))
    print(summary_line("ALL", summary(only)))
    # the runs that have Flight Recorder dumps, diagnosed again from their logs alone: what a
    # user without dumps gets
    logs_only = []
    for case, _ in outcomes:
        if has_dumps(case):
            o = run_case(kb, scanner, case, use_fr=False)
            logs_only.append(o)
            if a.verbose or not o.ok or o.confident_wrong:
                print(_outcome_line(case, o, " (logs only)"))
    if logs_only:
        print(summary_line("with dumps, logs only", summary(logs_only)))
    # the lab's runs by the fault they injected and the kind of evidence read
    lab = [(case, view_outcomes(kb, scanner, case, o)) for case, o in outcomes if case.parent.name.startswith("lab")]
    if lab:
        print()
        print(evidence_table(lab))
    _print_calibration()
    if a.lock:
        root = a.lock.parent
        old = read_lock(a.lock)
        rows = []
        for case, o in outcomes:
            key = case_key(case, root)
            prev = old.get(key, {})
            rows.append(lock_row(key, o, prev.get("reason", "") if prev.get("status") == "miss" else ""))
            if prev and (why := judge(prev, o)):
                print(f"lock: {key}: {why}")
        write_lock(a.lock, rows)
        misses = sum(r["status"] == "miss" for r in rows)
        print(f"wrote {a.lock}: {len(rows)} scenarios, {misses} known misses")
    return 0


def _outcome_line(case: Path, o: Outcome, view: str = "") -> str:
    conf = "" if o.confidence is None else f", {o.confidence:.2f}"
    return (f"{'ok ' if o.ok else 'BAD'} {case}{view}: want {_fmt_answer(o.want_class, o.want_rank, o.want_ranks)} "
            f"got {_fmt_answer(o.got_class, o.got_rank, o.got_ranks)} ({o.verdict}{conf})"
            + ("  CONFIDENT-WRONG" if o.confident_wrong else ""))


def _print_calibration() -> None:
    """The cross-validated reliability table and threshold `make fit` recorded."""
    from .diagnose.scoring import default_weights

    w = default_weights()
    cv = w.meta.get("fitted", {}).get("cross_validated")
    if not cv:
        return
    print()
    print(f"verdict threshold {w.threshold:.2f} (probability of the top answer: its class, and its rank when it names one); cross-validated over {cv['failed_runs']} failed runs "
          f"({cv['folds']} folds): class {cv['class_right']}/{cv['failed_runs']}, "
          f"confident wrong {cv['confident_wrong']}/{cv['failed_runs']}")
    rows = cv.get("reliability") or []
    if rows:
        print(reliability_text(rows))


def reliability_text(rows: list[dict]) -> str:
    """Confidence bins against how often the class was right (rows as ``rankdoctor.fit``
    records them in weights.json)."""
    out = [f"{'confidence':>11s} {'runs':>5s} {'mean conf':>10s} {'class right':>12s}"]
    for r in rows:
        mc = "-" if r["mean_confidence"] is None else f"{r['mean_confidence']:.2f}"
        cr = "-" if r["class_right"] is None else f"{r['class_right']:.0%}"
        out.append(f"{r['bin']:>11s} {r['runs']:5d} {mc:>10s} {cr:>12s}")
    return "\n".join(out)


if __name__ == "__main__":
    raise SystemExit(main())
