"""A watched run in the web app (`rankdoctor serve --watch DIR`, /watch): in a real Chromium,
lines written to the watched folder while the page is open show up on it, through
server-sent events, with the page's Content-Security-Policy and the Host guard in force."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from .test_timeline import OOM, WATCHDOG
from .test_web_browser import CHROMIUM, chromium, guarded, serving

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Chromium is not installed at /usr/bin/chromium (`make test` installs it with apt-get)"),
]
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed (pip install -e '.[test]')")


@pytest.fixture()
def watched(kb, tmp_path):
    """The app served by uvicorn in this process, watching ``tmp_path/logs`` (4 ranks that
    have written a healthy line each)."""
    from rankdoctor.web.app import create_app

    logs = tmp_path / "logs"
    logs.mkdir()
    for r in range(4):
        (logs / f"rank_{r}.log").write_text(f"[rank{r}]:2026-05-01 10:00:00,000 INFO train: step 1 loss 2.5000\n", encoding="utf-8")
    app = create_app(kb, watch=[str(logs)])
    with serving(app, timeout_graceful_shutdown=2) as (base, thread):
        yield base, logs
        app.state.watched.closing.set()  # (as app.serve's server does on shutdown)
    assert not thread.is_alive(), "the server did not stop"


def _append(path: Path, line: str) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")


def test_a_line_written_to_the_watched_folder_shows_up_on_the_page(watched):
    base, logs = watched
    with chromium() as ctx:
        with guarded(ctx.new_page(), base) as page:
            page.goto(base + "/watch")
            page.wait_for_selector("#rd-watch .rd-report")
            assert "4 rank(s) heard from" in page.inner_text("#rd-watch-status")
            assert "no failure" in page.inner_text(".rd-verdict").lower()
            shown = int(page.get_attribute("#rd-watch", "data-version"))

            # rank 1 runs out of memory, the others' watchdogs fire: written while the page is open
            t0 = time.monotonic()
            _append(logs / "rank_1.log", OOM.format(r=1))
            for r in (0, 2, 3):
                _append(logs / f"rank_{r}.log", WATCHDOG.format(r=r))
            page.locator("h1.rd-title", has_text="CUDA out of memory").wait_for()  # (no wait_for_function: the CSP forbids eval)
            took = time.monotonic() - t0
            assert int(page.get_attribute("#rd-watch", "data-version")) > shown
            assert page.inner_text(".rd-init").strip().startswith("rank 1")
            assert "OutOfMemoryError" in page.inner_text("#rd-watch")  # the line itself, as evidence
            assert page.locator(".tl-lane").count() == 4
            # the timeline of the new fragment works as on the report page
            page.locator(".tl-mark.initiating").click()
            page.wait_for_selector(".rd-tl-detail:not([hidden])")
            assert "OutOfMemoryError" in page.inner_text(".rd-tl-detail")
            assert took < 10, f"the page showed the diagnosis {took:.1f} s after the lines were written"
            page.close()


def test_the_watch_page_keeps_the_guard(watched):
    base, _ = watched
    with urllib.request.urlopen(base + "/watch") as r:
        csp = r.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "connect-src 'self'" in csp
    # a page on another site that made its own name point here (DNS rebinding) is refused
    req = urllib.request.Request(base + "/watch/events", headers={"Host": "evil.example:80"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(req)
    assert refused.value.code == 403


def test_no_watch_page_without_a_watched_run(kb):
    from fastapi.testclient import TestClient

    from rankdoctor.web.app import create_app

    with TestClient(create_app(kb), base_url="http://127.0.0.1") as client:
        r = client.get("/watch", headers={"Accept": "text/html"})
    assert r.status_code == 404
    assert "rankdoctor serve --watch" in r.text


def test_watch_hung_after_shows_the_hang_reading(kb, tmp_path):
    """`serve --watch DIR --watch-hung-after S`: a real silent-hang console in the watched folder,
    no line for S seconds, and /watch shows diagnose --hung's answer."""
    from rankdoctor.web.app import create_app

    from .conftest import SCENARIOS

    logs = tmp_path / "logs"
    logs.mkdir()
    text = (SCENARIOS / "real-holdout15" / "kubeflow-eks-nccl-socket-lo-hang" / "log.txt").read_text()
    (logs / "master-0.log").write_text(text)
    app = create_app(kb, watch=[str(logs)], watch_hung_after=1.0)
    with serving(app, timeout_graceful_shutdown=2) as (base, thread):
        try:
            deadline, page = time.time() + 30, ""
            while time.time() < deadline:
                with urllib.request.urlopen(base + "/watch") as r:
                    page = r.read().decode()
                if "nccl-socket-unroutable-interface-hang" in page:
                    break
                time.sleep(0.5)
            assert "nccl-socket-unroutable-interface-hang" in page and "said to have hung" in page, page[-3000:]
        finally:
            app.state.watched.closing.set()
    assert not thread.is_alive(), "the server did not stop"
