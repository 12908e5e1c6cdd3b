"""The incident history in the web app (/history, /history/<id>, /compare and their JSON
under /api): through the ASGI test client, and in a real Chromium (skipped, with the
reason, when it is absent). The history holds real lab runs diagnosed and saved as
`rankdoctor diagnose --save` saves them."""

from __future__ import annotations

import warnings

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette suggests httpx2; httpx is what the test client uses here
    from fastapi.testclient import TestClient

import rankdoctor
from rankdoctor import schemas
from rankdoctor.history import History, Incident

from .conftest import SCENARIOS
from .test_web_browser import CHROMIUM, SHOTS, chromium, guarded, serving

LAB = SCENARIOS / "lab-matrix"
RUNS = {"exception-a": LAB / "exception-w3-r1", "exception-b": LAB / "exception-w4-r0", "sigkill": LAB / "sigkill-w3-r0"}
LATER = SCENARIOS / "lab-fresh1" / "exception-w5-r3" / "console.log"  # a later run of the same fault
FIX = "clamp the sampler index to the shard length (PR 4711)"


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    db = tmp_path_factory.mktemp("web-history") / "history.sqlite3"
    h = History(db)
    ids = {name: h.add(Incident.from_report(rankdoctor.diagnose([str(path)]).to_json(), path.name)) for name, path in RUNS.items()}
    h.resolve(ids["exception-a"], FIX)
    return db, ids


@pytest.fixture(scope="module")
def client(kb, history):
    from rankdoctor.web.app import create_app

    with TestClient(create_app(kb, history=history[0]), base_url="http://127.0.0.1", raise_server_exceptions=False) as c:
        yield c


def test_the_history_api_lists_shows_compares_and_resolves(client, history):
    _, ids = history
    listed = client.get("/api/history").json()
    assert [i["id"] for i in listed] == sorted(ids.values(), reverse=True)
    for item in listed:
        schemas.validate("incident", {k: v for k, v in item.items() if k != "id"})
    one = client.get(f"/api/history/{ids['exception-b']}").json()
    assert one["job"] == "exception-w4-r0" and one["initiating_ranks"] == [0] and one["world_size"] == 4
    assert one["similar"][0]["id"] == ids["exception-a"] and one["similar"][0]["fix"] == FIX
    assert client.get("/api/history?entry=worker-killed-sigkill").json()[0]["id"] == ids["sigkill"]

    same = client.get(f"/api/compare?a={ids['exception-a']}&b={ids['exception-b']}").json()
    schemas.validate("compare", same)
    assert same["same_failure"] and {"rank": 0, "a": "collateral", "b": "initiating"} in same["rank_changes"]
    diff = client.get(f"/api/compare?a={ids['exception-a']}&b={ids['sigkill']}").json()
    assert not diff["same_failure"] and diff["fingerprints"]["only_b"]

    # a page elsewhere cannot write a fix: a browser's POST needs this server run's token
    for headers in ({"origin": "http://evil.example"}, {"origin": "http://127.0.0.1", "sec-fetch-site": "same-origin"}):
        r = client.post(f"/api/history/{ids['sigkill']}/resolve", json={"fix": "pwned"}, headers=headers)
        assert r.status_code == 403, r.text
    assert client.get(f"/api/history/{ids['sigkill']}").json()["fix"] is None
    r = client.post(f"/api/history/{ids['sigkill']}/resolve", json={"fix": "moved the job off the node whose OOM killer fired"})
    assert r.status_code == 200 and r.json()["fix"].startswith("moved the job")
    assert client.get("/api/history/999").status_code == 404
    assert client.get("/api/compare?a=1&b=999").status_code == 404
    assert client.post("/api/history/999/resolve", json={"fix": "x"}).status_code == 404
    assert client.post(f"/api/history/{ids['sigkill']}/resolve", json={"fix": ""}).status_code == 422


def test_an_uploaded_log_gets_the_similar_incidents_with_the_fix(client, history):
    _, ids = history
    r = client.post("/api/reports?name=console.log", content=LATER.read_bytes(), headers={"content-type": "text/plain"})
    assert r.status_code == 201
    similar = r.json()["diagnosis"]["similar_incidents"]
    assert similar[0]["id"] == ids["exception-a"] and similar[0]["fix"] == FIX
    page = client.get(r.json()["url"]).text
    assert "Similar past incidents" in page and f'href="/history/{ids["exception-a"]}"' in page
    assert page.index(FIX) < page.index("Fix not recorded")


def test_a_server_with_no_history_yet_says_so(kb, tmp_path):
    from rankdoctor.web.app import create_app

    with TestClient(create_app(kb, history=tmp_path / "none.sqlite3"), base_url="http://127.0.0.1") as c:
        assert c.get("/api/history").json() == []
        assert "Nothing saved yet" in c.get("/history").text
        assert c.get("/api/history/1").status_code == 404
    assert not (tmp_path / "none.sqlite3").exists()  # reading never creates it


# -- in a real browser --------------------------------------------------------------------

@pytest.fixture(scope="module")
def browser_page(kb, history):
    if not CHROMIUM.exists():
        pytest.skip("Chromium is not installed at /usr/bin/chromium (`make test` installs it with apt-get)")
    pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed (pip install -e '.[test]')")
    from rankdoctor.web.app import create_app

    with serving(create_app(kb, history=history[0])) as (base, _), chromium(viewport={"width": 1280, "height": 900}) as ctx:
        page = ctx.new_page()
        with guarded(page, base):
            yield page, base


@pytest.mark.browser
def test_history_page_incident_fix_and_compare_in_chromium(browser_page, history):
    page, base = browser_page
    _, ids = history
    # a later run's log dropped on the diagnose page: its report names the resolved incident
    # first, with its fix, and links to it
    page.goto(base + "/")
    page.set_input_files("#file-input", [str(LATER)])
    page.wait_for_selector("#review:not([hidden])")
    page.click("#diagnose")
    page.wait_for_url("**/report/*")
    first = page.locator(".rd-similar-list li").first
    assert FIX in first.inner_text()
    first.locator(f'a[href="/history/{ids["exception-a"]}"]').click()
    page.wait_for_url(f"**/history/{ids['exception-a']}")
    assert page.inner_text("#rd-fix") == FIX

    page.click("nav >> text=History")
    page.wait_for_url("**/history")
    rows = page.locator("table.rd-history tbody tr")
    assert rows.count() == 3
    row = page.locator(f'tr[data-id="{ids["exception-a"]}"]')
    assert "exception-w3-r1" in row.inner_text() and FIX in row.inner_text()

    # an incident: the fix that worked on top; record one for another incident from the page
    row.locator("a").first.click()
    page.wait_for_url(f"**/history/{ids['exception-a']}")
    page.goto(f"{base}/history/{ids['exception-b']}")
    page.fill("#rd-fix-text", "same sampler bug, fixed by the same PR 4711")
    page.click("#rd-resolve button")
    page.wait_for_selector("#rd-resolve-status >> text=saved")
    page.reload()
    assert page.inner_text("#rd-fix") == "same sampler bug, fixed by the same PR 4711"
    assert FIX in page.inner_text(".rd-similar-list")  # the similar incident, with its fix

    # compare from the history page's form: a repeated failure, then a different one
    page.goto(base + "/history")
    page.fill('input[name="a"]', str(ids["exception-a"]))
    page.fill('input[name="b"]', str(ids["exception-b"]))
    page.click(".rd-compare-form button")
    page.wait_for_url("**/compare?*")
    assert page.inner_text("#rd-same") == "Same failure"
    assert "rank 0: collateral → initiating" in page.inner_text(".rd-rank-changes")
    page.goto(f"{base}/compare?a={ids['exception-a']}&b={ids['sigkill']}")
    assert page.inner_text("#rd-same") == "Different failure"
    assert "SIGKILL" in page.inner_text("#rd-only_b")
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "history-compare.png"), full_page=True)
