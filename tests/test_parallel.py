"""The parallel scan (rankdoctor.parallel) gives exactly what the single-process scan gives:
the same events and facts in the same order (line numbers included), the same input
statistics, tails and ranks seen — on every scenario, with files split into many small
byte ranges, and on a generated multi-megabyte log. Also the helpers the benchmark uses."""

from __future__ import annotations

import importlib.util
import io
import random
from pathlib import Path

import pytest

from rankdoctor import parallel
from rankdoctor.events import ScanResult
from rankdoctor.ingest import sources as sources_mod
from rankdoctor.ingest.prefix import clean, parse_prefix
from rankdoctor.ingest.sources import expand_inputs, iter_chunks
from rankdoctor.parallel import scan_parallel, split_file
from rankdoctor.scan import _ATTR_HINT, Scanner, scan_sources

from .conftest import ROOT, SCENARIOS

CASES = sorted(p for group in ("real", "lab", "real-extra") for p in (SCENARIOS / group).iterdir() if p.is_dir())


def assert_same(par: ScanResult, seq: ScanResult) -> None:
    assert [(i.path, i.bytes, i.lines, i.warnings) for i in par.inputs] == [(i.path, i.bytes, i.lines, i.warnings) for i in seq.inputs]
    assert [(e.source, e.line, e.entry, e.signature) for e in par.events] == [(e.source, e.line, e.entry, e.signature) for e in seq.events]
    assert par.events == seq.events  # every field: text, rank, captures, context lines
    assert par.facts == seq.facts
    assert par.tails == seq.tails
    assert par.ranks_seen == seq.ranks_seen
    assert par.local_ranks_seen == seq.local_ranks_seen
    assert par.hosts_seen == seq.hosts_seen
    assert par == seq


@pytest.fixture
def tiny_chunks(monkeypatch):
    """2 KiB chunks, lines cut at 1 KiB: scenario files split into many ranges."""
    monkeypatch.setattr(sources_mod, "MAX_LINE", 1024)
    return 2048


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.parent.name}/{c.name}")
def test_scenario_split_identical(kb, scanner, case, tiny_chunks):
    srcs = expand_inputs([str(case)])
    seq = scan_sources(kb, srcs, scanner, chunk_size=tiny_chunks)
    par = scan_parallel(kb, srcs, jobs=2, scanner=scanner, chunk_size=tiny_chunks, range_bytes=tiny_chunks, min_parallel_bytes=0)
    assert_same(par, seq)


def _big_log(path: Path, mb: int = 14, seed: int = 1) -> None:
    """A combined torchrun-style log: prefixes, tqdm bars, tracebacks, a line longer than
    MAX_LINE, failures spread over the file, no newline at the very end."""
    rnd = random.Random(seed)
    with open(path, "w", encoding="utf-8", newline="") as fh:
        size, step = 0, 0
        while size < mb << 20:
            out = []
            for _ in range(500):
                step += 1
                r = rnd.randrange(8)
                pre = f"[default{r}]:[rank{r}]:"
                out.append(f"{pre}2025-11-30 05:{step // 6000 % 60:02d}:{step // 100 % 60:02d},{step % 1000:03d} INFO train: step {step} loss {rnd.random():.4f}")
                if step % 7 == 0:
                    out.append(f"{pre}\rEpoch 0:  {step % 100:2d}%|████▌     | {step}/100000 [01:23<01:42,  5.38it/s]\r")
                if step % 9973 == 0:
                    out += [f"{pre}Traceback (most recent call last):", f'{pre}  File "train.py", line 12, in <module>',
                            f"{pre}torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 336.00 MiB. GPU {r} has a total capacity of 79.15 GiB"]
                if step % 15013 == 0:
                    out.append(f"{pre}[E ProcessGroupNCCL.cpp:563] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={step}, OpType=ALLREDUCE, NumelIn=2200, NumelOut=2200, Timeout(ms)=600000) ran for 600037 milliseconds before timing out.")
                if step % 40000 == 0:
                    out.append(pre + "x" * (3 << 20))  # longer than MAX_LINE: cut into pieces
            text = "\n".join(out) + "\n"
            fh.write(text)
            size += len(text)
        fh.write("[rank3]: RuntimeError: the end without a newline")


def test_big_file_split_identical(kb, scanner, tmp_path):
    log = tmp_path / "console.log"
    _big_log(log)
    other = tmp_path / "rank_5.log"
    other.write_bytes(b"[rank5]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n" * 3)
    srcs = expand_inputs([str(log), str(other), str(log)])
    seq = scan_sources(kb, srcs, scanner)
    assert seq.events and seq.inputs[0].lines > 100_000
    # default 4 MiB chunks, 4 MiB ranges: the file is split at several chunk boundaries
    par = scan_parallel(kb, srcs, jobs=2, scanner=scanner, range_bytes=4 << 20)
    assert_same(par, seq)
    # adaptive ranges
    assert_same(scan_parallel(kb, srcs, jobs=2, scanner=scanner, min_parallel_bytes=0), seq)


def test_split_points_are_chunk_boundaries(tmp_path):
    log = tmp_path / "x.log"
    _big_log(log, mb=10, seed=2)
    with open(log, "rb") as f:
        ends, pos = set(), 0
        for _data, n in iter_chunks(f):
            pos += n
            ends.add(pos)
    cuts = split_file(log, log.stat().st_size, 4 << 20, 4 << 20)
    assert cuts[0][0] == 0 and cuts[-1][1] == log.stat().st_size
    assert len(cuts) >= 3
    for (a, b, _), (c, _, _) in zip(cuts, cuts[1:]):
        assert b == c and b in ends


def test_small_input_uses_no_pool(kb, scanner, monkeypatch):
    def no_pool(*a, **k):
        raise AssertionError("a pool was started for a small input")

    monkeypatch.setattr(parallel, "ProcessPoolExecutor", no_pool)
    case = SCENARIOS / "lab" / "straggler-rank0"
    srcs = expand_inputs([str(case)])
    assert_same(scan_parallel(kb, srcs, jobs=2, scanner=scanner), scan_sources(kb, srcs, scanner))


def test_stdin_and_archives_keep_order(kb, scanner, tmp_path, tiny_chunks):
    import gzip

    lab = SCENARIOS / "lab" / "exception-rank2" / "console.log"
    gz = tmp_path / "console.log.gz"
    gz.write_bytes(gzip.compress(lab.read_bytes()))
    data = lab.read_bytes()
    srcs = expand_inputs([str(lab), "-", str(gz)], stdin=io.BufferedReader(io.BytesIO(data)))  # type: ignore[arg-type]
    par = scan_parallel(kb, srcs, jobs=2, scanner=scanner, chunk_size=tiny_chunks, range_bytes=2 * tiny_chunks, min_parallel_bytes=0)
    srcs = expand_inputs([str(lab), "-", str(gz)], stdin=io.BufferedReader(io.BytesIO(data)))  # type: ignore[arg-type]
    seq = scan_sources(kb, srcs, scanner, chunk_size=tiny_chunks)
    assert_same(par, seq)


def test_worker_error_propagates(kb, scanner, monkeypatch, tmp_path):
    def boom(self, *a, **k):
        raise RuntimeError("boom in a worker")

    monkeypatch.setattr(Scanner, "scan_chunks", boom)
    files = []
    for i in range(4):
        p = tmp_path / f"rank_{i}.log"
        p.write_bytes(b"step 1\n" * 1000)
        files.append(str(p))
    with pytest.raises(RuntimeError, match="boom in a worker"):
        scan_parallel(kb, expand_inputs(files), jobs=2, scanner=scanner, min_parallel_bytes=0)


def test_progress_reports_all_bytes(kb, scanner, tmp_path):
    files = []
    for i in range(3):
        p = tmp_path / f"rank_{i}.log"
        p.write_bytes(b"[rank%d]: step 1 loss 2.0\n" % i * 5000)
        files.append(str(p))
    seen = []
    srcs = expand_inputs(files)
    scan_parallel(kb, srcs, jobs=2, scanner=scanner, min_parallel_bytes=0, progress=lambda d, t: seen.append((d, t)))
    total = sum(s.size for s in srcs)
    assert seen and seen[-1] == (total, total)
    assert parallel.progress_for(srcs, quiet=False, stream=io.StringIO()) is None  # not a terminal


def test_attr_hint_is_a_necessary_condition():
    """A line whose prefixes give a rank, local rank or host always contains _ATTR_HINT
    (so skipping parse_prefix on lines without it changes nothing)."""
    lines = [
        "[rank3]: x", "[default2]:[rank5]: y", "[1,7]<stderr>: z", "[rank: 4] w", "[pod/trainer-0/main] v",
        "gpu-q-49:1234:5678 [3] NCCL INFO x", "(RayTrainWorker rank=2 pid=99, ip=10.0.0.2) y", "(Actor pid=5, ip=1.2.3.4) q",
        "2025-11-30 05:07:29,136 [rank1]: t", "[I1130 05:07:26.922303828 debug.cpp:48] [default0]:u",
    ]
    for group in ("real", "lab", "real-extra"):
        for f in (SCENARIOS / group).rglob("*"):
            if f.is_file() and f.suffix in (".txt", ".log"):
                lines += f.read_text(encoding="utf-8", errors="replace").split("\n")
    checked = 0
    for raw in lines:
        text = clean(raw.encode()[:200].decode("utf-8", "replace"))
        a, _ = parse_prefix(text)
        if a.rank is not None or a.local_rank is not None or a.host:
            checked += 1
            assert _ATTR_HINT.search(text), text
    assert checked > 1000


# -- bench/literals.py ----------------------------------------------------------------------


def _literals():
    spec = importlib.util.spec_from_file_location("bench_literals", ROOT / "bench" / "literals.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


@pytest.mark.parametrize(
    "regex, want",
    [
        (r"Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(?P<seq>\d+)", "Watchdog caught collective operation timeout: WorkNCCL(SeqNum="),
        (r"CUDA out of memory\. Tried to allocate", "CUDA out of memory. Tried to allocate"),
        (r"(?:foo|barbaz) NCCL WARN (?P<x>\w+) abc", " NCCL WARN "),
        (r"a\d+bcdef(?:ghij)klm", "bcdefghijklm"),
        (r"xy(?:abcdefgh)?z", "xy"),
        (r"(?:abcdef)+zz", "abcdef"),
        (r"^\s*exitcode\s*: (?P<e>-?\d+)", "exitcode"),
        (r"\d+\.\d+", "."),
        (r"(?i:nan|inf) loss detected", " loss detected"),
    ],
)
def test_longest_literal(regex, want):
    assert _literals().longest_literal(regex) == want


def test_literals_for_counts_skipped():
    lits, skipped = _literals().literals_for([r"abc\d", r"Segmentation fault", r"\w+ : \d", r"Segmentation fault"])
    assert lits == ["Segmentation fault"] and skipped == 2


def test_every_literal_is_in_every_match(kb):
    """On the KB's own example lines: a case-sensitive signature's literal occurs in every
    example line the signature matches."""
    import re

    lit = _literals()
    n = 0
    for e in kb:
        lines = [x.text for x in e.examples.match]
        for s in e.signatures:
            if s.ignore_case:
                continue
            rx = re.compile(s.regex)
            want = lit.longest_literal(s.regex)
            for line in lines:
                if rx.search(line):
                    assert want in line, (e.id, s.id, want, line)
                    n += 1
    assert n > 100


def test_vector_count_gives_the_same_lines(kb, scanner, tmp_path, monkeypatch):
    """Inputs over VECTOR_COUNT_MIN count newlines with numpy; line numbers must not change."""
    from rankdoctor import scan as scan_mod

    log = tmp_path / "console.log"
    _big_log(log, mb=6, seed=3)
    srcs = expand_inputs([str(log)])
    monkeypatch.setattr(scan_mod, "_np", None)
    plain = scan_sources(kb, srcs, scanner)
    scan_mod.vector_count()
    assert scan_mod._np is not None
    assert scan_mod.count_newlines(b"a\nb\n" * 70000 + b"tail", 280003) == 140000
    assert_same(scan_sources(kb, srcs, scanner), plain)
    monkeypatch.setattr(parallel, "VECTOR_COUNT_MIN", 0)
    assert_same(scan_parallel(kb, srcs, jobs=2, scanner=scanner, range_bytes=2 << 20, min_parallel_bytes=0), plain)
