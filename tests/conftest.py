from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from rankdoctor.kb.loader import load_kb
from rankdoctor.scan import Scanner

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "tests" / "scenarios"

# the tests never read or write the user's own incident history (rankdoctor history): every
# process they start looks in an empty folder of their own instead
os.environ["RANKDOCTOR_HOME"] = tempfile.mkdtemp(prefix="rankdoctor-test-home-")
atexit.register(shutil.rmtree, os.environ["RANKDOCTOR_HOME"], True)


@pytest.fixture(scope="session")
def kb():
    return load_kb()


@pytest.fixture(scope="session")
def scanner(kb):
    return Scanner(kb)


def diagnose_top(path):
    """`rankdoctor.diagnose` of one log, and its top finding (None when it found no failure)."""
    import rankdoctor

    d = rankdoctor.diagnose(str(path))
    return d, d.diagnoses[0] if d.diagnoses else None


def diagnose_lab_run(kb, case: Path):
    """A lab run's diagnosis from its console.log and logs/ folder, as `rankdoctor diagnose
    console.log logs` gives it (its Flight Recorder dumps left out)."""
    from rankdoctor.pipeline import diagnose_paths
    from rankdoctor.scan import scan_sources

    scanner = Scanner(kb)
    logs = case / "logs"  # (torchrun writes no files there for a run whose workers all exit 0)
    paths = [str(case / "console.log")] + ([str(logs)] if logs.is_dir() and any(p.is_file() for p in logs.rglob("*")) else [])
    return diagnose_paths(kb, paths, lambda s: scan_sources(kb, s, scanner))[0]


def edited_copy(tmp_path: Path, log: Path, keep) -> Path:
    """A copy of a real log with only the lines ``keep(number, line)`` accepts (numbered from 1):
    the same evidence cut short or without one line, to test what that line decides."""
    lines = log.read_text(encoding="utf-8").splitlines()
    out = tmp_path / f"edited-{log.parent.name}.log"
    out.write_text("".join(ln + "\n" for no, ln in enumerate(lines, 1) if keep(no, ln)), encoding="utf-8")
    return out


def run_cli(*args: str, stdin: bytes | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rankdoctor.cli", *args],
        input=stdin,
        capture_output=True,
        cwd=cwd or ROOT,
        timeout=120,
    )


@pytest.fixture(scope="session")
def remote_corpus(tmp_path_factory):
    """A generated 1,024-rank run (bench/gen_corpus.py: real line formats; rank 592 runs out
    of memory, the others time out in the watchdog) as a job leaves it: ``console.log``, the
    combined console of every rank (``[rankN]:`` prefixes, 10 MiB: split into byte ranges),
    and ``nodes/node_NNN.log``, the same lines per node of 8 ranks (128 files: batches of
    whole files). Returns the folder holding both."""
    import re

    top = tmp_path_factory.mktemp("remote")
    gen = [sys.executable, str(ROOT / "bench" / "gen_corpus.py")]
    subprocess.run([*gen, str(top / "console"), "--ranks", "1024", "--total-mb", "1", "--single"], check=True, capture_output=True)
    (top / "nodes").mkdir()
    rank = re.compile(rb"^\[rank(\d+)\]:")
    out, node = None, -1
    with open(top / "console.log", "rb") as f:
        for line in f:
            n = int(rank.match(line).group(1)) // 8  # every line of the combined log has its prefix
            if n != node:
                if out:
                    out.close()
                node, out = n, open(top / "nodes" / f"node_{n:03d}.log", "wb")
            out.write(line)
    out.close()
    return top


@pytest.fixture(scope="session")
def s3_server():
    """moto's S3 server (a real server on a free port: boto's requests, ranged GETs and
    listings go over HTTP)."""
    from .remote_support import MotoServer

    with MotoServer() as server:
        yield server


@pytest.fixture(scope="session")
def s3_corpus(remote_corpus, s3_server):
    """``s3_server`` holding ``remote_corpus`` under s3://rd-logs/. Returns the server."""
    import fsspec

    env = s3_server.env()
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        fs = fsspec.filesystem("s3", skip_instance_cache=True)
        fs.mkdir("rd-logs")
        fs.put(str(remote_corpus / "nodes"), "rd-logs/nodes", recursive=True)
        fs.put(str(remote_corpus / "console.log"), "rd-logs/console.log")
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return s3_server


# the inputs of the remote tests: the local paths (run from the corpus folder, so the names
# shown are nodes/node_074.log...) and the same files in storage
LOCAL_INPUTS = ("nodes", "console.log")
S3_INPUTS = ("s3://rd-logs/nodes/", "s3://rd-logs/console.log")


@pytest.fixture(scope="session")
def local_reports(remote_corpus, s3_corpus):
    """The local engine's JSON reports on ``remote_corpus``: from local paths and from s3://
    (computed once for the storage and the Ray tests)."""
    from .remote_support import rd

    local = rd("diagnose", *LOCAL_INPUTS, "--format", "json", cwd=remote_corpus)
    s3 = rd("diagnose", *S3_INPUTS, "--format", "json", env=s3_corpus.env())
    return {"local": local, "s3": s3}


# Modules whose module-scoped fixture starts real work that takes tens of seconds (torchrun jobs,
# a wheel built and installed into a venv, a Ray cluster, Chromium, Neovim, the VS Code build),
# by the group they run in. Under `pytest -n 2 --dist loadgroup` (make test) a group runs on one
# worker, so such a fixture runs once instead of once per worker that gets one of its tests; the
# two modules that build the wheel share a group, since two builds in one tree at the same time
# collide in setuptools' build/ folder. Every other test is scheduled on its own, as `load` does.
ONE_WORKER_GROUPS = {
    "test_guard": "guard", "test_lab_live": "lab-live", "test_wheel_install": "wheel",
    "test_packaging": "wheel", "test_remote_ray": "ray", "test_vscode_vsix": "vsix",
    "test_lsp_neovim": "neovim", "test_history": "history", "test_web_browser": "web-browser",
    "test_web_history": "web-history", "test_web_redact": "web-redact",
    "test_attacks_web": "attacks-web", "test_site": "site", "test_lsp": "lsp",
}


def pytest_xdist_make_scheduler(config, log):
    """The groups above, scheduled here rather than by xdist_group markers: with pytest 9 a
    node id is no longer the string xdist 3.8 rewrites to add the group, so its `loadgroup`
    silently runs a group's tests on every worker."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class OneWorkerGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0].rsplit("/", 1)[-1].removesuffix(".py")
            return ONE_WORKER_GROUPS.get(module, nodeid)

    return OneWorkerGroups(config, log)


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (children, their children ...), read from /proc."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, pp in parents.items() if pp in frontier} - found
        found |= frontier
    return found
