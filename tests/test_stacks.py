"""Stack dumps (py-spy text and --json, faulthandler) and ranks grouped by where they are."""

from __future__ import annotations

import json
from pathlib import Path

from rankdoctor.ingest.stacks import group_by_stack, outliers, parse_stack_dump, read_stack_dumps

from .conftest import SCENARIOS, run_cli

STACKS = Path(__file__).parent / "scenarios" / "lab-stacks"
PYSPY = STACKS / "silent-hang-pyspy-w4-r1"
FAULTHANDLER = STACKS / "silent-hang-faulthandler-w3-r1"


def test_pyspy_text_and_json_read_the_same_frames():
    text = parse_stack_dump((PYSPY / "pyspy_rank1.txt").read_text(), "pyspy_rank1.txt")
    js = parse_stack_dump((PYSPY / "pyspy_rank1.json").read_text(), "pyspy_rank1.json")
    assert text.fmt == "py-spy" and js.fmt == "py-spy-json"
    assert text.pid == js.pid
    assert [(f.func, f.line) for f in text.main.frames] == [(f.func, f.line) for f in js.main.frames]
    assert str(text.main.frames[0]) == "read_shard (silent_hang.py:27)"


def test_faulthandler_dump_in_a_stderr_log():
    (stderr,) = FAULTHANDLER.glob("logs/*/attempt_0/1/stderr.log")
    d = parse_stack_dump(stderr.read_text(), str(stderr))
    assert d.fmt == "faulthandler"
    assert d.main.frames[0].func == "read_shard" and d.main.frames[0].line == 27


def test_the_rank_blocked_elsewhere_is_the_odd_one_out():
    for folder in (PYSPY, FAULTHANDLER):
        dumps, skipped = read_stack_dumps([folder])
        groups = group_by_stack(dumps)
        odd = outliers(groups)
        assert [g.ranks for g in odd] == [[1]], folder
        assert groups[0].where[0].func == "_engine_run_backward"


def test_cli_text_and_json():
    r = run_cli("stacks", str(PYSPY))
    out = r.stdout.decode()
    assert r.returncode == 1  # odd ranks found
    assert "[rank 1]  <- the odd one(s) out" in out and "in read_shard (silent_hang.py:27)" in out
    r = run_cli("stacks", str(PYSPY), "--format", "json")
    data = json.loads(r.stdout)
    assert data["schema"] == "rankdoctor.stacks/v1"
    assert [g["ranks"] for g in data["groups"] if g["odd"]] == [[1]]


def test_no_dumps_is_a_one_line_error(tmp_path):
    (tmp_path / "a.log").write_text("INFO train: step 1 loss 2.0\n")
    (tmp_path / "b.bin").write_bytes(bytes(range(256)) * 64)
    r = run_cli("stacks", str(tmp_path))
    err = r.stderr.decode()
    assert r.returncode == 2 and err.count("\n") == 1 and "no stack dumps found" in err
    r = run_cli("stacks", str(tmp_path / "missing"))
    assert r.returncode == 2 and "no such file" in r.stderr.decode()


def test_malformed_json_is_not_a_dump():
    assert parse_stack_dump('[{"frames": 3}]') is None
    assert parse_stack_dump("[not json") is None
    assert parse_stack_dump("[" * 100_000 + "]" * 100_000) is None  # hostile nesting


def test_diagnose_weighs_the_stacks_with_the_logs():
    # py-spy dumps next to the console: left out of the log scan, weighed as evidence
    r = run_cli("diagnose", str(PYSPY), "--format", "json")
    d = json.loads(r.stdout)
    assert d["diagnoses"][0]["class"] == "straggler-timeout" and d["diagnoses"][0]["initiating_rank"] == 1
    assert not any("pyspy_rank" in i["path"] for i in d["inputs"])  # the dumps are not scanned as logs
    # faulthandler dumps inside each rank's stderr.log: the logs are scanned and the stacks read
    r = run_cli("diagnose", str(FAULTHANDLER), "--format", "json")
    d = json.loads(r.stdout)
    assert d["diagnoses"][0]["initiating_rank"] == 1


def test_a_stack_inside_a_collective_is_not_a_straggler_stack():
    from rankdoctor.ingest.stacks import Frame, in_collective

    assert in_collective([Frame("all_reduce", "torch/distributed/distributed_c10d.py", 3252)])
    assert not in_collective([Frame("read_shard", "silent_hang.py", 27), Frame("main", "silent_hang.py", 38)])


def test_diagnose_with_nothing_but_stack_dumps_says_what_it_read(tmp_path):
    for f in PYSPY.glob("pyspy_rank*.txt"):
        (tmp_path / f.name).write_bytes(f.read_bytes())
    r = run_cli("diagnose", str(tmp_path))
    out = r.stdout.decode()
    # stacks of live processes are taken of a job that stopped: read as a hang, the rank
    # elsewhere than the others named, but never stated as a diagnosis (no line shows a failure)
    assert "INCONCLUSIVE" in out and "4 stack dump(s) of live processes" in out
    assert "Rank 1 never joined the collective the others waited in" in out


def test_diagnose_with_stack_dumps_of_a_hung_job_alone_names_the_odd_rank(tmp_path):
    # lab-pg2d: rank 4 holds the GIL in its own code while the other 7 wait inside collectives;
    # stacks only, no logs: most ranks waiting in a collective is how a hung job looks
    src = SCENARIOS / "lab-pg2d" / "hang-gil-tp2dp4-r4-s3" / "stacks"
    for f in src.iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    r = run_cli("diagnose", str(tmp_path), "--format", "json")
    d = json.loads(r.stdout)
    assert r.returncode in (1, 3) and d["diagnoses"][0]["initiating_rank"] == 4
    assert d["diagnoses"][0]["class"] == "straggler-timeout"


P2P_ORDER = SCENARIOS / "lab-pg2d" / "p2p-order-pp2tp2dp2-r1-s2"


def test_pyspy_locals_text_and_json_and_the_p2p_wait_cycle():
    """py-spy --locals: the recv's ``src`` says whom each rank waits for; ranks 1 and 5 (a
    stage-0 rank that posted its recv before its send, and its stage-1 peer) wait on each
    other, rank 0 waits on rank 4, which is not in a recv."""
    from rankdoctor.ingest.stacks import p2p_cycles, p2p_waits

    text = parse_stack_dump((P2P_ORDER / "stacks" / "rank1.txt").read_text(), "rank1.txt")
    js = parse_stack_dump((P2P_ORDER / "stacks" / "rank1.json").read_text(), "rank1.json")
    for d in (text, js):
        recv = d.main.frames[0]
        assert recv.func == "recv" and recv.args["src"] == "5" and recv.args["group_src"] == "None"
        assert "Arguments:" not in [f.func for f in d.main.frames]
    assert [(f.func, f.line) for f in text.main.frames] == [(f.func, f.line) for f in js.main.frames]
    dumps, _ = read_stack_dumps([P2P_ORDER / "stacks"])
    waits = p2p_waits(dumps)
    assert waits[1] == ("recv", 5) and waits[5] == ("recv", 1) and waits[0] == ("recv", 4)
    assert p2p_cycles(waits) == {1, 5}
    assert p2p_cycles({0: ("recv", 4), 4: ("send", 7)}) == set()
    # "locals" that is not a list (a hostile or foreign dump): no arguments, not a failure
    odd = parse_stack_dump('[{"thread_name": "MainThread", "frames": [{"name": "recv", "line": 3, "locals": 5}]}]', "x.json")
    assert odd.main.frames[0].func == "recv" and dict(odd.main.frames[0].args) == {}
    # arguments and locals are not part of where a rank is: they never split a group
    assert text.main.frames[0] == type(recv)(recv.func, recv.file, recv.line)


def test_stacks_command_names_the_p2p_cycle():
    r = run_cli("stacks", str(P2P_ORDER / "stacks"))
    assert r.returncode == 1
    assert b"point-to-point wait cycle: rank 1 in recv from rank 5, rank 5 in recv from rank 1" in r.stdout


def test_diagnose_names_both_ranks_of_a_p2p_wait_cycle():
    """py-spy --locals stacks of an 8-rank pipeline job where rank 1 posted its recv before its
    send: ranks 1 and 5 wait in recv on each other, the TP/DP peers wait behind them. diagnose
    names the pair (either may have posted its calls out of order) and the rest as collateral."""
    import rankdoctor

    d = rankdoctor.diagnose([str(P2P_ORDER)])
    top = d.diagnoses[0]
    assert top.entry == "pipeline-p2p-unmatched-send-recv" and top.klass == "collective-desync"
    assert list(top.initiating_ranks) == [1, 5] and top.initiating_rank == 1
    assert sorted(top.collateral_ranks) == [0, 2, 3, 4, 6, 7]
    assert "rank 1 in recv from rank 5, rank 5 in recv from rank 1" in top.root_cause


def test_label_also_acceptable_ranks_counts_the_pair(tmp_path):
    from rankdoctor.evaluate import Outcome, read_label

    label = read_label(P2P_ORDER)
    assert label["rank"] == 1 and label["also_ranks"] == [[1, 5]]
    pair = Outcome("x", "collective-desync", 1, [], "collective-desync", 1, "diagnosed", None, [1, 5], 0.9, label["also_ranks"])
    other = Outcome("x", "collective-desync", 1, [], "collective-desync", 5, "diagnosed", None, [5, 6], 0.9, label["also_ranks"])
    assert pair.rank_ok and not pair.confident_wrong
    assert not other.rank_ok and other.confident_wrong


def test_a_p2p_wait_cycle_alone_is_a_failure():
    """Stack dumps only, no logs: two ranks blocked in recv on each other can never move on,
    so the dumps alone show a deadlock (a split of ranks over places alone would not)."""
    import rankdoctor

    d = rankdoctor.diagnose([str(P2P_ORDER / "stacks")])
    assert d.verdict != "no-failure-found"
    assert d.diagnoses[0].entry == "pipeline-p2p-unmatched-send-recv" and list(d.diagnoses[0].initiating_ranks) == [1, 5]


def test_a_large_pyspy_json_dump_among_logs_is_found_and_a_large_bracketed_log_is_not_a_dump(tmp_path):
    # over SMALL_LOG only the head of a log is read first: a py-spy JSON list ("[" then "{")
    # is read whole, a log whose lines start with "[I1130 ..." is not
    from rankdoctor.ingest.sources import expand_inputs
    from rankdoctor.ingest.stacks import SMALL_LOG, stacks_among

    data = json.loads((PYSPY / "pyspy_rank1.json").read_text())
    data[0]["frames"][0]["locals"] = [{"name": "blob", "repr": "x" * SMALL_LOG}]
    (tmp_path / "pyspy_rank1.json").write_text(json.dumps(data, indent=2))
    line = "[I1130 05:07:27.467367083 TCPStore.cpp:271] [c10d - debug] Thread 1 started on port = 43191.\n"
    (tmp_path / "rank_0.log").write_text(line * (2 * SMALL_LOG // len(line)))
    dumps, pure = stacks_among(expand_inputs([str(tmp_path)]))
    assert [d.source for d in dumps] == [str(tmp_path / "pyspy_rank1.json")] and dumps[0].rank == 1
    assert pure == {str(tmp_path / "pyspy_rank1.json")}


def test_pyspy_output_pasted_into_a_log_keeps_the_log_a_log(tmp_path):
    # a real py-spy dump file is read as a dump and left out of the log scan; py-spy output
    # pasted among other lines (ps, nvidia-smi, dmesg in an incident write-up) is a log too
    from rankdoctor.ingest.sources import expand_inputs
    from rankdoctor.ingest.stacks import stacks_among

    (tmp_path / "pyspy_rank1.txt").write_text((PYSPY / "pyspy_rank1.txt").read_text())
    dump = (PYSPY / "pyspy_rank1.txt").read_text()
    other = "".join(f"ura81os   28006{i} 88.0  4.8 17510468232 25509144 ? Rl  00:36 218:03 python\n" for i in range(8))
    (tmp_path / "incident.log").write_text(dump + other + "[Sat Mar  4 04:10:52 2023] INFO: task python:280058 blocked for more than 120 seconds.\n")
    dumps, pure = stacks_among(expand_inputs([str(tmp_path)]))
    assert {d.source for d in dumps} == {str(tmp_path / "pyspy_rank1.txt"), str(tmp_path / "incident.log")}
    assert pure == {str(tmp_path / "pyspy_rank1.txt")}


REAL = SCENARIOS / "real-holdout49" / "accelerate-3104-zero3-mixtral-allgather-hang" / "log.txt"
RANK0 = SCENARIOS / "real-holdout39" / "pytorch-87995-rank0-dataloader-hang" / "log.txt"


def test_pyspy_threads_pasted_without_process_lines_are_one_process_per_main_thread():
    """An issue thread's paste of two processes' py-spy output, cut to their threads: each
    "MainThread" starts the next process (one file, two dumps)."""
    from rankdoctor.ingest.stacks import parse_stack_dumps

    dumps = parse_stack_dumps(REAL.read_text(), "log.txt")
    assert [d.fmt for d in dumps] == ["py-spy", "py-spy"] and [d.rank for d in dumps] == [None, None]
    assert [d.main.frames[0].func for d in dumps] == ["all_gather_coalesced", "all_gather_coalesced"]
    assert [d.source for d in dumps] == ["log.txt#1", "log.txt#2"]


def test_a_heading_just_above_a_pasted_dump_gives_its_rank():
    from rankdoctor.ingest.stacks import parse_stack_dumps

    (dump,) = parse_stack_dumps(RANK0.read_text(), "log.txt")
    assert dump.rank == 0 and dump.main.frames[0].func == "wait"
    # a long line above (a log line, not a heading) names no rank
    long = "x" * 90 + " rank 3\n" + "\n".join(RANK0.read_text().splitlines()[2:])
    assert parse_stack_dumps(long, "log.txt")[0].rank is None


def test_a_crash_dump_is_told_from_a_live_one():
    # the lab's hung rank was aborted from outside: faulthandler wrote where it was as it died
    (stderr,) = FAULTHANDLER.glob("logs/*/attempt_0/1/stderr.log")
    assert parse_stack_dump(stderr.read_text(), "s").crash
    live = stderr.read_text().replace("Fatal Python error: Aborted", "Timeout (0:10:00)!")
    assert not parse_stack_dump(live, "s").crash


def test_live_stacks_with_no_failure_line_read_as_a_hang_not_healthy(tmp_path):
    """Nobody dumps the stacks of a job that runs well: stacks of live processes with no
    failure line are a hang (inconclusive, with the stacks to collect next), never
    "no failure found". One rank's stack in its own data loading names that rank."""
    import rankdoctor

    d = rankdoctor.diagnose([str(RANK0)])
    assert d.verdict == "inconclusive"
    top = d.diagnoses[0]
    assert top.klass == "straggler-timeout" and top.initiating_rank == 0
    assert "stack dumps of the live processes were taken" in top.root_cause
    assert any("stack dump(s) of live processes" in w for w in d.warnings)
    assert any("py-spy dump --pid" in m for m in top.missing)


GDB = SCENARIOS / "real-holdout65" / "pytorch-52916-ddp-init-hang-gdb-bootstrap" / "log.txt"


def test_a_gdb_backtrace_of_a_live_process_is_a_stack_dump_and_a_hang():
    """gdb's "thread apply all bt" output (pytorch/pytorch#52916: rank 0's NCCL init thread
    blocked in the bootstrap's accept) is read as native frames; a live process's backtrace
    says the job hung, in its first collective here, and is never "no failure found"."""
    import rankdoctor

    d = parse_stack_dump(GDB.read_text(), str(GDB))
    assert d.fmt == "gdb" and not d.crash
    assert [f.func for f in d.main.frames[:3]] == ["__libc_accept", "bootstrapNetAccept", "bootstrapInit"]
    assert str(d.main.frames[1]) == "bootstrapNetAccept (bootstrap.cc:106)"
    dx = rankdoctor.diagnose([str(GDB)])
    assert dx.verdict == "inconclusive"
    assert any("stack dump(s) of live processes" in w for w in dx.warnings)
    # a core file's backtrace is where a process died, not where a live one waits
    core = "Program terminated with signal SIGSEGV, Segmentation fault.\n" + GDB.read_text()
    assert parse_stack_dump(core, "core").crash
