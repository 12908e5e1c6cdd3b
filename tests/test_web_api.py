"""The web app's JSON API and pages, through the ASGI test client (no browser)."""

from __future__ import annotations

import gzip
import json
import re
import warnings

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette suggests httpx2; httpx is what the test client uses here
    from fastapi.testclient import TestClient

from rankdoctor.diagnose.engine import diagnose
from rankdoctor.ingest.sources import expand_inputs
from rankdoctor.scan import scan_sources
from rankdoctor.web.app import create_app
from rankdoctor.web.limits import Limits
from rankdoctor.web.uploads import LineMap, clean_name

from .conftest import SCENARIOS
from .test_timeline import OOM, WATCHDOG

FUNASR = SCENARIOS / "real" / "comms-11-peer-crash-funasr-rank2-oom" / "log.txt"
LIMIT = 256 * 1024


@pytest.fixture(scope="module")
def client(kb):
    with TestClient(create_app(kb, Limits(max_upload_bytes=LIMIT)), base_url="http://127.0.0.1", raise_server_exceptions=False) as c:
        yield c


def _cli_json(kb, path, cwd) -> dict:
    scan = scan_sources(kb, expand_inputs([str(path.relative_to(cwd))]))
    return diagnose(kb, scan).to_json()


def test_diagnose_text_body_is_the_cli_json(client, kb, monkeypatch):
    monkeypatch.chdir(SCENARIOS)
    rel = FUNASR.relative_to(SCENARIOS)
    r = client.post(f"/api/diagnose?name={rel}", content=FUNASR.read_bytes(), headers={"content-type": "text/plain"})
    assert r.status_code == 200
    assert r.json() == _cli_json(kb, FUNASR, SCENARIOS)
    assert r.json()["schema"] == "rankdoctor.diagnosis/v1"


def test_diagnose_several_rank_files_and_gzip(client):
    files = [("files", (f"rank_{r}.log", (WATCHDOG.format(r=r) + "\n").encode(), "text/plain")) for r in range(4) if r != 2]
    files.append(("files", ("rank_2.log.gz", gzip.compress((OOM.format(r=2) + "\n").encode()), "application/gzip")))
    r = client.post("/api/diagnose", files=files)
    assert r.status_code == 200, r.text
    top = r.json()["diagnoses"][0]
    assert (top["class"], top["initiating_rank"], top["collateral_ranks"]) == ("cuda-oom", 2, [0, 1, 3])
    assert [i["path"] for i in r.json()["inputs"]] == ["rank_0.log", "rank_1.log", "rank_3.log", "rank_2.log.gz"]


def test_hung_query_is_diagnose_hung(client):
    """?hung=true reads a silent hang as `diagnose --hung` does; without it the same paste shows no failure."""
    log = (SCENARIOS / "real-holdout15" / "kubeflow-eks-nccl-socket-lo-hang" / "log.txt").read_bytes()
    plain = client.post("/api/diagnose", content=log, headers={"content-type": "text/plain"})
    assert plain.status_code == 200 and plain.json()["verdict"] == "no-failure-found"
    r = client.post("/api/diagnose?hung=true", content=log, headers={"content-type": "text/plain"})
    assert r.status_code == 200, r.text
    assert r.json()["diagnoses"][0]["entry"] == "nccl-socket-unroutable-interface-hang"
    assert client.post("/api/diagnose?hung=maybe", content=log, headers={"content-type": "text/plain"}).status_code == 422


def test_line_map_restores_original_line_numbers(client):
    # the browser sent 3 lines of a 5,000-line file: lines 10, 4000 and 4001
    body = "\n".join(["[rank0]: step 9 ok", WATCHDOG.format(r=0), OOM.format(r=1)]) + "\n"
    meta = {"files": [{"name": "job.log", "lines": 5000, "bytes": 400000, "runs": [[10, 1], [4000, 2]]}]}
    r = client.post("/api/diagnose", files=[("files", ("job.log", body.encode(), "text/plain"))], data={"meta": json.dumps(meta)})
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["inputs"] == [{"path": "job.log", "bytes": 400000, "lines": 5000}]
    lines = {e["line"] for e in doc["diagnoses"][0]["evidence"]}
    assert lines <= {4000, 4001} and 4001 in lines


def test_line_map_lookup():
    lm = LineMap([(10, 1), (4000, 2), (7000, 3)])
    assert [lm.original(n) for n in range(1, 7)] == [10, 4000, 4001, 7000, 7001, 7002]
    assert LineMap([]).original(5) == 5


def test_report_pages(client):
    r = client.post("/api/reports", content=FUNASR.read_bytes(), headers={"content-type": "text/plain"})
    assert r.status_code == 201
    doc = r.json()
    page = client.get(doc["url"])
    assert page.status_code == 200 and "<svg" in page.text
    assert 'href="/kb/entries/cuda-out-of-memory.html"' in page.text
    for href in re.findall(r'href="(/kb/[^"#]+)"', page.text):
        assert client.get(href).status_code == 200, href
    dl = client.get(doc["download"])
    assert dl.status_code == 200 and "attachment" in dl.headers["content-disposition"]
    assert "<style>" in dl.text and "/static/" not in dl.text


def test_entries_and_signatures(client, kb):
    rows = client.get("/api/entries").json()
    assert len(rows) == len(kb) and {"id", "title", "class", "severity", "summary"} <= set(rows[0])
    oom = client.get("/api/entries", params={"class": "cuda-oom"}).json()
    assert oom and all(e["class"] == "cuda-oom" for e in oom)
    one = client.get("/api/entries/cuda-out-of-memory").json()
    assert one["id"] == "cuda-out-of-memory" and one["signatures"] and set(one["related"]) == set(kb.related_to("cuda-out-of-memory"))
    miss = client.get("/api/entries/cuda-out-of-memroy")
    assert miss.status_code == 404 and "did you mean: cuda-out-of-memory" in miss.json()["detail"]
    sigs = client.get("/api/signatures").json()
    assert len(sigs["signatures"]) == sum(len(e.signatures) for e in kb)
    assert not any("(?P<" in s["regex"] for s in sigs["signatures"])  # JavaScript syntax
    assert any("Root Cause" in k["regex"] for k in sigs["keep"])


def test_samples(client):
    listed = client.get("/api/samples").json()
    ids = {s["id"] for s in listed}
    assert "comms-11-peer-crash-funasr-rank2-oom" in ids and "straggler-rank0" in ids
    one = client.get("/api/samples/comms-11-peer-crash-funasr-rank2-oom").json()
    assert one["files"][0]["text"] == FUNASR.read_text()
    assert client.get("/api/samples/..%2F..%2Fpyproject.toml").status_code == 404
    assert client.get("/api/samples/nope").status_code == 404


def test_packaged_samples_are_real_corpus_copies():
    from rankdoctor.web.samples import PACKAGED, find_samples

    packaged = find_samples([PACKAGED])
    assert len(packaged) >= 3
    for s in packaged.values():
        for _, path in s.files:
            twin = next(SCENARIOS.glob(f"*/{s.id}/{path.name}"))
            assert path.read_bytes() == twin.read_bytes(), path


def test_encyclopedia_and_hub_under_kb(client, kb):
    index = client.get("/kb/index.html")
    assert index.status_code == 200 and 'href="/"' in index.text
    assert client.get("/kb/nccl.html").status_code == 200
    entry = client.get("/kb/entries/cuda-out-of-memory.html")
    assert entry.status_code == 200
    for rel in re.findall(r'(?:href|src)="([^":#?]+)"', entry.text):
        if rel.startswith("/"):
            continue
        target = "/kb/entries/" + rel
        assert client.get(target).status_code == 200, target


def test_docs_are_local(client):
    docs = client.get("/docs")
    assert docs.status_code == 200 and "/api/diagnose" in docs.text
    assert not re.search(r"(?:src|href)=\"https?://", docs.text)
    spec = client.get("/openapi.json").json()
    assert {"/api/diagnose", "/api/entries", "/api/entries/{entry_id}", "/api/signatures"} <= set(spec["paths"])
    assert "multipart/form-data" in spec["paths"]["/api/diagnose"]["post"]["requestBody"]["content"]


def test_pages_load_nothing_from_the_network(client):
    for url in ("/", "/docs", "/kb/index.html"):
        html = client.get(url).text
        assert not re.search(r"<(?:script|link|img)[^>]+(?:src|href)=\"https?://", html), url


@pytest.mark.parametrize(
    ("kwargs", "status", "says"),
    [
        ({"content": b"", "headers": {"content-type": "text/plain"}}, 400, "empty input"),
        ({"content": b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8, "headers": {"content-type": "text/plain"}}, 400, "not a text log"),
        ({"json": {"text": "x"}}, 415, "unsupported content type"),
        ({"content": b"--x\r\n", "headers": {"content-type": "multipart/form-data; boundary=zz"}}, 400, ""),
        ({"content": b"abc", "headers": {"content-type": "multipart/form-data"}}, 400, "boundary"),
        ({"data": {"other": "1"}, "files": [("nofile", ("a", b"x"))]}, 400, "no log in the request"),
        ({"files": [("files", ("a.log", b"x\n"))], "data": {"meta": "{bad json"}}, 400, "meta"),
        ({"files": [("files", ("a.log", b"x\n"))], "data": {"meta": '{"files": []}'}}, 400, "meta"),
        ({"files": [("files", ("a.log", b"x\n"))], "data": {"meta": '{"files": [{"runs": [["a", 1]]}]}'}}, 400, "meta"),
        ({"content": b"x" * (LIMIT + 1), "headers": {"content-type": "text/plain"}}, 413, "upload limit"),
    ],
)
def test_bad_requests_get_a_4xx_with_a_message(client, kwargs, status, says):
    r = client.post("/api/diagnose", **kwargs)
    assert r.status_code == status, r.text
    assert says in r.json()["detail"]


def test_streamed_body_over_the_limit_is_413(client):
    def chunks():
        for _ in range(LIMIT // 4096 + 8):
            yield b"y" * 4096

    r = client.post("/api/diagnose", content=chunks(), headers={"content-type": "text/plain"})
    assert r.status_code == 413 and "upload limit" in r.json()["detail"]


def test_unknown_report_and_paths(client):
    assert client.get("/report/nope").status_code == 404
    html = client.get("/report/nope", headers={"accept": "text/html"})
    assert html.status_code == 404 and "<h1>404</h1>" in html.text
    for url in ("/static/../app.py", "/kb/../../etc/passwd", "/static/%2e%2e/app.py", "/kb/%2e%2e/%2e%2e/pyproject.toml"):
        assert client.get(url).status_code == 404, url


def test_upload_names_cannot_climb():
    assert clean_name("../../etc/passwd", "x") == "etc/passwd"
    assert clean_name("/abs/rank_3.log", "x") == "abs/rank_3.log"
    assert clean_name("a\\..\\b\x00.log", "x") == "a/b.log"
    assert clean_name("..", "fallback.log") == "fallback.log"


def test_stack_dumps_uploaded_with_the_console_are_weighed(client):
    case = SCENARIOS / "lab-stacks" / "silent-hang-pyspy-w4-r1"
    files = [("files", ("console.log", (case / "console.log").read_bytes(), "text/plain"))]
    files += [("files", (p.name, p.read_bytes(), "text/plain")) for p in sorted(case.glob("pyspy_rank*.txt"))]
    r = client.post("/api/diagnose", files=files)
    assert r.status_code == 200, r.text
    top = r.json()["diagnoses"][0]
    assert (top["class"], top["initiating_rank"]) == ("straggler-timeout", 1)
    assert [i["path"] for i in r.json()["inputs"]] == ["console.log"]  # the dumps are evidence, not logs


@pytest.mark.parametrize(("option", "says"), [("--request-timeout", "request timeout"), ("--max-inflated-mb", "max inflated bytes"), ("--workers", "workers")])
def test_serve_refuses_limits_at_or_below_zero_in_one_line(option, says):
    from .conftest import run_cli

    r = run_cli("serve", "--port", "1", option, "-1")
    assert r.returncode == 2
    err = r.stderr.decode()
    assert err.startswith("rankdoctor: error: ") and says in err and err.count("\n") == 1, err


def _prose(html: str) -> str:
    """The page's text outside <pre> and <code>, where a backtick would be raw Markdown."""
    html = re.sub(r"<pre\b.*?</pre>", "", html, flags=re.S)
    return re.sub(r"<code\b.*?</code>", "", html, flags=re.S)


def test_docs_show_inline_code_and_the_address_they_were_fetched_from(kb):
    for base in ("http://127.0.0.1:8765", "http://localhost:43210"):
        with TestClient(create_app(kb), base_url=base) as c:
            html = c.get("/docs").text
        assert f"{base}/api/diagnose" in html and ":8000" not in html
        assert "`" not in _prose(html)
        assert "<code>rankdoctor diagnose --format json</code>" in html


def test_docs_escape_what_they_render_as_code():
    from rankdoctor.report.html import _ticks

    assert str(_ticks("run `a<b>` & <i>x</i>")) == "run <code>a&lt;b&gt;</code> &amp; &lt;i&gt;x&lt;/i&gt;"


def test_favicon(client):
    for url in ("/favicon.ico", "/static/favicon.svg"):
        r = client.get(url)
        assert r.status_code == 200 and r.headers["content-type"].startswith("image/svg+xml") and b"<svg" in r.content
    assert '<link rel="icon" href="/static/favicon.svg"' in client.get("/").text


def test_the_nccl_hub_shows_inline_code(client):
    html = client.get("/kb/nccl.html").text
    assert "`" not in _prose(html)
    assert "<code>NCCL WARN Cuda failure &#39;...&#39;</code>" in html
