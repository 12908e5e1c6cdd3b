"""Hostile Flight Recorder dumps (issue 12) at full size: peak RSS and time of the CLI on each,
for this checkout and for a baseline source tree, side by side (bench/attacks_fr.md).

    git archive <commit> src entries | tar -x -C /tmp/before
    .venv/bin/python bench/attacks_fr.py --before /tmp/before/src > bench/attacks_fr.md.new

The hostile files are made by the builders of tests/test_attacks_fr.py (the test runs them at
test size). Each run is a child process under a 5 GiB address-space limit and a 60 s timeout,
so a baseline that would eat the machine or block forever is stopped and reported as such;
its peak RSS is the VmHWM of its process image.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.test_attacks_fr import (  # noqa: E402
    GOOD_DUMP,
    Run,
    billion_laughs,
    bounded_cli,
    colliding_keys_pickle,
    deep_json,
    deep_pickle,
    huge_int_json,
    many_objects_pickle,
    memo_index_pickle,
    torch_like_pickle,
    write_json_dump,
)

ADDRESS_SPACE = 5 << 30
TIMEOUT_S = 60


def _file(name: str, data: bytes) -> Callable[[Path], list[str]]:
    def make(d: Path) -> list[str]:
        (d / name).write_bytes(data)
        return ["fr", str(d / name)]

    return make


def _two_ranks(data: bytes) -> Callable[[Path], list[str]]:
    def make(d: Path) -> list[str]:
        for rank in (0, 1):
            (d / f"fr_trace_rank_{rank}").write_bytes(data)
        return ["fr", str(d)]

    return make


def _json(entries: int) -> Callable[[Path], list[str]]:
    def make(d: Path) -> list[str]:
        write_json_dump(d / "fr_json_rank_0.json", entries)
        return ["fr", str(d / "fr_json_rank_0.json")]

    return make


def _in_logs(d: Path) -> list[str]:
    shutil.copytree(ROOT / "tests" / "scenarios" / "lab" / "fr-formats" / "logs", d / "logs")
    (d / "logs" / "fr_trace_rank_0").write_bytes(memo_index_pickle())
    return ["diagnose", str(d / "logs")]


def _dev_zero(d: Path) -> list[str]:
    (d / "fr_trace_rank_0").symlink_to("/dev/zero")
    return ["fr", str(d / "fr_trace_rank_0")]


def _fifo(d: Path) -> list[str]:
    os.mkfifo(d / "fr_trace_rank_0")
    return ["fr", str(d / "fr_trace_rank_0")]


def _tiny_files(d: Path) -> list[str]:
    for i in range(100_000):
        (d / f"note_{i}.txt").write_bytes(b"x\n")
    shutil.copy(GOOD_DUMP, d / "fr_trace_rank_0")
    return ["fr", str(d)]


def _nested_json_entries(n: int) -> bytes:
    return b'{"entries": [' + b'{"a":{"b":{"c":0}}},' * n + b"{}]}"  # ~4 JSON values an entry, ~800 bytes parsed


def _dict_entries_pickle(n: int) -> bytes:
    entry = b"}X\x01\x00\x00\x00aNs"  # EMPTY_DICT, 'a', None, SETITEM: 4 opcodes
    return b"\x80\x02}(X\x07\x00\x00\x00entries](" + entry * n + b"eu."


ATTACKS: list[tuple[str, Callable[[Path], list[str]]]] = [
    ("19-byte pickle, memo index 2**28 (`fr FILE`)", _file("fr_trace_rank_0", memo_index_pickle())),
    ("the same pickle in a log folder (`diagnose DIR`)", _in_logs),
    ("2 x 440-byte billion-laughs dumps (`fr DIR`)", _two_ranks(billion_laughs())),
    ("30 MB of EMPTY_DICT opcodes", _file("fr_trace_rank_0", many_objects_pickle(30_000_000))),
    ("pickle nested 100,000 deep", _file("fr_trace_rank_0", deep_pickle(100_000))),
    ("pickle dict of 50,000 colliding int keys", _file("fr_trace_rank_0", colliding_keys_pickle(50_000))),
    ("JSON dump, 150 MB (290,000 entries)", _json(290_000)),
    ("JSON nested 100,000 deep", _file("fr_trace_rank_0.json", deep_json(100_000))),
    ("JSON integer of 100,000 digits", _file("fr_trace_rank_0.json", huge_int_json(100_000))),
    ("link to /dev/zero named fr_trace_rank_0", _dev_zero),
    ("FIFO named fr_trace_rank_0", _fifo),
    ("100,000 tiny files and one dump (`fr DIR`)", _tiny_files),
    # the costliest shapes that pass every cap: what a dump can cost at most
    ("under the caps: JSON, 245,000 entries of 3 nested dicts", _file("fr_trace_rank_0.json", _nested_json_entries(245_000))),
    ("under the caps: pickle, 400,000 one-key dict entries", _file("fr_trace_rank_0", _dict_entries_pickle(400_000))),
    ("healthy: JSON dump, 10 MB (20,000 entries)", _json(20_000)),
    ("healthy: 2 torch-like pickles, 2,000 entries x 40 frames", _two_ranks(torch_like_pickle(2_000, 40))),
]


def _cell(r: Run) -> str:
    if r.seconds >= TIMEOUT_S:
        outcome = f"killed at {TIMEOUT_S} s"
    else:
        last = (r.stderr.strip().splitlines() or [""])[-1].removeprefix("rankdoctor: error: ")
        last = re.sub(r"/tmp/attack-[^/ ]+/", "", last)  # the temporary folder, not the message
        outcome = f"exit 2: {last[:100]}" if r.returncode == 2 else f"exit {r.returncode}"
    return f"{r.peak_rss_mb:,.0f} MB, {r.seconds:.1f} s, {outcome}".replace("|", "\\|")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", metavar="SRC", help="the baseline's src/ folder (run with PYTHONPATH=SRC)")
    args = ap.parse_args()
    trees = [("before", {**os.environ, "PYTHONPATH": args.before})] if args.before else []
    trees.append(("after", {**os.environ, "PYTHONPATH": str(ROOT / "src")}))
    print("| attack | " + " | ".join(name for name, _ in trees) + " |")
    print("|---|" + "---|" * len(trees))
    for title, make in ATTACKS:
        cells = []
        for _, env in trees:
            with tempfile.TemporaryDirectory(prefix="attack-") as tmp:
                argv = make(Path(tmp))
                r = bounded_cli(argv, Path(tmp), env=env, address_space=ADDRESS_SPACE, timeout=TIMEOUT_S)
            cells.append(_cell(r))
        print(f"| {title} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
