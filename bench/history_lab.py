"""How well the incident history and `compare` tell a repeated failure from a different one,
on every real torchrun run of the lab's fault matrix (tests/scenarios/lab-matrix, lab-fresh1,
lab-fresh2; the fault kind is the folder name before -w<world size>). A fault family joins
the kinds that are one fault at more ranks or a larger size: two-sigkill is sigkill,
rank-only-collective-large is rank-only-collective.

Each run is diagnosed once (folder: logs and Flight Recorder dumps, as `rankdoctor diagnose
RUN` does). Then:

* compare: every pair of runs; "same" should be said of pairs of one fault family and not of
  pairs of two. Printed: the counts of each cell, by kind and by family, and which pairs of
  families were called the same.
* similar incidents: each run in turn is the new run, every other run is in the history; is
  the first similar incident of the same fault kind? (leave-one-out, like a team's history
  that has seen every other run)

    .venv/bin/python bench/history_lab.py            # writes nothing; prints the tables
"""

from __future__ import annotations

import itertools
import re
import sys
import time
from collections import Counter
from pathlib import Path

import rankdoctor
from rankdoctor.history.compare import Comparison, Side
from rankdoctor.history.similar import similar
from rankdoctor.history.store import Incident

ROOT = Path(__file__).resolve().parents[1]
CORPORA = [ROOT / "tests" / "scenarios" / c for c in ("lab-matrix", "lab-fresh1", "lab-fresh2")]
KIND = re.compile(r"^(.*?)-w\d")


def family(kind: str) -> str:
    return re.sub(r"-large$", "", re.sub(r"^two-", "", kind))


def main() -> None:
    runs = sorted(p for c in CORPORA for p in c.iterdir() if p.is_dir() and KIND.match(p.name))
    t0 = time.monotonic()
    reports = {}
    for i, run in enumerate(runs, 1):
        reports[run] = rankdoctor.diagnose([str(run)]).to_json()
        print(f"\r{i}/{len(runs)} diagnosed", end="", file=sys.stderr)
    print(file=sys.stderr)
    kind = {r: KIND.match(r.name).group(1) for r in runs}
    print(f"{len(runs)} runs of {len(set(kind.values()))} fault kinds, diagnosed in {time.monotonic() - t0:.0f} s")

    fam = {r: family(k) for r, k in kind.items()}
    cells = Counter()
    crossed = Counter()
    for a, b in itertools.combinations(runs, 2):
        c = Comparison(Side(a.name, reports[a]), Side(b.name, reports[b]))
        cells[("kind", kind[a] == kind[b], c.same_failure)] += 1
        cells[("family", fam[a] == fam[b], c.same_failure)] += 1
        if c.same_failure and fam[a] != fam[b]:
            crossed[" / ".join(sorted((fam[a], fam[b])))] += 1
    print("\ncompare, every pair of runs:\n")
    print("| pairs of runs | said same failure | said different |\n|---|---|---|")
    for grouping in ("kind", "family"):
        for same, label in ((True, f"one fault {grouping}"), (False, "two fault " + ("kinds" if grouping == "kind" else "families"))):
            print(f"| {label} | {cells[(grouping, same, True)]} | {cells[(grouping, same, False)]} |")
    print("\npairs of two families said to be the same failure:", ", ".join(f"{k} ({n})" for k, n in crossed.most_common()) or "none")

    incidents = {r: Incident.from_report(reports[r], r.name) for r in runs}
    counts = Counter()
    wrong = []
    for run in runs:
        found = similar(reports[run], [incidents[o] for o in runs if o != run], limit=1)
        if not found:
            counts["none"] += 1
            continue
        other = KIND.match(found[0].incident.job).group(1)
        counts["kind"] += other == kind[run]
        counts["family"] += family(other) == fam[run]
        if family(other) != fam[run]:
            wrong.append(f"{run.name} -> {found[0].incident.job} ({found[0].similarity:.2f})")
    print("\nsimilar incidents, each run against all the others (leave-one-out):\n")
    print(f"first match of the same fault kind: {counts['kind']}/{len(runs)}; of the same family: {counts['family']}/{len(runs)}; "
          f"no match: {counts['none']}")
    for w in wrong:
        print(f"  another family first: {w}")

if __name__ == "__main__":
    main()
