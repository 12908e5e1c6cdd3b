"""Heavy inputs (issue 12, the inputs slice): `rankdoctor diagnose` on a folder of many small
logs and on archives of many members, for this checkout and for a baseline source tree,
taking turns on the same generated files (bench/attacks_input.md).

    git archive <commit> src entries | tar -x -C /tmp/before
    .venv/bin/python bench/attacks_input.py --before /tmp/before/src > bench/attacks_input.md.new

(--after /tmp/after/src measures another extracted tree instead of this checkout.)

Each run is the CLI as a child process (`diagnose PATH -q -f json`, output to a file); the
table gives its wall time, the CPU time of its whole process tree (user + system: on a
machine shared with other work this is the steadier number) and its peak RSS (the largest
single process). A run past --timeout is stopped and reported as such. The inputs are
generated once into a temporary folder: small logs of a few progress lines, one of them
with rank 1's NCCL watchdog timeout. (The files are not named by rank: a folder of 10,000
rank_N.log files also costs the diagnosis stage time quadratic in the number of ranks,
which is not what this measures.)
"""

from __future__ import annotations

import argparse
import io
import os
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WATCHDOG = (
    b"[rank1]:[E817 17:40:34.227531918 ProcessGroupNCCL.cpp:1515] [PG 0 (default_pg) Rank 1] Watchdog caught "
    b"collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
    b"ran for 600011 milliseconds before timing out.\n"
)


def small_log(i: int) -> bytes:
    body = b"step %d loss 2.31\nstep %d loss 2.17\nsaving checkpoint %d\n" % (i, i + 1, i)
    return body + (WATCHDOG if i == 1 else b"")


def make_folder(d: Path, n: int) -> Path:
    out = d / f"files-{n}"
    out.mkdir()
    for i in range(n):
        (out / f"worker-{i}.log").write_bytes(small_log(i))
    return out


def make_archive(d: Path, n: int, kind: str) -> Path:
    out = d / f"members-{n}.{kind}"
    if kind == "zip":
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
            for i in range(n):
                zf.writestr(f"logs/worker-{i}.log", small_log(i))
    else:
        with tarfile.open(out, "w:gz") as tf:
            for i in range(n):
                body = small_log(i)
                info = tarfile.TarInfo(f"logs/worker-{i}.log")
                info.size = len(body)
                tf.addfile(info, io.BytesIO(body))
    return out


def run(src: Path, target: Path, timeout: float, out: Path) -> str:
    """One CLI run; 'wall s / cpu s / peak MB' or what stopped it."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    start = time.perf_counter()
    with open(out, "wb") as fh:
        p = subprocess.Popen([sys.executable, "-m", "rankdoctor.cli", "diagnose", str(target), "-q", "-f", "json"],
                             stdout=fh, stderr=subprocess.PIPE, env=env, start_new_session=True)
        deadline = start + timeout
        while True:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                os.killpg(p.pid, signal.SIGKILL)
                os.wait4(p.pid, 0)
                return f"stopped after {timeout:.0f} s"
            time.sleep(0.05)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1, 3):
        return f"exit {code}: {p.stderr.read().decode(errors='replace').strip()[:80]}"
    return f"{wall:.1f} s / {usage.ru_utime + usage.ru_stime:.1f} s / {usage.ru_maxrss / 1024:.0f} MB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, required=True, help="the baseline's src folder")
    ap.add_argument("--after", type=Path, default=ROOT / "src", help="the src folder measured against it (default: this checkout's)")
    ap.add_argument("--files", type=int, nargs="*", default=[10_000, 100_000], help="folder sizes (small files)")
    ap.add_argument("--members", type=int, nargs="*", default=[1000, 2000, 4000], help="archive sizes (members)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds before a run is stopped")
    a = ap.parse_args()
    after = a.after
    rows = []
    with tempfile.TemporaryDirectory(prefix="rd-bench-") as tmp:
        d = Path(tmp)
        cases = [(f"folder of {n:,} small logs", lambda n=n: make_folder(d, n)) for n in a.files]
        for kind in ("tar.gz", "zip"):
            cases += [(f"{kind} of {n:,} members", lambda n=n, kind=kind: make_archive(d, n, kind)) for n in a.members]
        for name, make in cases:
            target = make()
            # the baseline first, then this checkout, on the same warm files
            before = run(a.before, target, a.timeout, d / "before.json")
            now = run(after, target, a.timeout, d / "after.json")
            rows.append((name, before, now))
            print(f"{name}: {before} -> {now}", file=sys.stderr)
    print("| input | before: wall / CPU / peak RSS | after: wall / CPU / peak RSS |")
    print("|---|---|---|")
    for name, before, now in rows:
        print(f"| {name} | {before} | {now} |")


if __name__ == "__main__":
    main()
