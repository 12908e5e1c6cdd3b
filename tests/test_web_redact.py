"""The web app's redaction in a real browser (Debian's Chromium via playwright): on by
default, the preview shows each replacement before anything is sent, what is sent (and the
report) holds the pseudonyms and none of the originals; unticked, the lines go as they are."""

from __future__ import annotations


import pytest

from .test_timeline import OOM, WATCHDOG
from .test_web_browser import CHROMIUM, chromium, guarded, serving

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Chromium is not installed at /usr/bin/chromium (`make test` installs it with apt-get)"),
]
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed (pip install -e '.[test]')")


@pytest.fixture(scope="module")
def server(kb):
    from rankdoctor.web.app import create_app

    with serving(create_app(kb)) as (base, _):
        yield base


@pytest.fixture(scope="module")
def browser_context():
    with chromium() as ctx:
        yield ctx


@pytest.fixture()
def page(browser_context, server):
    """A page that may only talk to the app (anything else fails the test)."""
    p = browser_context.new_page()
    with guarded(p, server):
        yield p
        p.close()

HOST = "gpu-dgx-417"
TOKEN = "hf_" + "QmXkVbTrWnLpZsYcDfGhJkAeRtUiOpLkJh"
USER = "jdoe42"
PRIVATE = [HOST, TOKEN, USER, "10.31.7.9"]
LOG = "\n".join([
    f"{HOST}:4242:4250 [1] NCCL INFO Bootstrap : Using eth0:10.31.7.9<0>",
    f"[rank1]: huggingface-cli login --token {TOKEN}",
    f'[rank1]:   File "/home/{USER}/train.py", line 88, in <module>',
    OOM.format(r=1),
    *[WATCHDOG.format(r=r) for r in (0, 2, 3)],
    f"[rank0]: lost contact with {HOST}",
]) + "\n"


def _paste_and_capture(page, server):
    sent: dict = {}

    def capture(route):
        sent["body"] = (route.request.post_data_buffer or b"").decode("utf-8", "replace")
        route.continue_()

    page.route("**/api/reports", capture)
    page.goto(server + "/")
    page.fill("#paste", LOG)
    page.wait_for_selector("#review:not([hidden])")
    return sent


def test_redaction_is_on_and_the_preview_shows_it(page, server):
    sent = _paste_and_capture(page, server)
    assert page.is_checked("#redact")
    page.wait_for_selector("#preview mark.red")
    preview = page.inner_text("#preview")
    assert "host-1:4242:4250 [1] NCCL INFO" in preview and "lost contact with host-1" in preview
    assert not [p for p in PRIVATE if p in preview], preview
    note = page.inner_text("#redact-note")
    assert "replaced" in note and "host" in note
    marks = page.locator("#preview mark.red")
    titles = [marks.nth(i).get_attribute("title") for i in range(marks.count())]
    assert f"hf-token: {TOKEN}" in titles  # hovering a pseudonym shows what it replaces (in the page only)
    page.click("#diagnose")
    page.wait_for_url("**/report/*")
    assert not [p for p in PRIVATE if p in sent["body"]]
    assert "host-1" in sent["body"] and "REDACTED-hf-token-1" in sent["body"]
    report = page.content()
    assert "CUDA out of memory" in page.inner_text("h1.rd-title")
    assert page.inner_text(".rd-init").strip().startswith("rank 1")  # the same diagnosis
    assert not [p for p in PRIVATE if p in report]


def test_unticked_the_lines_go_as_they_are(page, server):
    sent = _paste_and_capture(page, server)
    page.uncheck("#redact")
    page.wait_for_function("!document.querySelector('#preview mark.red')")
    assert HOST in page.inner_text("#preview")
    assert "off" in page.inner_text("#redact-note")
    page.click("#diagnose")
    page.wait_for_url("**/report/*")
    assert HOST in sent["body"] and TOKEN in sent["body"]
