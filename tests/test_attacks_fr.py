"""Hostile Flight Recorder and stack dumps (issue 12): every one ends in a result or one line
of error, at a bounded cost, and a FIFO or a device is never opened.

Each hostile file is built here, in a temporary folder, and read by the CLI in a child
process under an address-space limit (a regression fails the test instead of eating the
machine) and a timeout (a regression that blocks on a FIFO fails instead of hanging). The
child's peak RSS is its VmHWM. ``bench/attacks_fr.py`` runs the same builders at
full size and measures time and memory against the commit before the bounds.
"""

from __future__ import annotations

import json
import os
import pickle
import resource
import shutil
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from rankdoctor.flightrec.analyze import analyze
from rankdoctor.flightrec.load import DumpError, load_dump, load_dumps
from rankdoctor.ingest.stacks import parse_stack_dump, read_stack_dumps

from .conftest import SCENARIOS

GOOD_DUMP = SCENARIOS / "lab" / "fr-formats" / "fr" / "fr_trace_rank_0"
ADDRESS_SPACE = 1 << 30  # the CLI reading a lab dump peaks near 80 MB of address space
PEAK_RSS_MB = 300  # "a few hundred MB" at most, whatever the dump
TIMEOUT_S = 60


# -- the hostile files ------------------------------------------------------------------------


def _u(s: str) -> bytes:
    """BINUNICODE: a pickled string."""
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def _dump_around(value: bytes, prelude: bytes = b"") -> bytes:
    """A protocol-2 pickle of a one-entry dump whose ``input_sizes`` is the pickled ``value``
    (opcodes that push one object), after ``prelude`` (opcodes that leave the stack empty)."""
    entry = (
        b"}(" + _u("profiling_name") + _u("gloo:all_reduce") + _u("collective_seq_id") + b"K\x01"
        + _u("state") + _u("scheduled") + _u("input_sizes") + value + b"u"
    )
    return b"\x80\x02" + prelude + b"}(" + _u("version") + _u("2.10") + _u("entries") + b"](" + entry + b"eu."


def memo_index_pickle() -> bytes:
    """19 bytes: 'entries', then LONG_BINPUT 2**28. Pickle's C unpickler grows its memo
    array to the index it is given: 4 GB."""
    return b"\x80\x02" + _u("entries") + b"r" + struct.pack("<I", 1 << 28)


def billion_laughs(levels: int = 9, fan: int = 10) -> bytes:
    """~440 bytes: list i holds list i-1 ``fan`` times; ``fan**levels`` integers written out."""
    prelude = b"]q\x00(" + b"K\x00" * fan + b"e0"
    for i in range(1, levels):
        prelude += b"]q" + bytes([i]) + b"(" + (b"h" + bytes([i - 1])) * fan + b"e0"
    return _dump_around(b"h" + bytes([levels - 1]), prelude)


def self_holding_list() -> bytes:
    return _dump_around(b"]q\x00h\x00a")  # EMPTY_LIST, PUT 0, GET 0, APPEND: l = [l]


def deep_pickle(depth: int) -> bytes:
    return _dump_around(b"]" * depth + b"a" * (depth - 1))


def many_objects_pickle(n: int) -> bytes:
    return b"\x80\x02" + b"}" * n + b"."  # one EMPTY_DICT per byte


def huge_int_pickle(nbytes: int) -> bytes:
    return _dump_around(b"\x8b" + struct.pack("<i", nbytes) + b"\x01" * nbytes)  # LONG4


def colliding_keys_pickle(n: int) -> bytes:
    """A dict of ``n`` integer keys that all hash alike: each insertion scans the others."""
    m = (1 << 61) - 1  # CPython hashes an int modulo this
    items = b"".join(b"\x8a\x10" + (k * m).to_bytes(16, "little", signed=True) + b"N" for k in range(1, n + 1))  # LONG1
    return _dump_around(b"}(" + items + b"u")


def set_pickle() -> bytes:
    return _dump_around(b"\x8f")  # EMPTY_SET


def reduce_pickle() -> bytes:
    return _dump_around(b"NN\x85R")  # REDUCE: call the object below with the tuple on top


_JSON_ENTRY = (
    '{{"collective_seq_id": {i}, "input_dtypes": ["Float"], "input_sizes": [[4]], "is_p2p": false, "op_id": {i}, '
    '"output_dtypes": ["Float"], "output_sizes": [[4]], "p2p_seq_id": 0, "pg_id": 0, "process_group": ["0", "default_pg"], '
    '"profiling_name": "gloo:all_reduce", "record_id": {i}, "retired": true, "state": "completed", '
    '"thread_id": "140499952098176", "thread_name": "python", "time_created_ns": 1796017166865397479, '
    '"time_discovered_completed_ns": 0, "time_discovered_started_ns": 0, "timeout_ms": 15000}}'
)


def write_json_dump(path: Path, entries: int) -> None:
    """A dump as ``_dump_fr_trace_json`` writes it (lab/fr-formats), ``entries`` long:
    about 520 bytes and 30 JSON values an entry."""
    with open(path, "w") as f:
        f.write('{"version": "2.10", "pg_config": {"": {"desc": "", "name": "", "ranks": "[0, 1]"}}, "pg_status": {}, "entries": [')
        for start in range(0, entries, 10_000):
            f.write(", ".join(_JSON_ENTRY.format(i=i + 1) for i in range(start, min(entries, start + 10_000))))
            if start + 10_000 < entries:
                f.write(", ")
        f.write("]}")


def deep_json(depth: int) -> bytes:
    return b'{"entries": [' + b"[" * depth + b"]" * depth + b"]}"


def huge_int_json(digits: int) -> bytes:
    return b'{"entries": [{"collective_seq_id": ' + b"9" * digits + b"}]}"


def many_values_json(n: int) -> bytes:
    return b'{"entries": [], "x": [' + b"0," * n + b"0]}"


def torch_like_pickle(entries: int, frames: int) -> bytes:
    """A healthy dump as torch pickles it: frames are shared dicts (torch memoizes them)."""
    pool = [{"name": f"fn{i}", "filename": f"/venv/lib/python3.11/site-packages/torch/m{i}.py", "line": i} for i in range(200)]
    pool.append({"name": "main", "filename": "/work/train.py", "line": 34})
    out = []
    for i in range(entries):
        out.append({
            "frames": [pool[(i + j) % 200] for j in range(frames - 1)] + [pool[200]], "record_id": i, "pg_id": 0,
            "process_group": ("0", "default_pg"), "collective_seq_id": i + 1, "p2p_seq_id": 0, "op_id": i + 1,
            "profiling_name": "gloo:all_reduce", "time_created_ns": 1796015374999923473 + i, "input_sizes": [[1024, 4096]],
            "input_dtypes": ["BFloat16"], "output_sizes": [[1024, 4096]], "output_dtypes": ["BFloat16"], "state": "completed",
            "retired": True, "timeout_ms": 600000, "is_p2p": False,
        })
    return pickle.dumps({"version": "2.10", "pg_config": {"0": {"desc": "default_pg", "ranks": "[0, 1]"}}, "pg_status": {}, "entries": out}, protocol=2)


# -- running the CLI on them, bounded -----------------------------------------------------------


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    peak_rss_mb: float  # VmHWM of the CLI's own process image (not the forked test runner's pages)
    seconds: float


# runs the CLI as `python -m rankdoctor.cli` does, then writes the process's VmHWM (its peak RSS
# since exec: a forked child's ru_maxrss would include the parent's pages) to the file named by
# the environment; a child killed at the timeout is measured by polling /proc instead
_PROBE = """
import atexit, os, runpy, sys
def _hwm():
    with open("/proc/self/status") as s, open(os.environ["RANKDOCTOR_HWM"], "w") as out:
        out.write(next(ln.split()[1] for ln in s if ln.startswith("VmHWM:")))
atexit.register(_hwm)
sys.argv[0] = "rankdoctor"
runpy.run_module("rankdoctor.cli", run_name="__main__")
"""


def _hwm_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as s:
            return int(next(ln.split()[1] for ln in s if ln.startswith("VmHWM:")))
    except (OSError, StopIteration):
        return 0


def _limit_address_space(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def bounded_cli(args: list[str], cwd: Path, env: dict[str, str] | None = None,
                address_space: int = ADDRESS_SPACE, timeout: float = TIMEOUT_S) -> Run:
    """``rankdoctor ARGS`` in a child under ``address_space`` and ``timeout``; its peak RSS."""
    out, err, hwm = cwd / ".stdout", cwd / ".stderr", cwd / ".hwm"
    env = {**(env or os.environ), "RANKDOCTOR_HWM": str(hwm)}
    peak_kb = 0
    with open(out, "wb") as o, open(err, "wb") as e:
        start = time.monotonic()
        child = subprocess.Popen([sys.executable, "-c", _PROBE, *args], stdin=subprocess.DEVNULL, stdout=o, stderr=e,
                                 cwd=cwd, env=env, preexec_fn=lambda: _limit_address_space(address_space))
        while (done := child.poll()) is None and time.monotonic() - start < timeout:
            peak_kb = max(peak_kb, _hwm_kb(child.pid))
            time.sleep(0.02)
        if done is None:
            child.kill()
            child.wait()
        seconds = time.monotonic() - start
    if hwm.exists() and hwm.read_text():
        peak_kb = max(peak_kb, int(hwm.read_text()))
    return Run(child.returncode, out.read_text(errors="replace"), err.read_text(errors="replace"), peak_kb / 1024, seconds)


def _one_line_error(r: Run, *needles: str) -> None:
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert len(lines) == 1 and lines[0].startswith("rankdoctor: error: "), r.stderr[-2000:]
    for n in needles:
        assert n in lines[0], lines[0]


def _bounded(r: Run) -> None:
    assert r.seconds < TIMEOUT_S, "killed at the timeout"
    assert r.peak_rss_mb < PEAK_RSS_MB, r.peak_rss_mb


def _write(folder: Path, name: str, data: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)
    return folder / name


# -- the attacks --------------------------------------------------------------------------------


PICKLE_ATTACKS = {
    "memo-index-2**28": (memo_index_pickle, "not a readable pickle"),
    "billion-laughs": (billion_laughs, "shared parts as copies"),
    "list-holds-itself": (self_holding_list, "holds itself"),
    "nested-100k-deep": (lambda: deep_pickle(100_000), "nested more than 32 levels"),
    "3M-empty-dicts": (lambda: many_objects_pickle(3_000_000), "more than 2,000,000 pickle opcodes"),
    "1MB-integer": (lambda: huge_int_pickle(1 << 20), "bits; a dump's numbers fit in 64"),
    "colliding-int-keys": (lambda: colliding_keys_pickle(50_000), "key that is not a string"),
    "a-set": (set_pickle, "EMPTY_SET"),
}


@pytest.mark.parametrize("name", PICKLE_ATTACKS)
def test_hostile_pickle_is_not_a_usable_dump(tmp_path, name):
    build, needle = PICKLE_ATTACKS[name]
    f = _write(tmp_path, "fr_trace_rank_0", build())
    r = bounded_cli(["fr", str(f)], tmp_path)
    _bounded(r)
    _one_line_error(r, str(f), needle)


def test_billion_laughs_in_both_dumps_of_a_run(tmp_path):
    # the reported case: two ranks' dumps, an analysis that repr()s each op
    for rank in (0, 1):
        _write(tmp_path / "fr", f"fr_trace_rank_{rank}", billion_laughs())
    assert len((tmp_path / "fr" / "fr_trace_rank_0").read_bytes()) < 500
    r = bounded_cli(["fr", str(tmp_path / "fr")], tmp_path)
    _bounded(r)
    _one_line_error(r, "not a usable dump")


def test_code_in_a_pickle_is_still_refused(tmp_path):
    f = _write(tmp_path, "fr_trace_rank_0", reduce_pickle())
    r = bounded_cli(["fr", str(f)], tmp_path)
    _one_line_error(r, "refused: the pickle uses REDUCE")


JSON_ATTACKS = {
    "nested-100k-deep": (lambda: deep_json(100_000), "JSON nested too deeply"),
    "nested-500-deep": (lambda: deep_json(500), "nested more than 32 levels"),
    "100k-digit-integer": (lambda: huge_int_json(100_000), "not valid JSON (Exceeds the limit"),
    "1.2M-values": (lambda: many_values_json(1_200_000), "more than 1,000,000 JSON values"),
}


@pytest.mark.parametrize("name", JSON_ATTACKS)
def test_hostile_json_is_not_a_usable_dump(tmp_path, name):
    build, needle = JSON_ATTACKS[name]
    f = _write(tmp_path, "fr_trace_rank_0.json", build())
    r = bounded_cli(["fr", str(f)], tmp_path)
    _bounded(r)
    _one_line_error(r, "not a usable dump", needle)


def test_a_dump_past_the_byte_cap_is_refused_unread(tmp_path):
    f = tmp_path / "fr_trace_rank_0.json"
    with open(f, "wb") as out:
        out.write(b'{"entries": [')
        out.truncate(600 << 20)  # sparse: 600 MB that cost no disk
    r = bounded_cli(["fr", str(f)], tmp_path)
    _bounded(r)
    assert r.peak_rss_mb < 100, r.peak_rss_mb  # not read at all
    _one_line_error(r, "not a usable dump", "larger than a dump can be")


def test_a_large_json_dump_under_the_caps_is_read(tmp_path):
    # 20,000 entries, 10 MB: a bigger ring than torch's default 2,000
    for rank in (0, 1):
        write_json_dump(tmp_path / f"fr_json_rank_{rank}.json", 20_000)
    r = bounded_cli(["fr", str(tmp_path), "--format", "json"], tmp_path)
    _bounded(r)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["verdict"] == "consistent"


def test_a_json_dump_past_the_value_cap_is_refused(tmp_path):
    write_json_dump(tmp_path / "fr_json_rank_0.json", 40_000)  # 20 MB, 1.2 million values
    r = bounded_cli(["fr", str(tmp_path / "fr_json_rank_0.json")], tmp_path)
    _bounded(r)
    _one_line_error(r, "more than 1,000,000 JSON values")


def test_symlink_to_dev_zero_is_never_read(tmp_path):
    link = tmp_path / "fr_trace_rank_0"
    link.symlink_to("/dev/zero")
    r = bounded_cli(["fr", str(link)], tmp_path)
    _bounded(r)
    assert r.peak_rss_mb < 100, r.peak_rss_mb
    _one_line_error(r, "not a regular file (a character device); skipped without opening it")


def test_fifo_given_by_name_is_never_opened(tmp_path):
    fifo = tmp_path / "fr_trace_rank_0"
    os.mkfifo(fifo)
    r = bounded_cli(["fr", str(fifo)], tmp_path, timeout=30)
    _bounded(r)
    _one_line_error(r, "not a regular file (a named pipe)")


def test_fifo_and_device_in_a_dump_folder_are_skipped_with_a_warning(tmp_path):
    fr = tmp_path / "fr"
    fr.mkdir()
    shutil.copy(GOOD_DUMP, fr / "fr_trace_rank_0")
    os.mkfifo(fr / "fr_trace_rank_1")
    (fr / "fr_trace_rank_2").symlink_to("/dev/zero")
    r = bounded_cli(["fr", str(fr)], tmp_path, timeout=30)
    _bounded(r)
    assert r.returncode == 3, r.stderr  # one dump read: nothing to compare it with
    text = "".join(r.stdout.split())  # the terminal view wraps long paths
    assert "fr_trace_rank_1:notaregularfile(anamedpipe)" in text, r.stdout
    assert "fr_trace_rank_2:notaregularfile(acharacterdevice)" in text, r.stdout
    dumps, problems = load_dumps([str(fr)])
    assert [d.rank for d in dumps] == [0] and len(problems) == 2


def test_hostile_pickle_among_logs_is_a_warning_for_diagnose(tmp_path):
    logs = tmp_path / "logs"
    shutil.copytree(SCENARIOS / "lab" / "fr-formats" / "logs", logs)
    _write(logs, "fr_trace_rank_0", memo_index_pickle())  # has 'entries' in its head: taken for a dump
    _write(logs, "fr_trace_rank_1", billion_laughs())
    r = bounded_cli(["diagnose", str(logs), "--format", "json"], tmp_path)
    _bounded(r)
    assert r.returncode in (0, 1, 3), r.stderr
    assert "Traceback" not in r.stderr
    json.loads(r.stdout)


def test_healthy_torch_like_dumps_are_read(tmp_path):
    for rank in (0, 1):
        _write(tmp_path / "fr", f"fr_trace_rank_{rank}", torch_like_pickle(2_000, 40))
    r = bounded_cli(["fr", str(tmp_path / "fr"), "--format", "json"], tmp_path)
    _bounded(r)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["verdict"] == "consistent"


# -- the same bounds, in process ----------------------------------------------------------------


def test_load_dump_raises_one_line_dump_errors(tmp_path):
    for name, (build, needle) in {**PICKLE_ATTACKS, **JSON_ATTACKS}.items():
        if name in ("3M-empty-dicts", "1.2M-values", "nested-100k-deep", "colliding-int-keys"):
            continue  # slow in process; run above through the CLI
        f = _write(tmp_path / name, "fr_trace_rank_0", build())
        with pytest.raises(DumpError) as err:
            load_dump(str(f))
        assert needle in str(err.value) and "\n" not in str(err.value), name


def test_the_real_lab_dumps_still_analyse():
    report = analyze(load_dumps([str(SCENARIOS / "lab" / "extra-collective-same-shape" / "fr")])[0])
    assert report.culprit_ranks() == [1]


# -- stack dumps: the same JSON bounds, regular files only -------------------------------------


def test_hostile_pyspy_json_is_not_a_stack_dump():
    assert parse_stack_dump("[" * 100_000 + "]" * 100_000) is None
    assert parse_stack_dump('[{"frames": ' + "[" * 500 + "]" * 500 + "}]") is None
    assert parse_stack_dump("[" + '{"frames": []},' * 1_100_000 + '{"frames": []}]') is None
    assert parse_stack_dump('[{"frames": [], "pid": ' + "9" * 100_000 + "}]") is None


def test_stacks_skip_a_fifo_and_a_device(tmp_path):
    os.mkfifo(tmp_path / "pyspy_rank0.json")
    (tmp_path / "pyspy_rank1.txt").symlink_to("/dev/zero")
    dumps, skipped = read_stack_dumps([tmp_path / "pyspy_rank0.json", tmp_path])
    assert dumps == []
    assert any("pyspy_rank0.json: not a regular file (a named pipe)" in s for s in skipped), skipped
    assert any("pyspy_rank1.txt: not a regular file (a character device)" in s for s in skipped), skipped
    r = bounded_cli(["stacks", str(tmp_path)], tmp_path, timeout=30)
    _bounded(r)
    assert "Traceback" not in r.stderr

