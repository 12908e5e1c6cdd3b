"""`rankdoctor watch` on a run written live: a writer process writes a 16-rank run into a
folder (per-rank files, timestamped lines) while `watch --format json` follows it. Four
ranks' files appear after the watch started, one rank's file is rotated (renamed, a new
file opened) and one is truncated in place (copytruncate) on the way; rank 5 dies with the
real traceback of the lab's exception run, the others keep stepping, then time out with the
real NCCL watchdog lines of a real run. The watch must name the entry and rank that
`diagnose` names on the finished folder, after the initiating line was written (latency
printed; bounded generously: CI has two cores), warn that rank 5 went silent while the
others wrote, and count every line written exactly once.

Run as a script (`python tests/test_watch.py write DIR`) it is the writer.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from rankdoctor import schemas

HERE = Path(__file__).parent
SCENARIOS = HERE / "scenarios"
# rank 2's traceback in the lab's exception run (torchrun console: its prefix is taken off,
# as torchrun --log-dir files have none)
TRACEBACK_LOG = SCENARIOS / "lab" / "exception-rank2" / "console.log"
# a real rank's NCCL watchdog report (rank 3 of a finetrainers job)
WATCHDOG_LOG = SCENARIOS / "real-extra" / "finetrainers-cogvideox-validation-one-gpu-broadcast-timeout" / "log.txt"
RANKS = 16
LATE = range(12, 16)  # ranks whose files appear after the watch started
DEAD = 5
ROTATED, TRUNCATED = 3, 7
STEP = 0.1  # seconds between two steps of every rank
SILENT_AFTER = 2.0
CLI = [sys.executable, "-m", "rankdoctor.cli"]


def _stamp(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) + f",{int(t % 1 * 1000):03d}"


def _glog(t: float) -> str:
    return time.strftime("%m%d %H:%M:%S", time.localtime(t)) + f".{int(t % 1 * 1e9):09d}"


def _traceback() -> list[str]:
    prefix = "[default2]:[rank2]: "
    lines = [ln[len(prefix):] for ln in TRACEBACK_LOG.read_text().splitlines() if ln.startswith(prefix)]
    assert lines[0].startswith("Traceback") and lines[-1] == "IndexError: list index out of range"
    return lines


def _watchdog(rank: int, t: float) -> list[str]:
    import re

    out = []
    for ln in WATCHDOG_LOG.read_text().splitlines():
        ln = ln.strip().replace("[rank3]", f"[rank{rank}]").replace("Rank 3]", f"Rank {rank}]")
        out.append(re.sub(r"\[E\d{4} \d\d:\d\d:\d\d\.\d{9}", f"[E{_glog(t)}", ln))
    assert "Watchdog caught collective operation timeout" in out[0]
    return out


def _first_line(rank: int) -> str:
    return f"{_stamp(time.time())} INFO train: rank {rank}/{RANKS} initialised (nccl, timeout=1800.0s)"


def run_folder(tmp_path: Path) -> Path:
    """``tmp_path/logs`` with the first line of every rank that starts on time (LATE ranks'
    files appear while the run goes on)."""
    folder = tmp_path / "logs"
    folder.mkdir()
    for r in range(RANKS):
        if r not in LATE:
            (folder / f"rank_{r}.log").write_text(_first_line(r) + "\n")
    return folder


def stop(watch: subprocess.Popen, readers: list[threading.Thread]) -> int:
    """SIGTERM to a running watch, its exit status (killed after 30 s), its output read."""
    watch.send_signal(signal.SIGTERM)
    try:
        return watch.wait(timeout=30)
    except subprocess.TimeoutExpired:
        watch.kill()
        raise
    finally:
        for t in readers:
            t.join(timeout=5)


class Writer:
    """The per-rank files of a run, written line by line and counted."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.fds: dict[int, int] = {}
        self.counts: dict[str, int] = {}

    def open(self, rank: int) -> None:
        path = self.folder / f"rank_{rank}.log"
        self.fds[rank] = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.counts.setdefault(path.name, 0)

    def write(self, rank: int, *lines: str) -> float:
        os.write(self.fds[rank], "".join(ln + "\n" for ln in lines).encode())
        self.counts[f"rank_{rank}.log"] += len(lines)
        return time.time()

    def init(self, rank: int) -> None:
        self.open(rank)
        self.write(rank, _first_line(rank))


def write_run(folder: Path) -> dict:
    """The writer's whole run; what it wrote and when."""
    w = Writer(folder)
    for r in range(RANKS):
        if r not in LATE:
            w.fds[r] = os.open(folder / f"rank_{r}.log", os.O_WRONLY | os.O_APPEND)
            w.counts[f"rank_{r}.log"] = sum(1 for _ in open(folder / f"rank_{r}.log"))
    record: dict = {}
    alive = set(range(RANKS)) - set(LATE)
    for step in range(55):
        t = time.time()
        if step == 3:
            for r in LATE:
                w.init(r)
            alive |= set(LATE)
        if step == 8:  # rotation: rename, one more line into the old file, then a new file
            os.rename(folder / f"rank_{ROTATED}.log", folder / f"rank_{ROTATED}.log.1")
            w.write(ROTATED, f"{_stamp(t)} INFO train: rank {ROTATED} log rotated")
            os.close(w.fds[ROTATED])
            w.open(ROTATED)
        if step == 12:  # copytruncate, right after lines the watch has likely not read yet
            for i in range(3):
                w.write(TRUNCATED, f"{_stamp(t)} INFO train: rank {TRUNCATED} checkpoint shard {i} saved")
            shutil.copyfile(folder / f"rank_{TRUNCATED}.log", folder / f"rank_{TRUNCATED}.log.1")
            os.truncate(folder / f"rank_{TRUNCATED}.log", 0)
        if step == 20:  # rank 5 dies
            tb = _traceback()
            w.write(DEAD, *tb[:-1])
            record["initiating_at"] = w.write(DEAD, tb[-1])
            alive.discard(DEAD)
        if step <= 21:  # (after one more step the others wait in the all_reduce rank 5 never joins)
            for r in sorted(alive):
                w.write(r, f"{_stamp(t)} INFO train: rank {r} step {step} loss {1 + (r * 7 + step) % 10 / 10:.4f}")
        time.sleep(max(0.0, STEP - (time.time() - t)))
    record["timeouts_at"] = time.time()
    for r in sorted(alive):
        w.write(r, *_watchdog(r, time.time()))
    record["counts"] = w.counts
    return record


def _reader(stream, into: list) -> threading.Thread:
    def pump() -> None:
        for line in iter(stream.readline, b""):
            into.append((time.time(), line.decode()))

    t = threading.Thread(target=pump, daemon=True)
    t.start()
    return t


def test_watch_names_the_rank_that_died_and_counts_every_line(tmp_path):
    folder = run_folder(tmp_path)
    watch = subprocess.Popen([*CLI, "watch", str(folder), "--format", "json", "--silent-after", str(SILENT_AFTER)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out: list[tuple[float, str]] = []
    err: list[tuple[float, str]] = []
    readers = [_reader(watch.stdout, out), _reader(watch.stderr, err)]
    try:
        deadline = time.time() + 30
        while not out and time.time() < deadline and watch.poll() is None:
            time.sleep(0.05)
        assert out, f"no first document: {err}"
        writer = subprocess.run([sys.executable, __file__, "write", str(folder)], capture_output=True, timeout=60)
        assert writer.returncode == 0, writer.stderr.decode()
        record = json.loads(writer.stdout)
        time.sleep(2.0)  # let the watch read the last lines
    finally:
        rc = stop(watch, readers)
    assert rc == 0, err

    docs = [(t, json.loads(line)) for t, line in out]
    for _, doc in docs:
        schemas.validate("diagnosis", doc)
    final = docs[-1][1]
    for t, d in docs:  # the run as the watch told it
        said = [(x["entry"], x["initiating_rank"], x["confidence"]) for x in d["diagnoses"][:2]]
        print(f"  {t - record['initiating_at']:+7.2f} s  {d['verdict']:16} {said}")

    # the same answer as diagnose on the finished folder
    oneshot = json.loads(subprocess.run([*CLI, "diagnose", str(folder), "--format", "json"], capture_output=True).stdout)
    expected = oneshot["diagnoses"][0]["entry"]
    assert oneshot["diagnoses"][0]["initiating_rank"] == DEAD
    assert oneshot["diagnoses"][0]["class"] == "peer-rank-crashed"  # rank 5 raised; the others lost it
    top = final["diagnoses"][0]
    assert (top["entry"], top["initiating_rank"]) == (expected, DEAD), top
    assert final["verdict"] == oneshot["verdict"]
    print(f"\nfinal: {final['verdict']} {[(d['entry'], d['initiating_rank'], d['confidence']) for d in final['diagnoses']]}")

    # the first document that names rank 5 came after its initiating line was written
    naming = [(t, d["diagnoses"][0]) for t, d in docs if d["diagnoses"] and d["diagnoses"][0]["initiating_rank"] == DEAD]
    assert not any(t < record["initiating_at"] for t, _ in naming)
    first_at, first = naming[0]
    latency = first_at - record["initiating_at"]
    print(f"\nwatch: rank {DEAD} named ({first['entry']}) {latency:.2f} s after the initiating line was written; "
          f"{expected} from {next(t for t, x in naming if x['entry'] == expected) - record['initiating_at']:.2f} s ({len(docs)} documents)")
    assert 0 < latency < 10, latency

    for t, line in err:
        print(f"  {t - record['initiating_at']:+7.2f} s  stderr: {line.strip()[:150]}")
    # every line counted once: rotated and truncated files included, their copies not read as ranks
    counts = {Path(i["path"]).name: i["lines"] for i in final["inputs"]}
    assert counts == record["counts"], (counts, record["counts"])
    assert sorted(final["ranks"]["seen"]) == list(range(RANKS))
    notes = "".join(line for _, line in err)
    assert f"rank_{ROTATED}.log: rotated" in notes and f"rank_{TRUNCATED}.log: truncated" in notes
    for r in LATE:
        assert f"rank_{r}.log: new file" in notes


def write_silence(folder: Path) -> dict:
    """Four ranks step; rank 2 stops writing at step 10 while the others go on for 5 s."""
    w = Writer(folder)
    for r in range(4):
        w.init(r)
    record: dict = {}
    for step in range(60):
        t = time.time()
        for r in range(4):
            if r != 2 or step < 10:
                last = w.write(r, f"{_stamp(t)} INFO train: rank {r} step {step} loss {1 + (r * 7 + step) % 10 / 10:.4f}")
                if r == 2:
                    record["last_line_at"] = last
        time.sleep(max(0.0, STEP - (time.time() - t)))
    return record


def test_watch_warns_when_one_rank_goes_silent_while_the_others_write(tmp_path):
    watch = subprocess.Popen([*CLI, "watch", str(tmp_path), "--silent-after", str(SILENT_AFTER)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out: list[tuple[float, str]] = []
    readers = [_reader(watch.stdout, out), _reader(watch.stderr, [])]
    try:
        deadline = time.time() + 30
        while not out and time.time() < deadline and watch.poll() is None:
            time.sleep(0.05)
        writer = subprocess.run([sys.executable, __file__, "silence", str(tmp_path)], capture_output=True, timeout=60)
        assert writer.returncode == 0, writer.stderr.decode()
        record = json.loads(writer.stdout)
    finally:
        watch.send_signal(signal.SIGINT)
        rc = watch.wait(timeout=30)
        for t in readers:
            t.join(timeout=5)
    assert rc == 0
    silent = [(t, line) for t, line in out if " silent for " in line]
    assert silent and all(" rank 2 silent for " in line for _, line in silent), out
    assert "while 3 other rank(s) write" in silent[0][1]
    warned = silent[0][0] - record["last_line_at"]
    print(f"\nwatch: 'rank 2 silent' {warned:.2f} s after its last line was written (--silent-after {SILENT_AFTER:g})")
    assert SILENT_AFTER <= warned < SILENT_AFTER + 10, warned
    assert "watch ended:" in out[-1][1]


def test_watch_a_pipe_ends_with_the_diagnosis_and_its_exit_status():
    data = TRACEBACK_LOG.read_bytes()
    r = subprocess.run([*CLI, "watch", "-", "--format", "json"], input=data, capture_output=True, timeout=60)
    docs = [json.loads(line) for line in r.stdout.decode().splitlines()]
    oneshot = json.loads(subprocess.run([*CLI, "diagnose", "-", "--format", "json"], input=data, capture_output=True).stdout)
    top, want = docs[-1]["diagnoses"][0], oneshot["diagnoses"][0]
    assert (top["entry"], top["initiating_rank"]) == (want["entry"], want["initiating_rank"]) == (top["entry"], 2)
    assert docs[-1]["inputs"] == [{"path": "<stdin>", "bytes": len(data), "lines": data.count(b"\n")}]
    assert r.returncode == 1  # diagnose's status once the pipe ends


def test_watch_refuses_what_it_cannot_follow(tmp_path):
    r = subprocess.run([*CLI, "watch", str(tmp_path / "nope")], capture_output=True, timeout=60)
    assert r.returncode == 2 and b"no such file" in r.stderr
    r = subprocess.run([*CLI, "watch", str(tmp_path), "--format", "markdown"], capture_output=True, timeout=60)
    assert r.returncode == 2


if __name__ == "__main__" and sys.argv[1:2] in (["write"], ["silence"]):
    print(json.dumps((write_run if sys.argv[1] == "write" else write_silence)(Path(sys.argv[2]))))
