"""What redaction costs: `rankdoctor redact` on real logs, beside `rankdoctor diagnose` on the
same input (what `diagnose --redact` adds to) and `sed -E` replacing IPv4 addresses and
/home/<user> (a naive redaction that knows two patterns, for scale).

    .venv/bin/python bench/redact_bench.py [MB]      # writes bench/redact.md

The input is every text log of tests/scenarios (real issue-thread logs and lab runs)
concatenated and repeated up to MB (default 16) into one file per rank of a 4-rank folder.
Best of 3, the tools taking turns; CPU seconds are user+sys of the process tree.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RD = [sys.executable, "-m", "rankdoctor.cli"]


def corpus(folder: Path, mb: int) -> int:
    texts = [p.read_bytes() for p in sorted((ROOT / "tests" / "scenarios").rglob("*")) if p.suffix in (".log", ".txt") and p.is_file()]
    blob = b"".join(t if t.endswith(b"\n") else t + b"\n" for t in texts)
    per = mb * 10**6 // 4
    folder.mkdir(parents=True)
    for r in range(4):
        data = (blob * (per // len(blob) + 1))[:per]
        (folder / f"rank_{r}.log").write_bytes(data[: data.rfind(b"\n") + 1])
    return sum(p.stat().st_size for p in folder.iterdir())


def timed(cmd: list[str], out: Path | None = None) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    with open(out or os.devnull, "wb") as sink:
        subprocess.run(cmd, stdout=sink, stderr=subprocess.DEVNULL, check=False, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    mb = int(sys.argv[1]) if len(sys.argv) > 1 else 16
    work = Path(tempfile.mkdtemp(prefix="rankdoctor-redact-bench-"))
    try:
        logs = work / "logs"
        size = corpus(logs, mb)
        sed = ["sed", "-E", r"s/[0-9]{1,3}(\.[0-9]{1,3}){3}/192.0.2.1/g; s#/home/[^/ ]+#/home/user#g"]
        tools = {
            "rankdoctor redact": lambda i: RD + ["redact", str(logs), "-o", str(work / f"out{i}")],
            "rankdoctor diagnose (no redaction)": lambda i: RD + ["diagnose", str(logs), "-q", "--format", "json"],
            "sed -E (2 patterns)": lambda i: ["bash", "-c", f"for f in {logs}/*.log; do {' '.join(sed[:2])} '{sed[2]}' \"$f\" > /dev/null; done"],
        }
        best: dict[str, tuple[float, float]] = {}
        for i in range(3):
            for name, cmd in tools.items():
                shutil.rmtree(work / f"out{i}", ignore_errors=True)
                wall, cpu = timed(cmd(i), work / "stdout")
                if name not in best or wall < best[name][0]:
                    best[name] = (wall, cpu)
        rows = [f"| {n} | {w:.1f} | {c:.1f} | {size / 1e6 / w:.1f} |" for n, (w, c) in best.items()]
        table = "\n".join(["| tool | wall s (best of 3) | CPU s | MB/s |", "|---|---|---|---|", *rows])
        note = (f"# Redaction speed\n\n`python bench/redact_bench.py {mb}` on {size / 1e6:.1f} MB of real logs (4 files; "
                f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end).\n\n{table}\n")
        (ROOT / "bench" / "redact.md").write_text(note)
        print(note)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
