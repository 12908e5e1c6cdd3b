"""Readings learned from lab-pg2d-fresh7 (tests/scenarios/lab-pg2d-fresh7: 8-rank TP x DP (x PP)
runs, measured before any change).

- faulthandler names threads only by id, and when a native thread aborts (an uncaught C++
  exception in gloo's transport) it prints no "Current thread": the first thread it lists may be a
  helper. The main thread is the one whose outermost frame runs the script's module.
- gloo's size check ("op.preamble.length <= op.nbytes. X vs Y") aborts the rank that received a
  message of the wrong size. The sender is the side that strayed only when it waited somewhere no
  other rank did while the receiver stood where the rest did; a receiver whose crash dump shows it
  inside a collective at a line of its own (an extra all_reduce) is as odd as the sender.
- A rank that left no Flight Recorder dump and no failure line of its own (preempted by a SIGTERM
  from outside, exit -15) is named by the dumps: the group stuck waiting for it is its only
  evidence besides the launcher's record."""

from __future__ import annotations

import rankdoctor
from rankdoctor.ingest.stacks import parse_stack_dump

from .conftest import SCENARIOS

PG = SCENARIOS / "lab-pg2d-fresh7"

# rank 4's stderr in extra-tp-tp2dp4-r4-s2 (the run's own faulthandler output, cut to its frames)
ABORTED = """terminate called after throwing an instance of 'gloo::EnforceNotMet'
Fatal Python error: Aborted

Thread 0x00007fd8a11116c0 (most recent call first):
  File "/work/main/lab/_common.py", line 124 in watcher
  File "/root/.pyenv/versions/3.11.7/lib/python3.11/threading.py", line 982 in run
  File "/root/.pyenv/versions/3.11.7/lib/python3.11/threading.py", line 1045 in _bootstrap_inner
  File "/root/.pyenv/versions/3.11.7/lib/python3.11/threading.py", line 1002 in _bootstrap

Thread 0x00007fd8c22a3b80 (most recent call first):
  File "/work/main/.venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 3252 in all_reduce
  File "/work/main/.venv/lib/python3.11/site-packages/torch/distributed/c10d_logger.py", line 83 in wrapper
  File "/work/main/lab/pg2d.py", line 234 in main
  File "/work/main/lab/pg2d.py", line 270 in <module>
"""


def test_the_main_thread_of_a_faulthandler_dump_runs_the_module():
    dump = parse_stack_dump(ABORTED, "stderr.log")
    assert dump.crash and dump.main.frames[0].func == "all_reduce"
    assert dump.main.frames[-1].func == "<module>"
    # without a module frame, the first thread listed (faulthandler's current thread) stays the main one
    helper_only = ABORTED.split("\nThread 0x00007fd8c22a3b80")[0]
    assert parse_stack_dump(helper_only, "stderr.log").main.frames[0].func == "watcher"


def test_a_size_check_whose_receiver_stood_apart_too_names_no_sender():
    # rank 4 issued an extra scalar all_reduce in its TP group [4, 5] and received rank 5's next
    # all_reduce (32 bytes where it expected 4): rank 5 waited at its activation all_reduce, a
    # line no other rank's traceback shows, but rank 4's crash dump is at a line of its own too
    d = PG / "extra-tp-tp2dp4-r4-s2"
    diag = rankdoctor.diagnose([str(d / "console.log"), str(d / "logs")])
    top = diag.diagnoses[0]
    assert top.klass == "collective-desync"
    assert top.initiating_rank != 5
    assert diag.verdict != "diagnosed" or top.initiating_rank == 4, (diag.verdict, top.initiating_rank)


def test_a_rank_preempted_without_a_line_is_named_by_the_group_stuck_on_it():
    # rank 5 got SIGTERM from outside at step 3: exit -15, no traceback, no dump; its TP and DP
    # groups' members that dumped wait in the step's all_reduce for it
    d = PG / "sigterm-tp2dp4-r5-s3"
    diag = rankdoctor.diagnose([str(d / "console.log"), str(d / "logs")], fr=[str(d / "fr")])
    top = diag.diagnoses[0]
    assert top.klass == "peer-rank-crashed" and top.initiating_rank == 5, (top.klass, top.initiating_rank)
