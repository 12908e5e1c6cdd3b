"""Real parts for the remote tests and bench/ray_scale.py: a local Ray cluster of separate
processes (a head node and worker nodes started with ``ray start``, as on a real cluster)
and an S3-compatible server (moto's server mode), each on free ports, in short temporary
folders, stopped by process group at the end (never ``ray stop``: that would end every
Ray process on the machine)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import rankdoctor

BIN = Path(sys.executable).parent
SRC = Path(rankdoctor.__file__).resolve().parents[1]  # the rankdoctor the workers must import
# a small cluster on a small machine: no usage reports, no memory monitor killing workers
RAY_ENV = {
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_memory_monitor_refresh_ms": "0",
    "RAY_DEDUP_LOGS": "0",
    "RAY_BACKEND_LOG_LEVEL": "error",
    "RAY_num_prestart_python_workers": "0",
    "RAY_worker_maximum_startup_concurrency": "1",
}


def free_ports(n: int) -> list[int]:
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def _stop(proc: subprocess.Popen, grace: float = 3) -> None:
    """End ``proc`` and the processes it started (its own process group)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # whatever of the group is left
    except ProcessLookupError:
        pass
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:  # pragma: no cover
        pass


class RayUnavailable(RuntimeError):
    """Ray is installed but a cluster cannot start here (the tests skip, saying why)."""


class LocalRayCluster:
    """``ray start --head`` and ``nodes - 1`` more ``ray start --address=...`` nodes on this
    machine, ``cpus_per_node`` CPUs each. ``address`` is what ``--address`` takes."""

    def __init__(self, nodes: int = 2, cpus_per_node: int = 1, env: dict | None = None,
                 object_store_bytes: int = 100_000_000):
        self.nodes = nodes
        self.cpus = cpus_per_node
        self.store = object_store_bytes
        self.tmp = tempfile.mkdtemp(prefix="rdray-", dir="/tmp")  # Ray's socket paths must stay short
        self.env = {**os.environ, **RAY_ENV, **(env or {})}
        self.env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), self.env.get("PYTHONPATH", "")) if p)
        self.procs: list[subprocess.Popen] = []
        self.address = ""
        self._ready = False

    def _node_args(self, ports: list[int]) -> list[str]:
        p = iter(ports)
        return [
            "--block", "--node-ip-address=127.0.0.1", f"--num-cpus={self.cpus}", "--num-gpus=0",
            f"--object-store-memory={self.store}", "--disable-usage-stats", "--include-log-monitor=false",
            f"--node-manager-port={next(p)}", f"--object-manager-port={next(p)}",
            f"--dashboard-agent-listen-port={next(p)}", f"--dashboard-agent-grpc-port={next(p)}",
            f"--runtime-env-agent-port={next(p)}", f"--metrics-export-port={next(p)}",
        ]

    def start(self, timeout: float = 90) -> "LocalRayCluster":
        """Start the nodes and wait until all have joined."""
        return self.launch(timeout).wait(timeout)

    def launch(self, timeout: float = 90) -> "LocalRayCluster":
        """Start the nodes; ``wait()`` before use (other set-up can run meanwhile)."""
        ray = BIN / "ray"
        gcs, client, dash, *rest = free_ports(3 + 6 * self.nodes)
        for n in range(self.nodes):
            args = self._node_args(rest[6 * n : 6 * n + 6])
            if n == 0:
                cmd = [str(ray), "start", "--head", f"--port={gcs}", f"--ray-client-server-port={client}",
                       "--include-dashboard=false", f"--dashboard-port={dash}", f"--temp-dir={self.tmp}", *args]
                self.address = f"127.0.0.1:{gcs}"
            else:
                cmd = [str(ray), "start", f"--address={self.address}", *args]
            log = open(Path(self.tmp) / f"node{n}.out", "wb")
            self.procs.append(subprocess.Popen(cmd, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                               stdin=subprocess.DEVNULL, start_new_session=True))
            log.close()
            if n == 0:
                self._wait(lambda: self._port_open(gcs), timeout, "the head node")
        return self

    def wait(self, timeout: float = 90) -> "LocalRayCluster":
        if not self._ready:
            self._wait_nodes(timeout)
            self._ready = True
        return self

    def _port_open(self, port: int) -> bool:
        for p in self.procs:
            if p.poll() is not None:
                raise RayUnavailable(f"`ray start` exited with {p.returncode}: {self.log_tail()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False

    def _wait_nodes(self, timeout: float) -> None:
        """Until every node has joined (a driver of its own: this process may not import ray)."""
        script = (
            "import sys, time, ray\n"
            "ray.init(address=sys.argv[1], logging_level=40, log_to_driver=False)\n"
            "end = time.monotonic() + float(sys.argv[3])\n"
            "while sum(n['Alive'] for n in ray.nodes()) < int(sys.argv[2]) and time.monotonic() < end:\n"
            "    time.sleep(0.2)\n"
            "sys.exit(0 if sum(n['Alive'] for n in ray.nodes()) >= int(sys.argv[2]) else 1)\n"
        )
        try:
            out = subprocess.run([sys.executable, "-c", script, self.address, str(self.nodes), str(timeout)],
                                 env=self.env, capture_output=True, text=True, timeout=timeout + 30)
        except subprocess.TimeoutExpired:
            raise RayUnavailable(f"{self.nodes} nodes not up after {timeout:.0f} s: {self.log_tail()}") from None
        if out.returncode != 0:
            raise RayUnavailable(f"{self.nodes} nodes not up: {out.stderr.strip()[-300:]} {self.log_tail()}")

    def _wait(self, ready, timeout: float, what: str) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if ready():
                return
            time.sleep(0.5)
        raise RayUnavailable(f"{what} not up after {timeout:.0f} s: {self.log_tail()}")

    def log_tail(self) -> str:
        texts = []
        for f in sorted(Path(self.tmp).glob("node*.out")):
            texts.append(f.read_text(errors="replace")[-400:])
        return " | ".join(t.replace("\n", " ") for t in texts)[-800:]

    def stop(self) -> None:
        for p in reversed(self.procs):
            _stop(p)
        self.procs.clear()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self) -> "LocalRayCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class MotoServer:
    """moto's S3-compatible server on a free port (``moto_server -p PORT``)."""

    def __init__(self):
        self.port = free_ports(1)[0]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 30) -> "MotoServer":
        self.proc = subprocess.Popen([str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(self.port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                urllib.request.urlopen(f"{self.endpoint}/moto-api/", timeout=2).close()
                return self
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"moto_server exited with {self.proc.returncode}")
                time.sleep(0.1)
        raise RuntimeError(f"moto_server not up on port {self.port} after {timeout} s")

    def env(self) -> dict[str, str]:
        """What a process needs to reach it: botocore's endpoint and (fake) credentials."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}

    def stop(self) -> None:
        if self.proc is not None:
            _stop(self.proc, grace=5)
            self.proc = None

    def __enter__(self) -> "MotoServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def rd(*args: str, cwd=None, env: dict | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
    """``rankdoctor ARGS`` as a user runs it, with ``env`` added to this environment."""
    root = Path(__file__).resolve().parents[1]
    return subprocess.run([sys.executable, "-m", "rankdoctor.cli", *args], capture_output=True, cwd=cwd or root,
                          env={**os.environ, **(env or {})}, timeout=timeout)


def assert_one_line_error(p: subprocess.CompletedProcess, *words: str) -> None:
    """Exit status 2 and one line on stderr (no traceback) that says ``words``."""
    err = p.stderr.decode()
    assert p.returncode == 2, err
    assert "Traceback" not in err
    assert err.count("\n") == 1 and err.startswith("rankdoctor: error: "), err
    for w in words:
        assert w in err, err
