"""``rankdoctor check -- torchrun ... train.py ...``: the pre-flight smoke test.

Runs the job with the guard, the Flight Recorder and dynamo's recompile / graph-break logging
on, stops it cleanly after N optimizer steps, and turns the outcome into an exit status a CI
job can gate on: 0 "no asymmetric collective in N steps", 1 a diagnosis, 3 the job failed
and nothing explains it, 2 the command cannot be run.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rankdoctor.guard import FR_BUFFER

OK_LINE = re.compile(r"rankdoctor guard: no asymmetric collective in (\d+) steps")
DESYNC_LINE = re.compile(r"rankdoctor guard: collective desync .*")
LAUNCHERS = ("torchrun", "torch.distributed.run")


class CheckError(ValueError):
    """The command is not a torchrun command the check can wrap."""


@dataclass
class Outcome:
    status: int  # 0 clean, 1 diagnosed, 3 failed without explanation
    summary: str
    log: Path


def guarded_command(cmd: list[str], logs: Path | None = None) -> list[str]:
    """The torchrun command with ``-m rankdoctor.guard`` in front of the training script.

    With ``logs``, and when the command sets neither, ``--log-dir logs --tee 3`` go in front
    of the script too: every console line then carries its rank (``[default1]:``), which the
    diagnosis needs when a rank dies in native code (gloo's size check prints no rank).
    """
    cmd = _with_rank_prefixes(cmd, logs) if logs is not None else cmd
    if not cmd:
        raise CheckError("give the job's command after --, e.g. rankdoctor check -- torchrun --nproc-per-node 2 train.py")
    if not any(Path(c).name == LAUNCHERS[0] or c == LAUNCHERS[1] for c in cmd[:3]):
        raise CheckError(f"{' '.join(cmd[:3])}: not a torchrun command (torchrun ... or python -m torch.distributed.run ...)")
    for i, arg in enumerate(cmd):
        if arg in ("-m", "--module") and i + 1 < len(cmd) and cmd[i + 1] != LAUNCHERS[1]:
            return cmd[: i + 1] + ["rankdoctor.guard", "-m"] + cmd[i + 1:]
        if arg.endswith(".py") and not arg.startswith("-"):
            return cmd[:i] + ["-m", "rankdoctor.guard"] + cmd[i:]
    raise CheckError("no training script (a .py file or -m module) in the torchrun command")


def _with_rank_prefixes(cmd: list[str], logs: Path) -> list[str]:
    if any(a.startswith(("--log-dir", "--log_dir", "--tee", "--redirects", "-t", "-r")) for a in cmd):
        return cmd
    at = next((i + 1 for i, c in enumerate(cmd[:3]) if Path(c).name == LAUNCHERS[0] or c == LAUNCHERS[1]), None)
    return cmd if at is None else cmd[:at] + ["--log-dir", str(logs), "--tee", "3"] + cmd[at:]


def _env(steps: int, uneven: bool, dumps: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"RANKDOCTOR_GUARD": "1", "RANKDOCTOR_GUARD_STEPS": str(steps), "RANKDOCTOR_GUARD_ABORT": "1",
                "RANKDOCTOR_GUARD_DUMP_DIR": str(dumps), "PYTHONUNBUFFERED": "1"})
    env.setdefault("TORCH_FR_BUFFER_SIZE", FR_BUFFER)
    logs = [x for x in env.get("TORCH_LOGS", "").split(",") if x]
    env["TORCH_LOGS"] = ",".join(logs + [x for x in ("recompiles", "graph_breaks") if x not in logs])
    if uneven:
        env["RANKDOCTOR_GUARD_UNEVEN"] = "1"
    return env


def run_check(cmd: list[str], steps: int, uneven: bool, timeout: float, keep: Path | None = None) -> Outcome:
    """Run the guarded job, echo its output, and decide. ``keep``: folder for log + dumps."""
    guarded_command(cmd)  # refuse a command it cannot wrap before making any folder
    work = keep or Path(tempfile.mkdtemp(prefix="rankdoctor-check-"))
    work.mkdir(parents=True, exist_ok=True)
    log, dumps = work / "console.log", work / "fr"
    guarded = guarded_command(cmd, work / "logs")
    try:
        proc = subprocess.Popen(guarded, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                env=_env(steps, uneven, dumps), start_new_session=True)
    except OSError as exc:
        raise CheckError(f"{guarded[0]}: cannot run it ({exc.strerror or exc})") from exc
    deadline = time.monotonic() + timeout
    timed_out = False
    with open(log, "wb") as out:
        os.set_blocking(proc.stdout.fileno(), False)
        while True:
            chunk = proc.stdout.read()
            if chunk:
                out.write(chunk)
                sys.stdout.buffer.write(chunk)
                sys.stdout.buffer.flush()
            if proc.poll() is not None and not chunk:
                break
            if time.monotonic() > deadline and not timed_out:
                timed_out = True
                os.killpg(proc.pid, signal.SIGTERM)  # torchrun passes it on to its workers
            time.sleep(0.05)
    text = log.read_text(errors="replace")
    ok = OK_LINE.search(text)
    desync = DESYNC_LINE.search(text)
    if ok and proc.returncode == 0 and not desync:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)
        return Outcome(0, f"no asymmetric collective in {ok.group(1)} steps", log)
    if desync:
        return Outcome(1, desync.group(0)[len("rankdoctor guard: "):], log)
    if timed_out:
        return _diagnosed(log, dumps, f"the job ran past --timeout {timeout:g} s before {steps} steps")
    if proc.returncode == 0:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)
        return Outcome(0, f"no asymmetric collective (the job ended before {steps} optimizer steps)", log)
    return _diagnosed(log, dumps, f"the job failed (exit status {proc.returncode})")


def _diagnosed(log: Path, dumps: Path, what: str) -> Outcome:
    """No guard line: let the diagnosis engine read what the job left behind."""
    from rankdoctor import diagnose

    d = diagnose([str(log.parent)]).to_json()  # console, per-rank logs, Flight Recorder dumps
    if not d["diagnoses"]:
        return Outcome(3, f"{what}; nothing in its output explains it; see {log}", log)
    top = d["diagnoses"][0]
    rank = "" if top["initiating_rank"] is None else f" (rank {top['initiating_rank']})"
    text = f"{what}: {top['title']}{rank}, confidence {top['confidence']:.2f} [{top['entry']}]"
    if d["verdict"] == "diagnosed":
        return Outcome(1, text, log)
    return Outcome(3, f"{text}, inconclusive; rankdoctor diagnose {log.parent}", log)
