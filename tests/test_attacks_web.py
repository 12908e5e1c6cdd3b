"""Hostile and heavy input against real `rankdoctor serve` processes on loopback (issue 12):
rebinding and cross-origin requests, missing security headers, deeply nested JSON,
inflating and crowding bodies, slow clients, diagnoses that take too long, SIGTERM
while one runs. Each server is a real process; its memory is read from /proc."""

from __future__ import annotations

import gzip
import json
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from .conftest import ROOT, descendants

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads server memory from /proc (Linux)")

RSS_BOUND_KB = 600 * 1024  # generous: the server holds no upload in memory
HOSTILE_LINE = b"rank" + b" " * 1_000_000 + b"exitcode: -9\n"  # made Python's re backtrack for hours
# a server whose limits are small enough to reach in a test (all are options of serve())
SERVE_SMALL = (
    "import sys\n"
    "from rankdoctor.kb.loader import load_kb\n"
    "from rankdoctor.web.app import serve\n"
    "from rankdoctor.web.limits import Limits\n"
    "serve(load_kb(), port=int(sys.argv[1]), limits=Limits(max_upload_bytes=20 << 20, max_inflated_bytes=64 << 20,"
    " workers=1, read_timeout=1.0))\n"
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(args: list[str], port: int) -> subprocess.Popen:
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the server exited: {proc.stderr.read().decode()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/entries", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    pytest.fail("the server did not start within 90 s")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _serve_cli(port: int, *options: str) -> subprocess.Popen:
    return _start([sys.executable, "-m", "rankdoctor.cli", "serve", "--port", str(port), *options], port)


@pytest.fixture(scope="module")
def small():
    """A server with small limits: 20 MB bodies (40 MB in flight), 64 MB inflated, one
    worker, a 1 s read timeout."""
    port = _free_port()
    proc = _start([sys.executable, "-c", SERVE_SMALL, str(port)], port)
    yield proc, f"http://127.0.0.1:{port}", port
    _stop(proc)


@pytest.fixture(scope="module")
def strict():
    """`rankdoctor serve --request-timeout 2`: two seconds of a worker per diagnosis."""
    port = _free_port()
    proc = _serve_cli(port, "--request-timeout", "2", "--max-inflated-mb", "8192")
    yield proc, f"http://127.0.0.1:{port}", port
    _stop(proc)


def _one_line(r: httpx.Response | tuple) -> str:
    detail = r.json()["detail"] if isinstance(r, httpx.Response) else json.loads(r[2])["detail"]
    assert isinstance(detail, str) and "\n" not in detail and "Traceback" not in detail
    return detail


def _status_kb(pid: int, field: str) -> int:
    text = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(rf"^{field}:\s+(\d+) kB", text, re.M).group(1))


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _peak_rss_kb(proc: subprocess.Popen) -> dict[int, int]:
    """VmHWM (the most resident memory each process ever had) of the server and its workers."""
    out = {}
    for pid in {proc.pid, *descendants(proc.pid)}:
        try:
            out[pid] = _status_kb(pid, "VmHWM")
        except (OSError, AttributeError):
            pass
    return out


def _raw(port: int, head: str, body: bytes = b"", expect_continue: bool = False, timeout: float = 30) -> tuple[int, dict, bytes]:
    """One HTTP/1.1 request on a socket of its own. With ``expect_continue`` the body is
    sent only after the server's 100 Continue, so a body the server refuses is never sent."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(head.encode() + b"\r\n")
        f = s.makefile("rb")

        def response() -> tuple[int, dict, bytes]:
            status = int(f.readline().split()[1])
            headers = {}
            while (line := f.readline().strip()):
                k, _, v = line.decode().partition(":")
                headers[k.lower()] = v.strip()
            return status, headers, f.read(int(headers.get("content-length", 0))) if status >= 200 else b""

        if expect_continue:
            status, headers, data = response()
            if status != 100:
                return status, headers, data
        s.sendall(body)
        return response()


def _gzip_of_mb(mb: int) -> bytes:
    """Ordinary log lines, gzipped: ``mb`` members of 1 MB each (built without holding
    the inflated bytes)."""
    line = b"2026-05-01 10:00:00 [rank0]: step 1 loss 2.000 ordinary training chatter\n"
    return gzip.compress(line * ((1 << 20) // len(line)), 9) * mb


def _token(base: str) -> str:
    page = httpx.get(base + "/").text
    return json.loads(re.search(r'id="rd-config">(.*?)</script>', page).group(1))["token"]


def _log() -> bytes:
    return b"[rank1]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB\n"


# -- who may drive the server ---------------------------------------------------------------


@pytest.mark.parametrize("host", ["evil.example", "attacker.test:{port}", "127.0.0.1.evil.example:{port}", "[::2]:{port}"])
def test_a_rebinding_host_is_refused(small, host):
    _, base, port = small
    host = host.format(port=port)
    for r in (
        httpx.get(base + "/api/entries", headers={"host": host}),
        httpx.post(base + "/api/diagnose", content=_log(), headers={"host": host, "content-type": "text/plain"}),
    ):
        assert r.status_code == 403, r.text
        assert "is not this server" in _one_line(r)


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST:{port}", "127.0.0.1"])
def test_loopback_hosts_are_served(small, host):
    _, base, port = small
    assert httpx.get(base + "/api/entries", headers={"host": host.format(port=port)}).status_code == 200


@pytest.mark.parametrize(
    "headers",
    [
        {"origin": "http://evil.example"},  # a page elsewhere POSTing text/plain: no preflight
        {"origin": "null"},  # a sandboxed frame or a file: page
        {"origin": "http://127.0.0.1:1"},  # another local port is another origin
        {"sec-fetch-site": "cross-site"},
        {"sec-fetch-site": "same-site"},
        {"origin": "{self}", "sec-fetch-site": "same-origin"},  # same origin, but without the page's token
        {"origin": "{self}", "x-rankdoctor-token": "guessed"},
    ],
)
def test_cross_origin_and_tokenless_browser_posts_are_refused(small, headers):
    _, base, _ = small
    headers = {k: v.replace("{self}", base) for k, v in headers.items()}
    for r in (
        httpx.post(base + "/api/reports", content=_log(), headers={**headers, "content-type": "text/plain"}),
        httpx.post(base + "/api/reports", files=[("files", ("a.log", _log()))], headers=headers),
    ):
        assert r.status_code == 403, r.text
        assert "refused" in _one_line(r)


def test_the_page_token_and_plain_clients_are_accepted(small):
    _, base, _ = small
    browser = {"origin": base, "sec-fetch-site": "same-origin", "x-rankdoctor-token": _token(base)}
    r = httpx.post(base + "/api/reports", files=[("files", ("rank_1.log", _log()))], headers=browser)
    assert r.status_code == 201, r.text
    assert r.json()["diagnosis"]["diagnoses"][0]["initiating_rank"] == 1
    curl_like = httpx.post(base + "/api/diagnose", content=_log(), headers={"content-type": "text/plain"})
    assert curl_like.status_code == 200, curl_like.text


@pytest.mark.parametrize("path", ["/", "/docs", "/kb/index.html", "/api/entries", "/api/nope"])
def test_security_headers_on_every_response(small, path):
    _, base, _ = small
    for r in (httpx.get(base + path), httpx.get(base + path, headers={"host": "evil.example"})):
        assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
        assert "script-src 'self'" in r.headers["content-security-policy"]
        assert r.headers["x-frame-options"] == "DENY"
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["referrer-policy"] == "no-referrer"


# -- bodies ----------------------------------------------------------------------------------


@pytest.mark.parametrize("meta", ["[" * 200_000, '{"files": ' + "[" * 200_000 + "]" * 200_000 + "}", '{"files": [{"runs": ' + "[" * 100_000 + "}]}"])
def test_deeply_nested_meta_is_400(small, meta):
    _, base, _ = small
    r = httpx.post(base + "/api/diagnose", files=[("files", ("a.log", _log()))], data={"meta": meta})
    assert r.status_code == 400, r.text
    assert _one_line(r).startswith("meta: ")


def test_an_inflating_body_is_413_and_memory_stays_flat(small):
    proc, base, _ = small
    bomb = _gzip_of_mb(256)  # ~1 MB that inflates to 256 MB
    assert len(bomb) < 2 << 20
    r = httpx.post(base + "/api/diagnose?name=job.log.gz", content=bomb, headers={"content-type": "text/plain"}, timeout=60)
    assert r.status_code == 413, r.text
    assert "inflates to more than 64 MB" in _one_line(r)
    peaks = _peak_rss_kb(proc)
    assert peaks and max(peaks.values()) < RSS_BOUND_KB, peaks
    assert httpx.post(base + "/api/diagnose", content=_log(), headers={"content-type": "text/plain"}).status_code == 200


def test_too_many_bodies_at_once_get_503_and_memory_stays_flat(small):
    proc, _, port = small
    body = (b"[rank3]: step 7 loss 1.25 a line of an ordinary training log, repeated\n" * ((20 << 20) // 72))[: (20 << 20) - 1024]
    head = (f"POST /api/diagnose HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: text/plain\r\n"
            f"Content-Length: {len(body)}\r\nExpect: 100-continue\r\n")
    results: list = []
    gate = threading.Barrier(40)

    def one() -> None:
        gate.wait()
        try:
            results.append(_raw(port, head, body, expect_continue=True, timeout=60))
        except OSError as exc:
            results.append(exc)

    threads = [threading.Thread(target=one) for _ in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    codes = sorted(r[0] for r in results if isinstance(r, tuple))
    assert len(codes) == 40, results
    assert 503 in codes and 200 in codes and set(codes) <= {200, 503}, codes
    busy = next(r for r in results if r[0] == 503)
    assert "server busy" in _one_line(busy) and busy[1].get("retry-after")
    peaks = _peak_rss_kb(proc)
    assert max(peaks.values()) < RSS_BOUND_KB, peaks


def test_a_body_over_the_limit_without_a_length_is_413(small):
    _, base, _ = small

    def chunks():
        for _ in range(21 * 16):
            yield b"y" * (64 << 10)

    r = httpx.post(base + "/api/diagnose", content=chunks(), headers={"content-type": "text/plain"}, timeout=60)
    assert r.status_code == 413 and "upload limit of 20 MB" in _one_line(r)


# -- slow clients ------------------------------------------------------------------------------


def test_headers_that_never_end_are_cut_off(small):
    _, _, port = small
    with socket.create_connection(("127.0.0.1", port), timeout=15) as s:
        s.sendall(b"GET /api/entries HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: 1")
        assert s.recv(1024) == b""  # closed by the server (a hang would raise socket.timeout)


def test_a_body_that_stops_coming_is_408(small):
    _, _, port = small
    head = f"POST /api/diagnose HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n"
    status, _, data = _raw(port, head, b"[rank0]: only the start of a body", timeout=15)
    assert status == 408 and "stopped arriving" in _one_line((status, {}, data))


# -- diagnoses that take too long ----------------------------------------------------------------


def _slow_body() -> bytes:
    """A gzip body whose diagnosis legitimately takes many seconds (2 GB of log once
    inflated: more than zlib can inflate in the 2 s budget), ending in the line that made
    `re` backtrack for hours."""
    return _gzip_of_mb(2048) + gzip.compress(HOSTILE_LINE)


def _post_in_background(base: str, body: bytes) -> tuple[threading.Thread, list]:
    out: list = []

    def run() -> None:
        try:
            out.append(httpx.post(base + "/api/diagnose?name=job.log.gz", content=body, headers={"content-type": "text/plain"}, timeout=120))
        except httpx.HTTPError as exc:
            out.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, out


def test_a_diagnosis_over_its_time_budget_is_stopped_with_one_line(strict):
    proc, base, _ = strict
    r = httpx.post(base + "/api/diagnose?name=job.log.gz", content=_slow_body(), headers={"content-type": "text/plain"}, timeout=120)
    assert r.status_code == 503, r.text[:500]
    assert "took longer than 2 s and was stopped" in _one_line(r)
    ok = httpx.post(base + "/api/diagnose", content=_log(), headers={"content-type": "text/plain"}, timeout=60)
    assert ok.status_code == 200, ok.text  # the killed worker was replaced


def test_the_hostile_line_alone_cannot_hold_a_worker_past_the_budget(strict):
    _, base, _ = strict
    r = httpx.post(base + "/api/diagnose", content=HOSTILE_LINE, headers={"content-type": "text/plain"}, timeout=60)
    assert r.status_code in (200, 503), r.text[:300]  # fast once the scanner is safe; stopped at 2 s if not
    if r.status_code == 503:
        assert "took longer than 2 s" in _one_line(r)


def test_while_a_hostile_diagnosis_runs_others_are_served_and_sigterm_stops_serve():
    port = _free_port()
    proc = _serve_cli(port, "--request-timeout", "600", "--max-inflated-mb", "8192", "--workers", "2")
    try:
        base = f"http://127.0.0.1:{port}"
        hostile, out = _post_in_background(base, _slow_body())
        time.sleep(0.5)
        for url in ("/api/entries", "/", "/kb/index.html"):
            assert httpx.get(base + url, timeout=10).status_code == 200
        assert httpx.post(base + "/api/diagnose", content=_log(), headers={"content-type": "text/plain"}, timeout=30).status_code == 200
        assert hostile.is_alive() and not out  # all that while the hostile one was running
        family = descendants(proc.pid)
        assert family  # the fork server and the workers
        proc.send_signal(signal.SIGTERM)
        proc.wait(15)  # raises TimeoutExpired if SIGTERM did not stop it
        deadline = time.monotonic() + 10
        while any(_alive(p) for p in family) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [p for p in family if _alive(p)], "worker processes outlived the server"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
