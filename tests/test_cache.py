"""What is kept between runs (rankdoctor.kb.cache): the parsed knowledge base and the
scanner's pattern table with its compiled database. A cached object is used only for
exactly the entry files it was made from; a damaged cache file is rebuilt; the cache can
be turned off; a diagnosis is the same with and without it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from rankdoctor.kb import cache
from rankdoctor.kb.loader import load_kb
from rankdoctor.scan import Scanner, scan_sources, scanner_for
from rankdoctor.ingest.sources import expand_inputs

from .conftest import ROOT, SCENARIOS, run_cli


@pytest.fixture
def entries(tmp_path, monkeypatch):
    """A private copy of the entries and a private cache directory."""
    d = tmp_path / "entries"
    shutil.copytree(ROOT / "entries", d)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("RANKDOCTOR_CACHE", raising=False)
    return d


def _files(kind: str) -> list[Path]:
    base = cache.cache_dir()
    return sorted(base.glob(f"{kind}-*")) if base and base.is_dir() else []


def test_kb_is_cached_for_exactly_these_files(entries):
    first = load_kb(entries, check=False)
    assert len(_files("kb")) == 1
    again = load_kb(entries, check=False)
    assert [e.id for e in again] == [e.id for e in first]
    assert again.get("nccl-watchdog-timeout") == first.get("nccl-watchdog-timeout")
    # an edited entry is read again, not taken from the cache
    path = next(entries.rglob("nccl-watchdog-timeout.yaml"))
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("title: ", "title: EDITED ", 1), encoding="utf-8")
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    edited = load_kb(entries, check=False)
    assert edited.get("nccl-watchdog-timeout").title.startswith("EDITED ")
    # validation always parses
    assert load_kb(entries, check=True).get("nccl-watchdog-timeout").title.startswith("EDITED ")


def test_damaged_cache_files_are_rebuilt(entries):
    load_kb(entries, check=False)
    scanner_for(entries, lambda: load_kb(entries, check=False))
    damaged = _files("kb") + _files("patterns") + _files("hs")
    assert len(damaged) == 3
    for f in damaged:
        f.write_bytes(b"\x80\x05 not a pickle")
    assert len(load_kb(entries, check=False)) > 100
    assert scanner_for(entries, lambda: load_kb(entries, check=False)).patterns


def test_cache_can_be_turned_off(entries, monkeypatch):
    monkeypatch.setenv("RANKDOCTOR_CACHE", "0")
    load_kb(entries, check=False)
    scanner_for(entries, lambda: load_kb(entries, check=False))
    assert cache.cache_dir() is None
    assert not (entries.parent / "cache").exists()


def test_cached_scanner_scans_like_a_fresh_one(entries, kb):
    calls = []

    def load():
        calls.append(1)
        return load_kb(entries, check=False)

    built = scanner_for(entries, load)
    cached = scanner_for(entries, load)
    assert calls == [1]  # the second scanner came from the cache: no knowledge base loaded
    assert [p.signature for p in cached.patterns] == [p.signature for p in built.patterns]
    fresh = Scanner(kb)
    for case in ("lab/exception-rank2", "lab/straggler-rank0", *("real/" + p.name for p in sorted((SCENARIOS / "real").iterdir())[:3])):
        srcs = expand_inputs([str(SCENARIOS / case)])
        assert scan_sources(None, srcs, cached) == scan_sources(kb, srcs, fresh)


def test_old_cache_files_are_pruned(entries):
    for i in range(cache.KEEP + 3):
        cache.store("demo", f"key {i}", i)
    assert len(_files("demo")) == cache.KEEP
    assert cache.load("demo", f"key {cache.KEEP + 2}") == cache.KEEP + 2
    assert cache.load("demo", "key 0") is None


def test_cli_same_report_with_and_without_cache(tmp_path):
    case = str(SCENARIOS / "lab" / "exception-rank2")
    env_off = {**os.environ, "RANKDOCTOR_CACHE": "0"}
    env_on = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "c")}
    import subprocess
    import sys

    outs = []
    for env in (env_off, env_on, env_on):
        p = subprocess.run([sys.executable, "-m", "rankdoctor.cli", "diagnose", case, "--format", "json"], capture_output=True, env=env, timeout=120, cwd=ROOT)
        assert p.returncode in (1, 3), p.stderr  # a failure found (diagnosed or inconclusive)
        outs.append((p.returncode, p.stdout))
    assert outs[0] == outs[1] == outs[2]
    assert run_cli("--version").returncode == 0
