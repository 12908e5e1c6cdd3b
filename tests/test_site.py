"""The static encyclopedia builds from the entries, and every link in it resolves."""

from __future__ import annotations

import re
from urllib.parse import urlparse

import pytest

from rankdoctor.site.build import _links, build_site, js_regex


@pytest.fixture(scope="module")
def site(kb, tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    build_site(kb, out)
    return out


def test_one_page_per_entry(kb, site):
    pages = {p.stem for p in (site / "entries").glob("*.html")}
    assert pages == {e.id for e in kb}


def test_every_local_link_and_asset_resolves(site):
    for page in site.rglob("*.html"):
        html = page.read_text()
        for ref in re.findall(r'(?:href|src)="([^"]+)"', html):
            url = urlparse(ref)
            if url.scheme in ("http", "https"):
                assert 'href="' + ref in html, ref  # external URLs only as links (references)
                continue
            target = (page.parent / url.path).resolve() if url.path else page
            assert target.exists(), f"{page.name}: broken link {ref}"


def test_no_external_assets(site):
    for page in site.rglob("*.html"):
        html = page.read_text()
        assert not re.search(r'<(?:script|link|img)[^>]+(?:src|href)="https?://', html), page


def test_related_links_both_ways(kb, site):
    for e in kb:
        html = (site / "entries" / f"{e.id}.html").read_text()
        for r in kb.related_to(e.id):
            assert f'href="{r}.html"' in html, (e.id, r)
            assert f'href="{e.id}.html"' in (site / "entries" / f"{r}.html").read_text()


def test_nccl_hub(kb, site):
    html = (site / "nccl.html").read_text()
    for name in ("ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError", "ncclInvalidArgument",
                 "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress"):
        assert f'id="{name}"' in html
    for var in ("NCCL_DEBUG", "NCCL_SOCKET_IFNAME", "NCCL_SHM_DISABLE", "NCCL_P2P_DISABLE"):
        assert f'id="{var}"' in html, var
    assert "posix_fallocate" in html  # the shm line that tells shm apart from socket / IB


def test_entry_page_shows_log_lines_commands_and_references(kb, site):
    e = kb.get("asymmetric-compile-collective-desync")
    html = (site / "entries" / f"{e.id}.html").read_text()
    assert 'class="log"' in html and 'class="cmd"' in html
    assert "torch.compile(model, dynamic=False)" in html
    for r in e.references:
        assert r.url in html


def test_example_sources_link_their_threads(kb, site):
    e = kb.get("cuda-out-of-memory")
    html = (site / "entries" / f"{e.id}.html").read_text()
    urls = {u for x in e.examples.match for u in re.findall(r"https://\S+?(?=\)|\s|$)", x.source)}
    assert urls
    for url in urls:
        assert f'<a href="{url}" rel="noreferrer">{url}</a>' in html


def test_source_links_are_escaped_and_http_only():
    html = str(_links('<b>x</b> javascript:alert(1) https://example.org/a?b=1&c="2" (https://github.com/o/r/issues/3).'))
    assert "<b>" not in html and "&lt;b&gt;" in html
    assert 'href="javascript' not in html
    assert '<a href="https://example.org/a?b=1&amp;c=" rel="noreferrer">' in html  # the quote ends the URL
    assert '(<a href="https://github.com/o/r/issues/3" rel="noreferrer">https://github.com/o/r/issues/3</a>).' in html


def test_search_index_regexes_compile_in_js_syntax(kb):
    for e in kb:
        for s in e.signatures:
            assert "(?P<" not in js_regex(s.regex)


def test_site_command(tmp_path):
    from .conftest import run_cli

    r = run_cli("site", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr.decode()
    assert (tmp_path / "out" / "index.html").is_file()
