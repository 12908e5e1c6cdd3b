"""Scan throughput of ``--engine ray`` against the number of Ray workers, side by side with
the local engine, in the same run (bench/ray.md).

A corpus is generated (bench/gen_corpus.py: per-rank logs of a run that failed), then, taking
turns, best of ``--repeat``:

* the local engine: ``scan_parallel`` with 1 and 2 processes, and the CLI end to end
  (``rankdoctor diagnose DIR --format json -j N``);
* the Ray engine on a local cluster of W nodes with 1 CPU each (W = 1, 2; ``ray start
  --head`` and ``ray start --address`` as separate processes, as on a real cluster):
  ``scan_ray`` on a warm connection (workers started, scanner compiled: the steady state of
  a long scan), its first call (cold workers), and the CLI end to end (``--engine ray
  --address``: connect, plan, tasks, merge, diagnose).

Every result is checked against the single-process scan (the same ScanResult) and every
CLI report against the local one (the same bytes).

    python bench/ray_scale.py [--ranks 64] [--mb 256] [--repeat 3] [--workers 1 2]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

# Ray before hyperscan (rankdoctor.scan): see remote/ray_engine.py
from rankdoctor.remote import ray_engine  # noqa: E402

import ray  # noqa: E402

from rankdoctor.ingest.sources import expand_inputs  # noqa: E402
from rankdoctor.kb.loader import load_kb  # noqa: E402
from rankdoctor.parallel import scan_parallel  # noqa: E402
from rankdoctor.scan import Scanner, pattern_table, scan_sources  # noqa: E402
from tests.remote_support import LocalRayCluster  # noqa: E402


def best(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def cli(args: list[str], cwd: Path) -> tuple[float, bytes]:
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "rankdoctor.cli", "diagnose", *args, "--format", "json", "-q"],
                       capture_output=True, cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    took = time.perf_counter() - t
    if p.returncode not in (0, 1, 3):
        raise SystemExit(f"rankdoctor failed ({p.returncode}): {p.stderr.decode()[-500:]}")
    return took, p.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--mb", type=float, default=256)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    a = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="rd-raybench-"))
    corpus = tmp / "corpus"
    subprocess.run([sys.executable, str(ROOT / "bench" / "gen_corpus.py"), str(corpus), "--ranks", str(a.ranks),
                    "--total-mb", str(a.mb)], check=True, capture_output=True)
    size = sum(f.stat().st_size for f in corpus.iterdir())
    mb = size / 1e6
    print(f"# corpus: {a.ranks} rank files, {mb:.0f} MB; {os.cpu_count()} CPUs ({platform.processor() or platform.machine()}); "
          f"load average before: {os.getloadavg()[0]:.1f}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    kb = load_kb()
    table = pattern_table(kb)
    scanner = Scanner(table=table)
    sources = expand_inputs([str(corpus)])
    reference = scan_sources(None, sources, scanner)

    rows: list[tuple[str, float, str]] = []

    def row(what: str, secs: float, note: str = "") -> None:
        rows.append((what, secs, note))
        print(f"| {what} | {secs:.2f} s | {mb / secs:.0f} MB/s | {note} |", flush=True)

    print("| engine | time | throughput | note |\n|---|---:|---:|---|")
    for jobs in (1, 2):
        secs, got = best(lambda: scan_parallel(None, sources, jobs=jobs, scanner=scanner, min_parallel_bytes=0), a.repeat)
        assert got == reference, "local scan differs"
        row(f"local scan, {jobs} process{'es' if jobs > 1 else ''}", secs)
    local_cli = {}
    for jobs in (1, 2):
        took, local_cli[jobs] = min((cli(["corpus", "-j", str(jobs)], tmp) for _ in range(a.repeat)), key=lambda r: r[0])
        row(f"local CLI end to end, -j {jobs}", took, "rankdoctor diagnose DIR --format json")
    for w in a.workers:
        with LocalRayCluster(nodes=w, cpus_per_node=1, object_store_bytes=200_000_000) as c:
            ray.init(address=c.address, logging_level=40, log_to_driver=False)
            try:
                t = time.perf_counter()
                first = ray_engine.scan_ray(sources, table, scanner=scanner)
                cold = time.perf_counter() - t
                assert first == reference, "ray scan differs"
                secs, got = best(lambda: ray_engine.scan_ray(sources, table, scanner=scanner), a.repeat)
                assert got == reference, "ray scan differs"
            finally:
                ray.shutdown()
            row(f"Ray scan, {w} worker{'s' if w > 1 else ''} (warm)", secs, "scan_ray on a kept connection")
            row(f"Ray scan, {w} worker{'s' if w > 1 else ''} (first call)", cold, "workers start, scanner compiled")
            took, out = min((cli(["corpus", "--engine", "ray", "--address", c.address], tmp) for _ in range(a.repeat)),
                            key=lambda r: r[0])
            assert out == local_cli[1], "ray report differs from the local one"
            row(f"Ray CLI end to end, {w} worker{'s' if w > 1 else ''}", took, "--engine ray --address (connect each run)")
    print(f"# load average after: {os.getloadavg()[0]:.1f}")
    subprocess.run(["rm", "-rf", str(tmp)])


if __name__ == "__main__":
    main()
