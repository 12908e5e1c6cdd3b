"""Cross-rank reasoning on logs assembled from real line formats (corpus and lab lines,
with rank numbers varied the way a bigger job prints them)."""

from __future__ import annotations

import re

import pytest

from rankdoctor.diagnose.collectives import compress_ranks
from rankdoctor.diagnose.engine import diagnose, fingerprint
from rankdoctor.diagnose.traceback import user_call_site
from rankdoctor.scan import scan_text

from .conftest import SCENARIOS

# real formats (../shared/corpus/real/comms-11-peer-crash-funasr-rank2-oom/log.txt)
OOM = (
    "[rank{r}]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 336.00 MiB. GPU  has a total "
    "capacity of 79.15 GiB of which 141.25 MiB is free. Process 2109115 has 78.99 GiB memory in use. Of the allocated "
    "memory 77.21 GiB is allocated by PyTorch, and 283.51 MiB is reserved by PyTorch but unallocated."
)
WATCHDOG_NEW = (
    "[rank{r}]:[E ProcessGroupNCCL.cpp:563] [Rank {r}] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={n}, NumelOut={n}, Timeout(ms)=600000) ran for 600037 milliseconds before timing out."
)
PG_STATUS = (
    "[rank{r}]:[E709 17:05:38.162814866 ProcessGroupNCCL.cpp:2271] [PG ID 0 PG GUID 0(default_pg) Rank {r}]  failure "
    "detected by watchdog at work sequence id: {seq} PG status: last enqueued work: {enq}, last completed work: {done}"
)


def _diag(kb, text: str):
    return diagnose(kb, scan_text(kb, text))


def test_thousand_ranks_one_oom(kb):
    lines = [WATCHDOG_NEW.format(r=r, seq=15734, op="ALLREDUCE", n=220084533) for r in range(1024) if r != 517]
    lines.insert(300, OOM.format(r=517))
    d = _diag(kb, "\n".join(lines) + "\n")
    top = d.diagnoses[0]
    assert (top.klass, top.initiating_rank) == ("cuda-oom", 517)
    assert len(top.collateral_ranks) == 1023
    # 1,023 identical timeouts are one evidence line, not a thousand
    timeouts = [e for e in top.evidence if "Watchdog caught" in e.text]
    assert len(timeouts) == 1 and timeouts[0].repeats == 1022
    assert d.ranks_count == 1024


def test_same_collective_everywhere_one_rank_silent_is_a_straggler(kb):
    lines = [WATCHDOG_NEW.format(r=r, seq=2, op="ALLREDUCE", n=1) for r in range(8) if r != 6]
    lines.append("[rank7]: some unrelated info line")
    d = _diag(kb, "\n".join(lines) + "\n")
    top = d.diagnoses[0]
    assert top.klass == "straggler-timeout" and top.initiating_rank == 6
    # rank 6 may have stalled or died: without its own output the report may stay
    # inconclusive, but then it asks for exactly that output
    assert d.verdict == "diagnosed" or any("rank 6, which printed nothing" in m for m in top.missing), top.missing


def test_different_op_at_same_seq_is_a_desync(kb):
    lines = [WATCHDOG_NEW.format(r=r, seq=77, op="_ALLGATHER_BASE", n=2359296) for r in range(8) if r != 3]
    lines.append(WATCHDOG_NEW.format(r=3, seq=77, op="BROADCAST", n=80))
    d = _diag(kb, "\n".join(lines) + "\n")
    top = d.diagnoses[0]
    assert (top.klass, top.initiating_rank) == ("collective-desync", 3)
    assert "odd one out" in top.root_cause


def test_last_enqueued_counters_name_the_extra_collective(kb):
    # rank 0 enqueued one collective more than the others (all report the same SeqNum)
    lines = [PG_STATUS.format(r=r, seq=11, enq=10, done=10) for r in range(1, 4)]
    lines.insert(0, PG_STATUS.format(r=0, seq=11, enq=11, done=10))
    d = _diag(kb, "\n".join(lines) + "\n")
    top = d.diagnoses[0]
    assert (top.klass, top.initiating_rank) == ("collective-desync", 0)


def test_two_equal_camps_name_no_culprit(kb):
    lines = [WATCHDOG_NEW.format(r=0, seq=5, op="ALLREDUCE", n=4), WATCHDOG_NEW.format(r=1, seq=5, op="BROADCAST", n=4)]
    top = _diag(kb, "\n".join(lines) + "\n").diagnoses[0]
    assert top.klass == "collective-desync" and top.initiating_rank is None


def test_srun_prefixed_log(kb):
    # srun -l puts "N: " in front of every line of task N
    body = [f"{r}: step 10 loss 2.31" for r in range(4)] * 3
    body += [f"{r}: " + WATCHDOG_NEW.format(r=r, seq=40, op="ALLREDUCE", n=1024).split(":", 1)[1] for r in (0, 1, 3)]
    body.append("2: " + OOM.format(r=2).split(": ", 1)[1])
    d = _diag(kb, "\n".join(body) + "\n")
    top = d.diagnoses[0]
    assert (top.klass, top.initiating_rank) == ("cuda-oom", 2)


def test_root_cause_block_is_not_trusted_over_the_waiting_ranks(kb):
    # lab run: torchrun's Root Cause names rank 3, which only timed out first
    text = (SCENARIOS / "lab" / "straggler-rank0" / "console.log").read_text()
    assert re.search(r"Root Cause \(first observed failure\):\n\[0\]:\n.*\n.*\n\s+rank\s+: 3", text)
    top = _diag(kb, text).diagnoses[0]
    assert (top.klass, top.initiating_rank) == ("straggler-timeout", 0)


def test_healthy_nccl_info_and_banners_fire_nothing(kb):
    lines = []
    for p in sorted((SCENARIOS / "real").glob("*/log.txt")):
        for ln in p.read_text(errors="replace").splitlines():
            if "NCCL INFO" in ln and not re.search(r"->|closed|WARN|error|fail", ln, re.I):
                lines.append(ln)
    lines.append(
        "W0104 13:46:27.896000 80302 torch/distributed/run.py:792] Setting OMP_NUM_THREADS environment variable for each process "
        "to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in "
        "your application as needed."
    )
    assert len(lines) > 15
    d = _diag(kb, "\n".join(lines) + "\n")
    assert d.verdict == "no-failure-found", [(f.entry, f.evidence[0].text) for f in d.diagnoses]


def test_fingerprint_masks_ranks_and_numbers():
    a = fingerprint(WATCHDOG_NEW.format(r=3, seq=9, op="ALLREDUCE", n=10))
    b = fingerprint(WATCHDOG_NEW.format(r=700, seq=9, op="ALLREDUCE", n=10))
    assert a == b


def test_compress_ranks():
    assert compress_ranks([0, 1, 2, 3, 5, 7, 8]) == "0-3,5,7-8"


def test_user_call_site_skips_library_frames():
    ctx = [
        "[rank2]: Traceback (most recent call last):",
        '[rank2]:   File "/work/main/lab/exception_rank2.py", line 40, in main',
        '[rank1]:   File "/other/rank/file.py", line 1, in x',
        '[rank2]:   File "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1784, in _call_impl',
    ]
    assert user_call_site(ctx, 2) == "/work/main/lab/exception_rank2.py:40 in main"


def test_sigkill_sent_by_the_launcher_is_not_an_oom(kb):
    # torchrun escalates to SIGKILL when a worker ignores SIGTERM (format of
    # torch/distributed/elastic/multiprocessing/api.py, lines as a torch 2.13 run printed them)
    text = "\n".join(
        [
            "[default0]:[rank0]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:129] "
            "Timed out waiting 15000ms for send operation to complete",
            "W1130 05:59:55.433000 15440 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 15447 closing signal SIGTERM",
            "W1130 06:00:25.434000 15440 torch/distributed/elastic/multiprocessing/api.py:1047] Unable to shutdown process 15447 via 15, "
            "forcefully exiting via 9",
            "E1130 06:00:25.566000 15440 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) local_rank: 0 "
            "(pid: 15446) of binary: /opt/venv/bin/python",
            "Failures:",
            "[1]:",
            "  time      : 2026-11-30_06:00:25",
            "  host      : localhost",
            "  rank      : 1 (local_rank: 1)",
            "  exitcode  : -9 (pid: 15447)  (SIGKILL)",
            "  error_file: <N/A>",
            "  traceback : Signal 9 (SIGKILL) received by PID 15447",
        ]
    )
    d = _diag(kb, text + "\n")
    assert all(f.klass != "host-oom" for f in d.diagnoses[:1]), [(f.entry, f.initiating_rank) for f in d.diagnoses]


def _newcomer_logs(root, silent: int = 37, world: int = 64):
    """64 per-rank logs with timestamps, as a Python-logging training script writes them:
    every rank logs its steps every 10 s; rank ``silent`` stops at 10:33:12 (hung in its
    own code, no error line), the others log two more minutes of steps until they block in
    the next all-reduce, and at 10:45:10 their NCCL watchdogs fire (format of
    WATCHDOG_NEW, from the corpus)."""
    import datetime as dt

    t0 = dt.datetime(2026, 5, 1, 10, 30, 2)
    logs = root / "logs"
    logs.mkdir()
    for r in range(world):
        out = []
        last = dt.datetime(2026, 5, 1, 10, 33, 12) if r == silent else dt.datetime(2026, 5, 1, 10, 35, 10)
        t, step = t0, 1200
        while t <= last:
            out.append(f"{t:%Y-%m-%d %H:%M:%S},{(r * 7) % 1000:03d} INFO train: step {step} loss {2.31 - step / 1e5:.4f} lr 3.0e-04")
            t += dt.timedelta(seconds=10)
            step += 1
        if r != silent:
            ts = dt.datetime(2026, 5, 1, 10, 45, 10)
            out.append(f"{ts:%Y-%m-%d %H:%M:%S},512 " + WATCHDOG_NEW.format(r=r, seq=41235, op="ALLREDUCE", n=16777216))
        (logs / f"rank{r}.log").write_text("\n".join(out) + "\n")
    return logs


def test_newcomer_64_ranks_one_goes_silent(tmp_path):
    """The issue's newcomer case: the tool must make the comparison itself and name rank
    37 from its silence, not tell the user to tail the logs and compare by hand."""
    import json

    from .conftest import run_cli

    logs = _newcomer_logs(tmp_path)
    r = run_cli("diagnose", str(logs), "--format", "json")
    d = json.loads(r.stdout)
    top = d["diagnoses"][0]
    assert top["class"] == "straggler-timeout", top
    assert top["initiating_rank"] == 37 and top["initiating_ranks"] == [37]
    assert "Rank 37 went silent at 2026-05-01 10:33:12" in top["root_cause"]
    assert not any("tail -n" in m for m in top["missing"])
    assert 36 in top["collateral_ranks"] and 37 not in top["collateral_ranks"]


def test_message_subject_names_the_printing_rank():
    from rankdoctor.ingest.prefix import parse_prefix, subject_rank

    def subject(line: str):
        a, at = parse_prefix(line)
        return subject_rank(line[at:])

    # lab/nan_first_rank.py output (tests/scenarios/lab-matrix/nan-first-rank-w3-r2-notee/console.log)
    assert subject("2026-12-02 00:16:18,306 WARNING train: rank 2 step 6: loss is inf (overflow), continuing") == 2
    # ../shared/corpus/real/comms2-10-desync-fsdp-t5-rank0-reduce-vs-allgather/log.txt
    assert subject("[E ProcessGroupNCCL.cpp:737] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3742816, OpType=REDUCE, Timeout(ms)=1800000)") == 0
    # a mismatch report and torchrun's failure summary name other ranks, not the printer
    assert subject("Rank 0 is running collective: CollectiveFingerPrint(SequenceNumber=3, OpType=BROADCAST)") is None
    assert subject("  rank      : 1 (local_rank: 1)") is None
    assert subject("2026-12-02 00:16:18,410 ERROR train: Loss is nan, stopping training") is None


def test_unprefixed_console_names_the_first_rank_to_overflow(kb):
    case = SCENARIOS / "lab-matrix" / "nan-first-rank-w3-r2-notee" / "console.log"
    d = diagnose(kb, scan_text(kb, case.read_bytes()))
    top = d.diagnoses[0]
    assert (top.klass, top.initiating_rank) == ("nan-divergence", 2)


def test_two_ranks_survivor_of_a_peer_that_finished_issued_the_extra_collective(kb):
    # rank 1 ran all its steps and exited; rank 0, two steps behind, was left in an
    # all_reduce rank 1 never issued: "Connection closed by peer" is not a crash of rank 1
    case = SCENARIOS / "lab-matrix" / "extra-collective-same-shape-w2-r0"
    from rankdoctor.diagnose.features import outlived_peers
    from rankdoctor.evaluate import weigh_case
    from rankdoctor.scan import Scanner

    w = weigh_case(kb, Scanner(kb), case, use_fr=False)
    assert w.table.row(0).accuses == {1}  # the two-rank peer of "Connection closed by peer"
    assert w.table.row(1).progress == 7  # its last step counter, not its last line ("finished")
    assert outlived_peers(w.table) == ({0}, {1})
    top = w.scored[0].hyp
    assert top.entry.class_ == "collective-desync" and top.ranks == (0,)


def test_gloo_size_check_in_a_two_rank_job_names_the_other_side(kb):
    from rankdoctor.diagnose.attribution import attribute

    case = SCENARIOS / "lab-matrix" / "rank-only-collective-large-w2-r0" / "console.log"
    att = attribute(kb, scan_text(kb, case.read_bytes()))
    size = [e for e in att.events if e.signature == "gloo-size-mismatch"]
    assert size and all(e.rank == 1 and e.captures.get("peer_rank") == "0" for e in size)


def test_gloo_size_check_gets_the_next_rank_in_the_all_reduce_ring_as_its_sender(kb):
    # gloo's ring all_reduce: rank r receives from rank r+1. Rank 1 of 3 reports 2732 bytes
    # where it expected 452; rank 2's traceback stops in all_reduce, so rank 2 sent them
    from rankdoctor.diagnose.attribution import attribute

    case = SCENARIOS / "lab-matrix" / "rank-only-collective-large-w3-r2-notee" / "console.log"
    att = attribute(kb, scan_text(kb, case.read_bytes()))
    size = [e for e in att.events if e.signature == "gloo-size-mismatch" and e.rank == 1]
    assert size and all(e.captures.get("sender_rank") == "2" and "peer_rank" not in e.captures for e in size)


@pytest.mark.parametrize("rel, culprit", [
    # rank 2 alone all-reduces a histogram (LARGER than the peers' gradient bucket): rank 1,
    # which receives from it, reports; rank 2 waited at line 37, rank 0 at line 32
    ("lab-matrix/rank-only-collective-large-w3-r2-notee/console.log", 2),
    ("lab-matrix/rank-only-collective-large-w4-r3/console.log", 3),
    # the mirror image: rank 2 alone all-reduces a scalar (SMALLER): it reports its peer's
    # message itself, and the sender waited where every other rank did
    ("lab-fresh1/rank-only-collective-w5-r2/console.log", 2),
    ("lab-fresh2/compile-desync-w7-r4/console.log", 4),
])
def test_a_size_check_names_the_side_that_waited_somewhere_else(kb, rel, culprit):
    d, top = _top_of(kb, rel)
    assert (top.klass, top.initiating_rank) == ("collective-desync", culprit), [(x.entry_id, x.initiating_rank, x.confidence) for x in d.diagnoses]


def test_a_rank_waiting_where_no_other_rank_waited_is_in_another_collective(kb):
    from rankdoctor.diagnose.ranktable import _odd_site

    table = _table(kb, (SCENARIOS / "lab-matrix/rank-only-collective-large-w4-r3/console.log").read_text())
    assert table.wait_sites[1].endswith("rank_only_collective_large.py:32 in main")
    assert table.wait_sites[3].endswith("rank_only_collective_large.py:37 in main")
    assert table.odd_senders == {3}
    assert _odd_site({0: "a.py:1", 1: "a.py:1", 2: "a.py:9"}, 2)
    assert not _odd_site({0: "a.py:1", 1: "a.py:5", 2: "a.py:9"}, 2)  # the others do not agree
    assert not _odd_site({0: "a.py:1", 2: "a.py:1"}, 2)
    assert not _odd_site({2: "a.py:9"}, 2)  # nobody to compare with


def test_a_job_killed_from_outside_while_stuck_names_the_rank_behind_in_steps(kb):
    # nothing timed out (gloo's timeout was 600 s): the driver sent SIGTERM after 15 s. Rank 1
    # stopped at step 9, ranks 0 and 2 logged steps 10-13 and waited; torchrun's "Received 15
    # death signal" says the job was stopped from outside, so the logs end where it hung
    text = (SCENARIOS / "lab-matrix/silent-hang-killed-w3-r1/console.log").read_bytes()
    assert _table(kb, text.decode()).stopped_from_outside
    top = diagnose(kb, scan_text(kb, text)).diagnoses[0]
    assert (top.klass, top.initiating_rank) == ("straggler-timeout", 1)


def _top_of(kb, rel: str):
    d = diagnose(kb, scan_text(kb, (SCENARIOS / rel).read_bytes()))
    return d, (d.diagnoses[0] if d.diagnoses else None)


ANY = object()  # a reading whose class is checked, not its rank

# real logs whose reading rests on one piece of general reasoning: (path, class, rank)
READINGS = [
    # a traceback cut in contextlib while entering `with training_args.main_process_first(...)`:
    # the program's last call is the barrier, only library frames follow, so the rank waited
    # while rank 0 tokenized (its progress bar is the line above)
    pytest.param("real-holdout36/llamafactory-360-tokenize-barrier-timeout/log.txt", "straggler-timeout", 0, id="a_traceback_cut_in_library_frames_below_a_barrier_call_waits"),
    # rank 1's "unhandled cuda error" is a failure of its own CUDA call, not a wait for an
    # unseen rank 0 (a symptom of an entry that is no wait: ranktable.WAIT_CLASSES)
    pytest.param("real-holdout34/diffusion-pipe-154-5090-nccl-unhandled-cuda/log.txt", "nccl-cuda-version", 1, id="a_local_symptom_fails_its_rank_it_does_not_wait"),
    # "GPU 1 has a total capacity ..." with no rank prefix: launchers give worker i GPU i
    pytest.param("real-holdout9/llamafactory-5x3090-zero3-qwen2-logits-oom-gpu1/log.txt", "cuda-oom", 1, id="oom_naming_only_its_gpu_belongs_to_that_local_rank"),
    # every report at SeqNum=1, "last completed NCCL work: 0": no collective ever completed
    pytest.param("real-holdout9/vllm-a10g-tp4-first-allreduce-hang-p2p/log.txt", "nccl-p2p-topology", ANY, id="hang_in_the_first_collective_is_a_transport_problem_not_a_straggler"),
    # launch.py prints the LAST spawned worker's cmd; '--local_rank=0' there means one worker
    pytest.param("real-holdout8/dolly-zero3-sigkill/log.txt", "host-oom", 0, id="deepspeed_launcher_exit_of_a_one_worker_node_names_that_worker"),
    # NCCL_DEBUG_SUBSYS=COLL: AllReduce on device 0, AllGather on device 2 at opCount 0x28c
    pytest.param("real-holdout6/rccl-rank2-allgather-vs-allreduce-opcount-desync/log.txt", "collective-desync", ANY, id="nccl_coll_trace_ranks_at_one_op_count_in_different_collectives"),
    pytest.param("real-holdout7/arctic-rank0-dataload-crash-barrier/log.txt", "peer-rank-crashed", 0, id="store_reset_while_waiting_for_the_unique_id_means_rank_0_died"),
    # a worker node's own output: "comm 0x... rank 1 nranks 2 cudaDev 0 ... Abort COMPLETE" and,
    # above it, the FileNotFoundError that killed it; "Connection closed by localRank 0" is its own
    # proxy (local rank 0 of that node is global rank 1), not an accusation of rank 0
    # (the answer's rank sits at the rank-share line, a near tie refits flip: the class is checked here,
    # the ownership of the log in test_a_rank_owns_the_unprefixed_log_its_nccl_lines_name below)
    pytest.param("real-holdout10/xtuner-two-node-worker-missing-local-arrow-cache/log.txt", "peer-rank-crashed", ANY, id="a_rank_whose_nccl_comm_lines_name_one_rank_owns_its_unprefixed_log"),
    # "LOG1.0.txt:host:pid:tid [0] NCCL INFO Broadcast: opCount 0 ... count 25503912" vs count 53 elsewhere
    pytest.param("real-holdout10/ddp-broadcast-count-mismatch-rank0-hang/log.txt", "collective-desync", 0, id="grep_file_prefixed_nccl_coll_trace_names_the_odd_rank"),
    # rank 1's c10d store wait ran out while unprefixed tokenizer progress ran on rank 0
    pytest.param("real-holdout10/axolotl-rank0-tokenization-30min-rank1-store-timeout/log.txt", "straggler-timeout", ANY, id="store_wait_timeout_is_a_wait_not_a_crash"),
    # the kernel's "Assertion `... index out of bounds` failed." lines carry no prefix; [rank1]'s traceback follows
    pytest.param("real-holdout13/yolo-world-ddp-val-classes/log.txt", "device-assert", 1, id="unprefixed_device_assert_belongs_to_the_rank_whose_traceback_follows"),
    # older watchdog lines without SeqNum: rank 0 in ALLREDUCE, ranks 1-4,7 in BROADCAST
    pytest.param("real-holdout13/accelerate-epoch-end-allreduce-vs-broadcast/log.txt", "collective-desync", ANY, id="watchdog_reports_without_seqnum_in_different_ops_are_a_desync"),
    # k2's "Check failed: ... (710 vs. 0)  Error: device-side assert triggered": CUDA's own text for error 710, whoever prints it
    pytest.param("real-holdout25/icefall-49-nan-k2-device-assert/log.txt", "device-assert", ANY, id="cuda_error_text_of_a_device_assert_from_any_library"),
    # interleaved tracebacks cut inside DeepSpeed ZeRO-3's _overflow_check_and_loss_scale_update: the loss scaler gave up
    pytest.param("real-holdout25/deepspeedexamples-419-loss-scale-min/log.txt", "nan-divergence", ANY, id="traceback_cut_in_the_loss_scale_update_is_the_loss_scale_at_its_minimum"),
    # Composer's launcher: "Rank 2 crashed with exit code -7." (SIGBUS) is a launcher record and a bus error
    pytest.param("real-holdout27/llm-foundry-258-rank2-sigbus/log.txt", "shm-insufficient", ANY, id="composer_launcher_crash_record"),
    # icefall's GradScaler warning at 1.29e-26, below the 1e-5 where it exits
    pytest.param("real-holdout27/icefall-1463-grad-scale-too-small/log.txt", "nan-divergence", ANY, id="grad_scale_collapsed_below_the_exit_value"),
    # NCCL's duplicate-GPU rule quoted without its "Duplicate GPU detected :" head
    pytest.param("real-holdout27/thomaskalnik-deepseek-v3-part4-duplicate-gpu/log.txt", "duplicate-gpu", ANY, id="duplicate_gpu_rule_without_its_head"),
    # srun's "tasks 0,2,6: Killed" lists after "task 5: Exited with exit code 1": every listed task
    # ended (killed by srun tearing the step down), so none of them is a silent rank
    pytest.param("real-holdout28/deit-102-task5-exit/log.txt", "peer-rank-crashed", 5, id="srun_task_lists_are_ranks_that_ended"),
    # DeepSpeed's return-code line read from its tail: a line that starts inside the command
    pytest.param("real-holdout28/glm-60-cpu-offload-host-oom/log.txt", "host-oom", ANY, id="deepspeed_return_code_line_cut_at_its_head"),
    # ... and its return code -7: a bus error
    pytest.param("real-holdout28/gpt-neox-940-sigbus-rc7/log.txt", "shm-insufficient", ANY, id="deepspeed_return_code_minus_7_is_a_bus_error"),
    # mp.spawn's ProcessExitedException is the launcher's record of how process 3 died (a segfault)
    pytest.param("real-holdout38/fairseq-3354-fsdp-sigsegv/log.txt", "peer-rank-crashed", 3, id="spawn_process_exited_with_a_signal_is_a_launcher_record"),
    # ... and a SIGABRT one still marks a failed run (the abort may be its own or a watchdog's)
    pytest.param("real-holdout40/icefall-1764-rank1-sigabrt/log.txt", "peer-rank-crashed", 1, id="spawn_process_aborted_is_not_healthy"),
    # torch_npu's "[ERROR] <time> (PID:p, Device:d, RankID:r)" header gives the CANN error below it its rank
    pytest.param("real-holdout40/llamafactory-5322-npu-zero3-el0004-oom/log.txt", "cuda-oom", 2, id="ascend_error_header_names_the_rank"),
    # a log with py-spy output pasted in it is still read as a log (the kernel's hung-task report)
    pytest.param("real-holdout40/m4-logs-tr141-rank0-gpfs-hang/log.txt", "straggler-timeout", ANY, id="a_log_with_a_pasted_pyspy_dump_is_still_a_log"),
    # the OOM message cut before the unit of "Tried to allocate 214.00"
    pytest.param("real-holdout28/finetrainers-25-rank0-vae-oom/log.txt", "cuda-oom", 0, id="oom_line_cut_before_its_unit"),
    # "comm ... rank 3 ... cudaDev 3" and "rank 6 ... cudaDev 6" on a host: its device 2 is rank 2
    pytest.param("real-holdout29/deepspeed-2931-ib-completion-error/log.txt", "nccl-network", 2, id="a_host_with_one_rank_offset_maps_its_other_devices"),
    # guided-diffusion's fp16 trainer: "Found NaN, decreased lg_loss_scale to -16199.354", and "| loss | nan |"
    pytest.param("real-holdout29/guided-diffusion-50-fp16-nan-divergence/log.txt", "nan-divergence", ANY, id="log_loss_scale_below_zero_and_a_nan_loss_in_a_table"),
    # TGI's launcher: "Shard process was signaled to shutdown with signal 7 rank=1" is a launcher record and a bus error
    pytest.param("real-holdout30/tgi-814-shard-sigbus-rank1/log.txt", "shm-insufficient", ANY, id="tgi_shard_signal_record"),
    # interleaved tracebacks of the ranks that wait in "with training_args.main_process_first(...)" while rank 0 tokenizes
    pytest.param("real-holdout30/transformers-17106-tokenize-main-first-socket-timeout/log.txt", "straggler-timeout", 0, id="tracebacks_cut_entering_main_process_first_wait_for_rank_0"),
    # DistributedSampler's "Invalid rank 8, rank should be in the interval [0, 7]": a world size configured twice
    pytest.param("real-holdout31/lightning-17436-fsdp-num-nodes-invalid-rank/log.txt", "rendezvous-init", 8, id="sampler_rank_beyond_the_world_it_was_given"),
    # newer NCCL's "collective mismatch around rank 1" names the printing communicator rank
    pytest.param("real-holdout31/lightning-8214-nccl-collective-mismatch-rank1/log.txt", "collective-desync", 1, id="nccl_suspected_collective_mismatch"),
    # thrust's "cudaErrorIllegalAddress: an illegal memory access was encountered"
    pytest.param("real-holdout31/torchrec-366-nvt-loader-illegal-address-rank1/log.txt", "illegal-memory-access", ANY, id="illegal_address_by_its_runtime_enum_name"),
    # fairseq's "grad_norm across the workers:" list, every worker nan
    pytest.param("real-holdout31/fairseq-1372-grad-norm-nan-all-workers/log.txt", "nan-divergence", ANY, id="non_finite_grad_norm_on_every_worker_is_divergence"),
]


@pytest.mark.parametrize("rel, klass, rank", READINGS)
def test_real_log_reading(kb, rel, klass, rank):
    d, top = _top_of(kb, rel)
    if rank is ANY:
        assert top.klass == klass
    else:
        assert (top.klass, top.initiating_rank) == (klass, rank)


def test_a_rank_owns_the_unprefixed_log_its_nccl_lines_name(kb):
    # xtuner's worker on the second node: its NCCL INFO lines name rank 1, so the unprefixed
    # FileNotFoundError above them is rank 1's own failure (the rank table's reading)
    d, _top = _top_of(kb, "real-holdout10/xtuner-two-node-worker-missing-local-arrow-cache/log.txt")
    rows = d.table.rows
    assert set(rows) == {1}
    assert any("FileNotFoundError" in f.text for f in rows[1].failures)


def test_a_kernel_assertion_is_read_in_aten_and_triton_kernels(kb):
    # a Triton kernel's bounds check (torch.compile): "unknown:0: unknown: block: [0,0,0], thread:
    # [31,0,0] Assertion `index out of bounds: 0 <= tmp4 < 16000` failed." (gau-nernst/quantized-training#1)
    text = (SCENARIOS / "real-holdout20/quantized-training-1-compiled-index-out-of-bounds/log.txt").read_bytes()
    sigs = {(e.entry, e.signature) for e in scan_text(kb, text).events}
    assert ("cuda-device-side-assert", "kernel-assertion-failed") in sigs
    assert ("embedding-index-out-of-range", "index-out-of-bounds") in sigs or any(
        e == "embedding-index-out-of-range" for e, _ in sigs)
    d, top = _top_of(kb, "real-holdout20/quantized-training-1-compiled-index-out-of-bounds/log.txt")
    # the traceback passes through dynamo's eval_frame wrapper and AOTAutograd's runtime wrappers:
    # a compiled function that ran and asserted, not a compilation that failed
    assert top.klass == "device-assert"
    assert all(f.entry != "compile-unclassified-exception" for f in d.diagnoses)


def test_a_markdown_quoted_paste_and_a_list_of_per_process_values(kb):
    from rankdoctor.diagnose.attribution import attribute
    from rankdoctor.ingest.prefix import parse_prefix, sniff_dialect

    # a log pasted as a block quote: the "> " markers hide the rank prefixes (huggingface/lighteval#204)
    text = (SCENARIOS / "real-holdout30/lighteval-204-gather-shape-mismatch-rank0/log.txt").read_text()
    dialect = sniff_dialect(text.splitlines())
    assert dialect.quote
    a, _ = parse_prefix("> [rank3]:   - Process 0: [1024]", dialect)
    assert a.rank == 3
    # Accelerate's "Input shapes:" list: process 0 alone has [1024], the seven others [2048]
    events = attribute(kb, scan_text(kb, text.encode())).events
    assert any(e.captures.get("peer_rank") == "0" for e in events if e.role == "cause")
    # a list where no single process differs names nobody
    even = "\n".join(["[rank1]: Cannot apply desired operation due to shape mismatches. All shapes across devices must be valid.",
                      "[rank1]: Input shapes:", *(f"[rank1]:   - Process {i}: [{1024 if i < 2 else 2048}]" for i in range(4))])
    assert not any("peer_rank" in e.captures for e in attribute(kb, scan_text(kb, even.encode())).events)
    # a paste with a few quoted lines among many is not a quoted paste
    assert not sniff_dialect(["> note", "line a", "line b", "line c", "line d", "line e"]).quote


def test_srun_task_lists_and_per_node_launchers(kb):
    from rankdoctor.diagnose.launcher import read_launcher, task_ids

    assert task_ids("0,2,6") == [0, 2, 6]
    assert task_ids("9-10,12-15") == [9, 10, 12, 13, 14, 15]
    assert task_ids("3-") == [3] and task_ids("x") == [] and task_ids("5-2") == []
    assert len(task_ids("0-99999999")) == 0  # an implausible span reads as nothing
    text = (SCENARIOS / "real-holdout28/deit-102-task5-exit/log.txt").read_bytes()
    recs = read_launcher(scan_text(kb, text).facts).by_rank()
    assert recs[5].exitcode == 1 and not recs[5].killed_by_launcher
    assert recs[14].exitcode == -9 and recs[14].killed_by_launcher
    # srun started one torchrun per node: its "task 1" is a node, not rank 1
    text = (SCENARIOS / "real-holdout16/subgroup-allgather-rank4-exit-rank0-timeout/log.txt").read_bytes()
    assert 1 not in read_launcher(scan_text(kb, text).facts).by_rank()


def test_horovods_exit_lines_are_launcher_records_in_exit_order(kb):
    # "Process N exit with status code C." (horovod/runner/gloo_run.py, N the slot's rank): the
    # first printed ended first, and a shell's 128+N status is signal N
    from rankdoctor.diagnose.launcher import read_launcher

    text = (SCENARIOS / "real-holdout83/horovod-2907-elastic-rank-killed-gloo-ioexception/log.txt").read_bytes()
    summary = read_launcher(scan_text(kb, text).facts)
    recs = summary.by_rank()
    assert recs[0].exitcode == -9 and recs[3].exitcode == -6 and recs[2].exitcode == -6
    assert summary.root() is recs[0]


@pytest.mark.parametrize("rel, shown", [
    # a traceback cut before its exception line still shows a failure (its last frame)
    pytest.param("real-holdout8/vllm-torchrun-eaddrinuse-29500/log.txt", "static_tcp_rendezvous.py", id="traceback_cut_before_its_exception_line"),
    # OLMo's excepthook logs "Uncaught AssertionError: ..." at CRITICAL, after a tab-separated
    # host:rank / logger:line / level prefix (real paste: allenai/OLMo#664)
    pytest.param("real-holdout27/olmo-664-ddp-sharded-ckpt-assert/log.txt", "Uncaught AssertionError", id="exception_logged_by_an_excepthook"),
    # faulthandler's report of a fatal signal, behind a Ray worker's prefix (real paste:
    # PeterGriffinJin/Search-R1#134, a SIGFPE in a GEMM)
    pytest.param("real-holdout33/search-r1-134-h20-cublas-sigfpe/log.txt", "Fatal Python error: Floating point exception", id="fatal_signal_reported_by_faulthandler"),
    # Intel oneCCL's own error level as a log's last line, after its own timestamp (real paste:
    # deepspeedai/DeepSpeed#5313, a CPU pipeline run whose key-value store never connected)
    pytest.param("real-holdout80/deepspeed-5313-pipe-cpu-ccl-wrong-iface/log.txt", "|CCL_ERROR|", id="oneccl_error_level"),
    # gdb's backtrace of a core file, the process in abort() under std::terminate (real:
    # stas00/ml-engineering's debugging chapter, a ProcessGroupNCCL watchdog rethrowing)
    pytest.param("real-holdout94/blog-mleng-gdb-nccl-opa-system-error/log.txt", "in abort ()", id="gdb_core_backtrace_in_abort"),
    # an exception line a reporter set in bold: still the traceback's exception
    pytest.param("real-holdout94/DeepSpeed-2973-store-barrier-conn-reset/log.txt", "RuntimeError: Connection reset by peer", id="exception_line_in_markdown_bold"),
    # LLVM libc++abi's one-line std::terminate report, as PyTorch's macOS builds print it (real
    # paste: SMILELab-FL/FedLab#340, gloo's libuv transport rejecting a message's size)
    pytest.param("real-holdout96/FedLab-340-gloo-uv-enforce-macos/log.txt", "libc++abi: terminating due to uncaught exception", id="libcxxabi_terminate"),
    # a traceback kept as one escaped string, a torchelastic error record's message (real paste:
    # huggingface/transformers#25695): its exception follows an escaped newline
    pytest.param("real-holdout97/transformers-25695-fsdp-gradaccum-shard-mismatch/log.txt", "RuntimeError: The size of tensor a", id="escaped_traceback_in_one_line"),
])
def test_a_failure_no_entry_names_is_not_healthy(kb, rel, shown):
    d, top = _top_of(kb, rel)
    assert d.verdict != "no-failure-found"
    assert any(shown in e.text for e in top.evidence)


def test_a_fatal_signal_is_framed_by_the_stack_faulthandler_prints_below_it(kb):
    # torchrun itself segfaulting while it builds its c10d rendezvous backend: faulthandler's
    # frames under "Fatal Python error: Segmentation fault" are in the rendezvous code (real
    # paste: NVIDIA/TransformerEngine#1011, held-out set CS)
    d, top = _top_of(kb, "real-holdout101/TransformerEngine-1011-torchrun-rendezvous-segfault/log.txt")
    assert top.klass == "rendezvous-init"
    # the same report with the stack left out says only that a process crashed
    text = (SCENARIOS / "real-holdout101/TransformerEngine-1011-torchrun-rendezvous-segfault/log.txt").read_text()
    cut = text[: text.index("Current thread")]
    assert _diag(kb, cut).diagnoses[0].klass == "peer-rank-crashed"


def test_a_launchers_report_of_a_failed_worker_is_a_failure(kb):
    # torchrun's summary cut before it says which worker failed and how (real paste:
    # jzhang38/EasyContext#11): the run failed, nothing says why, so no failure is named
    d = _diag(kb, (SCENARIOS / "real-holdout81/easycontext-11-oom-700k-seq/log.txt").read_text())
    assert d.verdict == "inconclusive" and not d.diagnoses
    # its exception line alone (torch/distributed/elastic/multiprocessing/errors/__init__.py)
    assert _diag(kb, "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n").verdict == "inconclusive"
    # DeepSpeed's launcher after a worker exited non-zero, naming no rank
    line = "[launch.py:325:sigkill_handler] exits with return code = 1\n"
    assert _diag(kb, line).verdict == "inconclusive"


def test_a_native_crash_inside_the_checkpoint_writer_is_a_checkpoint_failure(kb):
    # tvm-ffi's SIGSEGV banner, then native frames as 'File "<unknown>", line 0, in <symbol>'
    # down to torch.save's zip writer (real paste: NVIDIA-NeMo/Megatron-Bridge#2355, rank 93)
    d, top = _top_of(kb, "real-holdout90/Megatron-Bridge-2355-gb200-ckpt-save-segfault/log.txt")
    assert (top.klass, top.initiating_ranks) == ("checkpoint-error", [93])
    assert any("Segfault encountered" in e.text for e in top.evidence)
    # the banner alone is a fatal signal of the rank that printed it
    assert _diag(kb, "[rank3]:!!!!!!! Segfault encountered !!!!!!!\n").verdict != "no-failure-found"


def test_a_cpp_backtrace_without_its_message_is_a_failure(kb):
    from rankdoctor.diagnose.attribution import attribute

    # five frames of c10's backtrace through the c10d store, the error message above them not
    # pasted (real paste: espnet/espnet#4531): an exception of unknown type, in the store
    d, top = _top_of(kb, "real-holdout26/espnet-4531-ncclid-store-timeout-double-launch/log.txt")
    assert d.verdict != "no-failure-found"
    assert top.klass == "rendezvous-init"
    assert any("PrefixStore::get" in e.text for e in top.evidence)
    # the watchdog thread's frames above the timeout report they belong to add no failure
    # (real paste: vllm-project/vllm#5458, rank 0's watchdog)
    text = (SCENARIOS / "real-holdout9/vllm-a10g-tp4-first-allreduce-hang-p2p/log.txt").read_bytes()
    assert not [e for e in attribute(kb, scan_text(kb, text)).events if e.signature == "cpp-backtrace"]
    # the same frames alone: the watchdog was waiting, which is not a failure of its own rank
    frames = b"\n".join(text.split(b"\n")[:4]) + b"\n"
    bare = [e for e in attribute(kb, scan_text(kb, frames)).events if e.signature == "cpp-backtrace"]
    assert len(bare) == 1 and bare[0].captures.get("waiting") == "1"


def test_enospc_in_multiprocessing_locks_is_considered_shared_memory(kb):
    # ENOSPC raised creating a DataLoader's semaphore (multiprocessing/synchronize.py): /dev/shm
    # full, not only a full disk (real paste: NVIDIA/Megatron-LM#878)
    d, _ = _top_of(kb, "real-holdout27/megatron-lm-878-shm-no-space/log.txt")
    assert "dataloader-worker-shm-bus-error" in [g.entry for g in d.diagnoses[:2]]


def test_unknown_exception_is_classed_by_the_subsystem_its_traceback_runs_through(kb):
    # an exception no entry names, raised from verl's fsdp_utils.get_fsdp_wrap_policy
    d, top = _top_of(kb, "real-holdout11/verl-gemma3-wrap-policy-class/log.txt")
    assert top.klass == "fsdp-error"
    # a traceback cut before its exception line, inside torchrun's rendezvous
    d, top = _top_of(kb, "real-holdout8/vllm-torchrun-eaddrinuse-29500/log.txt")
    assert top.klass == "rendezvous-init"


def test_a_lost_connection_in_a_recv_with_a_literal_source_accuses_that_rank(kb):
    # gloo's "Connection closed by peer [ip]:port" names an address; the user's frame just
    # above it, dist.recv(input,0), names the rank (real paste: pytorch/pytorch#78514)
    _, top = _top_of(kb, "real-holdout22/pytorch-78514-gloo-isend-peer-exited/log.txt")
    assert (top.klass, top.initiating_rank) == ("peer-rank-crashed", 0)
    # a send/recv without a literal peer names nobody
    text = (
        '  File "/home/u/train.py", line 20, in main_worker\n'
        "    dist.recv(input, src=peer)\n"
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [18.25.6.30]:30872\n"
    )
    assert _diag(kb, text).diagnoses[0].initiating_rank is None


def test_a_report_listing_ranks_names_the_smaller_side(kb):
    from rankdoctor.diagnose.attribution import attribute

    def accused(line: str) -> list:
        att = attribute(kb, scan_text(kb, line + "\n"))
        return [e.captures.get("peer_rank") for e in att.events if e.entry == "horovod-stalled-ops"]

    # 15 of 16 ranks never submitted it: the one that did is the odd one (real line: horovod/horovod#600)
    many = ", ".join(str(r) for r in range(1, 16))
    assert accused(f"MetricAverageCallback_10/HorovodAllreduce_MetricAverageCallback_10_lr_0 [missing ranks: {many}]") == ["0"]
    # one rank missing (real line: horovod/horovod#534)
    assert accused("HorovodBroadcast_fully_connected_weights_0 [missing ranks: 0]") == ["0"]
    # ready ranks 0,1,3-6 of 7: rank 2 never submitted it (real line: horovod/horovod#530)
    assert accused("HorovodBroadcast_InceptionV3_AuxLogits_Conv2d_2a_5x5_weights_0 [ready ranks: 5, 6, 3, 1, 4, 0], ") == ["2"]
    # an even split (ranks 2, 3 of 0-3) names nobody
    assert accused("HorovodAllreduce_x_0 [missing ranks: 2, 3]") == [None]


def test_a_desync_report_listing_every_rank_accuses_nobody(kb):
    from rankdoctor.diagnose.attribution import attribute

    # PyTorch's desync report: all 16 ranks joined ALLREDUCE #730 and none finished it (real paste:
    # hiyouga/LlamaFactory#9496, ranks 0 and 2 printing): nobody lagged or strayed
    text = (SCENARIOS / "real-holdout23/llamafactory-9496-multinode-all-ranks-stuck-allreduce-730/log.txt").read_bytes()
    att = attribute(kb, scan_text(kb, text))
    report = [e for e in att.events if e.signature == "desync-report-lagging-rank"]
    assert report and all(e.role == "symptom" and "peer_rank" not in e.captures for e in report)
    assert att.world_size == 16  # ranks 0 and 2 printed, which is not a job of two
    top = _diag(kb, text).diagnoses[0]
    assert top.initiating_rank is None
    # one lagging rank is still named (real line: pytorch/pytorch#152623)
    line = "             [7] finished collective #182, but didn't join collective #183 (count from 1)\n"
    ev = next(e for e in attribute(kb, scan_text(kb, line)).events if e.signature == "desync-report-lagging-rank")
    assert ev.role == "cause" and ev.captures["peer_rank"] == "7"


def test_traceback_cut_in_a_barrier_is_a_wait_not_a_failure(kb):
    # ranks 1-5 wait in accelerator.wait_for_everyone() (the paste stops in rank 3's traceback
    # there; rank 1's line is glued to a tqdm bar) while the unranked progress bar is rank 0's
    # caching: rank 0 is the one they waited for (real paste: kohya-ss/sd-scripts#1601)
    text = (SCENARIOS / "real-holdout23/sdscripts-1601-poolfd-wait-for-everyone-rank0-absent/log.txt").read_text()
    table = _table(kb, text)
    assert table.waiting_ranks == {1, 2, 3, 4, 5} and not table.row(3).failures
    top = _diag(kb, text).diagnoses[0]
    assert (top.klass, top.initiating_rank) == ("straggler-timeout", 0)


def test_unranked_traceback_cut_in_a_barrier_points_at_the_busy_main_process(kb):
    # a traceback without a rank cut in main_process_first's barrier, after a tokenizer progress
    # bar without a rank (real paste: NVIDIA/nccl#865)
    d, top = _top_of(kb, "real-holdout20/nccl-865-tokenizer-main-process-first-timeout/log.txt")
    assert d.verdict != "no-failure-found"
    assert (top.klass, top.initiating_rank) == ("straggler-timeout", 0)


def test_job_wide_error_names_the_one_rank_that_raised_it(kb):
    # DDP's unused-parameter error is job-wide; a paste of rank 1's copy alone says where it was seen
    _, top = _top_of(kb, "real-holdout21/gliner-165-ddp-finetune-rank1-unused-parameters/log.txt")
    assert (top.klass, top.initiating_rank) == ("ddp-unused-parameters", 1)
    # ... and when every rank raised it, no rank is named
    _, top = _top_of(kb, "lab/ddp-unused-params/console.log")
    assert top.klass == "ddp-unused-parameters" and top.initiating_rank is None


def _table(kb, text: str):
    from rankdoctor.diagnose.attribution import attribute
    from rankdoctor.diagnose.ranktable import build_rank_table

    return build_rank_table(kb, attribute(kb, scan_text(kb, text)))


def test_ranks_non_finite_at_the_same_step_share_the_cause(kb):
    # every rank's loss blew up after step 3: line order in the console is not who went first
    from rankdoctor.diagnose.features import _numeric_first

    lines = []
    for r in (1, 0, 2):
        lines += [f"[default{r}]:2026-12-02 00:15:46,27{r} INFO train: rank {r} step {s} loss 1{s}.5" for s in range(4)]
        lines.append(f"[default{r}]:Loss is inf, stopping training")
    assert _numeric_first(_table(kb, "\n".join(lines) + "\n")) is None
    # one rank non-finite a step before the others started it (DDP spreads it at the next step)
    lines = [f"[default{r}]:2026-12-02 00:16:10,{600 + r} INFO train: rank {r} step 3 loss 9.5" for r in (0, 1, 2)]
    lines += [f"[default{r}]:2026-12-02 00:16:10,{700 + r} INFO train: rank {r} step 4 loss 9.5" for r in (1, 2)]
    lines.append("[default0]:rank 0 step 4 loss inf")
    lines += [f"[default{r}]:Loss is nan, stopping training" for r in (2, 1, 0)]
    assert _numeric_first(_table(kb, "\n".join(lines) + "\n")) == 0


def test_a_rank_that_aborts_on_a_peers_mismatched_message_died_of_it(kb):
    # gloo's size check reports what the peer sent: the rank that prints it and aborts is
    # a witness, so its SIGABRT is not a death of its own
    from rankdoctor.diagnose.ranktable import End

    path = SCENARIOS / "lab-matrix/rank-only-collective-large-w4-r3/console.log"
    table = _table(kb, path.read_text())
    assert table.row(2).end == End.died_waiting
    assert table.row(2).failures  # the report is still listed among its lines


def test_a_rank_that_never_printed_a_step_is_behind_peers_that_count_steps(kb):
    from rankdoctor.diagnose.features import steps_behind

    init = "[default{r}]:2026-12-02 00:15:01,120 INFO train: rank {r}/3 initialised (gloo, timeout=10.0s)"
    step = "[default{r}]:2026-12-02 00:15:03,432 INFO train: rank {r} epoch 0 loss 17.3703"
    lines = [init.format(r=r) for r in range(3)] + [step.format(r=r) for r in (0, 2)]
    assert steps_behind(_table(kb, "\n".join(lines) + "\n")) == {1}
    # progress printed by rank 0 alone is how many jobs log, not a sign the others are behind
    lines = [init.format(r=r) for r in range(3)] + [step.format(r=0)]
    assert steps_behind(_table(kb, "\n".join(lines) + "\n")) == set()


def test_nccl_ring_lines_tell_which_rank_a_hosts_gpu_is(kb):
    text = (
        "nodeA:100:110 [0] NCCL INFO Ring 00 : 7 -> 0 [receive] via NET/IB/0\n"
        "nodeA:102:112 [2] NCCL INFO Ring 00 : 2[2] -> 3[3] via direct shared memory\n"
        "nodeB:200:210 [0] NCCL INFO Ring 00 : 4[0] -> 5[1] via direct shared memory\n"
        "nodeA:102:112 [2] include/shm.h:42 NCCL WARN Cuda failure 'invalid argument'\n"
    )
    from rankdoctor.diagnose.attribution import attribute

    att = attribute(kb, scan_text(kb, text))
    assert {e.rank for e in att.events if e.entry} == {2}
    assert att.world_size == 8


def test_a_progress_bar_glued_to_another_ranks_watchdog_line_is_two_records(kb):
    from rankdoctor.scan import split_interleaved

    line = ("[default0]:Grouping texts in chunks of 2049:   8%|8         | 726000/9672101 [02:32<30:38, 4866.01 examples/s]"
            "[default2]:[E ProcessGroupNCCL.cpp:475] [Rank 2] Watchdog caught ")
    segs = split_interleaved(line)
    assert len(segs) == 2 and segs[1].startswith("[default2]:")
    t = _table(kb, line + "\n")
    assert t.row(0).progress == 726000 and t.row(2).waited


def test_a_timeout_setting_is_not_trouble():
    from rankdoctor.scan import ERRORISH

    assert not ERRORISH.search("INFO train: rank 1/3 initialised (gloo, timeout=10.0s)")
    assert ERRORISH.search("Watchdog caught collective operation timeout: WorkNCCL(...)")
    assert ERRORISH.search("RuntimeError: Socket Timeout")


def test_a_rank_left_waiting_by_peers_that_all_finished_issued_an_extra_collective(kb):
    # five ranks: four run to the end ("finished"); rank 3, two steps behind, loses an unnamed
    # peer ("Connection closed by peer"): none of its peers crashed, so it was in an extra op
    from rankdoctor.diagnose.features import outlived_peers

    lines = []
    for r in range(5):
        last = 5 if r == 3 else 7
        lines += [f"[default{r}]:2026-12-02 05:25:18,{100 + s * 10 + r} INFO train: rank {r} step {s} err 1.5" for s in range(last + 1)]
        if r != 3:
            lines.append(f"[default{r}]:2026-12-02 05:25:18,190 INFO train: rank {r} finished")
    lines.append("[default3]:[rank3]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] "
                 "Connection closed by peer [127.0.0.1]:23939. This is typically caused by a remote worker crashing.")
    t = _table(kb, "\n".join(lines) + "\n")
    assert t.row(3).lost_peer and not t.row(3).accuses
    assert outlived_peers(t) == ({3}, {0, 1, 2, 4})


def test_a_rank_that_timed_out_after_every_peer_finished_issued_an_extra_collective(kb):
    # lab-fresh4: rank 2 of 8 issued one extra all_reduce; the seven peers finished and exited
    # before gloo closed anything under it, so rank 2 timed out waiting ("Timed out waiting
    # 10000ms for recv") instead of losing a peer. Nobody was late or crashed: it was in a
    # collective they never issued (read as rank 0's straggling before, confidently)
    from rankdoctor.diagnose.features import outlived_peers
    from rankdoctor.evaluate import weigh_case
    from rankdoctor.scan import Scanner

    w = weigh_case(kb, Scanner(kb), SCENARIOS / "lab-fresh4" / "extra-collective-same-shape-w8-r2", use_fr=False)
    assert w.table.row(2).waits and not w.table.row(2).lost_peer
    assert outlived_peers(w.table) == ({2}, {0, 1, 3, 4, 5, 6, 7})
    top = w.scored[0].hyp
    assert top.entry.class_ == "collective-desync" and top.ranks == (2,)


def test_a_timeout_is_an_extra_collective_only_when_the_peers_had_stopped_before_it(kb):
    # rank 1 times out waiting (gloo, no time on the line) two steps behind ranks 0 and 2.
    # If they printed their last lines with rank 1's last step, they ran to the end: rank 1
    # was in an op they never issued. If they went on printing well after rank 1 stopped,
    # they were busy, not finished: a timeout alone does not make rank 1 the odd one
    from rankdoctor.diagnose.features import outlived_peers

    def log(peers_last_second: int) -> str:
        lines = []
        for r in range(3):
            last = 5 if r == 1 else 7
            for st in range(last + 1):
                sec = 10 + st if r == 1 or st < 6 else peers_last_second
                lines.append(f"[default{r}]:2026-12-02 05:25:{sec:02d},100 INFO train: rank {r} step {st} err 1.5")
        lines.append("[default1]:[rank1]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/"
                     "unbound_buffer.cc:78] Timed out waiting 10000ms for recv operation to complete")
        return "\n".join(lines) + "\n"

    finished = _table(kb, log(16))
    assert finished.row(1).waits and not finished.row(1).lost_peer
    assert outlived_peers(finished) == ({1}, {0, 2})
    busy = _table(kb, log(40))
    assert outlived_peers(busy) == (set(), set())


def test_a_size_check_from_a_sender_in_step_with_the_others_makes_the_reporter_odd(kb):
    # lab-fresh4: rank 6 of 8 issued an extra scalar all_reduce; it rejected the gradient chunk
    # rank 7 sent (gloo's ring: r receives from r+1). Ranks 5 and 7 waited in DDP's backward at
    # the same line: the sender was in the op everyone else was in, so rank 6's op was the odd one
    from rankdoctor.diagnose.ranktable import _common_site
    from rankdoctor.evaluate import weigh_case
    from rankdoctor.scan import Scanner

    w = weigh_case(kb, Scanner(kb), SCENARIOS / "lab-fresh4" / "rank-only-collective-w8-r6", use_fr=False)
    assert set(w.table.wait_sites) == {5, 7} and len(set(w.table.wait_sites.values())) == 1
    assert w.table.in_step_senders_of == {6} and not w.table.odd_senders
    assert _common_site({5: "a.py:1", 7: "a.py:1"}, 7, 6)
    assert not _common_site({7: "a.py:1"}, 7, 6)  # one rank's site is no "common" line
    assert not _common_site({5: "a.py:1", 7: "a.py:2"}, 7, 6)
    assert not _common_site({5: "a.py:1", 6: "a.py:1", 7: "a.py:1"}, 7, 6)  # the reporter waited there too


def test_the_absent_rank_sentence_names_the_collective_once(kb):
    # "waited in in SeqNum=..." read badly: the collective goes in parentheses
    d, top = _top_of(kb, "real-holdout17/ultralytics-2023-broadcast-timeout-rank0-missing/log.txt")
    assert "Rank 0 never joined the collective the others waited in (SeqNum=10792 BROADCAST)." in top.root_cause
    assert " in in " not in top.root_cause


def test_a_time_without_a_year_is_shown_without_dashes():
    from rankdoctor.diagnose.present import _clock
    from rankdoctor.events import Event

    ev = Event("e", "s", "symptom", "rank1.log", 3, "x", time="--12-02T00:08:28.533")
    assert _clock(ev) == "12-02 00:08:28"
    ev = Event("e", "s", "symptom", "rank1.log", 3, "x", time="2026-05-01T10:33:12")
    assert _clock(ev) == "2026-05-01 10:33:12"


def test_peers_waiting_in_different_collectives_are_not_a_desync_while_one_rank_is_outside_any(kb):
    # TP x DP: rank 1 holds the GIL in its own code; its TP peers wait in the TP all_reduce and
    # the rest in the DP one. The stacks single out rank 1, not the TP peers
    from rankdoctor.diagnose.attribution import attribute
    from rankdoctor.diagnose.ranktable import build_rank_table
    from rankdoctor.ingest.sources import expand_inputs
    from rankdoctor.ingest.stacks import stacks_among

    case = SCENARIOS / "lab-pg2d" / "hang-gil-tp4dp2-r1-s2-notee"
    scan = scan_text(kb, (case / "console.log").read_bytes())
    scan.stacks, _ = stacks_among(expand_inputs([str(case / "stacks")]))
    table = build_rank_table(kb, attribute(kb, scan))
    assert table.stack_odd == {1}
    assert table.stack_odd_collective == set()


def test_mp_spawn_header_gives_the_following_traceback_its_process(kb):
    """mp.spawn prints "-- Process N terminated with the following error:" and then process N's
    own traceback without any prefix (real paste: innnky/so-vits-svc#46, cut inside torch.save):
    that traceback is process 0's, and its torch.save frames make it a checkpoint error."""
    from rankdoctor.diagnose.attribution import attribute
    from rankdoctor.ingest.sources import expand_inputs
    from rankdoctor.scan import Scanner, scan_sources

    log = SCENARIOS / "real-holdout21" / "so-vits-svc-46-spawn-process0-checkpoint-write-failed" / "log.txt"
    att = attribute(kb, scan_sources(kb, expand_inputs([str(log)]), Scanner(kb)))
    cut = [e for e in att.events if e.captures.get("cut")]
    assert len(cut) == 1 and cut[0].local_rank == 0 and cut[0].captures["rank_from"] == "spawn-header"
    # the parent's own traceback above the header stays unranked
    parent = [e for e in att.events if e.role == "trace" and e.line < 16 and not e.captures.get("cut")]
    assert parent and all(e.local_rank is None and e.rank is None for e in parent)
    d = diagnose(kb, scan_sources(kb, expand_inputs([str(log)]), Scanner(kb)))
    assert d.diagnoses[0].klass == "checkpoint-error"


def test_torch_xla_spawn_report_names_the_process_and_its_traceback_is_not_cut(kb):
    """torch_xla's xmp.spawn reports a process's exception on one line, "Exception in
    device=TPU:6: <message>", then prints its traceback (real paste: pytorch/xla#2341, whose
    traceback stops at a frame): the report is process 6's, and the traceback under it is that
    report's exception, not a second one cut off before its message."""
    from rankdoctor.diagnose.attribution import attribute
    from rankdoctor.ingest.sources import expand_inputs
    from rankdoctor.scan import Scanner, scan_sources

    log = SCENARIOS / "real-holdout87" / "xla-2341-mesh-config-connection-reset" / "log.txt"
    att = attribute(kb, scan_sources(kb, expand_inputs([str(log)]), Scanner(kb)))
    assert not [e for e in att.events if e.captures.get("cut")]
    head = [e for e in att.events if e.line == 1 and e.entry == "xla-mesh-master-unreachable"]
    assert head and head[0].rank == 6 and head[0].captures["rank_from"] == "spawn-header"
    _, top = _top_of(kb, "real-holdout87/xla-2341-mesh-config-connection-reset/log.txt")
    assert (top.klass, top.initiating_rank) == ("rendezvous-init", 6)


def test_an_exception_python_reports_as_ignored_is_no_failure(kb):
    """Python's unraisable hook prints "Exception ignored in: <function X.__del__ ...>" and the
    exception's traceback, and the program goes on (real paste: pyg-team/pytorch_geometric#3473,
    a DataLoader iterator's __del__ in a forked process): a run whose only error is such a report
    is not a failed run; an exception raised before it still is (RLinf#953, rank 1's RuntimeError
    above a __del__ AttributeError, under Ray's "(EnvGroup(rank=1) pid=...)" prefix)."""
    d = _diag(kb, (SCENARIOS / "real-holdout116/pytorch_geometric-3473-neighborloader-child-process-assert/log.txt").read_text())
    assert d.verdict == "no-failure-found"
    d, top = _top_of(kb, "real-holdout104/RLinf-953-egl-device-id-env-rank1/log.txt")
    assert d.verdict != "no-failure-found" and top.initiating_rank == 1
    assert "MUJOCO_EGL_DEVICE_ID" in " ".join(e.text for e in top.evidence)


def test_a_nccl_warn_line_no_entry_knows_is_a_failure_of_the_rank_that_printed_it(kb):
    # a real line (the unclassified-warning entry's own example): NCCL's 2.x proxy thread error
    # is no entry's own line
    text = "worker0-0d9gnb:15:91 [3] transport.cu:153 NCCL WARN transport.cu:153 ->2 [Proxy thread error]\n"
    d = _diag(kb, text)
    assert d.verdict != "no-failure-found"
    top = d.diagnoses[0]
    assert (top.entry, top.klass) == ("nccl-unclassified-warning", "nccl-network")
    assert top.evidence and "Proxy thread error" in top.evidence[0].text and top.evidence[0].role == "cause"


def test_harmless_nccl_warn_lines_and_those_an_entry_knows_are_not_unknown_failures(kb):
    from rankdoctor.diagnose.attribution import WARNED, attribute

    harmless = (
        "cvlab189:1379562:1379562 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n"
        "gpu1:5021:5386 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : client reregistration\n"
        "3a742b5dcfec:39:302 [0] proxy.cc:1111 NCCL WARN [Service thread] Unknown command 66326 from localRank -1\n"
        "graph/search.cc:1135 NCCL WARN Could not find a path for pattern 1, falling back to simple order\n"
    )
    assert _diag(kb, harmless).verdict == "no-failure-found"
    # a WARN line another entry names is that entry's, not an unknown failure
    known = "gpu2:1653:1695 [0] include/socket.h:347 NCCL WARN Call to bind failed : Address already in use\n"
    att = attribute(kb, scan_text(kb, known.encode()))
    assert not any(e.role == WARNED for e in att.events)
    assert _diag(kb, known).diagnoses[0].entry == "tcpstore-port-in-use"


def test_an_unranked_failure_goes_to_the_rank_the_launcher_saw_die_by_itself(kb):
    # the OOM traceback has no rank prefix; torchrun's record says local_rank 1 failed with
    # exit code 1 and it sent the other worker SIGTERM (real paste: Project-MONAI/MONAI#5604)
    d, top = _top_of(kb, "real-holdout33/monai-5604-hpo-test-cuda-oom/log.txt")
    assert top.klass == "cuda-oom" and top.initiating_ranks == [1]
    # the same for a device-side assert quoted by NCCL, torchrun's Root Cause naming rank 1
    # (real paste: FlagOpen/FlagEmbedding#527)
    d, top = _top_of(kb, "real-holdout33/flagembedding-527-roberta-position-assert/log.txt")
    assert top.klass == "device-assert" and top.initiating_ranks == [1]


def test_a_log_that_ends_on_an_error_line_is_not_healthy(kb):
    # ColossalAI's CLI reports its torchrun failing, and the paste stops there (real paste:
    # hpcaitech/ColossalAI#4318); no entry knows the message
    d, top = _top_of(kb, "real-holdout25/colossalai-4318-cli-two-nodes-same-device/log.txt")
    assert d.verdict != "no-failure-found"
    assert any(e.signature == "end-error-line" for e in top.evidence)
    # a warning that mentions an error, as the last line, is no end (real paste of a healthy
    # run: a libibverbs warning on a host without InfiniBand)
    d, _ = _top_of(kb, "real-holdout10/meshtransformer-reference-run-libibverbs-warn-noise/log.txt")
    assert d.verdict == "no-failure-found"
    text = b"step 10 loss 2.1\nstep 11 loss 2.0\nERROR: failed to upload the checkpoint to s3://bucket/ckpt\n"
    assert diagnose(kb, scan_text(kb, text)).verdict != "no-failure-found"
    assert diagnose(kb, scan_text(kb, text + b"step 12 loss 1.9\n")).verdict == "no-failure-found"


def test_spawn_process_exited_records(kb):
    # torch/multiprocessing/spawn.py's ProcessExitedException: "process N terminated with
    # signal SIGX" / "... with exit code K", the first process join() saw fail
    from rankdoctor.diagnose.launcher import read_launcher

    text = (b"W0930 11:15:52.358000 1791209 torch/multiprocessing/spawn.py:160] Terminating process 1791247 via signal SIGTERM\n"
            b"torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGABRT\n"
            b"torch.multiprocessing.spawn.ProcessExitedException: process 0 terminated with exit code 3\n")
    recs = read_launcher(scan_text(kb, text).facts).records
    assert [(r.local_rank, r.exitcode, r.root_cause) for r in recs] == [(1, -6, True), (0, 3, True)]


def test_a_traceback_cut_right_after_its_header_is_a_failure_of_its_rank(kb):
    # a real paste (set AV, FlagEmbedding#1218): a tqdm bar whose carriage return was lost, then
    # rank 1's traceback header, and nothing after it
    text = ("{'loss': 1.1245, 'grad_norm': 0.0, 'learning_rate': 0, 'epoch': 0.0}            \n"
            "  0%|                                      | 1/61912 [00:01<22:07:27,  1.29s/it][rank1]: Traceback (most recent call last):\n")
    d = _diag(kb, text)
    assert d.verdict == "inconclusive" and d.diagnoses[0].initiating_rank == 1
    # a header whose frames and exception line come later, after other ranks' lines, is not cut
    full = ("[rank7]: Traceback (most recent call last):\n"
            + "".join(f"[rank0]: line {i}\n" for i in range(20))
            + '[rank7]:   File "train.py", line 3, in <module>\n[rank7]: ValueError: bad value\n')
    events = _diag(kb, full).weighing.att.events
    assert not [e for e in events if e.captures.get("cut")]


def test_a_windows_traceback_through_init_is_a_rendezvous_failure(kb):
    # traceback_frames patterns are written with "/": a Windows path's backslashes must read the same
    # (frames from pytorch/pytorch#85621, a gloo job on Windows; the error a Windows socket error)
    text = (
        'Traceback (most recent call last):\n'
        '  File "c:\\Users\\belof\\Desktop\\temp\\examples\\ddp_cpu.py", line 64, in init_process\n'
        '    dist.init_process_group("gloo", rank=rank, world_size=world_size)\n'
        '  File "C:\\Users\\belof\\Desktop\\temp\\.venv\\lib\\site-packages\\torch\\distributed\\distributed_c10d.py", line 602, in init_process_group\n'
        '    default_pg = _new_process_group_helper(\n'
        "OSError: [WinError 10049] The requested address is not valid in its context\n"
    )
    top = _diag(kb, text).diagnoses[0]
    assert (top.entry, top.klass) == ("rendezvous-unclassified-exception", "rendezvous-init")


def test_a_rank_cut_off_entering_main_process_first_waits_for_rank_0(kb):
    # rank 7's traceback stops entering `with training_args.main_process_first(...)`: the barrier
    # of that block waits for the main process, busy with the work inside it (real: Ascend/pytorch#62)
    text = (SCENARIOS / "real-holdout87/ascend-pytorch-62-main-process-first-timeout/log.txt").read_bytes()
    top = _diag(kb, text).diagnoses[0]
    assert (top.klass, top.initiating_rank) == ("straggler-timeout", 0)


def test_a_rank_cut_off_inside_torch_distributed_zero_first_waits_for_the_main_process(kb):
    # YOLOv5's context manager (utils/torch_utils.py: `dist.barrier(device_ids=[local_rank])` for
    # every rank but local rank 0): the traceback stops in the barrier inside it, so the frame
    # of the context manager itself says whom the rank waited for
    text = (
        "[rank9]:Traceback (most recent call last):\n"
        '[rank9]:  File "/workspace/yolov5/train.py", line 120, in train\n'
        "[rank9]:    with torch_distributed_zero_first(LOCAL_RANK):\n"
        '[rank9]:  File "/usr/lib/python3.10/contextlib.py", line 135, in __enter__\n'
        "[rank9]:    return next(self.gen)\n"
        '[rank9]:  File "/workspace/yolov5/utils/torch_utils.py", line 40, in torch_distributed_zero_first\n'
        "[rank9]:    dist.barrier(device_ids=[local_rank])\n"
        '[rank9]:  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/distributed_c10d.py", line 3685, in barrier\n'
        "[rank9]:    work = default_pg.barrier(opts=opts)\n"
    )
    d = _diag(kb, text)
    assert [e.captures.get("wait_call") for e in d.weighing.att.events if e.captures.get("waiting")] == ["torch_distributed_zero_first"]
    top = d.diagnoses[0]
    assert (top.klass, top.initiating_rank) == ("straggler-timeout", 0)


def test_a_rank_named_only_for_reporting_a_mismatch_is_not_said_to_have_taken_the_other_path(kb):
    # a pipeline stage's recv rejects a larger message (gloo's size check) on rank 0; its sender,
    # rank 4, left no line of its own (lab: p2p-shape, PP 2 x TP 2 x DP 2): the answer may name
    # the reporter, but not as the rank that issued the other operation
    d, top = _top_of(kb, "lab-pg2d/p2p-shape-pp2tp2dp2-r4-s3/console.log")
    assert d.verdict == "inconclusive"
    assert "reported the mismatch" in top.root_cause and "took the other path" not in top.root_cause


def test_a_spawned_process_whose_traceback_is_cut_is_not_a_confident_crash(kb):
    # torch.multiprocessing.spawn's "-- Process 1 terminated with the following error:" and a
    # traceback cut off inside DDP's forward, before its exception line (ManiSkill2-Learn#110):
    # what the process died of is not shown, so the crash reading stays inconclusive; the same
    # header above a complete exception line (fairscale#1139's SystemError) does not fire it
    from rankdoctor.diagnose.engine import weigh

    cut = weigh(kb, scan_text(kb, (SCENARIOS / "real-holdout40/maniskill-110-ddp-unused-params-rank1/log.txt").read_bytes()))
    assert cut.scored[0].hyp.ranks == (1,) and cut.scored[0].features["claim_failure_cut"] == 1.0
    d, top = _top_of(kb, "real-holdout40/maniskill-110-ddp-unused-params-rank1/log.txt")
    assert d.verdict == "inconclusive"
    shown = weigh(kb, scan_text(kb, (SCENARIOS / "real-holdout53/fairscale-1139-fsdp-pp-te-backward-process5/log.txt").read_bytes()))
    assert shown.scored[0].hyp.ranks == (5,) and shown.scored[0].features["claim_failure_cut"] == 0.0


def test_ipython_traceback_header_names_its_exception(kb):
    """A notebook's traceback (IPython) starts with the exception's name and "Traceback (most recent
    call last)" on one line, then cells and code lines (real paste: casper-hansen/AutoAWQ#281, cut
    before the message): an OutOfMemoryError there is the OOM; another exception no entry knows is
    still a failure, not a healthy run."""
    d, top = _top_of(kb, "real-holdout119/AutoAWQ-281-awq-device-map-oom/log.txt")
    assert top.klass == "cuda-oom"
    text = (
        "---------------------------------------------------------------------------\n"
        "KeyError                                  Traceback (most recent call last)\n"
        "Cell In[3], line 1\n"
        "----> 1 train(cfg)\n"
    )
    assert _diag(kb, text).verdict != "no-failure-found"
