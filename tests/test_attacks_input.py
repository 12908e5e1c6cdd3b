"""Hostile inputs and outputs through the real command line (issue 12, the inputs slice).

Every case runs ``rankdoctor`` as a subprocess on inputs built here in a temporary folder,
and checks what a user would see: a result or one line of error, never a traceback, the
documented exit status (0 no failure, 1 diagnosed, 3 inconclusive, 2 input error), no hang
(the subprocess timeout is the failure mode, no timing is asserted), and input files that
are byte for byte what they were. No write may land on an input or go through a link.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import random
import re
import stat
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest
import zstandard

ROOT = Path(__file__).resolve().parents[1]
WATCHDOG = (
    b"[rank1]:[E817 17:40:34.227531918 ProcessGroupNCCL.cpp:1515] [PG 0 (default_pg) Rank 1] Watchdog caught "
    b"collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
    b"ran for 600011 milliseconds before timing out.\n"
)
DIAGNOSED = (1, 3)  # failure evidence found: diagnosed or inconclusive


def rankdoctor(*args: str, stdin: bytes | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    """The CLI as a user runs it. Never a traceback, whatever happens."""
    r = subprocess.run(
        [sys.executable, "-m", "rankdoctor.cli", *args],
        input=stdin, capture_output=True, cwd=ROOT, timeout=timeout,
    )
    assert b"Traceback" not in r.stderr, r.stderr.decode(errors="replace")
    assert b"Aborted" not in r.stderr, r.stderr.decode(errors="replace")
    return r


def one_line_error(r: subprocess.CompletedProcess, *words: str) -> str:
    """Exit 2 with exactly one line on stderr, ``rankdoctor: error: ...``, holding ``words``."""
    err = r.stderr.decode(errors="replace").splitlines()
    assert r.returncode == 2 and len(err) == 1 and err[0].startswith("rankdoctor: error: "), (r.returncode, err)
    for w in words:
        assert w in err[0], (w, err[0])
    return err[0]


def text(r: subprocess.CompletedProcess) -> str:
    """The text report with its line wrapping undone (long warnings wrap at 200 columns)."""
    return " ".join(r.stdout.decode(errors="replace").split())


def snapshot(root: Path) -> dict[str, tuple]:
    """What is under ``root``, never following a link or opening anything but a regular
    file: the kind and content hash of every file, the target of every link."""
    out: dict[str, tuple] = {}
    stack = [str(root)]
    while stack:
        with os.scandir(stack.pop()) as it:
            for e in it:
                st = e.stat(follow_symlinks=False)
                if e.is_symlink():
                    out[e.path] = ("link", os.readlink(e.path))
                elif e.is_dir(follow_symlinks=False):
                    out[e.path] = ("dir",)
                    stack.append(e.path)
                elif stat.S_ISREG(st.st_mode):
                    out[e.path] = ("file", hashlib.sha256(Path(e.path).read_bytes()).hexdigest(), st.st_ino)
                else:
                    out[e.path] = ("other", stat.S_IFMT(st.st_mode))
    return out


def noise(n_lines: int, seed: int = 0) -> bytes:
    """Training-log lines that do not compress to nothing (several zstd / deflate blocks)."""
    rnd = random.Random(seed)
    return b"".join(
        b"[rank%d]:[I817 17:40:%02d.%06d train.py:%d] step %d loss %.6f lr %.8f\n"
        % (rnd.randrange(4), i % 60, rnd.randrange(10**6), rnd.randrange(999), i, rnd.random(), rnd.random())
        for i in range(n_lines)
    )


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    """A log folder: a watchdog timeout on rank 1, a quiet rank 0."""
    d = tmp_path / "logs"
    d.mkdir()
    (d / "rank_0.log").write_bytes(noise(50, 1))
    (d / "rank_1.log").write_bytes(noise(50, 2) + WATCHDOG)
    return d


# -- writes: never on an input, never through a link ---------------------------------------


@pytest.mark.parametrize("where", ["logs/rank_0.log", "logs/new-report.md", "link.md", "hard.md", "logs"])
def test_report_never_lands_on_an_input(tmp_path, logs, where):
    os.symlink(logs / "rank_0.log", tmp_path / "link.md")
    os.link(logs / "rank_1.log", tmp_path / "hard.md")
    before = snapshot(tmp_path)
    r = rankdoctor("diagnose", str(logs), "-q", "-f", "markdown", "-o", str(tmp_path / where))
    one_line_error(r, "refusing to write the report there")
    assert snapshot(tmp_path) == before


def test_report_beside_the_inputs_is_written(tmp_path, logs):
    before = snapshot(logs)
    r = rankdoctor("diagnose", str(logs), "-q", "-o", str(tmp_path / "report.txt"))
    assert r.returncode in DIAGNOSED and "Watchdog" in (tmp_path / "report.txt").read_text()
    assert snapshot(logs) == before


def test_site_replaces_links_in_its_folder_never_their_targets(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    victim_dir = tmp_path / "victim_dir"
    victim_dir.mkdir()
    out = tmp_path / "site"
    out.mkdir()
    os.symlink(victim, out / "index.html")
    os.symlink(victim_dir, out / "entries")
    os.symlink(victim, out / "search-index.js")
    r = rankdoctor("site", str(out))
    assert r.returncode == 0, r.stderr
    assert victim.read_text() == "keep me\n" and not any(victim_dir.iterdir())
    for name in ("index.html", "entries", "search-index.js"):
        assert not (out / name).is_symlink(), name
    assert "<html" in (out / "index.html").read_text().lower()


def test_site_into_a_link_is_refused(tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir()
    os.symlink(target, tmp_path / "site")
    r = rankdoctor("site", str(tmp_path / "site"))
    one_line_error(r, "a link")
    assert not any(target.iterdir())


def test_log_text_and_file_names_cannot_inject_markup(tmp_path):
    """An <img onerror> in a log line or a file name shows as text in every CI format; the
    Markdown, rendered by a CommonMark renderer with raw HTML on, has no tag of its own."""
    from markdown_it import MarkdownIt

    d = tmp_path / "logs"
    d.mkdir()
    crash = (
        b"[rank1]: Traceback (most recent call last):\n[rank1]:   File \"train.py\", line 3, in <module>\n"
        b"[rank1]: RuntimeError: <img src=x onerror=alert(1)> `a` ```` <script>alert(2)</script> [x](javascript:alert(3)) \x01\n"
    )
    (d / os.fsdecode(b"rank_1 `<img src=y onerror=alert(4)>` \xff.log")).write_bytes(crash)  # not valid UTF-8
    (d / "rank_0.log").write_bytes(WATCHDOG.replace(b"rank1", b"rank0").replace(b"Rank 1", b"Rank 0"))
    before = snapshot(tmp_path)
    r = rankdoctor("diagnose", str(d), "-q", "-f", "markdown")
    assert r.returncode in DIAGNOSED
    md = r.stdout.decode("utf-8")  # valid UTF-8: the undecodable byte is shown as \xff
    assert "onerror=alert(1)" in md and "\\xff" in md
    html = MarkdownIt("commonmark").enable("table").render(md)
    tags = set(re.findall(r"<([a-zA-Z][\w-]*)", html))
    assert tags <= {"h2", "h3", "p", "table", "thead", "tbody", "tr", "th", "td", "code", "pre", "ul", "ol", "li", "strong", "em"}, tags
    assert "javascript:" not in " ".join(re.findall(r'href="([^"]*)"', html))
    r = rankdoctor("diagnose", str(d), "-q", "-f", "junit")
    suite = ET.fromstring(r.stdout)  # parses: no character XML cannot hold
    assert "onerror=alert(1)" in ET.tostring(suite, encoding="unicode").replace("&lt;", "<")
    r = rankdoctor("diagnose", str(d), "-q", "-f", "github")
    assert all(ln.startswith("::") for ln in r.stdout.decode().splitlines())
    assert snapshot(tmp_path) == before


# -- inputs that would hang --------------------------------------------------------------


def test_fifo_in_a_folder_is_skipped_with_a_warning(logs):
    os.mkfifo(logs / "pipe.log")
    before = snapshot(logs)
    r = rankdoctor("diagnose", str(logs), "-q", timeout=30)
    assert r.returncode in DIAGNOSED
    assert "pipe.log (a named pipe)" in text(r)
    assert snapshot(logs) == before


def test_fifo_or_device_on_the_command_line_is_one_line(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    one_line_error(rankdoctor("diagnose", str(tmp_path / "pipe"), timeout=30), "not a regular file (a named pipe)")
    os.symlink("/dev/zero", tmp_path / "zero.log")
    one_line_error(rankdoctor("diagnose", str(tmp_path / "zero.log"), timeout=30), "not a regular file (a character device)")


def test_link_to_dev_zero_and_link_loops_in_a_folder(logs):
    os.symlink("/dev/zero", logs / "zero.log")
    os.symlink(".", logs / "loop")
    os.symlink("nowhere", logs / "dangling.log")
    before = snapshot(logs)
    r = rankdoctor("diagnose", str(logs), "-q", "-f", "json", timeout=30)
    assert r.returncode in DIAGNOSED
    assert sorted(i["path"] for i in json.loads(r.stdout)["inputs"] if i["bytes"]) == [str(logs / "rank_0.log"), str(logs / "rank_1.log")]
    out = text(rankdoctor("diagnose", str(logs), "-q", timeout=30))
    assert "zero.log (a character device)" in out and "loop (a link to a folder, not followed)" in out and "dangling.log (a broken link)" in out
    assert snapshot(logs) == before


def test_only_unreadable_things_in_a_folder_is_one_line(tmp_path):
    os.mkfifo(tmp_path / "pipe.log")
    one_line_error(rankdoctor("diagnose", str(tmp_path), timeout=30), "pipe.log (a named pipe)")


@pytest.fixture
def deep(tmp_path):
    """1,200 nested folders with a log at the bottom, removed bottom-up afterwards (pytest's
    own clean-up, shutil.rmtree, recurses and would fail on it at the end of the session)."""
    folders = [tmp_path / "deep"]
    folders[0].mkdir()
    for _ in range(1200):
        folders.append(folders[-1] / "d")
        folders[-1].mkdir()
    (folders[-1] / "rank_1.log").write_bytes(WATCHDOG)
    yield folders[0]
    (folders[-1] / "rank_1.log").unlink()
    for f in reversed(folders):
        f.rmdir()


def test_1200_nested_folders(deep):
    """Walked without recursion: the log at the bottom is read."""
    r = rankdoctor("diagnose", str(deep), "-q", "-f", "json")
    assert r.returncode in DIAGNOSED
    assert json.loads(r.stdout)["ranks"]["seen"] == [1]


# -- damaged and misleading data ---------------------------------------------------------


def _damaged(data: bytes, at: float) -> bytes:
    cut = bytearray(data)
    for k in range(int(len(cut) * at), int(len(cut) * at) + 64):
        cut[k] ^= 0x5A
    return bytes(cut)


@pytest.mark.parametrize(
    "name, make, kind",
    [
        ("run.log.gz", lambda d: _damaged(gzip.compress(d), 0.6), "gzip data"),
        ("run.log.zst", lambda d: _damaged(zstandard.ZstdCompressor().compress(d), 0.6), "zstd data"),
        ("cut.log.gz", lambda d: gzip.compress(d)[: len(gzip.compress(d)) * 6 // 10], "gzip data"),
        ("cut.log.zst", lambda d: (lambda z: z[: len(z) * 6 // 10])(zstandard.ZstdCompressor().compress(d)), "zstd data"),
    ],
)
def test_damaged_or_truncated_compressed_log_keeps_what_came_before(tmp_path, name, make, kind):
    """The watchdog line near the start is found, the damage is named in the same words for
    every format (no 'ZstdError', no 'error: Error -3', no silent exit 0)."""
    p = tmp_path / name
    p.write_bytes(make(noise(10, 3) + WATCHDOG + noise(40000, 4)))
    before = snapshot(tmp_path)
    r = rankdoctor("diagnose", str(p), "-q")
    out = text(r)
    assert r.returncode in DIAGNOSED, (r.returncode, r.stderr)
    assert f"warning: {p}: input ends early (truncated or damaged {kind}" in out and "read what was intact" in out
    assert snapshot(tmp_path) == before


def test_damaged_compressed_log_with_nothing_intact_is_one_line(tmp_path):
    p = tmp_path / "run.log.zst"
    p.write_bytes(_damaged(zstandard.ZstdCompressor().compress(WATCHDOG * 3), 0.3))
    one_line_error(rankdoctor("diagnose", str(p)), str(p), "truncated or damaged zstd data")


def test_truncated_tar_gz_reads_the_intact_members(tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for i, body in enumerate([WATCHDOG + noise(20000, 5), noise(20000, 6), noise(20000, 7)]):
            info = tarfile.TarInfo(f"run/rank_{i + 1}.log")
            info.size = len(body)
            tf.addfile(info, io.BytesIO(body))
    p = tmp_path / "logs.tar.gz"
    p.write_bytes(buf.getvalue()[: len(buf.getvalue()) // 2])
    r = rankdoctor("diagnose", str(p), "-q")
    assert r.returncode in DIAGNOSED, (r.returncode, r.stderr)
    assert f"warning: {p}: input ends early (truncated or damaged archive" in text(r)


@pytest.mark.parametrize("alone", [True, False])
def test_log_starting_with_nul_bytes_is_read_not_taken_for_a_tar(tmp_path, alone):
    d = tmp_path / "logs"
    d.mkdir()
    (d / "rank_1.log").write_bytes(b"\0" * 4096 + noise(100, 8) + WATCHDOG)
    if not alone:
        (d / "rank_0.log").write_bytes(noise(100, 9))
    r = rankdoctor("diagnose", str(d / "rank_1.log") if alone else str(d), "-q", "-f", "json")
    assert r.returncode in DIAGNOSED, (r.returncode, r.stderr)
    paths = [i["path"] for i in json.loads(r.stdout)["inputs"]]
    assert str(d / "rank_1.log") in paths


@pytest.mark.parametrize("seed", [1, 2])
def test_one_percent_nul_bytes_across_chunks_and_workers(tmp_path, seed):
    """9 MB (a worker pool and byte ranges cut at 2 MB chunk boundaries), 1 % of its bytes
    NUL at random places, watchdog lines throughout."""
    rnd = random.Random(seed)
    data = bytearray(b"".join(noise(2000, seed * 100 + k) + WATCHDOG for k in range(55)))
    for _ in range(len(data) // 100):
        data[rnd.randrange(len(data))] = 0
    p = tmp_path / "rank_1.log"
    p.write_bytes(bytes(data))
    for fmt in ("json", "markdown"):
        r = rankdoctor("diagnose", str(p), "-q", "--jobs", "2", "-f", fmt)
        assert r.returncode in (0, 1, 3), (r.returncode, r.stderr)


# -- many files, many members ------------------------------------------------------------


def test_three_thousand_small_files(tmp_path):
    d = tmp_path / "many"
    d.mkdir()
    for i in range(3000):
        (d / f"worker-{i}.log").write_bytes(b"step %d loss 2.3\nstep %d loss 2.1\n" % (i, i + 1))
    (d / "worker-1.log").write_bytes(WATCHDOG)
    r = rankdoctor("diagnose", str(d), "-q", "-f", "json")
    assert r.returncode in DIAGNOSED, r.stderr
    assert len(json.loads(r.stdout)["inputs"]) == 3000


@pytest.mark.parametrize("kind", ["tar.gz", "zip"])
def test_archive_with_two_thousand_members(tmp_path, kind):
    p = tmp_path / f"logs.{kind}"
    bodies = {f"run/worker-{i}.log": b"step %d loss 2.3\n" % i * 5 for i in range(2000)}
    bodies["run/worker-1.log"] += WATCHDOG
    if kind == "zip":
        with zipfile.ZipFile(p, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, body in bodies.items():
                zf.writestr(name, body)
    else:
        with tarfile.open(p, "w:gz") as tf:
            for name, body in bodies.items():
                info = tarfile.TarInfo(name)
                info.size = len(body)
                tf.addfile(info, io.BytesIO(body))
    r = rankdoctor("diagnose", str(p), "-q", "-f", "json")
    assert r.returncode in DIAGNOSED, r.stderr
    inputs = json.loads(r.stdout)["inputs"]
    assert len(inputs) == 2000 and all(i["lines"] == 5 + (i["path"].endswith("!run/worker-1.log")) for i in inputs)
