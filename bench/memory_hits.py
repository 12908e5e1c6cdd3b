"""Peak memory and time of `rankdoctor diagnose` on logs where every line matches (issue 12).

One real watchdog line (an example of the nccl-watchdog-timeout entry) repeated to 128 MB
and 512 MB (and 1 GB with --large), and the same sizes of a line that matches nothing (the
flat baseline), each diagnosed by the CLI of this checkout ("after") and by the CLI of the
commit before the scanner kept only the first and last occurrences of each kind of line
("before", a git worktree on PYTHONPATH), in the same run, taking turns. Peak RSS is sampled
every 20 ms over the command's whole process tree (the scan workers included): the largest
single process (its VmHWM) and all of them together. A run whose processes hold more than
--kill-mb in all is killed and reported so (the attack run saw 1 GB of hits pass 4 GB).

    .venv/bin/python bench/memory_hits.py            # 128 MB and 512 MB, a few minutes
    .venv/bin/python bench/memory_hits.py --large    # and 1 GB
    .venv/bin/python bench/memory_hits.py --regex-worst   # re's worst line of LONG_LINE per pattern

``--regex-worst`` times every signature and structural fact under Python's ``re`` on
generated lines of ``scan.LONG_LINE`` characters built to make it backtrack (each literal
of the pattern followed by, or repeated with, runs of spaces, letters, digits and
punctuation), without and with the scanner's start guard, and prints the slowest: what one
line can cost before RE2 takes over.

Inputs go to bench/data/hits/ (git-ignored). The table is printed as Markdown
(bench/memory_hits.md holds the last one).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data" / "hits"
PY = str(Path(os.environ.get("VENV", ROOT / ".venv")) / "bin" / "python")
MB = 1 << 20
# a training line that no signature matches (nor hyperscan's prefilter), padded to the same length
QUIET = "[rank5]: 2025-11-30 05:00:00,000 INFO train: step 12345 loss 0.1234 lr 0.0003 tokens/s 123456 "


def watchdog_line() -> str:
    sys.path.insert(0, str(ROOT / "src"))
    from rankdoctor.kb.loader import load_kb

    entry = load_kb().get("nccl-watchdog-timeout")
    return next(x.text for x in entry.examples.match if x.text.startswith("[rank") and "Watchdog caught" in x.text)


def make_input(path: Path, line: str, size: int) -> Path:
    """``line`` repeated to ``size`` bytes, streamed (kept while it has that size)."""
    if path.is_file() and path.stat().st_size == size - size % (len(line) + 1):
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (line + "\n").encode()
    block = data * (4 * MB // len(data))
    with open(path, "wb") as fh:
        left = size // len(data)
        while left:
            n = min(left, len(block) // len(data))
            fh.write(block[: n * len(data)])
            left -= n
    return path


def base_commit() -> str:
    """The commit before the one that gave the scanner its per-kind samples."""
    out = subprocess.run(
        ["git", "log", "--format=%H", "-S", "class Sample", "--", "src/rankdoctor/events.py"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()
    if not out:
        raise SystemExit("cannot find the commit that added events.Sample; give --base")
    return out[-1] + "~1"


def _short(rev: str) -> str:
    return subprocess.run(["git", "rev-parse", "--short", rev], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


def _session_rss(sid: int) -> tuple[int, int]:
    """(summed VmRSS, largest VmHWM) in KiB of the processes of session ``sid``."""
    total = largest = 0
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as st:
                if int(st.read().rsplit(b")", 1)[1].split()[3]) != sid:
                    continue
            with open(f"/proc/{d}/status", "rb") as st:
                status = st.read()
        except (OSError, IndexError, ValueError):
            continue
        rss, hwm = re.search(rb"VmRSS:\s+(\d+)", status), re.search(rb"VmHWM:\s+(\d+)", status)
        total += int(rss.group(1)) if rss else 0
        largest = max(largest, int(hwm.group(1)) if hwm else 0)
    return total, largest


def measure(src: Path, log: Path, kill_kib: int) -> dict:
    """Run the CLI of ``src`` on ``log``; wall time, peaks, exit status (None: killed)."""
    env = dict(os.environ, PYTHONPATH=str(src), RANKDOCTOR_CACHE="0")
    cmd = [PY, "-m", "rankdoctor.cli", "diagnose", str(log), "--format", "json"]
    with tempfile.TemporaryFile() as out:
        t = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE, env=env, start_new_session=True)
        total = largest = 0
        killed = False
        while p.poll() is None:
            now, hwm = _session_rss(p.pid)
            total, largest = max(total, now), max(largest, hwm)
            if now > kill_kib:
                os.killpg(p.pid, signal.SIGKILL)
                killed = True
                break
            time.sleep(0.02)
        p.wait()
        wall = time.perf_counter() - t
        err = p.stderr.read().decode(errors="replace") if p.stderr else ""
    if not killed and p.returncode not in (0, 1, 3):
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}): {err[-1000:]}")
    return {"wall": wall, "total": total // 1024, "largest": largest // 1024, "killed": killed}


def cell(r: dict, kill_mb: int) -> str:
    if r["killed"]:
        return f"killed past {kill_mb} MB at {r['wall']:.0f} s"
    return f"{r['wall']:.1f} s, {r['largest']} / {r['total']} MB"


_FILLERS = [" ", "a", "0", "a ", "0,", ":", "-", ".", "/", "x=", "'", "(", "[", "\t", "a:", "0 ", " 0", "=", ",", "a.", "_", "]"]
_LITERAL = re.compile(r"(?:[A-Za-z0-9 _=:,.'\-]|\\[\[\]().])+")


def regex_worst(top: int = 10) -> None:
    sys.path.insert(0, str(ROOT / "src"))
    from rankdoctor.facts import FACTS
    from rankdoctor.kb.loader import load_kb
    from rankdoctor.scan import LONG_LINE, start_guarded

    n = LONG_LINE
    rows = [(f"{e.id}/{s.id}", s.regex, re.I if s.ignore_case else 0) for e in load_kb() for s in e.signatures]
    rows += [(f"fact/{k}", v, 0) for k, v in FACTS.items()]
    worst = []
    for name, regex, flags in rows:
        frags = sorted({m.group().replace("\\", "") for m in _LITERAL.finditer(regex) if len(m.group()) >= 3}, key=len, reverse=True)[:6]
        lines = [
            s[:n]
            for fr in frags or [""]
            for fl in _FILLERS
            for s in (fr + fl * (n // len(fl)), (fr + fl) * (n // (len(fr) + len(fl)) + 1), fl * (n // len(fl)) + fr)
        ]
        cost = []
        for rx in (re.compile(regex, flags), re.compile(start_guarded(regex), flags)):
            slowest = 0.0
            for line in lines:
                t = time.process_time()  # (CPU time: the machine may be shared)
                rx.search(line)
                slowest = max(slowest, time.process_time() - t)
            cost.append(slowest)
        worst.append((cost[1], cost[0], name))
    worst.sort(reverse=True)
    print(f"{len(rows)} patterns, lines of {n} characters; slowest single line under re, CPU ms\n")
    print("| pattern | plain re | start-guarded (what the scanner runs) |")
    print("|---|---:|---:|")
    for guarded, plain, name in worst[:top]:
        print(f"| {name} | {plain * 1000:.1f} | {guarded * 1000:.1f} |")
    print(f"\nslowest plain: {max(w[1] for w in worst) * 1000:.1f} ms ({max(worst, key=lambda w: w[1])[2]})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="128,512", help="input sizes in MB (default: 128,512)")
    ap.add_argument("--large", action="store_true", help="also 1 GB (about 10 more minutes)")
    ap.add_argument("--base", help="the 'before' commit (default: the one before events.Sample)")
    ap.add_argument("--kill-mb", type=int, default=4096, help="kill a run whose processes hold more than this in all")
    ap.add_argument("--regex-worst", action="store_true", help="only time re's worst line per pattern (see above)")
    a = ap.parse_args(argv)
    if a.regex_worst:
        regex_worst()
        return 0
    sizes = [int(x) for x in a.sizes.split(",")] + ([1024] if a.large else [])
    base = _short(a.base or base_commit())
    hit = watchdog_line()
    quiet = QUIET.ljust(len(hit), "x")
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "before"
        subprocess.run(["git", "worktree", "add", "--detach", str(tree), base], cwd=ROOT, check=True, capture_output=True)
        try:
            rows = []
            for size in sizes:
                hits = make_input(DATA / f"hits-{size}m.log", hit, size * MB)
                calm = make_input(DATA / f"quiet-{size}m.log", quiet, size * MB)
                row = {"size": size, "lines": hits.stat().st_size // (len(hit) + 1)}
                for name, src in (("after", ROOT / "src"), ("before", tree / "src")):
                    row[name] = measure(src, hits, a.kill_mb << 10)
                    row[f"{name}-quiet"] = measure(src, calm, a.kill_mb << 10)
                    print(size, name, row[name], row[f"{name}-quiet"], file=sys.stderr)
                rows.append(row)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True)
    load = os.getloadavg()[0]
    print(f"after: {_short('HEAD')} (+ the working tree), before: {base}; {os.cpu_count()} CPUs, 1-min load {load:.1f}; "
          f"wall time, then peak RSS of the largest process / all processes together\n")
    print("| input | lines | before: hits | after: hits | before: no hits | after: no hits |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['size']} MB | {r['lines']:,} | {cell(r['before'], a.kill_mb)} | {cell(r['after'], a.kill_mb)} | "
              f"{cell(r['before-quiet'], a.kill_mb)} | {cell(r['after-quiet'], a.kill_mb)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
