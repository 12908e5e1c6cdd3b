"""The knowledge base: schema, validators, and every entry's own examples (semgrep-style)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from rankdoctor.kb.check import allowed_fires, entries_firing
from rankdoctor.kb.loader import KBError, load_kb
from rankdoctor.kb.taxonomy import CLASS_IDS

from .conftest import ROOT

ENTRY_FILES = sorted((ROOT / "entries").rglob("*.yaml"))


def test_kb_loads_and_validates(kb):
    assert len(kb) >= 30


def test_every_taxonomy_class_has_an_entry(kb):
    covered = {e.class_ for e in kb}
    assert CLASS_IDS - covered == set()


def test_taxonomy_ids_match_shared_taxonomy():
    shared = ROOT.parent / "shared" / "TAXONOMY.md"
    if not shared.is_file():
        pytest.skip("../shared/TAXONOMY.md not present")
    ids = set(re.findall(r"^- ([a-z0-9-]+):", shared.read_text(), re.M))
    assert ids == set(CLASS_IDS)


@pytest.mark.parametrize("path", ENTRY_FILES, ids=lambda p: p.stem)
def test_entry_examples(kb, scanner, path):
    entry = kb.get(path.stem)
    allowed = allowed_fires(kb, entry.id)
    for ex in entry.examples.match:
        fired = entries_firing(kb, ex.text, scanner)
        assert entry.id in fired, f"match example does not fire {entry.id}: {ex.text}"
        assert fired <= allowed, f"{ex.text!r} also fires unrelated {sorted(fired - allowed)}"
    for ex in entry.examples.no_match:
        assert entry.id not in entries_firing(kb, ex.text, scanner), f"no_match example fires: {ex.text}"


def test_seed_entry_is_complete(kb):
    e = kb.get("asymmetric-compile-collective-desync")
    assert e.class_ == "collective-desync"
    for field in ("summary", "mechanism", "misdiagnosis", "verify"):
        assert getattr(e, field).strip()
    for field in ("observe", "signatures", "confirm", "fix", "prevention", "references", "code", "related"):
        assert getattr(e, field), field
    assert e.missing and e.missing.command
    assert "desync" in {x.value for x in e.explains}
    assert any("dynamic=False" in (s.command or s.text) for s in e.fix)
    assert any("fr" in (s.command or "") for s in e.confirm)


def test_related_is_symmetric(kb):
    for e in kb:
        for r in kb.related_to(e.id):
            assert e.id in kb.related_to(r)


def test_references_are_urls(kb):
    for e in kb:
        for r in e.references:
            assert re.match(r"^https?://[\w.-]+\.[a-z]{2,}(/\S*)?$", r.url), (e.id, r.url)


def _write_entry(tmp_path: Path, name: str, data: dict) -> Path:
    d = tmp_path / "entries" / "x"
    d.mkdir(parents=True, exist_ok=True)
    p = d / f"{name}.yaml"
    p.write_text(yaml.safe_dump(data))
    return tmp_path / "entries"


def _minimal(kb, **over) -> dict:
    base = yaml.safe_load((ROOT / "entries/collectives/nccl-peer-connection-closed.yaml").read_text())
    base["related"] = []
    base.update(over)
    return base


@pytest.mark.parametrize(
    "over, message",
    [
        ({"class": "not-a-class"}, "not a TAXONOMY.md id"),
        ({"related": ["no-such-entry"]}, "does not exist"),
        ({"references": [{"title": "x", "url": "not a url"}]}, "references"),
        ({"fix": []}, "fix"),
        ({"signatures": [{"id": "a", "role": "cause", "regex": "(unclosed"}]}, "regex does not compile"),
        ({"signatures": [{"id": "a", "role": "cause", "regex": "^anchored"}]}, "anchored"),
        ({"signatures": [{"id": "a", "role": "cause", "regex": "x(?P<bogus>\\d)"}]}, "capture group"),
        ({"examples": {"match": [{"text": "x", "source": "y"}], "no_match": []}}, "no_match"),
    ],
)
def test_validators_reject_bad_entries(tmp_path, kb, over, message):
    d = _write_entry(tmp_path, "nccl-peer-connection-closed", _minimal(kb, **over))
    with pytest.raises(KBError, match=message):
        load_kb(d)


def test_duplicate_ids_rejected(tmp_path, kb):
    data = _minimal(kb)
    d = _write_entry(tmp_path, "nccl-peer-connection-closed", data)
    other = d / "y"
    other.mkdir()
    (other / "nccl-peer-connection-closed.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(KBError, match="duplicate id"):
        load_kb(d)


def test_unexampled_signature_rejected(tmp_path, kb):
    data = _minimal(kb)
    data["signatures"] = data["signatures"] + [{"id": "extra", "role": "symptom", "regex": "never seen text"}]
    with pytest.raises(KBError, match="has no `match` example"):
        load_kb(_write_entry(tmp_path, "nccl-peer-connection-closed", data))


@pytest.mark.parametrize(
    "source",
    [
        "../shared/corpus/real/comms-11-peer-crash-funasr-rank2-oom/log.txt",
        "tests/scenarios/lab/straggler-rank0/console.log (torch 2.13, gloo)",
        "/work/main/tests/scenarios/real/comms-11-peer-crash-funasr-rank2-oom/log.txt",
        "shared/corpus/real/comms-11-peer-crash-funasr-rank2-oom/log.txt",
        "real log in a yolov5 issue, collected in tests/scenarios/real-extra",
    ],
)
def test_example_source_naming_a_local_path_is_refused(tmp_path, kb, source):
    data = _minimal(kb)
    data["examples"]["no_match"][0]["source"] = source
    with pytest.raises(KBError) as err:
        load_kb(_write_entry(tmp_path, "nccl-peer-connection-closed", data))
    (line,) = [x for x in str(err.value).splitlines() if "local path" in x]
    assert "nccl-peer-connection-closed" in line


def test_public_example_sources_are_accepted(tmp_path, kb):
    data = _minimal(kb)
    data["examples"]["match"][0]["source"] = "rankdoctor lab run, torch 2.13 CPU/gloo (fault: nan-loss)"
    data["examples"]["no_match"][0]["source"] = (
        "real log in NVIDIA/nccl-tests#14 (https://github.com/NVIDIA/nccl-tests/issues/14), nccl-tests in docker"
    )
    assert len(load_kb(_write_entry(tmp_path, "nccl-peer-connection-closed", data))) == 1


_THREAD = re.compile(r"^[\w.-]+/[\w.-]+#\d+ \((https://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull)/\d+)\)")
_LAB_RUN = re.compile(r"^rankdoctor lab run, .*?\(fault: ([\w-]+(?:/[\w-]+)?)")


def _captured_logs() -> dict[str, list[Path]]:
    """Thread URL -> the copies of its log under tests/scenarios (from each case.yaml's source)."""
    logs: dict[str, list[Path]] = {}
    for case in (ROOT / "tests/scenarios").glob("*/*/case.yaml"):
        source = str((yaml.safe_load(case.read_text(encoding="utf-8")) or {}).get("source", ""))
        for url in re.findall(r"https://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull)/\d+", source):
            logs.setdefault(url, []).append(case.parent / "log.txt")
    return logs


def test_examples_from_captured_logs_are_verbatim(kb):
    """An example cited as a lab run (``rankdoctor lab run, ... (fault: <case>``, or ``(fault:
    <matrix folder>/<variant>`` for a run of a matrix draw) must be in that run's console.log; one cited as a thread (``owner/repo#N (url)`` first) whose log the
    repository holds a copy of must be in that copy."""
    logs = _captured_logs()
    checked = 0
    for e in kb:
        for ex in [*e.examples.match, *e.examples.no_match]:
            if m := _LAB_RUN.match(ex.source):
                where = m.group(1) if "/" in m.group(1) else f"lab/{m.group(1)}"
                files = [ROOT / "tests/scenarios" / where / "console.log"]
                assert files[0].is_file(), (e.id, ex.source)
            elif (m := _THREAD.match(ex.source)) and m.group(1) in logs:
                files = logs[m.group(1)]
            else:
                continue
            assert any(ex.text in f.read_text(errors="replace") for f in files), (e.id, ex.source[:80], ex.text[:80])
            checked += 1
    assert checked > 100  # the lab runs and the threads of the scenario corpus


def test_search_by_a_partial_line_uses_rare_words(kb):
    from rankdoctor.kb.search import search

    # cut before the part the signature needs: the rare word still finds the entry
    hits = search(kb, "NCCL WARN Call to posix_fallocate failed")
    assert hits[0][1].id == "nccl-shm-segment-no-space"
    full = search(kb, "7635c25c81cd:41585:41836 [0] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device")
    assert full[0][1].id == "nccl-shm-segment-no-space" and "signature" in full[0][2]


def _upstream_coverage():
    import importlib.util

    spec = importlib.util.spec_from_file_location("upstream_coverage", ROOT / "eval" / "upstream_coverage.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_upstream_messages_the_encyclopedia_knew_it_still_knows(kb, scanner):
    """Every upstream failure message (eval/upstream/*.tsv, format strings from NCCL, gloo,
    PyTorch and the frameworks' source) that an entry recognized when the lock was written
    still fires that entry: a narrowed regex cannot silently drop a message a user's log shows."""
    cov = _upstream_coverage()
    by_key = {f"{table}:{n}": row for table, n, row in cov.rows()}
    lock = [ln.split("\t") for ln in (ROOT / "eval" / "upstream" / "recognized.txt").read_text().splitlines()
            if ln and not ln.startswith("#")]
    assert len(lock) >= 250
    lost = []
    for key, entry, _ in lock:
        line = cov.as_logged(by_key[key])
        if entry not in entries_firing(kb, line, scanner):
            lost.append((key, entry, line[:100]))
    assert not lost, lost
