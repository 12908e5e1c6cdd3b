"""diagnose --hung on a real job caught while it hangs: torchrun + gloo on CPU (torch 2.13),
lab/silent_hang.py with a long collective timeout, its logs copied while every rank is stuck
and before any timeout or kill leaves a line of its own."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

import rankdoctor

from .conftest import ROOT, descendants

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="torch is not installed (make test installs torch==2.13.0)"
)

WORLD, CULPRIT = 4, 2


def _steps(folder) -> dict[int, int]:
    """Each rank's last logged step in torchrun's --log-dir tree (attempt_0/<local rank>/stdout|stderr.log)."""
    out: dict[int, int] = {}
    for path in folder.rglob("*.log"):
        for m in re.finditer(r"rank (\d+) step (\d+)", path.read_text(errors="replace")):
            out[int(m.group(1))] = max(out.get(int(m.group(1)), -1), int(m.group(2)))
    return out


@pytest.fixture(scope="module")
def hung_snapshot(tmp_path_factory):
    out = tmp_path_factory.mktemp("hung")
    logs = out / "logs"
    env = {**os.environ, "LAB_PG_TIMEOUT": "600", "LAB_CULPRIT": str(CULPRIT), "LAB_STEP": "10", "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(WORLD), "--log-dir", str(logs), "--tee", "3",
           "--rdzv-backend", "c10d", "--rdzv-endpoint", "localhost:0", "silent_hang.py"]
    proc = subprocess.Popen(cmd, cwd=ROOT / "lab", env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        # the others log steps 10-14 and then wait in step 15's gradient all_reduce for the
        # culprit, which stopped before its step 10: wait for that, then a little longer
        deadline = time.time() + 150
        while time.time() < deadline:
            steps = _steps(logs) if logs.exists() else {}
            if len(steps) == WORLD and all(s == 14 for r, s in steps.items() if r != CULPRIT):
                break
            time.sleep(0.5)
        else:
            pytest.fail(f"the job did not reach its hang in time: {steps}")
        time.sleep(3)
        assert proc.poll() is None, "the job ended instead of hanging"
        snap = out / "snapshot"
        shutil.copytree(logs, snap)
    finally:
        # torchrun's workers run in sessions of their own: killing torchrun's group leaves them
        family = descendants(proc.pid)
        os.killpg(proc.pid, signal.SIGKILL)
        for pid in family:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()
    return snap


def test_a_live_hang_with_no_error_names_the_rank_whose_steps_stopped(hung_snapshot):
    assert rankdoctor.diagnose(str(hung_snapshot)).to_json()["verdict"] == "no-failure-found"
    d = rankdoctor.diagnose(str(hung_snapshot), hung=True).to_json()
    top = d["diagnoses"][0]
    assert (top["class"], top["initiating_rank"]) == ("straggler-timeout", CULPRIT), [
        (x["entry"], x["initiating_ranks"], x["confidence"]) for x in d["diagnoses"]]
    assert d["verdict"] == "inconclusive"  # no line of its own entry: a suspect, not a claim
    assert "said to have hung" in top["root_cause"]
