"""The command line as a user runs it: exit codes, formats, stdin, bad input."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys

import pytest

from .conftest import ROOT, SCENARIOS, run_cli

OOM_CASE = SCENARIOS / "real" / "comms-11-peer-crash-funasr-rank2-oom" / "log.txt"
DESYNC_CASE = SCENARIOS / "real" / "comms2-10-desync-fsdp-t5-rank0-reduce-vs-allgather" / "log.txt"


def test_version_is_fast_and_plain():
    r = run_cli("--version")
    assert r.returncode == 0
    assert r.stdout.decode().startswith("rankdoctor ")


def test_json_schema_v1():
    r = run_cli("diagnose", str(OOM_CASE), "--format", "json")
    assert r.returncode == 1, r.stderr.decode()
    d = json.loads(r.stdout)
    assert d["schema"] == "rankdoctor.diagnosis/v1"
    assert d["verdict"] == "diagnosed"
    assert set(d) == {"schema", "verdict", "diagnoses", "ranks", "inputs"}
    top = d["diagnoses"][0]
    assert set(top) == {
        "entry", "class", "title", "confidence", "initiating_rank", "initiating_ranks", "collateral_ranks",
        "evidence", "root_cause", "fix", "verify", "missing",
    }
    assert top["class"] == "cuda-oom" and top["initiating_rank"] == 2 and top["initiating_ranks"] == [2]
    assert 0 < top["confidence"] <= 1
    assert 5 in top["collateral_ranks"]
    for ev in top["evidence"]:
        assert set(ev) == {"source", "line", "rank", "time", "text", "signature", "role"}
        assert ev["role"] in ("cause", "symptom", "context")
        assert ev["line"] >= 1
    # a step is {text, command}: the command is not glued onto the prose (DESIGN.md)
    assert top["fix"] and all(set(f) == {"text", "command"} and " — `" not in f["text"] for f in top["fix"])
    assert set(top["verify"]) == {"text", "command"} and top["verify"]["command"]
    assert set(d["ranks"]) == {"count", "seen"}
    assert d["inputs"][0]["lines"] == 6 and d["inputs"][0]["bytes"] > 0


def test_json_carries_the_report_s_notes_when_it_has_some():
    # a healthy run whose fp16 overflow skips stopped: the JSON says why it is not a failure, as
    # the text does, in the optional key "notes" (absent when the report has none, above)
    case = SCENARIOS / "real-holdout127" / "p4-healthy-ds-zero1-gpt2-fp16-initial-overflows" / "log.txt"
    r = run_cli("diagnose", str(case), "--format", "json")
    assert r.returncode == 0, r.stderr.decode()
    d = json.loads(r.stdout)
    from rankdoctor import schemas
    schemas.validate("diagnosis", d)
    assert d["verdict"] == "no-failure-found" and d["diagnoses"] == []
    assert any("read as a passing streak" in n for n in d["notes"])
    text = run_cli("diagnose", str(case)).stdout.decode()
    assert all(n.split(": ")[0] in text for n in d["notes"])
    md = run_cli("diagnose", str(case), "--format", "markdown").stdout.decode()
    assert "- note: " in md and "read as a passing streak" in md


def test_text_report_names_what_where_why_and_what_to_do():
    r = run_cli("diagnose", str(DESYNC_CASE))
    out = r.stdout.decode()
    assert r.returncode == 1
    for word in ("collective-desync", "rank 0", "evidence", "fix", "verify", "log.txt:"):
        assert word in out, word


def test_markdown():
    r = run_cli("diagnose", str(OOM_CASE), "--format", "markdown")
    md = r.stdout.decode()
    assert md.startswith("## rankdoctor: Diagnosed")
    assert "| Initiating rank | 2" in md and "```" in md


def test_stdin_and_gzip_stdin():
    data = OOM_CASE.read_bytes()
    r = run_cli("diagnose", "-", "--format", "json", stdin=data)
    assert r.returncode == 1 and json.loads(r.stdout)["diagnoses"][0]["initiating_rank"] == 2
    r = run_cli("diagnose", "-", "--format", "json", stdin=gzip.compress(data))
    assert r.returncode == 1 and json.loads(r.stdout)["diagnoses"][0]["class"] == "cuda-oom"


def test_healthy_exit_zero():
    healthy = SCENARIOS / "lab" / "healthy-ddp-4r" / "console.log"
    r = run_cli("diagnose", str(healthy), "--format", "json")
    assert r.returncode == 0
    assert json.loads(r.stdout)["verdict"] == "no-failure-found"
    # the text and Markdown reports say what to do if the job did not end well all the same
    text = " ".join(run_cli("diagnose", str(healthy)).stdout.decode().split())
    assert "No failure stands" in text and "--hung" in text and "py-spy dump --pid" in text
    md = " ".join(run_cli("diagnose", str(healthy), "--format", "markdown").stdout.decode().split())
    assert "--hung" in md


def test_a_failure_nothing_explains_is_not_reported_as_no_signature():
    # bare C++ frames of a c10::Error in the heartbeat monitor, no message: the run reads as failed
    # (inconclusive, exit 3) with no hypothesis, and the report must not say that nothing fired
    log = SCENARIOS / "real-holdout55" / "pytorch-123969-shutdown-store-check-race-none" / "log.txt"
    r = run_cli("diagnose", str(log))
    text = " ".join(r.stdout.decode().split())  # as one line: the terminal report wraps
    assert r.returncode == 3
    assert "no explanation fits it" in text and "No failure stands" not in text
    md = " ".join(run_cli("diagnose", str(log), "--format", "markdown").stdout.decode().split())
    assert "no explanation fits it" in md


def test_inconclusive_exit_three_names_the_missing_fact(tmp_path):
    # only the collateral: one rank's watchdog line, nothing about who it waited for
    line = (SCENARIOS / "real" / "comms-11-peer-crash-funasr-rank2-oom" / "log.txt").read_text().splitlines()[-1]
    p = tmp_path / "rank5.log"
    p.write_text(line + "\n")
    r = run_cli("diagnose", str(p), "--format", "json")
    d = json.loads(r.stdout)
    assert r.returncode == 3, d
    assert d["verdict"] == "inconclusive"
    assert d["diagnoses"][0]["missing"], "an inconclusive answer names the fact to collect"
    assert any("torchrun" in m or "TORCH_FR" in m for m in d["diagnoses"][0]["missing"])


PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + os.urandom(2000)


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("image.png", PNG, "not a text log"),
        ("random.bin", os.urandom(100_000), "not a text log"),
        ("empty.log", b"", "empty"),
    ],
)
def test_garbage_in_one_line_error_exit_two(tmp_path, name, content, message):
    p = tmp_path / name
    p.write_bytes(content)
    r = run_cli("diagnose", str(p))
    err = r.stderr.decode()
    assert r.returncode == 2
    assert message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_missing_path_exit_two():
    r = run_cli("diagnose", "/nonexistent/log.txt")
    assert r.returncode == 2
    assert "no such file" in r.stderr.decode()
    assert "Traceback" not in r.stderr.decode()


def test_truncated_archive_is_a_partial_result(tmp_path):
    data = gzip.compress(OOM_CASE.read_bytes() * 50)
    p = tmp_path / "cut.log.gz"
    p.write_bytes(data[: len(data) * 3 // 4])
    r = run_cli("diagnose", str(p), "--format", "json")
    assert r.returncode in (1, 3), r.stderr.decode()
    assert "Traceback" not in r.stderr.decode()


def test_user_files_are_never_modified(tmp_path):
    import shutil

    case = tmp_path / "case"
    shutil.copytree(SCENARIOS / "lab" / "exception-rank2", case)
    before = {p: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns) for p in case.rglob("*") if p.is_file()}
    run_cli("diagnose", str(case), "--format", "json")
    run_cli("diagnose", str(case / "console.log"), "-o", str(case / "console.log"))
    after = {p: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns) for p in case.rglob("*") if p.is_file()}
    assert before == after


def test_kb_commands():
    r = run_cli("kb", "list", "--format", "json")
    rows = json.loads(r.stdout)
    assert len(rows) >= 30
    assert set(rows[0]) == {"id", "title", "class", "severity", "tags"}
    r = run_cli("kb", "show", "asymmetric-compile-collective-desync")
    assert r.returncode == 0 and "dynamic=False" in r.stdout.decode()
    r = run_cli("kb", "search", "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 3b000")
    assert r.returncode == 0 and "duplicate" in r.stdout.decode().splitlines()[0]
    r = run_cli("kb", "show", "no-such-entry")
    assert r.returncode == 2


def test_kb_list_piped_is_one_whole_line_per_entry_and_bad_choices_are_refused():
    r = run_cli("kb", "list")  # stdout is a pipe here
    lines = r.stdout.decode().splitlines()
    n = len(json.loads(run_cli("kb", "list", "--format", "json").stdout))
    assert len(lines) == n and all(len(ln.split("\t")) == 4 for ln in lines)
    assert "asymmetric-compile-collective-desync" in {ln.split("\t")[0] for ln in lines}
    r = run_cli("kb", "list", "--class", "nope")
    assert r.returncode == 2 and "collective-desync" in r.stderr.decode() and r.stdout == b""
    assert run_cli("kb", "list", "--format", "markdown").returncode == 2
    r = run_cli("-V")
    assert r.returncode == 0 and r.stdout.decode().startswith("rankdoctor ")
    assert run_cli("fr", str(SCENARIOS / "lab-matrix" / "exception-w3-r1" / "fr"), "-f", "html").returncode == 2
    assert run_cli("stacks", str(SCENARIOS / "lab-stacks" / "silent-hang-pyspy-w3-r2"), "-f", "markdown").returncode == 2


def test_torchrun_logdir_tree(tmp_path):
    r = run_cli("diagnose", str(SCENARIOS / "lab" / "straggler-rank0" / "logs"), "--format", "json")
    d = json.loads(r.stdout)
    assert d["diagnoses"][0]["class"] == "straggler-timeout"
    assert d["diagnoses"][0]["initiating_rank"] == 0
    assert d["ranks"]["seen"] == [0, 1, 2, 3]


def test_directory_with_a_binary_and_an_unreadable_file(tmp_path):
    import shutil

    d = tmp_path / "logs"
    d.mkdir()
    shutil.copy(OOM_CASE, d / "rank2.log")
    (d / "core.png").write_bytes(PNG)
    bad = d / "locked.log"
    bad.write_text("x\n")
    bad.chmod(0)
    r = run_cli("diagnose", str(d), "--format", "json")
    assert r.returncode == 1, r.stderr.decode()
    assert json.loads(r.stdout)["diagnoses"][0]["class"] == "cuda-oom"
    assert "Traceback" not in r.stderr.decode()


def test_serve_on_a_busy_port_is_one_line_and_exit_2():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        r = run_cli("serve", "--port", str(s.getsockname()[1]))
    err = r.stderr.decode().strip().splitlines()
    assert r.returncode == 2 and len(err) == 1 and "cannot listen" in err[0] and r.stdout == b""


def test_times_are_shown_readably_and_kept_iso_in_the_json():
    from rankdoctor.diagnose.model import Evidence

    def ev(t):
        return Evidence("x.log", 1, 0, t, "line", "sig", "cause")

    assert ev("--12-02T00:08:28.533000").shown_time == "12-02 00:08:28.533"
    assert ev("2026-12-02T00:16:10.765000").shown_time == "2026-12-02 00:16:10.765"
    assert ev(None).shown_time is None
    case = SCENARIOS / "lab-matrix" / "exception-w3-r1" / "console.log"
    text = run_cli("diagnose", str(case), "-q").stdout.decode()
    assert "--12-02T" not in text and "12-02 00:08:28.533" in text
    doc = json.loads(run_cli("diagnose", str(case), "-q", "--format", "json").stdout)
    assert any(e["time"] == "--12-02T00:08:28.533000" for e in doc["diagnoses"][0]["evidence"])


def test_help_shows_what_to_type_not_python_types():
    import re

    for cmd in (["diagnose"], ["fr"], ["stacks"], ["kb", "list"], ["kb", "show"], ["serve"], ["schema"], ["site"], []):
        out = run_cli(*cmd, "--help").stdout.decode()
        assert out and not re.search(r"<(?:bool|str|int|path|list\[)", out), (cmd, out)


def test_piped_text_report_keeps_paths_whole():
    case = SCENARIOS / "real-holdout15" / "nanotron-grouping-texts-rank0-straggler" / "log.txt"
    out = run_cli("diagnose", str(case), "-q").stdout.decode()  # stdout is a pipe here
    assert f"{case}:1" in out or f"{case.relative_to(SCENARIOS.parent.parent)}:1" in out, out[:2000]


def test_repeat_note_says_rank_or_ranks():
    from rankdoctor.diagnose.model import Evidence

    e = Evidence("x.log", 1, 0, None, "line", "sig", "symptom", repeats=1, repeat_ranks=[2])
    assert e.repeats_note == "(+1 similar on rank 2)"
    e = Evidence("x.log", 1, 0, None, "line", "sig", "symptom", repeats=5, repeat_ranks=[1, 2, 3, 7])
    assert e.repeats_note == "(+5 similar on ranks 1-3,7)"
    assert Evidence("x.log", 1, 0, None, "line", "sig", "symptom").repeats_note == ""


def test_config_file_sets_defaults_and_the_command_line_wins(tmp_path):
    log = SCENARIOS / "real-holdout17" / "nora-8-save-state-main-only" / "log.txt"
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "train"\n\n[tool.rankdoctor]\nformat = "json"\nquiet = true\n')
    sub = tmp_path / "jobs" / "run1"
    sub.mkdir(parents=True)
    out = run_cli("diagnose", str(log), cwd=sub)  # found from a sub-folder, as git finds its config
    assert json.loads(out.stdout)["schema"] == "rankdoctor.diagnosis/v1"
    out = run_cli("diagnose", "-f", "markdown", str(log), cwd=sub)
    assert not out.stdout.lstrip().startswith(b"{")
    # rankdoctor.toml takes its keys at the top level; a misspelt key is one line and exit 2
    (sub / "rankdoctor.toml").write_text('formt = "json"\n')
    out = run_cli("diagnose", str(log), cwd=sub)
    assert out.returncode == 2
    assert out.stderr.decode().strip().count("\n") == 0 and "unknown key(s) formt" in out.stderr.decode()


def test_shell_completion_is_offered():
    # --show-completion is a flag: Typer finds the shell from the process tree (shellingham),
    # as at a user's prompt; run it from bash so the test does not depend on who started pytest
    # (a second command keeps bash from exec-ing the CLI in its own place; it passes on the
    # CLI's exit status)
    cmd = f"{shlex.quote(sys.executable)} -m rankdoctor.cli --show-completion; exit $?"
    out = subprocess.run(["bash", "-c", cmd], capture_output=True, cwd=ROOT)
    assert out.returncode == 0 and b"_rankdoctor_completion" in out.stdout, out.stderr


def run_on_terminal(*args: str, columns: int = 120) -> tuple[int, str]:
    """Run the CLI with stdout on a pseudo-terminal (as a user at a shell sees it)."""
    import pty

    main, sub = pty.openpty()
    env = {**os.environ, "COLUMNS": str(columns), "TERM": "xterm", "NO_COLOR": "1"}
    p = subprocess.Popen([sys.executable, "-m", "rankdoctor.cli", *args], stdout=sub, stderr=subprocess.PIPE, cwd=ROOT, env=env)
    os.close(sub)
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not data:
            break
        chunks.append(data)
    os.close(main)
    rc = p.wait(timeout=120)
    text = b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
    return rc, re.sub(r"\x1b\[[0-9;]*m", "", text)  # styles (bold, dim) are not width


def test_kb_search_lists_titles_piped_and_on_a_terminal():
    r = run_cli("kb", "search", "NCCL communicator was aborted")
    lines = r.stdout.decode().splitlines()
    assert r.returncode == 0 and lines
    first = lines[0].split("\t")
    assert len(first) == 4 and first[0] == "nccl-communicator-aborted" and "aborted" in first[2].lower()
    rc, out = run_on_terminal("kb", "search", "NCCL communicator was aborted")
    assert rc == 0 and "why it matched" in out and "nccl-communicator-aborted" in out
    assert "\t" not in out


def test_terminal_output_is_a_table_and_pipes_get_whole_lines():
    rc, out = run_on_terminal("kb", "list", "--class", "collective-desync")
    assert rc == 0 and "severity" in out and out.rstrip().endswith("entries")
    case = SCENARIOS / "lab" / "compile-desync"
    rc, out = run_on_terminal("diagnose", str(case), columns=80)
    assert rc in (0, 1, 3) and "collective-desync" in out
    assert max(len(ln) for ln in out.splitlines()) <= 80  # a terminal gets lines that fit it
    piped = run_cli("diagnose", str(case)).stdout.decode()
    assert "collective-desync" in piped
    # piped output is not cut to 80 columns: a long evidence path stays whole on its line
    assert any(len(ln) > 80 for ln in piped.splitlines())


def test_top_level_help_gives_each_command_one_line():
    out = run_cli("--help").stdout.decode()
    box = out.split("Commands", 1)[1].split("╰", 1)[0]
    rows = [ln.strip("│ ").split()[0] for ln in box.splitlines() if ln.startswith("│")]
    assert rows == ["diagnose", "watch", "fr", "stacks", "serve", "schema", "site", "rules", "compare", "lsp", "redact", "check", "kb", "history"]  # no summary runs over a line
