"""A person's Ctrl-C read as a stop from outside (job-killed-while-hung's keyboard-interrupt
signature): a real mp.spawn job (torch 2.13, gloo) hangs in a barrier that one rank never
reaches, and the parent, which waits in mp.spawn's join, gets SIGINT as a terminal's Ctrl-C
would send it. Nothing else in the output shows the hang; the run must not read as healthy.
A KeyboardInterrupt line behind a rank prefix stays that rank's (lab sigint-one, a rank
interrupted alone: locked in tests/scenarios/lab-fresh11)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import rankdoctor

from .remote_support import free_ports

JOB = textwrap.dedent("""
    import os, sys, time
    import torch.distributed as dist
    import torch.multiprocessing as mp

    def work(rank, world, port):
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        dist.init_process_group("gloo", rank=rank, world_size=world)
        print(f"[Rank {rank}]: loading shard", flush=True)
        if rank == 1:
            time.sleep(600)  # never reaches the barrier
        print(f"[Rank {rank}]: waiting for the others", flush=True)
        dist.barrier()

    if __name__ == "__main__":
        print("starting 2 processes", flush=True)
        mp.spawn(work, args=(2, int(sys.argv[1])), nprocs=2)
""")


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_a_parent_interrupted_while_its_workers_hang_is_no_healthy_run(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(JOB)
    log = tmp_path / "console.log"
    with open(log, "wb") as out:
        # a session of its own: the SIGINT goes to the parent alone, and the test can end the
        # workers (mp.spawn's children) afterwards through the process group
        # (and SIGINT at its default, as a terminal starts a program: a test runner's process may
        # ignore it, and Python keeps an inherited "ignore" instead of raising KeyboardInterrupt)
        p = subprocess.Popen([sys.executable, str(script), str(free_ports(1)[0])], stdout=out, stderr=subprocess.STDOUT,
                             start_new_session=True, preexec_fn=_default_sigint)
        try:
            deadline = time.monotonic() + 60
            while b"[Rank 0]: waiting for the others" not in log.read_bytes() and time.monotonic() < deadline:
                time.sleep(0.2)
            assert b"[Rank 0]: waiting for the others" in log.read_bytes(), log.read_text()
            time.sleep(0.5)
            p.send_signal(signal.SIGINT)  # the person's Ctrl-C, in mp.spawn's join
            while b"KeyboardInterrupt" not in log.read_bytes() and time.monotonic() < deadline + 30:
                time.sleep(0.2)
            time.sleep(0.5)
            # the parent now waits for its workers in multiprocessing's atexit join: a second
            # Ctrl-C, as the person pressed it
            p.send_signal(signal.SIGINT)
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass
        finally:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    text = log.read_text(errors="replace")
    assert "KeyboardInterrupt" in text and "join" in text, text
    d = rankdoctor.diagnose(str(log)).to_json()
    # not a healthy run, and not a confident hang either: the Ctrl-C is the run's only failure
    # line, which says how it ended, not that it had stopped making progress (stop_alone)
    assert d["verdict"] == "inconclusive", d
    killed = [x for x in d["diagnoses"] if x["entry"] == "job-killed-while-hung"]
    assert killed, [(x["entry"], x["confidence"]) for x in d["diagnoses"]]
    assert any(e["text"].strip().startswith("KeyboardInterrupt") for e in killed[0]["evidence"]), killed[0]["evidence"]
