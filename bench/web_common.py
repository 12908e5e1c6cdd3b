"""What the web benches share: a `rankdoctor serve` process from this checkout or from an
older commit (``git archive``), the memory of its process tree sampled from /proc, and
HTTP clients that do exactly what they are told (a raw socket, keep-alive connections)."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from contextlib import contextmanager
from io import BytesIO
from pathlib import Path
from collections.abc import Iterator

ROOT = Path(__file__).resolve().parents[1]


def source_tree(rev: str | None, keep: list) -> Path:
    """The ``src`` folder of ``rev`` (None: this checkout's), with the entries beside it."""
    if rev is None:
        return ROOT / "src"
    tmp = tempfile.TemporaryDirectory(prefix=f"rankdoctor-{rev}-")
    keep.append(tmp)
    archive = subprocess.run(["git", "archive", rev, "src", "entries"], cwd=ROOT, check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(tmp.name, filter="data")
    return Path(tmp.name) / "src"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tree(pid: int) -> set[int]:
    """``pid`` and every process below it."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError):
            continue
    found, frontier = {pid}, {pid}
    while frontier:
        frontier = {p for p, pp in parents.items() if pp in frontier} - found
        found |= frontier
    return found


def rss_kb(pid: int, field: str = "VmRSS") -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class Server:
    """A `rankdoctor serve` from ``src``; memory sampled every 20 ms (``peak_mb``: the
    most the whole process tree held at once); killed when it passes ``kill_above_mb``."""

    def __init__(self, src: Path, *options: str, kill_above_mb: int = 3072):
        self.port = free_port()
        env = {**os.environ, "PYTHONPATH": str(src)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rankdoctor.cli", "serve", "--port", str(self.port), *options],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        self.kill_above_mb = kill_above_mb
        self.peak_mb = 0.0
        self.killed = False
        self._stop = threading.Event()
        self._wait_ready()
        self.reset_peak()
        threading.Thread(target=self._sample, daemon=True).start()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("the server exited at start")
            try:
                if get(self.port, "/api/entries")[0] == 200:
                    return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("the server did not start")

    def tree_mb(self) -> float:
        return sum(rss_kb(p) for p in tree(self.proc.pid)) / 1024

    def reset_peak(self) -> None:
        self.peak_mb = self.tree_mb()

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            mb = self.tree_mb()
            self.peak_mb = max(self.peak_mb, mb)
            if mb > self.kill_above_mb and not self.killed:
                self.killed = True
                for p in tree(self.proc.pid):
                    try:
                        os.kill(p, signal.SIGKILL)
                    except OSError:
                        pass

    def cpu_seconds(self) -> float:
        """User + system time of the processes now in the tree (a replaced worker's is lost)."""
        total = 0
        for p in tree(self.proc.pid):
            try:
                fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])
            except (OSError, IndexError):
                pass
        return total / os.sysconf("SC_CLK_TCK")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout: float = 20) -> float | None:
        """SIGTERM; the seconds it took to exit, or None when it had not after ``timeout``
        (then it is killed)."""
        self._stop.set()
        if self.proc.poll() is not None:
            return 0.0
        family = tree(self.proc.pid)
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
            took: float | None = time.monotonic() - t0
        except subprocess.TimeoutExpired:
            took = None
        for p in family:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        self.proc.wait()
        return took


def get(port: int, path: str, headers: dict | None = None, timeout: float = 30) -> tuple[int, dict, bytes]:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path, headers=headers or {})
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def post(port: int, path: str, body: bytes, ctype: str = "text/plain", headers: dict | None = None,
         timeout: float = 600) -> tuple[int, dict, bytes]:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("POST", path, body=body, headers={"Content-Type": ctype, **(headers or {})})
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def post_expecting_continue(port: int, path: str, body: bytes, timeout: float = 600) -> int:
    """POST with ``Expect: 100-continue``: the body goes only once the server asks for
    it, so a refused one is never sent. The final status."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: text/plain\r\n"
                  f"Content-Length: {len(body)}\r\nExpect: 100-continue\r\n\r\n".encode())
        f = s.makefile("rb")

        def head() -> int:
            status = int(f.readline().split()[1])
            length = 0
            while (line := f.readline().strip()):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            f.read(length)
            return status

        status = head()
        if status != 100:
            return status
        s.sendall(body)
        return head()


def multipart(name: str, data: bytes) -> tuple[bytes, str]:
    """One ``files`` part, as the page sends it."""
    boundary = "----rankdoctorbench"
    body = (f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="{name}"\r\n'
            f"Content-Type: text/plain\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


@contextmanager
def server(src: Path, *options: str, kill_above_mb: int = 3072) -> Iterator[Server]:
    s = Server(src, *options, kill_above_mb=kill_above_mb)
    try:
        yield s
    finally:
        s.stop()
