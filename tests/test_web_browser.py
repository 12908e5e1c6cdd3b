"""The web app in a real browser: Debian's Chromium driven by playwright, against the
app served by uvicorn in this process. Skipped (with the reason) when Chromium is absent."""

from __future__ import annotations

import gzip
import json
import socket
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse

import pytest

from .conftest import ROOT, SCENARIOS
from .test_timeline import OOM, WATCHDOG

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
SHOTS = ROOT / "test-output"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Chromium is not installed at /usr/bin/chromium (`make test` installs it with apt-get)"),
]
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed (pip install -e '.[test]')")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serving(app, **config):
    """``app`` served by uvicorn in a thread of this process: its base URL and the thread
    (joined for up to 10 s when the block ends)."""
    import uvicorn

    port = _free_port()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **config))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not srv.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("the web app did not start within 20 s")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}", thread
    srv.should_exit = True
    thread.join(10)


@contextmanager
def guarded(page, base: str):
    """``page`` may only talk to the app at ``base``: anything else is aborted and fails the
    test when the block ends, as do JavaScript errors and what the page's
    Content-Security-Policy blocks."""
    outside: list[str] = []
    errors: list[str] = []

    def only_local(route):
        if urlparse(route.request.url).netloc == urlparse(base).netloc:
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page.route("**/*", only_local)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" and "Content Security Policy" in m.text else None)
    yield page
    assert not outside, f"requests left the machine: {outside}"
    assert not errors, f"JavaScript errors or blocked by the page's Content-Security-Policy: {errors}"


@pytest.fixture(scope="module")
def server(kb):
    from rankdoctor.web.app import create_app

    with serving(create_app(kb)) as (base, _):
        yield base


@contextmanager
def chromium(**options):
    """Debian's Chromium, headless, on a fresh profile with the machine's flags (``ARGS``):
    a playwright browser context (``options`` go to launch_persistent_context)."""
    from playwright import sync_api

    with tempfile.TemporaryDirectory(prefix="rankdoctor-chromium-") as profile, sync_api.sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(profile, executable_path=str(CHROMIUM), headless=True, args=ARGS, **options)
        ctx.set_default_timeout(20_000)
        yield ctx
        ctx.close()


@pytest.fixture(scope="module")
def browser_context():
    with chromium(viewport={"width": 1280, "height": 900}) as ctx:
        yield ctx


@pytest.fixture()
def page(browser_context, server):
    """A page that may only talk to the app: anything else is aborted and fails the test."""
    p = browser_context.new_page()
    with guarded(p, server):
        yield p
        p.close()


def _stamp(sec: int) -> str:
    return f"2026-05-01 10:{sec // 60:02d}:{sec % 60:02d},000 "


def test_paste_to_report(page, server):
    page.goto(server + "/")
    text = "\n".join([OOM.format(r=1)] + [WATCHDOG.format(r=r) for r in (0, 2, 3)]) + "\n"
    page.fill("#paste", text)
    page.wait_for_selector("#review:not([hidden])")
    assert "4 of 4 lines" in page.inner_text("#summary")
    page.click("#diagnose")
    page.wait_for_url("**/report/*")
    assert "CUDA out of memory" in page.inner_text("h1.rd-title")
    assert page.inner_text(".rd-init").strip().startswith("rank 1")
    assert page.locator(".tl-lane").count() == 4
    page.locator(".tl-mark.initiating").click()
    page.wait_for_selector(".rd-tl-detail:not([hidden])")
    assert "OutOfMemoryError" in page.inner_text(".rd-tl-detail")
    page.click("text=Download this report")  # a plain link; the page stays usable
    entry = page.get_attribute(".rd-facts a", "href")
    assert entry == "/kb/entries/cuda-out-of-memory.html"


def test_the_job_hung_box(page, server):
    """A silent hang pasted with "The job hung" ticked is read as `diagnose --hung` reads it."""
    page.goto(server + "/")
    page.fill("#paste", (SCENARIOS / "real-holdout15" / "kubeflow-eks-nccl-socket-lo-hang" / "log.txt").read_text())
    page.wait_for_selector("#review:not([hidden])")
    page.check("#hung")
    page.click("#diagnose")
    page.wait_for_url("**/report/*")
    assert "cannot reach" in page.inner_text("h1.rd-title")
    assert "said to have hung" in page.inner_text("body")


def test_drop_several_rank_files(page, server, tmp_path):
    paths = []
    for r in range(8):
        noise = [_stamp(r) + f"[rank{r}]: step {i} loss 2.{i:03d}" for i in range(40)]
        line = _stamp(3) + OOM.format(r=r) if r == 3 else _stamp(600 + r) + WATCHDOG.format(r=r)
        data = ("\n".join(noise + [line]) + "\n").encode()
        p = tmp_path / (f"rank_{r}.log.gz" if r == 5 else f"rank_{r}.log")
        p.write_bytes(gzip.compress(data) if r == 5 else data)
        paths.append(str(p))
    page.goto(server + "/")
    page.set_input_files("#file-input", paths)
    page.wait_for_selector("#review:not([hidden])")
    assert page.locator("#file-list li").count() == 8
    assert "rank_5.log" in page.inner_text("#preview")  # the .gz was unpacked in the browser
    page.click("#diagnose")
    page.wait_for_url("**/report/*")
    assert page.inner_text(".rd-init").strip().startswith("rank 3")
    assert page.locator(".tl-lane").count() == 8
    assert page.locator(".tl-link").count() == 7
    assert "placed by time" in page.inner_text(".rd-report")
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "report.png"), full_page=True)


def test_only_the_selected_evidence_is_sent(page, server, tmp_path):
    noise = [f"[rank0]: step {i} loss 1.{i:04d} NOISE-{i}" for i in range(3000)]
    lines = noise[:1500] + ["[rank0]: UNTICK-ME just before the failure", OOM.format(r=0)] + noise[1500:] + [WATCHDOG.format(r=1)]
    big = tmp_path / "job.log"
    big.write_text("\n".join(lines) + "\n")
    sent: dict = {}

    def capture(route):
        sent["body"] = route.request.post_data_buffer or b""
        route.continue_()

    page.route("**/api/reports", capture)
    page.goto(server + "/")
    page.set_input_files("#file-input", [str(big)])
    page.wait_for_selector("#review:not([hidden])")
    assert page.is_disabled("#send-all") is False  # small enough to offer "send everything"
    box = page.locator("label.ln", has_text="UNTICK-ME").locator("input")
    box.uncheck()
    page.wait_for_selector("label.ln.off")
    page.click("#diagnose")
    page.wait_for_url("**/report/*")
    body = sent["body"].decode("utf-8", "replace")
    assert "CUDA out of memory" in body and "Watchdog caught" in body
    assert "UNTICK-ME" not in body  # the user removed it
    assert "NOISE-700" not in body and "NOISE-2200" not in body  # far from any evidence
    assert body.count("NOISE-") < 40
    meta = json.loads(body.split('name="meta"')[1].split("\r\n\r\n", 1)[1].split("\r\n--", 1)[0])
    assert meta["files"][0]["lines"] == len(lines)
    # the report points at the original line of the OOM
    assert f"job.log:{1502}" in page.inner_text(".rd-evidence")


def _report_of_sample(page, server: str, sample: str) -> None:
    """From the front page: one bundled sample loaded, diagnosed, its report open."""
    page.goto(server + "/")
    page.click("details.samples summary")  # the list starts folded, under the inputs
    page.click(f'button.sample[data-sample="{sample}"]')
    page.wait_for_selector("#review:not([hidden])")
    page.click("#diagnose")
    page.wait_for_url("**/report/*")


def test_sample_one_click(page, server):
    _report_of_sample(page, server, "comms-11-peer-crash-funasr-rank2-oom")
    assert page.inner_text(".rd-init").strip().startswith("rank 2")


def test_encyclopedia_entry_and_hub(page, server):
    page.goto(server + "/kb/index.html")
    assert page.inner_text("h1") == "Failure encyclopedia"
    page.fill("form.search input", "Tried to allocate 20.00 MiB")
    page.wait_for_selector("#results:not([hidden])")
    page.click("#results-list a >> nth=0")
    page.wait_for_url("**/kb/entries/*.html")
    assert page.locator("h2", has_text="How to fix it").count() == 1
    page.click("text=NCCL error hub")
    page.wait_for_url("**/kb/nccl.html")
    assert page.inner_text("h1") == "NCCL error hub"
    assert page.locator("#ncclSystemError").count() == 1
    page.click("text=Diagnose a log")
    page.wait_for_url(server + "/")


# -- issue 13: the first screen, narrow screens, the timeline's clock --------------------------

SIZES = {"desktop": (1280, 900), "phone": (390, 844)}


@pytest.fixture(params=list(SIZES))
def sized(request, page):
    """The page at a desktop size and at a phone's width (390 px)."""
    width, height = SIZES[request.param]
    page.set_viewport_size({"width": width, "height": height})
    return page


def _top_in_page(page, selector: str) -> float:
    """The element's top in page coordinates (not moved by scrolling)."""
    return page.eval_on_selector(selector, "e => e.getBoundingClientRect().top + window.scrollY")


def _first_screen(page) -> float:
    return page.evaluate("window.innerHeight")


def _wait_until(page, predicate: str, timeout: float = 20) -> None:
    """Poll a JavaScript function (wait_for_function evaluates a string, which the page's
    Content-Security-Policy refuses)."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(predicate):
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {predicate}")
        time.sleep(0.05)


def _no_horizontal_overflow(page) -> None:
    width = page.evaluate("document.documentElement.clientWidth")
    scroll = page.evaluate("document.documentElement.scrollWidth")
    assert scroll <= width, f"{page.url}: the page is {scroll} px wide in a {width} px window"


def test_the_diagnose_button_is_by_the_paste_box(sized, server):
    sized.goto(server + "/")
    sized.fill("#paste", "\n".join([OOM.format(r=1)] + [WATCHDOG.format(r=r) for r in (0, 2, 3)]) + "\n")
    sized.wait_for_selector("#review:not([hidden])")
    assert sized.is_enabled("#diagnose")
    assert _top_in_page(sized, "#diagnose") < _first_screen(sized)
    assert "sends 4 of 4 lines" in sized.inner_text("#review-link")
    assert not sized.locator("details.samples").evaluate("d => d.open")  # the sample list starts folded
    # a sample is loaded from further down: the button is brought back into view
    sized.click("details.samples summary")
    sized.click('button.sample[data-sample="comms-11-peer-crash-funasr-rank2-oom"]')
    _wait_until(sized, "() => document.activeElement && document.activeElement.id === 'diagnose'")
    box = sized.locator("#diagnose").bounding_box()
    assert 0 <= box["y"] and box["y"] + box["height"] <= _first_screen(sized)
    _no_horizontal_overflow(sized)


def test_the_first_screen_of_a_report_says_what_to_do(sized, server):
    _report_of_sample(sized, server, "comms-11-peer-crash-funasr-rank2-oom")
    screen = _first_screen(sized)
    for what in ("h1.rd-title", ".rd-facts", ".rd-init", "#rd-todo"):
        assert _top_in_page(sized, what) < screen, what
    todo = sized.inner_text("#rd-todo")
    assert "Fix" in todo and "Verify" in todo
    tops = [_top_in_page(sized, s) for s in ("#rd-todo", "h2:text('Timeline')", "h2:text('Evidence')")]
    assert tops == sorted(tops)
    _no_horizontal_overflow(sized)


def test_a_console_with_times_is_drawn_on_a_time_axis(sized, server):
    # a real torchrun console: glog lines without a year and dated lines, interleaved
    _report_of_sample(sized, server, "compile-desync")
    assert "placed by time, from 2026-11-30T05:08:07" in sized.inner_text("h2:text('Timeline')")
    assert sized.text_content(".tl-axis-title") == "time since the first line →"
    assert sized.locator(".tl-lane.untimed").count() == 0
    # the four ranks' graph breaks (lines 9-178 of 329, within 0.16 s) sit together at the start
    axis = sized.locator(".tl-lane >> nth=0").locator(".tl-axis").bounding_box()
    xs = sized.eval_on_selector_all(
        ".tl-mark.role-context", "ms => ms.map(m => m.getBoundingClientRect().left + m.getBoundingClientRect().width / 2)"
    )
    assert len(xs) >= 4 and max(xs) < axis["x"] + 0.1 * axis["width"]
    _no_horizontal_overflow(sized)


LONG = "logs/" + "very-long-job-name-" * 6 + "2026-05-01T10-00-00/attempt_0"


@pytest.fixture(scope="module")
def long_paths_report(server) -> str:
    """A report of 64 rank files with long paths, made through the API as a script would."""
    import httpx

    files = [("files", (f"{LONG}/{r}/rank_{r}.log", (OOM if r == 5 else WATCHDOG).format(r=r) + "\n", "text/plain")) for r in range(64)]
    r = httpx.post(server + "/api/reports", files=files, timeout=60)
    assert r.status_code == 201, r.text
    return server + r.json()["url"]


def test_many_inputs_are_sorted_naturally_and_folded(page, server, long_paths_report):
    page.goto(long_paths_report)
    fold = page.locator("details.rd-inputs-fold")
    assert "64 files" in fold.locator("summary").inner_text()
    assert not fold.locator("table").is_visible()
    fold.locator("summary").click()
    names = page.eval_on_selector_all(".rd-inputs-table td:first-child", "tds => tds.map(t => t.textContent)")
    assert names == [f"{LONG}/{r}/rank_{r}.log" for r in range(64)]


@pytest.mark.parametrize("path", ["/", "long-paths-report", "/kb/index.html", "/kb/nccl.html", "/kb/entries/nccl-unhandled-system-error.html", "/docs"])
def test_nothing_is_wider_than_a_phone(page, server, long_paths_report, path):
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(long_paths_report if path == "long-paths-report" else server + path)
    if path == "long-paths-report":
        page.click("details.rd-inputs-fold summary")  # its long paths shown
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


def test_docs_examples_and_the_icon(page, server):
    page.goto(server + "/docs")
    example = page.inner_text("pre.cmd")
    assert f"{server}/api/diagnose" in example and ":8000" not in example
    assert "`" not in page.inner_text("main")  # inline code is rendered, not shown as Markdown
    icon = page.get_attribute("link[rel=icon]", "href")
    assert page.request.get(server + icon).status == 200
    assert page.request.get(server + "/favicon.ico").status == 200


def test_the_nccl_hub_shows_no_markdown(page, server):
    page.goto(server + "/kb/nccl.html")
    assert "`" not in page.inner_text("table.hub >> nth=0")
    assert page.locator("table.hub >> nth=0").locator("code", has_text="posix_fallocate").count() >= 1
