"""The attacks of issue 12 against the web server, before and after, in one run: a real
`rankdoctor serve` of each (``--baseline REV`` and this checkout), on loopback. About
three minutes on 2 cores; prints the markdown table of bench/attacks_web.md.

    .venv/bin/python bench/web_attacks.py --baseline 1e51a58

This checkout's server runs with ``--request-timeout 10`` (the default is 60 s) so the
time budget shows within the run. Memory is the whole process tree's resident memory,
sampled every 20 ms; a server past 3 GB is killed by the bench (the machine is shared).
"""

from __future__ import annotations

import argparse
import gzip
import socket
import sys
import threading
import time

from web_common import Server, get, multipart, post, post_expecting_continue, source_tree

OOM = b"[rank1]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB\n"
HOSTILE = b"rank" + b" " * 1_000_000 + b"exitcode: -9\n"


ORDINARY = b"2026-05-01 10:00:00 [rank0]: step 1 loss 2.000 ordinary training chatter\n"


def gzip_of_mb(mb: int, line: bytes = ORDINARY) -> bytes:
    """``mb`` gzip members of 1 MB of ``line`` each."""
    return gzip.compress(line * ((1 << 20) // len(line)), 9) * mb


def status(r: tuple) -> str:
    detail = r[2][:90].decode("utf-8", "replace").replace("|", "/").replace("\n", " ")
    return f"{r[0]} `{detail}`" if r[0] >= 400 else str(r[0])


def timed(f) -> tuple[object, float]:  # type: ignore[no-untyped-def]
    t0 = time.monotonic()
    out = f()
    return out, time.monotonic() - t0


def held_open(port: int, data: bytes, wait: float = 15) -> str:
    """Send ``data`` and nothing more: how the server answers, or that it still waits."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(data)
        s.settimeout(wait)
        t0 = time.monotonic()
        try:
            got = s.recv(4096)
        except socket.timeout:
            return f"connection still open after {wait:.0f} s"
        took = time.monotonic() - t0
        if not got:
            return f"closed by the server after {took:.1f} s"
        return f"{got.split(b' ')[1].decode()} after {took:.1f} s"


def in_background(f) -> tuple[threading.Thread, list]:  # type: ignore[no-untyped-def]
    out: list = []

    def run() -> None:
        t0 = time.monotonic()
        try:
            out.append((f(), time.monotonic() - t0))
        except OSError as exc:
            out.append((exc, time.monotonic() - t0))

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, out


def get_while(port: int, cap: float = 10) -> str:
    try:
        r, took = timed(lambda: get(port, "/api/entries", timeout=cap))
        return f"GET /api/entries: {r[0]} in {took:.2f} s"  # type: ignore[index]
    except socket.timeout:
        return f"GET /api/entries: no answer in {cap:.0f} s"


def attacks(src, options: list[str]) -> dict[str, str]:  # type: ignore[no-untyped-def]
    out: dict[str, str] = {}
    srv = Server(src, *options)
    p = srv.port
    out["Host: evil.example (DNS rebinding)"] = status(get(p, "/api/entries", {"Host": f"evil.example:{p}"}))
    out["cross-origin text/plain POST (Origin: http://evil.example)"] = status(
        post(p, "/api/diagnose", OOM, headers={"Origin": "http://evil.example"}))
    body, ctype = multipart("a.log", OOM)
    out["cross-site multipart POST (Sec-Fetch-Site: cross-site)"] = status(
        post(p, "/api/reports", body, ctype, headers={"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"}))
    page = get(p, "/")[1]
    names = ["content-security-policy", "x-frame-options", "x-content-type-options", "referrer-policy"]
    out["security headers on /"] = ", ".join(n for n in names if n in page) or "none"
    boundary = "----b"
    nested = (f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="a.log"\r\n\r\n').encode() + OOM + (
        f'\r\n--{boundary}\r\nContent-Disposition: form-data; name="meta"\r\n\r\n').encode() + b"[" * 200_000 + (
        f"\r\n--{boundary}--\r\n").encode()
    out["meta nested 200,000 deep"] = status(post(p, "/api/diagnose", nested, f"multipart/form-data; boundary={boundary}"))
    out["headers that never end"] = held_open(p, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: 1")
    out["a body that stops coming"] = held_open(
        p, f"POST /api/diagnose HTTP/1.1\r\nHost: 127.0.0.1:{p}\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\nabc".encode())
    for mb, name in ((256, "1 MB of gzip inflating to 256 MB"), (1280, "4 MB of gzip inflating to 1.25 GB")):
        srv.reset_peak()
        r, took = timed(lambda: post(p, "/api/diagnose?name=job.log.gz", gzip_of_mb(mb)))
        out[name] = f"{status(r)} in {took:.1f} s; peak memory {srv.peak_mb:.0f} MB" + (" (killed at 3 GB)" if srv.killed else "")  # type: ignore[arg-type]
    if srv.alive():
        slow, done = in_background(lambda: post(p, "/api/diagnose?name=job.log.gz", gzip_of_mb(2048)))
        time.sleep(1)
        during = get_while(p)
        slow.join(120)
        fate = f"{status(done[0][0])} after {done[0][1]:.1f} s" if done and isinstance(done[0][0], tuple) else "no answer"
        out["2 GB of log (6 MB of gzip): its answer, and a GET meanwhile"] = f"{fate}; {during}"
        hostile, done = in_background(lambda: post(p, "/api/diagnose", HOSTILE, timeout=30))
        time.sleep(1)
        during = get_while(p)
        if hostile.is_alive():
            took = srv.stop(20)
            out["`rank` + 1,000,000 spaces + `exitcode: -9`: its answer, and a GET meanwhile"] = f"no answer yet; {during}"
            out["SIGTERM while a diagnosis runs"] = "(the hostile line) " + (
                f"stopped in {took:.1f} s" if took is not None else "still running 20 s after SIGTERM (killed)")
        else:
            out["`rank` + 1,000,000 spaces + `exitcode: -9`: its answer, and a GET meanwhile"] = (
                f"{status(done[0][0])} in {done[0][1]:.2f} s; {during}")
            again, _ = in_background(lambda: post(p, "/api/diagnose?name=job.log.gz", gzip_of_mb(2048)))
            time.sleep(1)
            took = srv.stop(20)
            out["SIGTERM while a diagnosis runs"] = "(the 2 GB one) " + (
                f"stopped in {took:.1f} s" if took is not None else "still running 20 s after SIGTERM (killed)")
    srv.stop()

    hits = Server(src, *options)
    try:
        r, took = timed(lambda: post(hits.port, "/api/diagnose?name=job.log.gz", gzip_of_mb(256, OOM), timeout=30))
        fate = f"{status(r)} in {took:.1f} s"  # type: ignore[arg-type]
    except OSError:
        fate = "no answer in 30 s"
    out["1 MB of gzip inflating to 256 MB of OOM lines (every line a hit)"] = (
        f"{fate}; peak memory {hits.peak_mb:.0f} MB" + (" (killed at 3 GB)" if hits.killed else ""))
    hits.stop()

    crowd = Server(src, *options)
    body = (ORDINARY * ((20 << 20) // len(ORDINARY)))[: (20 << 20) - 4096]
    codes: list = []

    def one() -> None:
        try:
            codes.append(post_expecting_continue(crowd.port, "/api/diagnose", body, timeout=300))
        except OSError as exc:
            codes.append(type(exc).__name__)

    t0 = time.monotonic()
    threads = [threading.Thread(target=one, daemon=True) for _ in range(200)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    counts: dict = {}
    for c in codes:
        counts[c] = counts.get(c, 0) + 1
    out["200 concurrent 20 MB uploads"] = (
        f"{', '.join(f'{k}: {v}' for k, v in sorted(counts.items(), key=str))} in {time.monotonic() - t0:.0f} s; "
        f"peak memory {crowd.peak_mb:.0f} MB" + (" (killed at 3 GB)" if crowd.killed else ""))
    crowd.stop()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", required=True, help="the commit to measure as 'before'")
    args = ap.parse_args()
    keep: list = []
    before = attacks(source_tree(args.baseline, keep), [])
    print("before: done", file=sys.stderr)
    after = attacks(source_tree(None, keep), ["--request-timeout", "10"])
    print("| attack | before | after |")
    print("|---|---|---|")
    for name in dict.fromkeys([*before, *after]):
        print(f"| {name} | {before.get(name, '—')} | {after.get(name, '—')} |")


if __name__ == "__main__":
    main()
