"""What ships is the wheel: build it, install it into a fresh virtual environment (its
dependencies from the package index, nothing from this checkout), and use every command and
the Python API from a folder outside the checkout."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from .conftest import ROOT, SCENARIOS

CASE = SCENARIOS / "lab-pg2d" / "exception-tp2dp4-r5-s3"
LOG = SCENARIOS / "real" / "comms-11-peer-crash-funasr-rank2-oom" / "log.txt"


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    pytest.importorskip("setuptools")
    tmp = tmp_path_factory.mktemp("wheel")
    r = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", str(ROOT), "-w", str(tmp / "dist")],
        capture_output=True, timeout=300,
    )
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    (wheel,) = (tmp / "dist").glob("rankdoctor-*.whl")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    r = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)],
        capture_output=True, timeout=600,
    )
    if r.returncode != 0:
        err = r.stderr.decode()
        if "No matching distribution" in err or "Could not find a version" in err or "NewConnectionError" in err:
            pytest.skip("the package index is not reachable: " + err.strip().splitlines()[-1])
        raise AssertionError(err[-2000:])
    work = tmp / "elsewhere"  # not the checkout: nothing may be read from it at run time
    work.mkdir()
    shutil.copytree(CASE, work / "run")
    shutil.copy(LOG, work / "job.log")
    return venv, work


def _run(installed, *args: str, timeout: int = 180) -> subprocess.CompletedProcess:
    venv, work = installed
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RANKDOCTOR_CONFIG")}
    return subprocess.run([str(venv / "bin" / "rankdoctor"), *args], capture_output=True, cwd=work, env=env, timeout=timeout)


def test_the_wheel_is_not_the_checkout(installed):
    venv, work = installed
    r = subprocess.run([str(venv / "bin" / "python"), "-c", "import rankdoctor; print(rankdoctor.__file__)"],
                       capture_output=True, cwd=work, timeout=60)
    where = Path(r.stdout.decode().strip())
    assert r.returncode == 0 and venv in where.parents and ROOT not in where.parents


def test_diagnose_kb_fr_schema_from_the_wheel(installed):
    r = _run(installed, "diagnose", "job.log", "--format", "json")
    assert r.returncode == 1, r.stderr.decode()
    d = json.loads(r.stdout)
    assert d["schema"] == "rankdoctor.diagnosis/v1" and d["diagnoses"][0]["initiating_rank"] == 2
    r = _run(installed, "diagnose", "run/logs", "--fr", "run/fr", "-q")
    assert r.returncode in (1, 3) and "rank 5" in r.stdout.decode()
    r = _run(installed, "kb", "list")
    assert r.returncode == 0 and len(r.stdout.decode().splitlines()) >= 100
    r = _run(installed, "kb", "show", "cuda-out-of-memory")
    assert r.returncode == 0 and "PYTORCH_CUDA_ALLOC_CONF" in r.stdout.decode()
    r = _run(installed, "fr", "run/fr", "--format", "json")
    assert r.returncode in (0, 1, 3) and json.loads(r.stdout)["schema"] == "rankdoctor.fr/v1"
    r = _run(installed, "schema", "diagnosis")
    assert r.returncode == 0 and json.loads(r.stdout)["$schema"].startswith("https://json-schema.org/")


def test_site_and_python_api_from_the_wheel(installed):
    venv, work = installed
    r = _run(installed, "site", "site")
    assert r.returncode == 0, r.stderr.decode()
    assert (work / "site" / "index.html").is_file() and len(list((work / "site").rglob("*.html"))) >= 100
    code = (
        "import rankdoctor\n"
        "d = rankdoctor.diagnose(['run/logs'], fr='run/fr')\n"
        "print(d.diagnoses[0].klass, d.diagnoses[0].initiating_rank, len(rankdoctor.load_kb()))\n"
    )
    r = subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True, cwd=work, timeout=180)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    klass, rank, n = r.stdout.decode().split()
    assert rank == "5" and int(n) >= 100


def test_history_and_compare_from_the_wheel(installed):
    r = _run(installed, "diagnose", "job.log", "--save", "--db", "h.sqlite3", "-q")
    assert r.returncode == 1 and "saved as incident 1" in r.stderr.decode(), r.stderr.decode()
    r = _run(installed, "history", "resolve", "1", "--fix", "smaller batch", "--db", "h.sqlite3")
    assert r.returncode == 0, r.stderr.decode()
    r = _run(installed, "diagnose", "job.log", "--db", "h.sqlite3", "--format", "html", "-o", "report.html")
    assert r.returncode == 1 and "smaller batch" in (installed[1] / "report.html").read_text()
    r = _run(installed, "compare", "1", "job.log", "--db", "h.sqlite3", "--format", "json")
    assert r.returncode == 0 and json.loads(r.stdout)["same_failure"], r.stderr.decode()


def test_serve_from_the_wheel(installed):
    venv, work = installed
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = subprocess.Popen([str(venv / "bin" / "rankdoctor"), "serve", "--port", str(port)], cwd=work,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                page = urllib.request.urlopen(base + "/", timeout=5).read().decode()
                break
            except OSError:
                time.sleep(0.2)
        else:
            raise AssertionError("serve did not answer: " + p.stderr.read1().decode()[-2000:])
        assert "rankdoctor" in page
        req = urllib.request.Request(base + "/api/diagnose", data=LOG.read_bytes(), headers={"Content-Type": "text/plain"})
        d = json.loads(urllib.request.urlopen(req, timeout=120).read())
        assert d["diagnoses"][0]["initiating_rank"] == 2
        samples = urllib.request.urlopen(base + "/", timeout=5).read().decode()
        assert "sample" in samples.lower()  # the bundled samples ship in the wheel
        # the history pages and their script ship too
        assert "Incident history" in urllib.request.urlopen(base + "/history", timeout=5).read().decode()
        assert b"rd-resolve" in urllib.request.urlopen(base + "/static/history.js", timeout=5).read()
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=10)


def _lsp_exchange(proc: subprocess.Popen, messages: list[dict], until, timeout: float = 120) -> list[dict]:
    """Send LSP messages (Content-Length framed JSON-RPC) to a server on stdio and read what it
    sends until ``until(message)`` holds for one."""
    for m in messages:
        body = json.dumps({"jsonrpc": "2.0", **m}).encode()
        proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    proc.stdin.flush()
    got: list[dict] = []
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        length = 0
        while (line := proc.stdout.readline().strip()) != b"":
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        assert length, f"the server closed its output: {proc.stderr.read().decode()[-2000:] if proc.poll() is not None else ''}"
        msg = json.loads(proc.stdout.read(length))
        got.append(msg)
        if until(msg):
            return got
    raise AssertionError(f"no such message in {timeout} s: {got}")


def test_lsp_from_the_wheel(installed):
    # the language server the editors start, from the wheel: a log opened, its diagnosis
    # published, the encyclopedia page built from the packaged templates
    venv, work = installed
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RANKDOCTOR_CONFIG")}
    env["XDG_CACHE_HOME"] = str(work / "cache")
    log = (work / "job.log").resolve()
    proc = subprocess.Popen([str(venv / "bin" / "rankdoctor"), "lsp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=work, env=env)
    try:
        text = log.read_text()
        got = _lsp_exchange(proc, [
            {"id": 1, "method": "initialize", "params": {"processId": None, "rootUri": None, "capabilities": {}}},
            {"method": "initialized", "params": {}},
            {"method": "textDocument/didOpen", "params": {"textDocument": {"uri": log.as_uri(), "languageId": "log", "version": 1, "text": text}}},
        ], lambda m: m.get("method") == "textDocument/publishDiagnostics")
        diags = got[-1]["params"]["diagnostics"]
        assert got[-1]["params"]["uri"] == log.as_uri()
        assert [(d["range"]["start"]["line"], d["severity"], d["code"]) for d in diags if d["severity"] == 1] == [(0, 1, "cuda-out-of-memory")]
        got = _lsp_exchange(proc, [{"id": 2, "method": "workspace/executeCommand", "params": {"command": "rankdoctor.openEntry", "arguments": ["cuda-out-of-memory"]}}],
                            lambda m: m.get("id") == 2)
        url = got[-1]["result"]
        assert url.startswith((work / "cache").resolve().as_uri()) and url.endswith("/entries/cuda-out-of-memory.html")
        assert "out of memory" in Path(url[len("file://"):]).read_text().lower()
        _lsp_exchange(proc, [{"id": 3, "method": "shutdown"}], lambda m: m.get("id") == 3)
        proc.stdin.write(b'Content-Length: 33\r\n\r\n{"jsonrpc":"2.0","method":"exit"}')
        proc.stdin.flush()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_redact_from_the_wheel(installed):
    """detect-secrets comes with the wheel's dependencies; the redacted run diagnoses the same."""
    venv, work = installed
    r = _run(installed, "redact", "run", "job.log", "-o", "shareable")
    assert r.returncode == 0, r.stderr.decode()
    assert (work / "shareable" / "job.log").is_file() and (work / "shareable" / "run" / "fr").is_dir()
    r = _run(installed, "diagnose", "job.log", "--redact", "--format", "json")
    assert r.returncode == 1 and json.loads(r.stdout)["diagnoses"][0]["initiating_rank"] == 2
