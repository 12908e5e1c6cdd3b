"""Readings learned from held-out set EX (tests/scenarios/real-holdout158: run logs from public
repositories and issue threads, measured before any change).

- A failure line the program printed as a record at warning level (glog's "W0404 ...", a WARNING
  record, a Python warning) said it carries on: dynamo's "hit config.recompile_limit" falls back to
  eager. It weighs less than another rank's exception (entry_warned, claim_warned) - here rank 1's
  CUDA out-of-memory error in a Ray actor, among recompile warnings of ranks 5 and 7 printed first.
- Tracebacks no rank can be given (several processes' output pasted together) are failures the
  job-wide readings must explain: a Slurm time limit after them leaves them unexplained
  (norank_unexplained_failure), and the same exception word for word from several rankless
  tracebacks is the program's (norank_same_failure).
- ESPnet's "The training was finished at N epochs" is the run's word that its work ended (fact
  run-done), and NCCL's INFO traces of an error code as the other ranks close their communicators
  around it ("misc/socket.cc:64 -> 3", then "Abort COMPLETE") are teardown - below the word too,
  where a program's own warning is not (FSDP failing to clone a tensor while it saves)."""

from __future__ import annotations

import re

import rankdoctor
from rankdoctor.diagnose.features import warned_cause
from rankdoctor.events import Event
from rankdoctor.facts import FACTS

from .conftest import SCENARIOS
from .conftest import diagnose_top as _diag

EX = SCENARIOS / "real-holdout158"


def test_an_exception_outweighs_other_ranks_warning_records_printed_before_it():
    _d, top = _diag(EX / "p3-miles-qwen35moe-cp2-ep4-rank1-cuda-oom" / "log.txt")
    assert (top.klass, top.initiating_rank) == ("cuda-oom", 1)


def test_a_warning_record_is_one_the_program_carried_on_from_but_nccl_warn_is_an_error():
    def ev(text):
        return Event("e", "s", "cause", "x.log", 1, text)

    assert warned_cause(ev("[rank5]:W0404 06:31:28.877000 122414 torch/_dynamo/convert_frame.py:1358] [10/8] "
                             "torch._dynamo hit config.recompile_limit (8)"))
    assert not warned_cause(ev("node1:58377:193229 [3] NCCL WARN NET/IB : Got completion with error 12"))
    assert not warned_cause(ev("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.46 GiB."))


def test_rankless_tracebacks_are_not_explained_away_by_a_time_limit():
    # three processes raise the same RuntimeError of a CUDA kernel stub built without the toolkit,
    # then Slurm cancels the job at its time limit; the label (nccl-cuda-version) needs a fact the
    # log lacks, but the time limit must not be stated as the cause at the old 0.97
    d, top = _diag(EX / "p7-openfold-pr310-4gpu-deepspeed-cpu-stub-attn-kernel-time-limit" / "log.txt")
    assert top.confidence < 0.97
    w = d.weighing
    generic = [s for s in w.scored if s.hyp.entry.id == "worker-python-exception" and not s.hyp.ranks]
    assert generic and generic[0].features["norank_same_failure"] == 1.0
    assert generic[0].features["norank_unranked"] == 1.0
    limit = [s for s in w.scored if s.hyp.entry.id == "slurm-job-time-limit"]
    assert limit and limit[0].features["norank_unexplained_failure"] == 1.0


def test_espnet_finished_training_and_nccl_teardown_traces_are_healthy():
    assert re.search(FACTS["run-done"], "[pg12b-14-2-hpc:0/8] 2026-08-29 21:04:22,421 (trainer:566) INFO: "
                                    "The training was finished at 1 epochs ")
    d, _top = _diag(EX / "p4-espnet-wavlm-large-8gpu-compile-bench-healthy-nccl-abort-noise" / "log.txt")
    assert d.verdict == "no-failure-found"
    # a program's own warning below the run's word is still a failure (the state dict it saved
    # may point at invalid memory)
    d, _top = _diag(SCENARIOS / "real-holdout26" / "fastchat-1242-fsdp-save-oom-garbled" / "log.txt")
    assert d.verdict != "no-failure-found"
