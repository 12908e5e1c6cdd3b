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
                       line_of("dist.all_reduce(value)", "def mean_loss"), {}),
    "shape_recompile": (2, 1, line_of("@torch.compile", "def shape_recompile"),
                        line_of("dist.all_reduce(value)", "def mean_loss"), {}),
    "uneven": (2, 1, None, line_of("loss.backward()", "def uneven"), {}),
    "extra_same_shape": (3, 1, line_of("dist.all_reduce(m)", "def extra_same_shape"),
                         line_of("dist.all_reduce(grad)", "def extra_same_shape"), {}),
    "rank0_only": (2, 0, line_of("dist.all_reduce(val)", "def rank0_only"),
                   line_of("dist.all_reduce(value)", "def mean_loss"), {}),
    "healthy": (2, None, None, None, {}),
}
DESYNC = re.compile(r"^rankdoctor guard: collective desync in group \S+ at collective #\d+: ranks? (\d+)")


TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--rdzv-backend", "c10d", "--rdzv-endpoint", "localhost:0"]
# compile_branch runs under `rankdoctor check` (guard, abort, dumps on); the others plain.
CHECKED = {"compile_branch": ["--steps", "6"]}
# `rankdoctor check` on a DataLoader job: clean as it is, asymmetric with --uneven batches.
CHECKS = {"loader": [], "loader_uneven": ["--uneven"]}


class Run:
    def __init__(self, name: str, out):
        self.name, self.lines, self.keep = name, [], out / name
        env = {**os.environ, "PYTHONUNBUFFERED": "1",
               "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
        check = [sys.executable, "-m", "rankdoctor.cli", "check", "--keep", str(self.keep)]
        if name in CHECKS:
            cmd = check + ["--steps", "6", *CHECKS[name], "--", *TORCHRUN, "--nproc-per-node", "2",
                           str(ROOT / "tests" / "guard_jobs" / "loader.py")]
        else:
            ranks, *_, extra = JOBS[name]
            env.update(extra, RANKDOCTOR_GUARD_DUMP_DIR=str(self.keep / "fr"))
            job = [*TORCHRUN, "--nproc-per-node", str(ranks)]
            if name in CHECKED:
                cmd = check + CHECKED[name] + ["--", *job, str(TRAIN), name]
            else:
                cmd = job + ["-m", "rankdoctor.guard", str(TRAIN), name]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT)
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
        """The guard's lines, without torchrun's [defaultN]: prefix (--tee 3 under check)."""
        return [(t, text[m.end():]) for t, text in self.lines if (m := re.match(r"(\[default\d+\]:)?(?=rankdoctor guard:)", text))]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("guard")
    started = {name: Run(name, out) for name in [*JOBS, *CHECKS]}
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


def test_check_stops_at_the_guards_report_with_status_1_and_dumps(runs):
    _, started = runs
    run = started["compile_branch"]
    assert run.proc.returncode == 1, run.console[-3000:]
    assert re.search(r"exitcode\s*: 70 ", run.console), run.console[-3000:]  # the guard's abort code
    assert run.lines[-1][1].startswith("rankdoctor check: collective desync in group default_pg"), run.lines[-1]
    dumps = sorted(p.name for p in (run.keep / "fr").iterdir())
    assert dumps and all(re.fullmatch(r"fr_trace_rank_\d", d) for d in dumps), dumps
    r = run_cli("fr", str(run.keep / "fr"), "--format", "json")
    assert r.returncode in (0, 1, 3), r.stderr


def test_check_passes_a_clean_job_after_n_steps(runs):
    _, started = runs
    run = started["loader"]
    assert run.proc.returncode == 0, run.console[-3000:]
    assert run.lines[-1][1] == "rankdoctor check: no asymmetric collective in 6 steps"
    assert (run.keep / "console.log").is_file() and not (run.keep / "fr").exists()


def test_check_uneven_batches_fail_the_gate_and_name_the_rank(runs):
    _, started = runs
    run = started["loader_uneven"]
    last = run.lines[-1][1]
    # On gloo the recompiled rank's extra all_reduce meets rank 0's DDP bucket at once and gloo
    # aborts it before a poll can look; then the check reports the diagnosis of what is left.
    assert run.proc.returncode in (1, 3), run.console[-3000:]
    assert last.startswith("rankdoctor check: "), last
    if "[rank0]: Traceback" in run.console or "rank 1 issued" in last:
        assert "(rank 1)" in last or "rank 1 issued" in last, last
    else:
        # a race: rank 1 aborted on the size check before rank 0 printed anything, and the
        # launcher then stopped rank 0. What is left is rank 1's report of what its peer sent
        # ("68 vs 4"), which does not tell which of the two issued the extra collective. The
        # check still fails the gate with the desync; which rank it names here is a known
        # weakness (it names rank 0, the rank the launcher stopped, at 0.84-0.88, sometimes over
        # the threshold), written down in eval/HISTORY.md, not asserted
        assert "collective desync" in last, last
    print(f"loader --uneven: {last}")
def test_healthy_200_step_run_stays_silent(runs):
    _, started = runs
    run = started["healthy"]
    assert run.proc.returncode == 0, run.console[-3000:]
    assert run.guard_lines() == [], run.guard_lines()
    assert run.console.count("done") == 2
    assert not (run.keep / "fr").exists()


def test_diagnose_names_the_guards_rank_at_the_top(runs):
    import rankdoctor

    out, started = runs
    for name, (_, culprit, *_rest) in JOBS.items():
        d = rankdoctor.diagnose([str(out / f"{name}.log")]).to_json()
        if culprit is None:
            assert d["verdict"] == "no-failure-found", (name, d["diagnoses"][:1])
            continue
        top = d["diagnoses"][0]
        # on a miss, show what decided it: the findings and the console without traceback frames
        # (the jobs race their own gloo errors, so each run's console differs a little)
        why = (name, [(x["entry"], x["initiating_rank"], x["confidence"]) for x in d["diagnoses"]], _gist(started[name].console))
        # the guard's own line names the rank; a desync entry of the same class reading the same
        # lines may tie with it (a near tie refits flip), so the guard's answer is the top one or
        # the runner-up at the same rank, and the top answer is a desync at the guard's rank
        assert (top["class"], top["initiating_rank"]) == ("collective-desync", culprit), why
        guard = [x for x in d["diagnoses"][:2] if x["entry"] == "guard-asymmetric-collective"]
        assert guard and guard[0]["initiating_rank"] == culprit, why
        print(f"{name}: diagnose -> {top['entry']} rank {top['initiating_rank']} confidence {top['confidence']}")




def _gist(console: str) -> str:
    """The console without traceback frames (a `File "..."` line, its source line, its carets):
    what a reader needs to see why."""
    keep, source = [], False
    for line in console.splitlines():
        body = re.sub(r"^\[rank\d+\]:", "", line)
        if re.match(r"\s+File \"", body):
            source = True  # the next line may be the frame's source
        elif re.fullmatch(r"\s+[\^~ ]+", body) or (source and re.match(r"\s{4,}\S", body)):
            source = False
        else:
            source = False
            if line.strip():
                keep.append(line)
    return "\n".join(keep[-60:])
