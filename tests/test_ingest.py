"""Ingest: prefixes, file names, compressed and archived inputs, hostile bytes."""

from __future__ import annotations

import gzip
import io
import random
import tarfile
import tracemalloc
import zipfile

import pytest
import zstandard

from rankdoctor.ingest.names import attribution_from_name
from rankdoctor.ingest.prefix import Dialect, clean, parse_prefix, sniff_dialect
from rankdoctor.ingest import sources as sources_mod
from rankdoctor.ingest.sources import InputError, expand_inputs, iter_chunks, iter_file_chunks, looks_binary
from rankdoctor.scan import scan_sources, scan_text


@pytest.mark.parametrize(
    "line, rank, local_rank, host, time_prefix",
    [
        # stacked torchrun --tee prefix, global rank, glog time (real: crash2-16)
        (
            "[default0]:[rank12]:[E817 17:40:34.227531918 ProcessGroupNCCL.cpp:1515] [PG 0 (default_pg) Rank 12] Process group watchdog thread terminated",
            12, 0, None, "--08-17T17:40:34",
        ),
        # Open MPI --tag-output + NCCL host:pid:tid [dev] (real: comms-06)
        ("[1,1]<stdout>:chifflot-7:67918:67950 [0] init.cc:748 NCCL WARN Duplicate GPU detected", 1, None, "chifflot-7", None),
        # Horovod's launcher, "[rank]<stream>:" (real: horovod#2907, held-out set CA)
        ("[2]<stderr>:terminate called after throwing an instance of 'gloo::IoException'", 2, None, None, None),
        # verbose glog level V (real lab: compile-desync)
        (
            "[default3]:[rank3]:V1130 05:08:07.170000 8641 torch/_dynamo/symbolic_convert.py:5124] [0/0] [__graph_breaks] Graph break",
            3, 3, None, "--11-30T05:08:07",
        ),
        # a date written with slashes before each line (real paste: wenet-e2e/wenet#976, held-out set CS)
        ("2022/03/12 15:12:35 RuntimeError: flock: Transport endpoint is not connected", None, None, None, "2022-03-12T15:12:35"),
        # Python logging timestamp after the torchrun prefix (real lab)
        ("[default2]:2026-11-30 05:07:49,255 INFO train: rank 2/4 initialised", None, 2, None, "2026-11-30T05:07:49"),
        # DeepSpeed launcher bracketed timestamp (real: crash2-32)
        ("[2022-05-15 00:12:57,785] [INFO] [launch.py:178:sigkill_handler] Killing subprocess 97277", None, None, None, "2022-05-15T00:12:57"),
        # Lightning
        ("[rank: 3] Seed set to 42", 3, None, None, None),
        # Determined's worker stream wrapper, behind a log viewer's empty field (real: determined-ai/determined#5418)
        ("[] [rank=0] RuntimeError: CUDA out of memory. Tried to allocate 824.00 MiB (GPU 0; 7.93 GiB total capacity;", 0, None, None, None),
        # ... behind the record's container id and time, as the CLI prints trial logs (real pastes:
        # determined-ai/determined#4531, "<none>" and a bracketed id; a locked scenario's "|| " form)
        ("<none> [2022-07-13 05:54:27] [d2997185] [rank=15]     default_pg = _get_default_group()", 15, None, None, "2022-07-13T05:54:27"),
        ("[2024-02-27T21:35:28.419846Z] fa88a9df [rank=5] || RuntimeError: DDP expects same model across all ranks, but Rank 5 has", 5, None, None, "2024-02-27T21:35:28.419846"),
        # an exception line set in Markdown bold by the reporter (real paste: deepspeedai/DeepSpeed#2973)
        ("**RuntimeError: Connection reset by peer**", None, None, None, None),
        # torch_npu's error header on Ascend (real paste: hiyouga/LlamaFactory#5322); RankID -1 is no rank
        ("[ERROR] 2024-08-28-16:15:00 (PID:15597, Device:2, RankID:2) ERR00100 PTA call acl api failed", 2, None, None, "2024-08-28T16:15:00"),
        ("[ERROR] 2025-07-01-00:40:04 (PID:176930, Device:0, RankID:-1) ERR01100 OPS call acl api failed.", None, None, None, "2025-07-01T00:40:04"),
        # Ray's prefix for an actor whose repr names itself in parentheses (real paste: alibaba/ROLL#193)
        ("(ActorWorker(actor_train-1) pid=18175, ip=33.199.184.82)   File \"/checkpoint/roll/decorator.py\", line 295, in inner", None, None, "33.199.184.82", None),
        # RLinf's worker groups put their rank in the actor's repr (RLinf#953)
        ("(EnvGroup(rank=1) pid=49603) RuntimeError: The MUJOCO_EGL_DEVICE_ID environment variable must be an integer between 0 and 0 (inclusive), got 1.", 1, None, None, None),
        # ... and NeMo-RL's actor repr with its rank in brackets (a real line quoted in a public repository,
        # found with find_string "Observed flight recorder dump signal from another")
        ("(MegatronPolicyWorker[rank=0] pid=1892406, ip=10.65.5.217) [rank0]:[E129 16:38:47.634597716 ProcessGroupNCCL.cpp:1794] [PG ID 0 PG GUID 0(default_pg) Rank 0] Observed flight recorder dump signal from another rank via TCPStore.", 0, None, "10.65.5.217", "--01-29T16:38:47"),
        # kubectl logs --prefix
        ("[pod/train-worker-1/pytorch] [rank9]: Traceback (most recent call last):", 9, None, "train-worker-1", None),
        # Ray actor prefix with ANSI colour (vLLM style)
        ("\x1b[36m(RayWorkerWrapper pid=123, ip=10.0.0.5)\x1b[0m INFO worker started", None, None, "10.0.0.5", None),
    ],
)
def test_prefixes(line, rank, local_rank, host, time_prefix):
    a, pos = parse_prefix(clean(line))
    assert a.rank == rank
    assert a.local_rank == local_rank
    assert a.host == host
    if time_prefix:
        assert a.time and a.time.startswith(time_prefix)
    assert pos > 0 or rank is None


def test_srun_and_host_dialects_are_sniffed():
    srun = [f"{r}: step {i} loss 1.0" for i in range(10) for r in range(4)]
    d = sniff_dialect(srun)
    assert d.srun
    a, pos = parse_prefix("3: RuntimeError: boom", d)
    assert a.rank == 3
    pdsh = [f"gpu-q-49: [rank{r}]: step {i}" for i in range(10) for r in range(2)]
    d2 = sniff_dialect(pdsh)
    assert "gpu-q-49" in d2.hosts
    a2, _ = parse_prefix("gpu-q-49: [rank1]: RuntimeError: boom", d2)
    assert (a2.host, a2.rank) == ("gpu-q-49", 1)
    # DeepSpeed's pdsh launcher names a node as its hostfile does, often by address; a short
    # excerpt from two nodes still reads as host prefixes (a real 4-line paste, LlamaFactory)
    by_ip = ["192.168.12.21: {'loss': 0.2411, 'epoch': 0.4}"] * 3 + [
        "192.168.13.81: [rank19]:[E808 10:31:07.406255799 ProcessGroupNCCL.cpp:1895] [PG ID 1 PG GUID 1 Rank 19] "
        "Process group watchdog thread terminated with exception: CUDA error: unspecified launch failure"]
    d3 = sniff_dialect(by_ip)
    assert d3.hosts == {"192.168.12.21", "192.168.13.81"}
    a3, _ = parse_prefix(by_ip[-1], d3)
    assert (a3.host, a3.rank) == ("192.168.13.81", 19)
    # an ordinary log is neither
    plain = ["RuntimeError: boom", "Traceback (most recent call last):", "INFO: step 1"] * 5
    assert sniff_dialect(plain) == Dialect()


def test_tqdm_carriage_returns_keep_the_error_visible():
    raw = "train:  50%|#####     | 20/40 [00:01<00:01]\r[rank1]: RuntimeError: boom"
    assert "RuntimeError: boom" in clean(raw)


@pytest.mark.parametrize(
    "path, rank, local_rank",
    [
        ("logs/job_abc/attempt_0/3/stderr.log", None, 3),
        ("logs/rank_5.log", 5, None),
        ("out/train-rank12.txt", 12, None),
        ("node1/local_rank2.log", None, 2),
        ("plain.log", None, None),
    ],
)
def test_file_names(path, rank, local_rank):
    a = attribution_from_name(path)
    assert (a.rank, a.local_rank) == (rank, local_rank)


WATCHDOG = (
    "[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, "
    "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800572 milliseconds before timing out.\n"
)


def _lines(kb, data: bytes, name="x.log"):
    res = scan_text(kb, data, name)
    return res


def test_gzip_zstd_tar_zip(tmp_path, kb):
    payload = ("noise\n" * 100 + WATCHDOG).encode()
    gz = tmp_path / "a.log.gz"
    gz.write_bytes(gzip.compress(payload))
    zs = tmp_path / "b.log.zst"
    zs.write_bytes(zstandard.ZstdCompressor().compress(payload))
    tar = tmp_path / "logs.tar.gz"
    with tarfile.open(tar, "w:gz") as tf:
        info = tarfile.TarInfo("run/rank_1.log")
        info.size = len(payload)
        tf.addfile(info, io.BytesIO(payload))
    zp = tmp_path / "logs.zip"
    with zipfile.ZipFile(zp, "w") as zf:
        zf.writestr("run/rank_1.log", payload)
    for p in (gz, zs, tar, zp):
        res = scan_sources(kb, expand_inputs([str(p)]))
        hits = [e for e in res.events if e.signature == "watchdog-timeout"]
        assert len(hits) == 1, p
        assert hits[0].line == 101
        assert hits[0].rank == 1


def test_truncated_gzip_gives_partial_result(tmp_path, kb):
    payload = (WATCHDOG + "x" * 200000 + "\n") * 20
    data = gzip.compress(payload.encode())
    p = tmp_path / "cut.log.gz"
    p.write_bytes(data[: len(data) // 2])
    res = scan_sources(kb, expand_inputs([str(p)]))
    assert res.events, "the intact part is read"
    assert any("ends early" in w for i in res.inputs for w in i.warnings)


def test_invalid_utf8_nul_and_huge_lines(kb):
    data = b"\xff\xfe garbage \x00\x00 more\n" + b"A" * (3 << 20) + b"\n" + WATCHDOG.encode() + b"tail \xc3\x28\n"
    res = scan_text(kb, data)
    hits = [e for e in res.events if e.signature == "watchdog-timeout"]
    assert len(hits) == 1 and hits[0].line == 3
    assert res.inputs[0].lines == 4


def test_interleaved_ranks_mid_line(kb):
    line = "[rank1]: step 5 loss 2.0[rank0]: " + WATCHDOG.split("] ", 1)[1]
    res = scan_text(kb, line)
    hit = next(e for e in res.events if e.signature == "watchdog-timeout")
    assert hit.rank == 1  # the [Rank 1] inside the message wins over both prefixes


def test_chunks_are_newline_aligned():
    data = b"".join(b"line %d\n" % i for i in range(100000))
    chunks = [d[:n] for d, n in iter_chunks(io.BytesIO(data), chunk_size=4096)]
    assert b"".join(chunks) == data
    assert all(c.endswith(b"\n") for c in chunks)


def test_file_chunks_equal_stream_chunks(tmp_path, monkeypatch):
    """Positioned reads of a plain file give exactly the (data, n) pairs a sequential read
    gives: lines longer than MAX_LINE, a short piece of a line at a block end, no newline
    at the end, an empty file."""
    rnd = random.Random(7)
    path = tmp_path / "x.log"
    for _ in range(400):
        lines = [b"x" * rnd.choice([0, 1, 5, 20, 60, 200, 700]) + (b"\n" if rnd.random() < 0.9 else b"") for _ in range(rnd.randrange(40))]
        data = b"".join(lines)
        path.write_bytes(data)
        size = rnd.choice([16, 32, 64, 100])
        monkeypatch.setattr(sources_mod, "MAX_LINE", rnd.choice([8, 15, size - 1]))
        with open(path, "rb") as f:
            stream = list(iter_chunks(f, size))
        assert list(iter_file_chunks(path, 0, None, size)) == stream
        assert b"".join(d[:n] for d, n in stream) == data


def test_binary_detection():
    assert looks_binary(b"\x89PNG\r\n\x1a\n" + bytes(200))
    assert looks_binary(bytes(range(256)) * 50)
    assert not looks_binary("ordinary log line ✓ with ünïcode\n".encode() * 100)
    assert not looks_binary(b"\x1b[31mERROR\x1b[0m colour codes\n" * 50)


def test_missing_and_empty_inputs(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        expand_inputs([str(tmp_path / "nope.log")])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match="no files"):
        expand_inputs([str(empty)])


def test_case_folder_names_are_not_ranks():
    # a folder named after an experiment is not a rank folder
    assert attribution_from_name("runs/straggler-rank0/console.log").rank is None
    assert attribution_from_name("runs/rank3/stdout.log").rank == 3


def test_file_gone_before_it_is_read(kb, tmp_path):
    """A file listed and then removed (log rotation) is a one-line warning, not a traceback."""
    gone = tmp_path / "rank_1.log"
    gone.write_text("step 1\n")
    kept = tmp_path / "rank_0.log"
    kept.write_text("step 1\n")
    srcs = expand_inputs([str(tmp_path)])
    gone.unlink()
    res = scan_sources(kb, srcs)
    warn = [w for i in res.inputs for w in i.warnings]
    assert warn == [f"{gone}: cannot read: No such file or directory"]
    assert [i.lines for i in res.inputs if i.path == str(kept)] == [1]



def test_docker_compose_style_host_pipe_prefix():
    from rankdoctor.ingest.prefix import parse_prefix, sniff_dialect

    from .conftest import SCENARIOS

    # SageMaker / docker compose print "<host> | <message>"
    lines = (SCENARIOS / "real-holdout11" / "mmdet-mpirun-local-rank-devices" / "log.txt").read_text().splitlines()
    dialect = sniff_dialect(lines[:50])
    line = "gsb2fnng0z-algo-1-6pcq6 |  Process name: [[8472,1],2]"
    a, at = parse_prefix(line, dialect)
    assert a.host == "gsb2fnng0z-algo-1-6pcq6"
    assert line[at:].strip() == "Process name: [[8472,1],2]"


def test_folder_walk_is_os_walk_order_without_recursion(tmp_path):
    """Files in os.walk's order (a folder's files by name, then its folders), however deep."""
    for rel in ("b.log", "a.log", "z/c.log", "z/y/d.log", "m/e.log", ".git/x.log", "skip.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("line\n")
    names = [s.name for s in expand_inputs([str(tmp_path)])]
    rel = [str(tmp_path / p) for p in ("a.log", "b.log", "m/e.log", "z/c.log", "z/y/d.log")]
    assert names == rel
    deep = [tmp_path / "deep"]
    deep[0].mkdir()
    for _ in range(1100):  # more than the interpreter's recursion limit
        deep.append(deep[-1] / "d")
        deep[-1].mkdir()
    (deep[-1] / "rank_1.log").write_text("step 1\n")
    try:
        assert [s.size for s in expand_inputs([str(deep[0])])] == [7]
    finally:
        (deep[-1] / "rank_1.log").unlink()
        for d in reversed(deep):
            d.rmdir()  # pytest's own clean-up (shutil.rmtree) recurses


def test_zstd_frames_truncation_and_bombs_in_small_steps():
    """Several frames (and a skippable one) read as one stream; a frame cut short is an
    error after what came before it; a 64 MiB frame is never held whole."""
    z = zstandard.ZstdCompressor()
    skippable = (0x184D2A50).to_bytes(4, "little") + (3).to_bytes(4, "little") + b"abc"
    data = z.compress(b"one\n" * 1000) + skippable + z.compress(b"two\n" * 1000)
    f = sources_mod._decompressing(io.BytesIO(data), data[:4])
    assert f.read() == b"one\n" * 1000 + b"two\n" * 1000
    cut = sources_mod._decompressing(io.BytesIO(data[:-5]), data[:4])
    got = cut.read(1 << 20)
    assert got.startswith(b"one\n" * 1000)
    with pytest.raises(sources_mod.DamagedInput, match="truncated or damaged zstd data"):
        while cut.read(1 << 20):
            pass
    stream = z.compressobj()
    bomb = b"".join(stream.compress(bytes(1 << 20)) for _ in range(256)) + stream.flush()  # 256 MiB of zeros
    f = sources_mod._decompressing(io.BytesIO(bomb), bomb[:4])
    tracemalloc.start()
    try:
        total = sum(len(c) for c in iter(lambda: f.read1(2 << 20), b""))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert total == 256 << 20 and peak < 32 << 20, peak


def test_archive_members_read_in_any_order_and_in_forked_workers(tmp_path, kb):
    """Members come from one open handle read front to back; reading them out of order is
    still right (it re-reads), and a parallel scan (forked workers) gives the single-process
    result."""
    from rankdoctor.parallel import scan_parallel

    bodies = [(b"[rank%d]: step %d\n" % (i, k) * 50) + (WATCHDOG.encode() if i == 3 else b"") for i, k in zip(range(40), range(40))]
    tar = tmp_path / "logs.tar.gz"
    with tarfile.open(tar, "w:gz") as tf:
        for i, body in enumerate(bodies):
            info = tarfile.TarInfo(f"rank_{i}.log")
            info.size = len(body)
            tf.addfile(info, io.BytesIO(body))
    zp = tmp_path / "logs.zip"
    with zipfile.ZipFile(zp, "w", zipfile.ZIP_DEFLATED) as zf:
        for i, body in enumerate(bodies):
            zf.writestr(f"rank_{i}.log", body)
    for p in (tar, zp):
        srcs = expand_inputs([str(p)])
        order = list(range(len(srcs)))
        random.Random(3).shuffle(order)
        for i in order:
            with srcs[i].opener() as f:
                assert f.read() == bodies[i]
        single = scan_sources(kb, srcs)
        forked = scan_parallel(kb, srcs, jobs=2, min_parallel_bytes=0)
        assert [(e.source, e.line, e.rank) for e in forked.events] == [(e.source, e.line, e.rank) for e in single.events]
        assert [e.rank for e in single.events if e.signature == "watchdog-timeout"] == [1]


def test_nul_head_is_text_not_a_tar():
    assert not looks_binary(b"\0" * 4096 + b"ordinary log line\n" * 100)
    assert looks_binary(b"\0" * 4096)
    assert not sources_mod._is_tar_header(b"\0" * 512)


def test_global_rank_prefix_names_the_printer_of_a_group_local_report(kb):
    # a log viewer's minute stamp, then torchrun's global prefix; "[Rank 1]" is the rank in a
    # sub-group (PyTorch 2.6 prints it without the PG ID on the watchdog line)
    line = (" 2025-02-18 12:54 [rank13]:[E218 04:54:22.864467604 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum=216, OpType=ALLTOALL_BASE, NumelIn=1379328, NumelOut=1572864, "
            "Timeout(ms)=600000) ran for 600045 milliseconds before timing out.")
    hit = next(e for e in scan_text(kb, line).events if e.signature == "watchdog-timeout")
    assert hit.rank == 13 and hit.time.startswith("2025-02-18T12:54")


def test_torchelastic_error_files_alone_name_the_rank_that_raised(tmp_path):
    """torchrun's error.json (``@record``, TORCHELASTIC_ERROR_FILE) is a one-line JSON document:
    its message and traceback are read as that rank's lines, stamped at the end of its timestamp's second, so the
    error files of a run whose console was lost still show which rank raised first."""
    import shutil

    import rankdoctor
    from .conftest import SCENARIOS

    run = SCENARIOS / "lab-pg2d" / "exception-tp2dp4-r5-s3" / "logs"
    for f in run.rglob("error.json"):
        dest = tmp_path / f.relative_to(run)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(f, dest)
    raw = (tmp_path / next(run.glob("*")).name / "attempt_0" / "5" / "error.json").read_bytes()
    assert sources_mod.torchelastic_error(raw).splitlines()[-1] == (
        b"2026-12-02 08:26:59.999 json.decoder.JSONDecodeError: Expecting ',' delimiter: line 1 column 30 (char 29)")
    assert sources_mod.torchelastic_error(b'{"not": "an error file"}') is None
    # a hostile one: nested past the parser's recursion limit, read as plain text instead
    assert sources_mod.torchelastic_error(b'{"message": ' + b"[" * 100_000 + b"]" * 100_000 + b"}") is None
    d = rankdoctor.diagnose([str(tmp_path)])
    top = d.diagnoses[0]
    assert top.initiating_rank == 5
    assert any(e.rank == 5 and "JSONDecodeError" in e.text for e in top.evidence)
    assert (tmp_path / next(run.glob("*")).name / "attempt_0" / "5" / "error.json").read_bytes() == raw  # untouched


def test_a_pytest_failure_report_is_read_behind_its_E_marks():
    # pytest prints a failed test's exception and frames behind "E" and spaces
    # (real-holdout48/pytorch-161153: a distributed test's Dynamo error)
    lines = [">                   return node.target(*args, **kwargs)",
             "E                   torch._dynamo.exc.TorchRuntimeError: Dynamo failed to run FX node with fake tensors",
             "E                   ",
             "E                   from user code:"]
    d = sniff_dialect(lines)
    assert d.pytest
    a, at = parse_prefix(lines[1], d)
    assert lines[1][at:].startswith("torch._dynamo.exc.TorchRuntimeError")
    assert not sniff_dialect(["E1201 12:00:00.000 ProcessGroupNCCL.cpp:1] glog error line", "plain"]).pytest


def test_a_dateless_clock_before_a_rank_prefix_is_the_lines_time():
    """A log collector's "HH:MM:SS.mmm " before "[rank3]:" (modelscope/ms-swift#8269, held-out
    set BO) is read as the line's time, so the rank prefix behind it is read too; a message that
    merely starts with a time is left alone."""
    from rankdoctor.ingest.prefix import parse_prefix

    a, pos = parse_prefix('10:41:43.105 [rank3]:   File "/workdir/sft.py", line 63, in run')
    assert a.rank == 3 and a.time == "10:41:43.105000"
    assert a.ts == 10 * 3600 + 41 * 60 + 43.105
    for text in ("10:41:43.105 hello", "12:00:01 [rank3]: x"):
        a, pos = parse_prefix(text)
        assert a.rank is None and a.time is None and pos == 0


def test_an_exception_line_in_markdown_bold_is_read_from_its_name():
    # (real paste: deepspeedai/DeepSpeed#2973); bold around other text is left alone
    line = clean("**RuntimeError: Connection reset by peer**")
    a, pos = parse_prefix(line)
    assert line[pos:].startswith("RuntimeError:")
    a, pos = parse_prefix(clean("**Update:** it works now"))
    assert pos == 0
