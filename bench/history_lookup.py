"""What the similar-incidents lookup costs a diagnosis, in one run, taking turns, best of 5:
the diagnosis of a real run (rankdoctor.diagnose, in this process) beside the lookup that
`rankdoctor diagnose` adds once a history exists (history.similar.lookup: read every
incident's fingerprints, score them), for histories of 1,000 and 10,000 incidents; and the
whole command (`rankdoctor diagnose RUN`, a new process, best of 3) without and with the
10,000.

The incidents are the real reports of the lab's runs (tests/scenarios/lab-matrix), saved
over and over with fresh uids, so the fingerprint sets are real ones.

    .venv/bin/python bench/history_lookup.py [OUT_DIR]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import rankdoctor
from rankdoctor.history.store import History, Incident

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "tests" / "scenarios" / "lab-fresh1" / "exception-w5-r3"
SIZES = (0, 1_000, 10_000)


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="rankdoctor-bench-history-"))
    runs = sorted(p for p in (ROOT / "tests" / "scenarios" / "lab-matrix").iterdir() if p.is_dir())[:20]
    reports = [(r.name, rankdoctor.diagnose([str(r)]).to_json()) for r in runs]
    dbs = {}
    for n in SIZES:
        db = out / f"history-{n}.sqlite3"
        db.unlink(missing_ok=True)
        if n:
            batch = []
            for i in range(n):
                name, rep = reports[i % len(reports)]
                inc = Incident.from_report(rep, name)
                inc.uid = uuid.uuid4().hex
                batch.append(inc)
            History(db).merge(batch)
        dbs[n] = db
    from rankdoctor.history.similar import lookup

    timings: dict[str, float] = {}

    def best(label: str, fn, times: int) -> None:
        t = time.perf_counter()
        fn()
        timings[label] = min(timings.get(label, float("inf")), time.perf_counter() - t)

    cmd = [sys.executable, "-m", "rankdoctor.cli", "diagnose", str(LOG), "--format", "json", "-q", "--db"]
    for round_ in range(5):
        best("diagnosis (rankdoctor.diagnose)", lambda: rankdoctor.diagnose([str(LOG)]), 5)
        report = rankdoctor.diagnose([str(LOG)]).to_json()
        for n in SIZES[1:]:
            best(f"lookup in {n:,} incidents", lambda: lookup(report, History(dbs[n])), 5)
        if round_ < 3:
            for n in (0, SIZES[-1]):
                best(f"rankdoctor diagnose, history of {n:,}", lambda: subprocess.run([*cmd, str(dbs[n])], capture_output=True), 3)
    print("| what | best time |\n|---|---|")
    for label, t in timings.items():
        print(f"| {label} | {t * 1000:,.0f} ms |")
    for n in SIZES[1:]:
        print(f"\nhistory of {n:,} incidents: {dbs[n].stat().st_size / 2**20:.1f} MiB")

if __name__ == "__main__":
    main()
