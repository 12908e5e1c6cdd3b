"""Hard-wrapped pastes are re-joined before scanning; everything else is left alone."""

from __future__ import annotations

from rankdoctor.ingest.unwrap import unwrap
from rankdoctor.scan import scan_text

from .conftest import SCENARIOS

WRAPPED = SCENARIOS / "real-holdout8" / "openr1-grpo-broadcast-seq4-timeout" / "log.txt"  # cut at 140 columns
PADDED = SCENARIOS / "real-holdout7" / "lightning-rank0-allgather-vs-broadcast" / "log.txt"  # cut and space-padded
FIXED_WIDTH = SCENARIOS / "real-holdout7" / "megatron-ds-grad-norm-nan-iterations" / "log.txt"  # whole lines of one width


def test_wrapped_watchdog_lines_are_joined_and_keep_their_line_numbers(kb):
    data = WRAPPED.read_bytes()
    text, n = unwrap(data)
    assert n >= 5
    assert text.count(b"\n") == data.count(b"\n")  # continuation lines are left empty, not removed
    joined = [ln for ln in text.split(b"\n") if b"Watchdog caught" in ln]
    # the excerpt's first line is already cut at its start (not at the wrap width): it stays as it is
    assert sum(b"NumelOut=112, Timeout(ms)=1800000) ran for" in ln for ln in joined) >= 5
    scan = scan_text(kb, text)
    assert any(e.entry == "nccl-watchdog-timeout" for e in scan.events)


def test_space_padded_wrap_is_joined(kb):
    text, n = unwrap(PADDED.read_bytes())
    assert n >= 1 and b"NumelOut=5164000, Timeout(ms)=1800000)" in text
    # cut between a key and its "=value": "...NumelIn=513, NumelOut" / "=2052, Timeout(ms)=..."
    assert b"OpType=_ALLGATHER_BASE, NumelIn=513, NumelOut=2052, Timeout(ms)=1800000)" in text


def test_fixed_width_lines_and_ordinary_logs_are_left_alone():
    assert unwrap(FIXED_WIDTH.read_bytes()) is None
    for p in sorted((SCENARIOS / "lab").glob("*/console.log")):
        assert unwrap(p.read_bytes()) is None, p


def test_the_cli_says_it_rejoined_lines():
    from .conftest import run_cli

    r = run_cli("diagnose", str(WRAPPED))
    assert r.returncode in (1, 3)
    assert b"hard-wrapped line(s) re-joined" in r.stdout


def test_json_log_records_are_read_as_their_text(tmp_path):
    """Docker's json-file records (one JSON object per line, the text under "log", its time under
    "time") and milabench's output records ("data") are read as the lines they carry, the time in
    front; a log with a few JSON lines among its text (a config dump, metrics) is left alone."""
    from rankdoctor.ingest.jsonlines import read_records

    docker = (
        b'{"log":"Traceback (most recent call last):\\n","stream":"stderr","time":"2024-05-01T10:09:00.1Z"}\n'
        b'{"log":"  File \\"train.py\\", line 3, in \\u003cmodule\\u003e\\n","stream":"stderr","time":"2024-05-01T10:09:00.1Z"}\n'
        b'{"log":"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\\n","stream":"stderr","time":"2024-05-01T10:09:00.2Z"}\n'
    )
    text, n = read_records(docker)
    assert n == 3
    assert text.split(b"\n")[1] == b'2024-05-01T10:09:00.1Z   File "train.py", line 3, in <module>'
    real = SCENARIOS / "real-holdout118" / "milabench-397-rank3-hip-launch-failure" / "log.txt"
    text, n = read_records(real.read_bytes())
    assert n == 4 and text.startswith(b"[rank3]: Search for `hipErrorLaunchFailure'")
    mixed = b"step 1 loss 2.0\n" * 20 + b'{"train_batch_size": 8, "message": "config"}\n' + b"step 2 loss 1.9\n" * 20
    assert read_records(mixed) is None
    assert read_records(b'{"a": ' + b"[" * 100000 + b"]" * 100000 + b"}\n" * 3) is None  # too deep: not a record


def test_the_cli_reads_json_records_and_says_so(tmp_path):
    import json

    from .conftest import run_cli

    log = tmp_path / "container-json.log"
    log.write_bytes(
        b'{"log":"[rank1]: Traceback (most recent call last):\\n","stream":"stderr","time":"2024-05-01T10:09:00.1Z"}\n'
        b'{"log":"[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.15 GiB of which 1.02 GiB is free.\\n","stream":"stderr","time":"2024-05-01T10:09:00.2Z"}\n'
    )
    r = run_cli("diagnose", str(log), "--format", "json")
    top = json.loads(r.stdout)["diagnoses"][0]
    assert (top["class"], top["initiating_rank"]) == ("cuda-oom", 1)
    assert b"read as 2 JSON log record(s)" in run_cli("diagnose", str(log)).stdout
