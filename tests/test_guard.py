"""rankdoctor.guard on real torchrun jobs (gloo, CPU): five asymmetric runs and a healthy one.

One module fixture starts every job at once (tests/guard_jobs/train.py, 2-3 ranks each) and
timestamps their console lines; the tests then read what each run printed.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import threading
import time

import pytest

from .conftest import ROOT, run_cli

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="torch is not installed (make test installs torch==2.13.0)"
)

TRAIN = ROOT / "tests" / "guard_jobs" / "train.py"
SOURCE = TRAIN.read_text().splitlines()


def line_of(code: str, after: str) -> str:
    """train.py:N of the first line containing ``code`` after the line containing ``after``."""
    start = next(i for i, text in enumerate(SOURCE) if after in text)
    n = next(i for i in range(start, len(SOURCE)) if code in SOURCE[i]) + 1
    return f"train.py:{n}"


# scenario -> (ranks, culprit rank, culprit's call site, the others' call site, extra env)
JOBS = {
    # In compiled code the recorded frame is the compiled region's first line: the function
    # itself (a collective traced into the graph) or the graph break the code resumes after.
    "compile_branch": (3, 1, line_of("if loss > 100.0", "def compile_branch"),
                       line_of("dist.all_reduce(value)", "def mean_loss"),
                       {"RANKDOCTOR_GUARD_ABORT": "1"}),
    "shape_recompile": (3, 2, line_of("@torch.compile", "def shape_recompile"),
                        line_of("dist.all_reduce(value)", "def mean_loss"), {}),
    "uneven": (2, 1, None, line_of("loss.backward()", "def uneven"), {}),
    "extra_same_shape": (3, 1, line_of("dist.all_reduce(m)", "def extra_same_shape"),
                         line_of("dist.all_reduce(grad)", "def extra_same_shape"), {}),
    "rank0_only": (3, 0, line_of("dist.all_reduce(val)", "def rank0_only"),
                   line_of("dist.all_reduce(value)", "def mean_loss"), {}),
    "healthy": (2, None, None, None, {}),
}
DESYNC = re.compile(r"^rankdoctor guard: collective desync in group \S+ at collective #\d+: ranks? (\d+)")


class Run:
    def __init__(self, name: str, out):
        ranks, *_, env = JOBS[name]
        self.name, self.lines, self.dumps = name, [], out / name / "fr"
        env = {**os.environ, **env, "PYTHONUNBUFFERED": "1", "RANKDOCTOR_GUARD_DUMP_DIR": str(self.dumps),
               "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(ranks),
             "--rdzv-backend", "c10d", "--rdzv-endpoint", "localhost:0", "--rdzv-id", name,
             "-m", "rankdoctor.guard", str(TRAIN), name],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append((time.time(), line.rstrip("\n")))

    def finish(self, deadline: float) -> None:
        try:
            self.proc.wait(timeout=max(1.0, deadline - time.time()))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(timeout=5)
        self.console = "\n".join(text for _, text in self.lines) + "\n"

    def guard_lines(self) -> list[tuple[float, str]]:
        return [(t, text) for t, text in self.lines if text.startswith("rankdoctor guard:")]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("guard")
    started = {name: Run(name, out) for name in JOBS}
    deadline = time.time() + 180
    for run in started.values():
        run.finish(deadline)
        (out / f"{run.name}.log").write_text(run.console)
    return out, started


@pytest.mark.parametrize("name", [n for n in JOBS if n != "healthy"])
def test_guard_names_the_rank_and_both_call_sites(runs, name):
    _, started = runs
    run = started[name]
    _, culprit, culprit_site, other_site, _ = JOBS[name]
    reports = [(t, text) for t, text in run.guard_lines() if DESYNC.match(text)]
    assert len(reports) == 1, run.console[-3000:]
    when, line = reports[0]
    assert int(DESYNC.match(line).group(1)) == culprit, line
    if culprit_site:
        assert f"rank {culprit} issued " in line and f" at {culprit_site}" in line, line
    else:  # it stopped issuing: the line says so and where its last collective came from
        assert f"rank {culprit} issued nothing after collective #" in line, line
    assert f" at {other_site}" in line, line
    injected = [float(m.group(1)) for _, text in run.lines if (m := re.search(r"injecting .* at ([0-9.]+)$", text))]
    if injected:
        # (shape_recompile: the span includes dynamo recompiling the step before the collective)
        print(f"{name}: guard report {when - injected[0]:.2f} s after the injected fault")


def test_how_the_collective_was_issued_is_named(runs):
    _, started = runs
    assert "(in a compiled graph)" in started["compile_branch"].guard_lines()[0][1]
    assert "(in a compiled graph)" in started["shape_recompile"].guard_lines()[0][1]
    assert "(DDP bucket)" in started["uneven"].guard_lines()[0][1]


def test_abort_exits_with_the_guard_code_and_dumps_the_flight_recorder(runs):
    out, started = runs
    run = started["compile_branch"]
    assert run.proc.returncode != 0
    assert re.search(r"exitcode\s*: 70 ", run.console), run.console[-3000:]
    dumps = sorted(p.name for p in run.dumps.iterdir())
    assert dumps and all(re.fullmatch(r"fr_trace_rank_\d", d) for d in dumps), dumps
    r = run_cli("fr", str(run.dumps), "--format", "json")
    assert r.returncode in (0, 1, 3), r.stderr


def test_healthy_200_step_run_stays_silent(runs):
    _, started = runs
    run = started["healthy"]
    assert run.proc.returncode == 0, run.console[-3000:]
    assert run.guard_lines() == [], run.guard_lines()
    assert run.console.count("done") == 2
    assert not run.dumps.exists()


def test_diagnose_names_the_guards_rank_at_the_top(runs):
    import rankdoctor

    out, started = runs
    for name, (_, culprit, *_rest) in JOBS.items():
        d = rankdoctor.diagnose([str(out / f"{name}.log")]).to_json()
        if culprit is None:
            assert d["verdict"] == "no-failure-found", (name, d["diagnoses"][:1])
            continue
        top = d["diagnoses"][0]
        assert (top["entry"], top["initiating_rank"]) == ("guard-asymmetric-collective", culprit), (name, top)
        print(f"{name}: diagnose -> {top['entry']} rank {top['initiating_rank']} confidence {top['confidence']}")
