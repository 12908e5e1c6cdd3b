"""Where the time of one `rankdoctor diagnose PATH --format json` goes (bench/README.md).

    python bench/phases.py bench/data/noisy-256m [--repeat 5]

Runs the CLI in a child process, as `rankdoctor diagnose PATH --format json` does, with
timers wrapped around its stages (a few microseconds per wrapped call; the per-line
wrappers, on hit lines, add about 1 % on the noisy corpus). Prints, for the run with the
smallest wall time, the parent's timeline (interpreter start, imports, argument parsing,
scanner load, planning, pool start, waiting for the scan while it loads the knowledge base,
merging, diagnosis, report, exit) and the workers' CPU split (reading, hyperscan, newline
counting, rank sampling, hit lines parsed into events, each rank's tail). Times are
CLOCK_MONOTONIC, the same clock in every process.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def child(path: str, log: str) -> None:
    t_main = time.monotonic()
    marks: list[tuple[str, float]] = [("interpreter", t_main)]

    def mark(name: str) -> None:
        marks.append((name, time.monotonic()))

    import rankdoctor.cli as cli

    mark("import cli (typer)")
    # what diagnose() imports before the scan starts (timed here, so wrapping them below
    # does not move their cost elsewhere)
    import rankdoctor.flightrec.load  # noqa: F401
    import rankdoctor.ingest.sources  # noqa: F401
    import rankdoctor.parallel as parallel
    import rankdoctor.pipeline as pipeline
    import rankdoctor.scan as scan

    mark("import scan modules")

    def wrap_mark(mod, name: str, label: str):
        inner = getattr(mod, name)

        def wrapper(*a, **k):
            mark(label + " start")
            try:
                return inner(*a, **k)
            finally:
                mark(label + " end")

        setattr(mod, name, wrapper)

    wrap_mark(pipeline, "dumps_near", "find dumps")
    wrap_mark(pipeline, "expand_inputs", "list inputs")
    wrap_mark(scan, "scanner_for", "scanner load")
    wrap_mark(parallel, "scan_parallel", "scan")
    wrap_mark(cli, "_with_history", "history")

    orig_loader = cli._loader

    def loader(load):
        run = orig_loader(load)

        def timed():
            mark("KB load + engine import start")
            run()
            mark("KB load + engine import end")
            from rankdoctor.diagnose import engine  # imported by run()
            from rankdoctor.report import jsonout

            wrap_mark(engine, "diagnose", "diagnosis")
            wrap_mark(jsonout, "render_json", "report")

        return timed

    cli._loader = loader
    orig_pool = parallel.ProcessPoolExecutor

    class Pool(orig_pool):  # the fork happens on the first submit
        def submit(self, fn, *a, **k):
            if not getattr(self, "_marked", False):
                self._marked = True
                mark("pool start")
                fut = super().submit(fn, *a, **k)
                mark("pool started")
                return fut
            return super().submit(fn, *a, **k)

    parallel.ProcessPoolExecutor = Pool

    # worker CPU, summed per process and written when a task ends
    acc: dict[str, float] = {}

    def wrap_acc(owner, name: str, label: str):
        inner = getattr(owner, name)

        def wrapper(*a, **k):
            t = time.thread_time()
            try:
                return inner(*a, **k)
            finally:
                acc[label] = acc.get(label, 0.0) + time.thread_time() - t

        wrapper.__name__ = wrapper.__qualname__ = name
        wrapper.__module__ = getattr(inner, "__module__", None)
        setattr(owner, name, wrapper)

    wrap_acc(scan.Scanner, "hits", "hyperscan")
    wrap_acc(scan.Scanner, "_hit_line", "hit lines -> events")
    wrap_acc(scan.Scanner, "_sample_ranks", "rank sampling")
    wrap_acc(scan.Scanner, "finish", "tails")
    wrap_acc(scan, "count_newlines", "newline count")
    wrap_acc(scan, "_lines_before", "traceback context")

    for name in ("_scan_range", "_scan_whole"):
        inner = getattr(parallel, name)

        def task(*a, _inner=inner, **k):
            acc.clear()
            t, c = time.monotonic(), time.thread_time()
            try:
                return _inner(*a, **k)
            finally:
                row = {"pid": os.getpid(), "start": t, "end": time.monotonic(), "cpu": time.thread_time() - c, **acc}
                with open(log, "a") as fh:
                    fh.write(json.dumps(row) + "\n")

        task.__name__ = task.__qualname__ = name
        task.__module__ = parallel.__name__
        setattr(parallel, name, task)

    sys.argv = ["rankdoctor", "diagnose", path, "--format", "json"]
    mark("cli main")
    try:
        cli.main()
    except SystemExit:
        pass
    mark("done")
    with open(log, "a") as fh:
        fh.write(json.dumps({"marks": marks}) + "\n")
    sys.stdout.flush()
    os._exit(0)


def one_run(path: str) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as fh:
        log = fh.name
    t0 = time.monotonic()
    subprocess.run([sys.executable, __file__, "--child", path, log], stdout=subprocess.DEVNULL, check=True)
    wall = time.monotonic() - t0
    rows = [json.loads(x) for x in Path(log).read_text().splitlines()]
    os.unlink(log)
    marks = next(r["marks"] for r in rows if "marks" in r)
    return {"t0": t0, "wall": wall, "marks": marks, "tasks": [r for r in rows if "pid" in r]}


def show(run: dict) -> None:
    t0 = run["t0"]
    print(f"wall {run['wall']:.3f} s (process start to exit, seen by the caller)")
    prev = t0
    for name, t in run["marks"]:
        print(f"  {t - t0:6.3f}  +{t - prev:6.3f}  {name}")
        prev = t
    print(f"  {run['wall']:6.3f}  +{t0 + run['wall'] - prev:6.3f}  exit (interpreter teardown)")
    tasks = run["tasks"]
    if not tasks:
        print("  (no workers: scanned in the main process)")
        return
    pids = sorted({r["pid"] for r in tasks})
    first = min(r["start"] for r in tasks) - t0
    last = max(r["end"] for r in tasks) - t0
    print(f"workers: {len(pids)}, {len(tasks)} tasks, first task starts at {first:.3f}, last ends at {last:.3f}")
    keys = ["hyperscan", "newline count", "rank sampling", "hit lines -> events", "traceback context", "tails"]
    cpu = sum(r["cpu"] for r in tasks)
    parts = {k: sum(r.get(k, 0.0) for r in tasks) for k in keys}
    # (tails includes the last chunk's tail parsing only; hit lines include their context reads)
    print(f"  worker CPU {cpu:.3f} s in all: " + ", ".join(f"{k} {v:.3f}" for k, v in parts.items())
          + f", other (reading, chunk loop, results) {cpu - sum(parts.values()):.3f}")


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path")
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    runs = [one_run(a.path) for _ in range(a.repeat)]
    walls = ", ".join(f"{r['wall']:.3f}" for r in runs)
    print(f"{a.path}: best of {a.repeat} (walls: {walls})")
    show(min(runs, key=lambda r: r["wall"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
