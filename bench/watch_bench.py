"""`rankdoctor watch` beside `tail -F` on 64 growing rank logs (issue 14).

A writer process appends realistic training-log lines to N files at a fixed rate per file;
in the same run, over the same files, two followers run as subprocesses:

* `rankdoctor watch --format json DIR` (the CLI of this checkout; stdout to a file, one
  document per change of the diagnosis, the last one with the final line counts), and
* `tail -F DIR/*` (GNU coreutils, inotify; output to /dev/null).

Every second, from /proc: each process's CPU seconds (utime + stime of /proc/PID/stat),
RSS (VmRSS; VmHWM at the end is the kernel's own peak), and bytes it has read (rchar of
/proc/PID/io), beside the bytes the writer has written (the files' sizes). Watch reads each
log byte once (pread from its offset), so written minus read-since-start is how far behind
it is (an estimate: rchar also counts the 64 bytes before its offset that watch reads again
on each poll to notice a file rewritten in place, a few MiB per GiB, so it drifts below zero
when watch is level with the writer); tail's written bytes (wchar) are its output. When the writer stops, both get up to
--drain seconds to catch up, then SIGTERM: watch reads every file to its end, prints its
last document and exits; its line counts are compared with the lines written, per file.

The lines are the ones bench/gen_corpus.py builds from real logs (start-up lines of the lab's
healthy runs and NCCL INFO init once, then the training loop: tqdm bars glued by carriage
returns, step/loss lines, DeepSpeed log_dist/timer lines, Megatron iteration lines, NCCL INFO
comm lines), generated once per rank into a pool of --pool-mb that the writer appends in a
cycle, whole lines only. No failure is written: this measures following, not diagnosing.

    .venv/bin/python bench/watch_bench.py --minutes 10          # the issue's run: 64 x 1 MB/s, 10 min
    .venv/bin/python bench/watch_bench.py --seconds 60          # 64 x 1 MB/s for 60 s
    .venv/bin/python bench/watch_bench.py --seconds 120 --rate 0.1

The files go to a temporary folder under --tmp (64 x 1 MB/s x 10 min is 38 GiB of disk;
deleted at the end unless --keep). Prints a Markdown table and, with --json, writes every
sample.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from multiprocessing import Process
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(os.environ.get("VENV", ROOT / ".venv")) / "bin"
CLI = str(BIN / "rankdoctor")
MB = 1 << 20
TICK = os.sysconf("SC_CLK_TCK")
WRITE_EVERY = 0.05  # seconds between the writer's rounds over the files


# -- the lines ------------------------------------------------------------------------
def _pool(args: tuple) -> tuple[bytes, bytes]:
    """One rank's start-up lines, and a pool of its training-loop lines (whole lines)."""
    rank, world, pool_bytes, tmp = args
    sys.path.insert(0, str(ROOT / "bench"))
    import gen_corpus

    host = f"gpu-node-{rank // 8:02d}"
    head_lines = len(gen_corpus._healthy_templates()[: 60 + rank % 40]) + len(gen_corpus._nccl_init(rank, world, host, 20000 + rank * 37))
    tail_lines = len(gen_corpus._failure_lines(rank, -1, host))
    path = Path(tmp) / f"pool_{rank}.log"
    gen_corpus.gen_rank((path, rank, world, pool_bytes, 0.0, 6, -1, False))
    data = path.read_bytes()
    path.unlink()
    lines = data.split(b"\n")[:-1]  # (ends with a newline)
    head = b"\n".join(lines[:head_lines]) + b"\n"
    body = b"\n".join(lines[head_lines:-tail_lines]) + b"\n"
    return head, body


def make_pools(ranks: int, pool_mb: float, tmp: str) -> list[tuple[bytes, bytes]]:
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
        return list(ex.map(_pool, [(r, ranks, int(pool_mb * MB), tmp) for r in range(ranks)]))


# -- the writer -----------------------------------------------------------------------
def writer(paths: list[str], bodies: list[bytes], rate: float, seconds: float, start_at: float, out: str) -> None:
    """Append to every file, whole lines, keeping each at ``rate`` bytes/s from ``start_at``
    (a round every WRITE_EVERY s); then write what was written to ``out`` (JSON)."""
    fds = [os.open(p, os.O_WRONLY | os.O_APPEND) for p in paths]
    pos = [0] * len(paths)
    written = [0] * len(paths)
    lines = [0] * len(paths)
    while time.time() < start_at:
        time.sleep(0.005)
    t0 = time.time()
    end = t0 + seconds
    late = 0
    while True:
        now = time.time()
        if now >= end:
            now = end
        due = rate * (now - t0)
        for i, fd in enumerate(fds):
            need = int(due) - written[i]
            if need <= 0:
                continue
            body = bodies[i]
            parts = []
            while need > 0:
                stop = body.find(b"\n", min(pos[i] + need, len(body)) - 1)
                stop = len(body) if stop < 0 else stop + 1
                part = body[pos[i]:stop]
                parts.append(part)
                need -= len(part)
                pos[i] = stop % len(body)
            data = b"".join(parts)
            os.write(fd, data)
            written[i] += len(data)
            lines[i] += data.count(b"\n")
        if now >= end:
            break
        sleep = WRITE_EVERY - (time.time() - now)
        if sleep > 0:
            time.sleep(sleep)
        else:
            late += 1
    took = time.time() - t0
    for fd in fds:
        os.close(fd)
    with open(out, "w") as f:
        json.dump({"seconds": took, "bytes": written, "lines": lines, "late_rounds": late}, f)


# -- /proc ----------------------------------------------------------------------------
def cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime (fields 14, 15)


def status_kb(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def io(pid: int) -> dict[str, int]:
    with open(f"/proc/{pid}/io") as f:
        return {k: int(v) for k, v in (line.split(": ") for line in f)}


def sample(pid: int) -> dict | None:
    try:
        i = io(pid)
        return {"cpu": cpu_s(pid), "rss_kb": status_kb(pid, "VmRSS"), "hwm_kb": status_kb(pid, "VmHWM"), "rchar": i["rchar"], "wchar": i["wchar"]}
    except (FileNotFoundError, ProcessLookupError, ValueError):
        return None


def sizes(paths: list[str]) -> int:
    return sum(os.stat(p).st_size for p in paths)


# -- the run --------------------------------------------------------------------------
def run(a: argparse.Namespace) -> dict:
    seconds = a.minutes * 60 if a.minutes else a.seconds
    tmp = tempfile.mkdtemp(prefix="watchbench-", dir=a.tmp)
    logs = os.path.join(tmp, "logs")
    os.mkdir(logs)
    try:
        t = time.time()
        pools = make_pools(a.ranks, a.pool_mb, tmp)
        print(f"pools: {a.ranks} x {a.pool_mb:g} MiB of lines in {time.time() - t:.1f} s", file=sys.stderr)
        paths = [os.path.join(logs, f"rank_{r:02d}.log") for r in range(a.ranks)]
        for p, (head, _) in zip(paths, pools):
            with open(p, "wb") as f:
                f.write(head)
        head_lines = [head.count(b"\n") for head, _ in pools]
        start_bytes = sizes(paths)

        env = dict(os.environ, PYTHONUNBUFFERED="1")
        wout = open(os.path.join(tmp, "watch.out"), "wb")
        werr = open(os.path.join(tmp, "watch.err"), "wb")
        cmd = [CLI]
        if a.profile:  # pyinstrument importable (e.g. PYTHONPATH=DIR of a pip install --target DIR pyinstrument)
            cmd = [str(BIN / "python"), "-m", "pyinstrument", "-r", "text", "--show-all", "-o", str(a.profile.resolve()), CLI]
        watch = subprocess.Popen([*cmd, "watch", "--format", "json", logs], stdout=wout, stderr=werr, env=env, cwd=tmp)
        tail = subprocess.Popen(["tail", "-F", "-n", "0", *paths], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp)
        # watch is ready when its first document (what the files held) is out
        t = time.time()
        while os.path.getsize(wout.name) == 0:
            if watch.poll() is not None or time.time() - t > 120:
                raise SystemExit(f"watch did not start: {open(werr.name).read()}")
            time.sleep(0.05)
        print(f"watch started in {time.time() - t:.1f} s", file=sys.stderr)
        time.sleep(1.0)
        base = {"watch": sample(watch.pid), "tail": sample(tail.pid)}
        # watch's rchar so far is its start-up reads plus the files' first bytes
        watch_read0 = base["watch"]["rchar"] - start_bytes

        wres = os.path.join(tmp, "writer.json")
        start_at = time.time() + 0.5
        wp = Process(target=writer, args=(paths, [b for _, b in pools], a.rate * MB, seconds, start_at, wres))
        wp.start()
        del pools
        samples = []
        t_end = start_at + seconds
        drain_until = None
        caught_up_at = None
        while True:
            time.sleep(max(0.0, 1.0 - (time.time() - start_at) % 1.0))
            now = time.time()
            row = {"t": round(now - start_at, 2), "written": sizes(paths) - start_bytes, "watch": sample(watch.pid), "tail": sample(tail.pid), "writer": sample(wp.pid) if wp.is_alive() else None}
            if row["watch"]:
                row["watch_behind"] = start_bytes + row["written"] - (row["watch"]["rchar"] - watch_read0)
            samples.append(row)
            if not a.quiet:
                w, tl = row["watch"] or {}, row["tail"] or {}
                print(f"t={row['t']:6.1f} written {row['written'] / MB:8.1f} MiB  watch cpu {w.get('cpu', 0) - base['watch']['cpu']:6.1f} s rss {w.get('rss_kb', 0) / 1024:5.0f} MiB behind {max(0, row.get('watch_behind', 0)) / MB:7.1f} MiB  tail cpu {tl.get('cpu', 0) - base['tail']['cpu']:5.1f} s rss {tl.get('rss_kb', 0) / 1024:4.1f} MiB", file=sys.stderr)
            if now >= t_end and not wp.is_alive():
                if drain_until is None:
                    drain_until = now + a.drain
                    end_row = row
                if row.get("watch_behind", 0) <= a.ranks * 64 * 1024 and caught_up_at is None:
                    caught_up_at = now
                if caught_up_at is not None or now >= drain_until:
                    break
        wp.join()
        wrote = json.load(open(wres))
        # the end: SIGTERM; watch reads to the end and prints its last document
        last = {"watch": sample(watch.pid), "tail": sample(tail.pid)}
        t = time.time()
        watch.send_signal(signal.SIGTERM)
        tail.send_signal(signal.SIGTERM)
        try:
            rc = watch.wait(timeout=300)
        except subprocess.TimeoutExpired:
            watch.kill()
            rc = watch.wait()
        stop_s = time.time() - t
        tail.wait()
        wout.close()
        werr.close()
        docs = [json.loads(line) for line in open(wout.name, encoding="utf-8") if line.strip()]
        final = docs[-1]
        counted = {os.path.basename(i["path"]): i["lines"] for i in final["inputs"]}
        expected = {os.path.basename(p): h + n for p, h, n in zip(paths, head_lines, wrote["lines"])}
        wrong = {k: (counted.get(k), v) for k, v in expected.items() if counted.get(k) != v}
        werr_text = open(werr.name, encoding="utf-8", errors="replace").read()
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)

    def summary(name: str, pid_samples: list[dict | None], base: dict, end: dict) -> dict:
        rows = [s for s in pid_samples if s]
        return {
            "cpu_s": round(end["cpu"] - base["cpu"], 2),
            "cpu_pct_of_core": round(100 * (end["cpu"] - base["cpu"]) / wrote["seconds"], 1),
            "rss_start_mib": round(base["rss_kb"] / 1024, 1),
            "rss_peak_sampled_mib": round(max(s["rss_kb"] for s in rows) / 1024, 1),
            "rss_final_mib": round(rows[-1]["rss_kb"] / 1024, 1),
            "vmhwm_mib": round(last[name]["hwm_kb"] / 1024, 1),
        }

    written = sum(wrote["bytes"])
    behind = [s.get("watch_behind", 0) for s in samples if s["t"] <= seconds + 0.5]
    result = {
        "ranks": a.ranks, "rate_mib_s": a.rate, "seconds_asked": seconds,
        "writer": {"seconds": round(wrote["seconds"], 2), "bytes": written, "lines": sum(wrote["lines"]),
                   "mib_s_per_file": round(written / a.ranks / wrote["seconds"] / MB, 3),
                   "mib_s_all": round(written / wrote["seconds"] / MB, 2), "late_rounds": wrote["late_rounds"],
                   "cpu_s": round(max((s["writer"]["cpu"] for s in samples if s.get("writer")), default=0), 2)},
        "watch": summary("watch", [s["watch"] for s in samples], base["watch"], end_row["watch"]),
        "tail": summary("tail", [s["tail"] for s in samples], base["tail"], end_row["tail"]),
        "watch_behind_mib_max": round(max(behind, default=0) / MB, 2),
        "watch_samples_behind_1s": sum(b > a.rate * a.ranks * MB for b in behind), "watch_samples": len(behind),
        "watch_behind_mib_at_writer_end": round(end_row.get("watch_behind", 0) / MB, 2),
        "watch_caught_up_s_after_writer": None if caught_up_at is None else round(caught_up_at - t_end, 1),
        "watch_exit_s_after_sigterm": round(stop_s, 2), "watch_rc": rc,
        "tail_out_mib": round((end_row["tail"]["wchar"] - base["tail"]["wchar"]) / MB, 2),
        "lines_written": sum(expected.values()), "lines_counted": sum(counted.values()), "files_miscounted": wrong,
        "watch_documents": len(docs), "final_verdict": final["verdict"],
        "watch_stderr": werr_text[-2000:],
        "load_avg": os.getloadavg(),
        "samples": samples,
    }
    return result


def table(results: list[dict]) -> str:
    out = ["| run | writer achieved | tool | CPU s (% of a core) | RSS start / peak / final (VmHWM), MiB | kept up |",
           "|---|---|---|---|---|---|"]
    for r in results:
        w = r["writer"]
        run_name = f"{r['ranks']} x {r['rate_mib_s']:g} MiB/s, {r['seconds_asked']:g} s"
        ach = f"{w['mib_s_per_file']:.3f} MiB/s per file ({w['mib_s_all']:.1f} MiB/s, {w['lines'] / w['seconds']:,.0f} lines/s in all)"
        for tool in ("watch", "tail"):
            s = r[tool]
            if tool == "watch":
                kept = (f"{r['lines_counted']:,} of {r['lines_written']:,} lines counted"
                        f"{'' if not r['files_miscounted'] else ', ' + str(len(r['files_miscounted'])) + ' files miscounted'}; "
                        f"at most {max(0, r['watch_behind_mib_max']):.1f} MiB behind; more than a second's writing behind in "
                        f"{r['watch_samples_behind_1s']} of {r['watch_samples']} samples; {max(0, r['watch_behind_mib_at_writer_end']):.1f} MiB when the writer stopped")
            else:
                kept = f"{r['tail_out_mib']:.1f} MiB output (written {w['bytes'] / MB:.1f} MiB + headers)"
            out.append(f"| {run_name} | {ach} | {tool} | {s['cpu_s']:.1f} ({s['cpu_pct_of_core']:.0f} %) | "
                       f"{s['rss_start_mib']:.0f} / {s['rss_peak_sampled_mib']:.0f} / {s['rss_final_mib']:.0f} ({s['vmhwm_mib']:.0f}) | {kept} |")
            run_name = ach = ""
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--rate", type=float, default=1.0, help="MiB/s written to each file")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--minutes", type=float, default=0.0, help="overrides --seconds")
    ap.add_argument("--pool-mb", type=float, default=1.0, help="MiB of distinct lines per rank, written in a cycle")
    ap.add_argument("--drain", type=float, default=60.0, help="seconds watch may take to catch up after the writer stops")
    ap.add_argument("--tmp", default=None, help="where the logs go (default: the system's temp folder)")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--json", type=Path, help="write the results, samples included, here")
    ap.add_argument("--profile", type=Path, help="run watch under pyinstrument (importable by the venv's python) and write its text report here")
    ap.add_argument("--quiet", action="store_true", help="no line per second on stderr")
    a = ap.parse_args()
    r = run(a)
    if a.json:
        a.json.write_text(json.dumps(r, indent=1))
    print(table([r]))
    print(f"\nwatch: {r['watch_documents']} document(s), final verdict {r['final_verdict']}, exit {r['watch_rc']}, "
          f"{r['watch_exit_s_after_sigterm']} s from SIGTERM to exit; caught up {r['watch_caught_up_s_after_writer']} s after the writer stopped; "
          f"writer: {r['writer']['cpu_s']} CPU s, {r['writer']['late_rounds']} late rounds; load average {r['load_avg']}")
    if r["files_miscounted"]:
        print(f"miscounted (counted, written): {r['files_miscounted']}")


if __name__ == "__main__":
    main()
