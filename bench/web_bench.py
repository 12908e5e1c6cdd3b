"""The web app's throughput and latency next to the CLI on the same input, in one run, for
this checkout and (``--baseline REV``) an older commit. Two to four minutes on 2 cores.

    .venv/bin/python bench/web_bench.py --baseline 1e51a58 > /tmp/web_bench.md

Inputs are generated (bench/gen_corpus.py, seeded): one combined console log of 8 ranks
of 1 MB and of 5 MB, a real OOM on one rank and watchdog timeouts on the others at the
end. For each: the CLI (`rankdoctor diagnose FILE --format json`, median of 5 runs,
start-up included); one request at a time (median of 10) as an API user sends it (the
raw body to /api/diagnose) and as the page sends it (multipart to /api/reports); 16
clients at once posting to /api/reports (requests/s, median and 95th percentile
latency); and the most memory the server's processes held together.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from web_common import ROOT, Server, multipart, post, source_tree

DATA = ROOT / "bench" / "data" / "web"


def inputs() -> dict[str, Path]:
    out = {}
    for mb in (1, 5):
        path = DATA / f"console-{mb}m.log"
        if not path.exists():
            DATA.mkdir(parents=True, exist_ok=True)
            subprocess.run([sys.executable, "bench/gen_corpus.py", str(path.with_suffix("")), "--ranks", "8",
                            "--total-mb", str(mb), "--single"], cwd=ROOT, check=True, capture_output=True)
        out[f"{mb} MB"] = path
    return out


def cli_seconds(src: Path, path: Path, runs: int = 5) -> tuple[float, float]:
    """Median wall time and CPU time of `rankdoctor diagnose FILE --format json`."""
    times, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "rankdoctor.cli", "diagnose", str(path), "--format", "json", "-q"],
                       cwd=ROOT, env={**os.environ, "PYTHONPATH": str(src)}, capture_output=True, check=False)
        times.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return statistics.median(times), statistics.median(cpus)


def one_at_a_time(srv: Server, data: bytes, page: bool, n: int = 10) -> float:
    times = []
    body, ctype = multipart("console.log", data) if page else (data, "text/plain")
    for _ in range(n):
        t0 = time.perf_counter()
        status, _, _ = post(srv.port, "/api/reports" if page else "/api/diagnose", body, ctype)
        times.append(time.perf_counter() - t0)
        assert status in (200, 201), status
    return statistics.median(times)


def crowd(srv: Server, data: bytes, n: int, clients: int = 16) -> tuple[float, float, float, dict]:
    """``n`` page-style posts from ``clients`` keep-alive connections: req/s, p50, p95, statuses."""
    import http.client

    body, ctype = multipart("console.log", data)
    latencies: list[float] = []
    codes: dict[int, int] = {}
    lock = threading.Lock()
    left = [n]

    def client() -> None:
        c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=600)
        while True:
            with lock:
                if not left[0]:
                    return
                left[0] -= 1
            t0 = time.perf_counter()
            c.request("POST", "/api/reports", body=body, headers={"Content-Type": ctype})
            r = c.getresponse()
            r.read()
            with lock:
                latencies.append(time.perf_counter() - t0)
                codes[r.status] = codes.get(r.status, 0) + 1

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    latencies.sort()
    return n / wall, latencies[len(latencies) // 2], latencies[int(len(latencies) * 0.95)], codes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", help="an older commit to measure in the same run")
    ap.add_argument("--requests", type=int, default=96, help="posts of the 1 MB log at once per round (half as many of 5 MB)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds, the servers taking turns; the table has the medians")
    args = ap.parse_args()
    keep: list = []
    variants = {"this checkout": source_tree(None, keep)}
    if args.baseline:
        variants = {f"before ({args.baseline})": source_tree(args.baseline, keep), **variants}
    files = inputs()
    servers = {name: Server(src) for name, src in variants.items()}  # all up, measured by turns
    results: dict[tuple[str, str], list[tuple]] = {}
    loads = []
    try:
        for round_ in range(args.rounds):
            for label, path in files.items():
                data = path.read_bytes()
                order = list(servers) if round_ % 2 == 0 else list(reversed(servers))
                for name in order:
                    srv = servers[name]
                    cli = cli_seconds(variants[name], path, 3)
                    one_at_a_time(srv, data, True, 2)  # warm
                    raw = one_at_a_time(srv, data, False)
                    page = one_at_a_time(srv, data, True)
                    srv.reset_peak()
                    n = args.requests if label == "1 MB" else args.requests // 2
                    cpu0 = srv.cpu_seconds()
                    rps, p50, p95, codes = crowd(srv, data, n)
                    cpu = (srv.cpu_seconds() - cpu0) / n
                    results.setdefault((label, name), []).append((cli, raw, page, rps, p50, p95, cpu, srv.peak_mb, codes))
                    loads.append(os.getloadavg()[0])
                    print(f"round {round_ + 1}: {label} {name}: done", file=sys.stderr)
    finally:
        for srv in servers.values():
            srv.stop()
    print(f"{os.cpu_count()} cores; {args.rounds} rounds; 1-minute load average between rounds "
          f"{min(loads):.1f}–{max(loads):.1f}; each cell is the median of the rounds\n")
    print("| input | server | CLI: wall (CPU) | one request: raw body to /api/diagnose (median of 10) "
          "| one request: the page's multipart to /api/reports | 16 clients: req/s | p50 | p95 "
          "| server CPU per request (all processes) | peak memory (all processes) | statuses |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for (label, name), runs in results.items():
        cli, cli_cpu = (statistics.median(r[0][i] for r in runs) for i in (0, 1))
        raw, page, rps, p50, p95, cpu, peak = (statistics.median(col) for col in zip(*[r[1:8] for r in runs]))
        codes: dict = {}
        for r in runs:
            for k, v in r[8].items():
                codes[k] = codes.get(k, 0) + v
        print(f"| {label} | {name} | {cli:.2f} s ({cli_cpu:.2f} s) | {raw:.3f} s | {page:.3f} s | {rps:.1f} | {p50:.2f} s "
              f"| {p95:.2f} s | {cpu * 1000:.0f} ms | {peak:.0f} MB | {', '.join(f'{k}: {v}' for k, v in sorted(codes.items()))} |")


if __name__ == "__main__":
    main()
