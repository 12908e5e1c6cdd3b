"""Run the benchmark on the generated corpus (see bench/README.md) and print a table.

For each input: rankdoctor diagnose --format json (the CLI as installed; its cache of the
parsed knowledge base and compiled patterns warm, as on every run after the first), the
same with RANKDOCTOR_CACHE=0 (what a first run after installing pays), ripgrep
(rg -j2 -F -f literals) and GNU grep (LC_ALL=C grep -r -F -f literals), each run
REPEAT times on warm files, the tools taking turns; the best wall time gives MB/s
(MB = 10^6 bytes), peak RSS is /usr/bin/time -v's "Maximum resident set size" (the
largest single process) and, for rankdoctor, the summed RSS of all its processes.
Output goes to files under bench/data/out/ (never /dev/null: grep stops at the first
match when it writes there).

BASE_SRC=/path/to/other/src adds "rankdoctor @base": the same CLI with that source tree
first on PYTHONPATH (e.g. ``git archive HEAD~3 src entries | tar -x -C /tmp/base``), in
the same rotation, so a change is measured against what it replaces in the same minutes.
NO_CACHE=0 leaves out the no-cache row.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data"
OUT = DATA / "out"
VENV = Path(os.environ.get("VENV", ROOT / ".venv"))
PY = str(VENV / "bin" / "python")
RD = str(VENV / "bin" / "rankdoctor")
REPEAT = int(os.environ.get("REPEAT", "3"))
JOBS = os.environ.get("JOBS", "2")
BASE_SRC = os.environ.get("BASE_SRC")
NO_CACHE = os.environ.get("NO_CACHE", "1") != "0"


def size_of(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def warm(path: Path) -> None:
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for f in files:
        with open(f, "rb") as fh:
            while fh.read(16 << 20):
                pass


def timed(cmd: list[str], out: Path, env: dict | None = None) -> tuple[float, int, int]:
    """(wall seconds, peak RSS in KiB of the largest process, exit status)."""
    with open(out, "wb") as fh:
        t = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-v", *cmd], stdout=fh, stderr=subprocess.PIPE, env=env)
        wall = time.perf_counter() - t
    m = re.search(rb"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    st = re.search(rb"Exit status: (\d+)", p.stderr)
    if p.returncode not in (0, 1, 3) or not m:
        sys.stderr.write(p.stderr.decode(errors="replace")[-2000:])
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return wall, int(m.group(1)), int(st.group(1)) if st else p.returncode


def best(cmd: list[str], out: Path, n: int = REPEAT, env: dict | None = None) -> tuple[float, int]:
    runs = [timed(cmd, out, env) for _ in range(n)]
    return min(r[0] for r in runs), max(r[1] for r in runs)


def tree_peak_rss(cmd: list[str], out: Path) -> int:
    """Peak of the summed RSS (KiB) of a command and all its processes, sampled every 20 ms."""
    with open(out, "wb") as fh:
        p = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.DEVNULL, start_new_session=True)
        peak = 0
        while p.poll() is None:
            total = 0
            for d in os.listdir("/proc"):
                if not d.isdigit():
                    continue
                try:
                    with open(f"/proc/{d}/stat", "rb") as st:
                        fields = st.read().rsplit(b")", 1)[1].split()
                    if int(fields[3]) != p.pid:  # session id
                        continue
                    with open(f"/proc/{d}/status", "rb") as st:
                        m = re.search(rb"VmRSS:\s+(\d+)", st.read())
                    total += int(m.group(1)) if m else 0
                except (OSError, IndexError, ValueError):
                    continue
            peak = max(peak, total)
            time.sleep(0.02)
    return peak


def main() -> int:
    lits = DATA / "literals.txt"
    OUT.mkdir(parents=True, exist_ok=True)
    rg = shutil.which("rg")
    inputs = [a for a in sys.argv[1:]] or ["rank-1g", "rank-256m", "console-512m.log", "noisy-256m"]
    # A wheel installed by pip has its modules compiled to bytecode at install time. A
    # checkout run with PYTHONDONTWRITEBYTECODE set (as on these machines) would compile
    # ~45 modules from source on every run (~0.08 s); keep their bytecode under OUT instead.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(OUT / "pycache")
    rows = []
    print(f"{'input':18s} {'MB':>7s} {'tool':24s} {'best s':>7s} {'MB/s':>7s} {'peak RSS MiB':>12s}")
    for name in inputs:
        path = DATA / name
        print(f"# {name}: {time.strftime('%a %b %d %Y %H:%M:%S UTC', time.gmtime())}, load average "
              + " ".join(f"{x:.2f}" for x in os.getloadavg()), flush=True)
        mb = size_of(path) / 1e6
        warm(path)
        cold = {**env, "RANKDOCTOR_CACHE": "0"}
        tools = [("rankdoctor (CLI)", [RD, "diagnose", str(path), "--format", "json"], env)]
        if BASE_SRC:
            base = {**env, "PYTHONPATH": os.pathsep.join([BASE_SRC, *filter(None, [env.get("PYTHONPATH")])])}
            tools.append(("rankdoctor @base", [RD, "diagnose", str(path), "--format", "json"], base))
        if NO_CACHE:
            tools.append(("rankdoctor, no cache", [RD, "diagnose", str(path), "--format", "json"], cold))
        if rg:
            tools.append((f"rg -j{JOBS} -F", [rg, f"-j{JOBS}", "-F", "-f", str(lits), str(path)], env))
        tools.append(("LC_ALL=C grep -F", ["env", "LC_ALL=C", "grep", "-r", "-F", "-f", str(lits), str(path)], env))
        for _tool, cmd, e in tools[: 2 if BASE_SRC else 1]:  # fill the caches
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=e)
        runs: dict[str, list] = {t[0]: [] for t in tools}
        for i in range(REPEAT):  # take turns, so a busy moment on a shared machine hits all tools
            for tool, cmd, e in tools:
                if "grep -F" in tool and mb > 300 and i:
                    continue
                runs[tool].append(timed(cmd, OUT / (re.sub(r"\W+", "_", tool) + ".out"), e))
        res = {}
        for tool, _cmd, _e in tools:
            wall, rss = min(r[0] for r in runs[tool]), max(r[1] for r in runs[tool])
            res[tool] = (wall, rss)
            print(f"{name:18s} {mb:7.0f} {tool:24s} {wall:7.2f} {mb / wall:7.0f} {rss / 1024:12.0f}", flush=True)
        tree = tree_peak_rss(tools[0][1], OUT / "tree.out")
        print(f"{name:18s} {'':7s} {'rankdoctor: all processes':24s} {'':7s} {'':7s} {tree / 1024:12.0f}  (summed RSS, sampled)")
        if rg:
            for tool in [t[0] for t in tools if t[0].startswith("rankdoctor")]:
                print(f"{name:18s} {'':7s} ratio {tool} / rg = {res[f'rg -j{JOBS} -F'][0] / res[tool][0]:.2f}")
        rows.append((name, mb, res))
    # start-up cost
    print()
    for label, cmd in [
        ("rankdoctor --version", [RD, "--version"]),
        ("diagnose one-line.log", [RD, "diagnose", str(DATA / "small" / "one-line.log"), "--format", "json"]),
        ("diagnose one-mb.log", [RD, "diagnose", str(DATA / "small" / "one-mb.log"), "--format", "json"]),
    ]:
        wall, rss = best(cmd, OUT / "small.out", max(REPEAT, 5), env)
        print(f"{label:28s} best of {max(REPEAT, 5)}: {wall:.3f} s, peak RSS {rss / 1024:.0f} MiB")
    wall, rss = best([RD, "diagnose", str(DATA / "small" / "one-mb.log"), "--format", "json"], OUT / "small.out", max(REPEAT, 5), {**env, "RANKDOCTOR_CACHE": "0"})
    print(f"{'one-mb.log, no cache':28s} best of {max(REPEAT, 5)}: {wall:.3f} s, peak RSS {rss / 1024:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
