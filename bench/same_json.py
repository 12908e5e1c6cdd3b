"""Write `rankdoctor diagnose --format json` for every scenario and bench input to a folder,
so that two versions of the code can be compared byte for byte (a change made for speed
must not change a diagnosis):

    git archive HEAD src | tar -x -C /tmp/before
    PYTHONPATH=/tmp/before/src python bench/same_json.py /tmp/json-before
    PYTHONPATH=src             python bench/same_json.py /tmp/json-after
    diff -r /tmp/json-before /tmp/json-after

Each scenario folder is diagnosed as `rankdoctor eval` does (its evidence files, its Flight
Recorder dumps with --fr); each bench input (bench/data, `bench/gen_all.sh`) as a whole,
with the default jobs and with -j1. The CLI runs as a subprocess of this Python with
PYTHONPATH as given, the incident history in an empty temporary folder.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH_INPUTS = ["rank-256m", "noisy-256m", "console-512m.log", "rank-1g", "small/one-line.log", "small/one-mb.log"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--no-bench", action="store_true", help="scenarios only")
    ap.add_argument("--no-scenarios", action="store_true", help="bench inputs only")
    a = ap.parse_args()
    from rankdoctor.evaluate import evidence_paths, find_scenarios

    a.out.mkdir(parents=True, exist_ok=True)
    home = tempfile.mkdtemp(prefix="rd-home-")
    env = {**os.environ, "RANKDOCTOR_HOME": home}
    cli = [sys.executable, "-c", "import sys; from rankdoctor.cli import main; sys.argv[0] = 'rankdoctor'; sys.exit(main())", "diagnose"]
    jobs: list[tuple[str, list[str]]] = []
    if not a.no_scenarios:
        for case in find_scenarios([ROOT / "tests" / "scenarios"]):
            rel = case.relative_to(ROOT / "tests" / "scenarios")
            jobs.append((str(rel).replace("/", "__"), [*evidence_paths(case), "--fr", str(case)]))
    if not a.no_bench:
        for name in BENCH_INPUTS:
            path = ROOT / "bench" / "data" / name
            if path.exists():
                tag = "bench__" + name.replace("/", "__")
                jobs.append((tag, [str(path)]))
                jobs.append((tag + "__j1", [str(path), "-j", "1"]))

    def run(job: tuple[str, list[str]]) -> str | None:
        tag, args = job
        p = subprocess.run([*cli, *args, "--format", "json", "--quiet"], capture_output=True, env=env, cwd=ROOT)
        (a.out / f"{tag}.json").write_bytes(p.stdout + f"\n[exit {p.returncode}]\n".encode() + p.stderr)
        return None if p.returncode in (0, 1, 3) else f"{tag}: exit {p.returncode}"

    with ThreadPoolExecutor(max_workers=2) as pool:
        bad = [r for r in pool.map(run, jobs) if r]
    print(f"{len(jobs)} diagnoses written to {a.out}" + (f"; {len(bad)} failed: {bad[:5]}" if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
