#!/usr/bin/env python3
"""Failure-lab driver: run distributed-training failure cases under torchrun
and capture what they really print.

    python lab/run.py [CASE ...] --out DIR     # default: all cases
    python lab/run.py --list
    python lab/run.py --matrix [VARIANT ...]   # the fault matrix (MATRIX below),
                                               # default out: tests/scenarios/lab-matrix
    python lab/run.py --matrix --list
    python lab/run.py --matrix-pg2d --out DIR  # 8 ranks, TP x DP (x PP) process groups
                                               # (lab/pg2d.py, MATRIX_PG2D_SPEC), held out

For every case it writes DIR/<case>/:
    logs/          torchrun --log-dir tree, exactly as torchrun wrote it
    console.log    torchrun's terminal output (stdout+stderr merged)
    cmd.txt        the exact command, the env vars the lab set, exit status
    expected.yaml  class / initiating_rank / entry_hint / description /
                   evidence (evidence lines are picked verbatim from
                   console.log by the regexes in the case table below)
    fr/            Flight Recorder dumps (only for cases with fr=True)
    stacks/        py-spy dumps of every rank taken from outside while the job
                   hangs, rank<N>.txt and rank<N>.json (cases with stacks_after)

torch and torchrun are taken from the interpreter running this script
(``sys.executable -m torch.distributed.run``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

LAB = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(LAB)

# Env vars that make the rank logs look like a typical real job.
NOISY = {"TORCH_DISTRIBUTED_DEBUG": "INFO", "TORCH_CPP_LOG_LEVEL": "INFO"}
FR = {"TORCH_FR_BUFFER_SIZE": "2000"}


@dataclass
class Case:
    script: str
    nproc: int
    cls: str | None
    initiating_rank: int | None
    hint: str
    description: str
    evidence: list[str]  # regexes; first console.log line matching each one
    env: dict[str, str] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)
    fr: bool = False
    tee: str | None = "3"  # torchrun --tee value (None: no --tee)
    kill_after: float | None = None  # send SIGTERM to torchrun after N s
    wall_timeout: float = 180.0
    expect_ok: bool = False  # True: torchrun must exit 0
    pre: str | None = None  # name of a pre-run hook (see HOOKS)
    torchrun_args: list[str] = field(default_factory=list)
    initiating_ranks: list[int] | None = None  # several culprits (matrix two-culprit variants)
    # rank sets that also count as right: the evidence shows the culprit only together with its
    # partners (the two ranks of a send/recv deadlock wait on each other alike)
    also_ranks: list[list[int]] | None = None
    stacks_after: str | None = None  # regex: once a console line matches, take py-spy stacks ...
    stacks_delay: float = 3.0  # ... this many seconds later, from outside (stacks/rank<N>.txt)
    stacks_required: bool = True  # CHECK when no stack could be taken (the job must still hang)
    sigkill_expected: bool = False  # the fault makes a rank ignore SIGTERM (SIGSTOP, GIL held)


CASES: dict[str, Case] = {
    "healthy-ddp-2r": Case(
        "healthy_ddp.py", 2, None, None, "healthy",
        "Successful 2-rank DDP training run (40 steps) with tqdm, step/loss lines, "
        "a DeprecationWarning and a UserWarning, TORCH_DISTRIBUTED_DEBUG=INFO and "
        "TORCH_CPP_LOG_LEVEL=INFO noise. Nothing here is a failure.",
        [r"step\s+40/40", r"training finished"],
        env=dict(NOISY), expect_ok=True,
    ),
    "healthy-ddp-4r": Case(
        "healthy_ddp.py", 4, None, None, "healthy",
        "Successful 4-rank DDP training run (40 steps) with tqdm, step/loss lines, "
        "warnings and INFO-level c10d/DDP logging. Nothing here is a failure.",
        [r"step\s+40/40", r"training finished"],
        env=dict(NOISY), expect_ok=True,
    ),
    "fr-formats": Case(
        "fr_formats.py", 2, None, None, "healthy",
        "Healthy 2-rank run with a 4-entry Flight Recorder ring buffer (it wraps); every rank "
        "dumps its trace as pickle (fr/) and as JSON (fr-json/). Nothing here is a failure.",
        [r"done: \[1\.0, 1\.0, 1\.0, 1\.0\]"],
        env={"TORCH_FR_BUFFER_SIZE": "4"}, fr=True, expect_ok=True,
    ),
    "exception-rank2": Case(
        "exception_rank2.py", 4, "peer-rank-crashed", 2, "python-exception-in-one-rank",
        "Rank 2 of 4 raises IndexError (list index out of range) in its data loading at "
        "step 6 while ranks 0,1,3 wait in DDP's gradient all_reduce. Script uses @record.",
        [r"\[rank2\]: IndexError: list index out of range",
         r"\[rank\d\]: RuntimeError: .*Connection closed by peer",
         r"failed \(exitcode: 1\) local_rank: 2"],
        fr=True,
    ),
    "sigkill-rank1": Case(
        "sigkill_rank1.py", 4, "host-oom", 1, "worker-sigkill-oom",
        "Rank 1 of 4 sends itself SIGKILL at step 5 (as the kernel OOM killer would) while "
        "the other ranks are in DDP's gradient all_reduce.",
        [r"failed \(exitcode: -9\) local_rank: 1", r"Signal 9 \(SIGKILL\) received by PID",
         r"\[rank\d\]: RuntimeError: .*(Connection closed by peer|Connection reset by peer)"],
        fr=True,
    ),
    "straggler-rank0": Case(
        "straggler_rank0.py", 4, "straggler-timeout", 0, "barrier-timeout-slow-rank",
        "Rank 0 spends ~25 s building a dataset cache (progress lines) while ranks 1-3 wait "
        "in dist.barrier() with a 10 s gloo timeout.",
        [r"\[rank\d\]: RuntimeError: .*Timed out waiting 10000ms",
         r"building dataset cache: 10/25", r"failed \(exitcode: 1\) local_rank: \d"],
        fr=True,
    ),
    "compile-desync": Case(
        "compile_desync.py", 4, "collective-desync", 1, "compile-data-dependent-collective",
        "A torch.compile'd train step (backend aot_eager) has `if loss > SPIKE: dist.all_reduce(spike)`; "
        "only rank 1 (outlier targets at step 4) takes the branch, so its collective sequence diverges "
        "from ranks 0,2,3: gloo pairs rank 1's 1-element all_reduce with the others' gradient "
        "all_reduce and rank 1 aborts (SIGABRT) on the size check; the peers see connection errors.",
        [r"\[__graph_breaks\] Graph Break Reason: Data-dependent branching",
         r"op\.preamble\.length <= op\.nbytes.*collective mismatch",
         r"failed \(exitcode: -6\) local_rank: 1"],
        env={"TORCH_LOGS": "recompiles,graph_breaks"}, fr=True,
    ),
    "shape-recompile-rank1": Case(
        "shape_recompile_rank1.py", 4, "collective-desync", 1, "compile-shape-recompile-extra-collective",
        "Rank 1 gets a 7-sample partial batch at step 3; the compiled step's shape-based branch "
        "(`if x.shape[0] < BATCH: dist.all_reduce(n)`) makes rank 1 recompile and issue an extra "
        "all_reduce the other ranks never issue; gloo's size check aborts rank 1 (SIGABRT).",
        [r"\[__recompiles\] +- 0/0: tensor 'x' size mismatch at index 0. expected 8, actual 7",
         r"op\.preamble\.length <= op\.nbytes.*collective mismatch",
         r"failed \(exitcode: -6\) local_rank: 1"],
        env={"TORCH_LOGS": "recompiles,graph_breaks"}, fr=True,
    ),
    "extra-collective-same-shape": Case(
        "extra_collective_same_shape.py", 4, "collective-desync", 1, "extra-collective-same-shape",
        "From step 3 on rank 1 issues one extra float32[16] all_reduce (metrics hook registered twice), "
        "which gloo silently matches with the other ranks' next float32[16] all_reduce; rank 1 ends "
        "with one collective nobody joins.",
        [r"rank 1 step 3 err 3\.5170",
         r"\[rank1\]: RuntimeError: .*Connection closed by peer",
         r"failed \(exitcode: 1\) local_rank: 1"],
        fr=True,
    ),
    "dtype-mismatch": Case(
        "dtype_mismatch.py", 2, "collective-desync", None, "all-reduce-dtype-mismatch",
        "Rank 0 all_reduces float32[8] while rank 1 all_reduces int32[8] (same byte size). "
        "Gloo raises nothing: each rank sums the peer's bytes reinterpreted as its own dtype "
        "(silent corruption) and torchrun exits 0.",
        [r"rank 1 step 0 dtype=torch\.int32 reduced=", r"rank 0 step 0 dtype=torch\.float32 reduced="],
        fr=True, expect_ok=True,
    ),
    "hang-killed": Case(
        "hang_killed.py", 4, "straggler-timeout", 3, "hang-killed-by-sigterm",
        "Rank 3 is stuck in a pure-Python retry loop at step 3 while ranks 0-2 wait in DDP's gradient "
        "all_reduce with a 600 s timeout; after 15 s the driver sends SIGTERM to torchrun, which "
        "forwards it to the workers (FR dumped from the SIGTERM path).",
        [r"still invalid after \d+ retries", r"Received 15 death signal, shutting down workers",
         r"SignalException: Process \d+ got signal: 15"],
        env={"LAB_PG_TIMEOUT": "600"}, fr=True, kill_after=15,
    ),
    "rank0-only-collective": Case(
        "rank0_only_collective.py", 4, "collective-desync", 0, "rank0-only-collective",
        "After each epoch only rank 0 calls dist.all_reduce(val_loss) (`if rank == 0:`); ranks 1-3 go "
        "on to the next DDP gradient all_reduce; gloo pairs the mismatched ops and rank 0 aborts "
        "(SIGABRT) on the size check.",
        [r"op\.preamble\.length <= op\.nbytes.*collective mismatch",
         r"failed \(exitcode: -6\) local_rank: 0", r"Signal 6 \(SIGABRT\) received by PID"],
        fr=True,
    ),
    "nan-loss": Case(
        "nan_loss.py", 2, "nan-divergence", None, "loss-nan-bad-lr",
        "SGD with lr=5.0 (typo for 5e-3): the loss explodes to inf/nan within a few steps and the "
        "script stops with 'Loss is <inf|nan>, stopping training' (sys.exit(1)) on every rank.",
        [r"Loss is (nan|inf), stopping training", r"failed \(exitcode: -?\d+\)"],
    ),
    "checkpoint-module-prefix": Case(
        "checkpoint_module_prefix.py", 2, "checkpoint-error", None, "state-dict-module-prefix",
        "Rank 0 saves a DDP state_dict (keys prefixed 'module.'); every rank loads it into a bare "
        "TinyNet with load_state_dict -> Missing/Unexpected key(s) RuntimeError on all ranks.",
        [r"Error\(s\) in loading state_dict for TinyNet", r"Missing key\(s\) in state_dict",
         r"Unexpected key\(s\) in state_dict"],
        env={"LAB_CKPT_DIR": "/tmp"},
    ),
    "ddp-unused-params": Case(
        "ddp_unused_params.py", 2, "ddp-unused-parameters", None, "ddp-unused-parameters",
        "DDP (find_unused_parameters=False) around a model whose aux_head is never used in forward; "
        "the second iteration raises 'Expected to have finished reduction in the prior iteration'.",
        [r"Expected to have finished reduction in the prior iteration",
         r"Parameter indices which did not receive grad", r"failed \(exitcode: 1\)"],
    ),
    "ddp-mark-ready-twice": Case(
        "ddp_mark_ready_twice.py", 2, "ddp-mark-ready-twice", None, "ddp-mark-variable-ready-twice",
        "The same block runs twice per forward under reentrant activation checkpointing inside "
        "DDP(find_unused_parameters=True) -> 'Expected to mark a variable ready only once'.",
        [r"Expected to mark a variable ready only once", r"failed \(exitcode: 1\)"],
    ),
    "ddp-model-mismatch": Case(
        "ddp_model_mismatch.py", 2, "ddp-model-mismatch", 1, "ddp-model-shape-mismatch",
        "Rank 1 builds TinyNet(d_hidden=64), rank 0 TinyNet(d_hidden=32); the DDP constructor's "
        "cross-rank parameter-shape check fails on rank 1 (params[0] ... appears not to match).",
        [r"\[rank1\]: RuntimeError: \[1\]: params\[0\] in this process with sizes .* appears not to match",
         r"failed \(exitcode: 1\) local_rank: 1"],
    ),
    "dataloader-worker-killed": Case(
        "dataloader_worker_killed.py", 2, "host-oom", 0, "dataloader-worker-sigkill",
        "On rank 0 a DataLoader worker SIGKILLs itself while loading sample 37 (as the OOM killer "
        "would); the main process raises 'DataLoader worker (pid N) is killed by signal: Killed.'",
        [r"\[rank0\]: RuntimeError: DataLoader worker \(pid \d+\) is killed by signal: Killed",
         r"failed \(exitcode: 1\) local_rank: 0"],
        fr=True,
    ),
    "rendezvous-port-in-use": Case(
        "healthy_ddp.py", 2, "rendezvous-init", None, "master-port-in-use",
        "torchrun is started with --master-port pointing at a port another process already listens on "
        "(the driver holds it); the rendezvous/TCPStore cannot be set up.",
        [r"DistNetworkError: The server socket has failed to listen on any local network address"],
        pre="port_in_use", wall_timeout=120,
    ),
}


# --------------------------------------------------------------------------
# The fault matrix: the same faults with the culprit rank, the world size, the
# step and the console options varied (tests/scenarios/lab-matrix/).  The case
# scripts read the knobs LAB_CULPRIT / LAB_CULPRITS / LAB_STEP (lab/_common.py);
# the ground truth (class, initiating rank) comes from what is injected.
# Variant names: <fault>-w<world>[-r<culprit>[r<culprit2>]][-notee].

MATRIX_OUT = os.path.join(REPO, "tests", "scenarios", "lab-matrix")
SHORT = {"LAB_PG_TIMEOUT": "10"}  # every matrix hang ends within seconds
PEER_LOST = r"Connection (closed|reset) by peer"


def _ranks(ranks) -> str:
    """Regex for one of ``ranks`` (e.g. ``[023]``)."""
    ranks = sorted(ranks)
    return str(ranks[0]) if len(ranks) == 1 else "[" + "".join(map(str, ranks)) + "]"


def _others(world: int, culprits) -> list[int]:
    return [r for r in range(world) if r not in culprits]


def _words(ranks) -> str:
    ranks = list(ranks)
    return ", ".join(map(str, ranks[:-1])) + " and " + str(ranks[-1]) if len(ranks) > 1 else str(ranks[0])


def _mx_exception(w, cs, s):
    o = _others(w, cs)
    return dict(
        script="exception_rank2.py", cls="peer-rank-crashed", hint="python-exception-in-one-rank",
        description=f"Rank{'s' if len(cs) > 1 else ''} {_words(cs)} of {w} raise{'' if len(cs) > 1 else 's'} "
        f"IndexError (list index out of range) in data loading at step {s} (a short shard) while rank(s) "
        f"{_words(o)} wait in DDP's gradient all_reduce for that step. Script uses @record.",
        evidence=[rf"\[rank{_ranks(cs)}\]: IndexError: list index out of range",
                  rf"\[rank{_ranks(o)}\]: RuntimeError: .*{PEER_LOST}",
                  r"failed \(exitcode: 1\) local_rank: \d"],
        fr=True)


def _mx_sigkill(w, cs, s):
    o = _others(w, cs)
    return dict(
        script="sigkill_rank1.py", cls="host-oom", hint="worker-sigkill-oom",
        description=f"Rank{'s' if len(cs) > 1 else ''} {_words(cs)} of {w} send{'' if len(cs) > 1 else 's'} "
        f"{'themselves' if len(cs) > 1 else 'itself'} SIGKILL at step {s} (as the kernel OOM killer would; "
        f"no traceback) while rank(s) {_words(o)} are in DDP's gradient all_reduce.",
        evidence=[r"exitcode  : -9 \(pid: \d+\)  \(SIGKILL\)", r"Signal 9 \(SIGKILL\) received by PID",
                  rf"\[rank{_ranks(o)}\]: RuntimeError: .*{PEER_LOST}"],
        fr=True)


def _mx_straggler(w, cs, s):
    c, o = cs[0], _others(w, cs)
    return dict(
        script="straggler_rank0.py", cls="straggler-timeout", hint="barrier-timeout-slow-rank",
        description=f"Rank {c} of {w} spends ~25 s building a dataset cache (progress lines) while "
        f"rank(s) {_words(o)} wait in dist.barrier() with a 10 s gloo timeout and raise.",
        evidence=[rf"\[rank{_ranks(o)}\]: RuntimeError: .*Timed out waiting 10000ms",
                  r"building dataset cache: 5/25", rf"rank {_ranks(o)} waiting for all ranks before training",
                  r"failed \(exitcode: 1\) local_rank: \d"],
        fr=True)


def _mx_silent_hang(w, cs, s, killed=False):
    o = _others(w, cs)
    hang = (f"blocks{'' if len(cs) == 1 else ' each'} in a stalled shard read at step {s} (no log line, no "
            f"exception) while rank(s) {_words(o)} keep logging steps {s}..14 of a gradient-accumulation "
            f"window and then wait in DDP's gradient all_reduce at step 15")
    if killed:
        return dict(
            script="silent_hang.py", cls="straggler-timeout", hint="hang-killed-by-sigterm",
            description=f"Rank {_words(cs)} of {w} {hang}; the gloo timeout is 600 s, so nothing times out: "
            f"after 15 s the driver sends SIGTERM to torchrun, which forwards it to the workers.",
            evidence=[rf"rank {_ranks(o)} step 14 loss", r"Received 15 death signal, shutting down workers",
                      r"SignalException: Process \d+ got signal: 15"],
            env={"LAB_PG_TIMEOUT": "600"}, fr=True, kill_after=15)
    return dict(
        script="silent_hang.py", cls="straggler-timeout", hint="silent-rank-hang-timeout",
        description=f"Rank{'s' if len(cs) > 1 else ''} {_words(cs)} of {w} {hang} until the 10 s gloo "
        f"timeout fires there; torchrun then SIGTERMs the silent rank(s).",
        evidence=[rf"rank {_ranks(o)} step 14 loss",
                  rf"\[rank{_ranks(o)}\]: RuntimeError: .*Timed out waiting 10000ms",
                  r"failed \(exitcode: 1\) local_rank: \d"],
        fr=True)


def _mx_hang_killed(w, cs, s):
    c, o = cs[0], _others(w, cs)
    return dict(
        script="hang_killed.py", cls="straggler-timeout", hint="hang-killed-by-sigterm",
        description=f"Rank {c} of {w} is stuck in a pure-Python retry loop at step {s} (a warning every "
        f"10 retries) while rank(s) {_words(o)} wait in DDP's gradient all_reduce with a 600 s timeout; "
        f"after 15 s the driver sends SIGTERM to torchrun, which forwards it to the workers.",
        evidence=[rf"rank {c}: sample for step {s} still invalid after \d+ retries",
                  r"Received 15 death signal, shutting down workers",
                  r"SignalException: Process \d+ got signal: 15"],
        env={"LAB_PG_TIMEOUT": "600"}, fr=True, kill_after=15)


def _mx_compile_desync(w, cs, s):
    c, o = cs[0], _others(w, cs)
    return dict(
        script="compile_desync.py", cls="collective-desync", hint="compile-data-dependent-collective",
        description=f"A torch.compile'd train step (backend aot_eager) has `if loss > SPIKE: "
        f"dist.all_reduce(spike)`; only rank {c} of {w} (outlier targets at step {s}) takes the branch, "
        f"so its 1-element all_reduce is paired with the gradient all_reduce of rank(s) {_words(o)}; "
        f"gloo's size check fails on the rank that receives more bytes than its op holds.",
        evidence=[r"\[__graph_breaks\] Graph Break Reason: Data-dependent branching",
                  r"op\.preamble\.length <= op\.nbytes.*collective mismatch",
                  r"exitcode  : -6 \(pid: \d+\)  \(SIGABRT\)"],
        env={"TORCH_LOGS": "recompiles,graph_breaks"}, fr=True)


def _mx_shape_recompile(w, cs, s):
    c, o = cs[0], _others(w, cs)
    return dict(
        script="shape_recompile_rank1.py", cls="collective-desync",
        hint="compile-shape-recompile-extra-collective",
        description=f"Rank {c} of {w} gets a 7-sample partial batch at step {s}; the compiled step's "
        f"shape-based branch (`if x.shape[0] < BATCH: dist.all_reduce(n)`) makes rank {c} recompile and "
        f"issue an extra 1-element all_reduce that rank(s) {_words(o)} never issue; gloo pairs it with "
        f"their gradient all_reduce and its size check fails.",
        evidence=[r"\[__recompiles\] +- 0/0: tensor 'x' size mismatch at index 0. expected 8, actual 7",
                  r"op\.preamble\.length <= op\.nbytes.*collective mismatch",
                  r"exitcode  : -6 \(pid: \d+\)  \(SIGABRT\)"],
        env={"TORCH_LOGS": "recompiles,graph_breaks"}, fr=True)


def _mx_extra_same_shape(w, cs, s):
    c, o = cs[0], _others(w, cs)
    return dict(
        script="extra_collective_same_shape.py", cls="collective-desync", hint="extra-collective-same-shape",
        description=f"From step {s} on rank {c} of {w} issues one extra float32[16] all_reduce (metrics hook "
        f"registered twice), which gloo silently matches with the next float32[16] all_reduce of rank(s) "
        f"{_words(o)}; they finish, rank {c} is left with one collective nobody joins and fails when "
        f"the peers close their connections.",
        evidence=[rf"rank {c} step {s} err ", rf"\[rank{c}\]: RuntimeError: .*{PEER_LOST}",
                  rf"failed \(exitcode: 1\) local_rank: {c}"],
        fr=True)


def _mx_rank_only(w, cs, s):
    c, o = cs[0], _others(w, cs)
    return dict(
        script="rank0_only_collective.py", cls="collective-desync", hint="rank0-only-collective",
        description=f"After each epoch only rank {c} of {w} calls dist.all_reduce(val_loss) (a scalar, "
        f"SMALLER than the peers' op); rank(s) {_words(o)} go on to the next DDP gradient all_reduce "
        f"(676 float32); gloo pairs the mismatched ops and its size check fails.",
        evidence=[r"op\.preamble\.length <= op\.nbytes.*collective mismatch",
                  r"exitcode  : -6 \(pid: \d+\)  \(SIGABRT\)"],
        fr=True)


def _mx_rank_only_large(w, cs, s):
    c, o = cs[0], _others(w, cs)
    return dict(
        script="rank_only_collective_large.py", cls="collective-desync", hint="rank-only-collective-larger-op",
        description=f"After each epoch only rank {c} of {w} all-reduces a float32[4096] prediction histogram "
        f"(LARGER than the peers' op); rank(s) {_words(o)} go on to the next DDP gradient all_reduce "
        f"(676 float32); gloo pairs the mismatched ops and its size check fails.",
        evidence=[r"op\.preamble\.length <= op\.nbytes.*collective mismatch",
                  r"exitcode  : -6 \(pid: \d+\)  \(SIGABRT\)"],
        fr=True)


def _mx_dtype(w, cs, s):
    c, o = cs[0], _others(w, cs)
    return dict(
        script="dtype_mismatch.py", cls="collective-desync", hint="all-reduce-dtype-mismatch",
        description=f"Rank {c} of {w} all_reduces int32[8] while rank(s) {_words(o)} all_reduce float32[8] "
        f"(same byte size). Gloo raises nothing: each rank sums the peers' bytes reinterpreted as its own "
        f"dtype (silent corruption) and torchrun exits 0."
        + (" With two ranks nothing tells which side is the wrong one (initiating_rank null)." if w == 2 else ""),
        evidence=[rf"rank {c} step 0 dtype=torch\.int32 reduced=",
                  rf"rank {_ranks(o)} step 0 dtype=torch\.float32 reduced="],
        fr=True, expect_ok=True, initiating_rank=None if w == 2 else c)


def _mx_nan_loss(w, cs, s):
    return dict(
        script="nan_loss.py", cls="nan-divergence", hint="loss-nan-bad-lr",
        description=f"{w}-rank DDP run, SGD with lr=5.0 (typo for 5e-3): the loss explodes to inf/nan "
        f"within a few steps on every rank at once and the script stops with 'Loss is <inf|nan>, "
        f"stopping training' (sys.exit(1)).",
        evidence=[r"Loss is (nan|inf), stopping training", r"failed \(exitcode: -?\d+\)"])


def _mx_nan_first(w, cs, s):
    c, o = cs[0], _others(w, cs)
    return dict(
        script="nan_first_rank.py", cls="nan-divergence", hint="loss-nan-bad-batch-one-rank",
        description=f"At step {s} rank {c} of {w} reads a corrupt batch (features x 1e25): ITS loss "
        f"overflows to inf first and it logs a warning (the loop stops only on nan); DDP's gradient "
        f"all_reduce spreads the non-finite gradients, and at step {s + 1} every rank's loss is nan -> "
        f"'Loss is nan, stopping training' on all ranks (exit 1). Timestamps show rank {c} first.",
        evidence=[rf"rank {c} step {s}: loss is inf \(overflow\), continuing",
                  rf"rank {_ranks(o)} step {s} loss ", r"Loss is nan, stopping training",
                  r"failed \(exitcode: 1\)"])


def _mx_model_mismatch(w, cs, s):
    c, o = cs[0], _others(w, cs)
    if c == 0:
        raisers, check = o, rf"\[rank{_ranks(o)}\]: RuntimeError: \[{_ranks(o)}\]: params\[0\] in this process"
    else:
        raisers, check = [c], rf"\[rank{c}\]: RuntimeError: \[{c}\]: params\[0\] in this process"
    return dict(
        script="ddp_model_mismatch.py", cls="ddp-model-mismatch", hint="ddp-model-shape-mismatch",
        description=f"Rank {c} of {w} builds TinyNet(d_hidden=64), the others TinyNet(d_hidden=32); the DDP "
        f"constructor broadcasts rank 0's parameter shapes and every rank whose shapes differ from rank 0's "
        f"raises (params[0] ... appears not to match sizes of the same param in process 0)"
        + (f": here ranks {_words(o)}, not the culprit rank 0 - its own log line shows the odd d_hidden."
           if c == 0 else "."),
        evidence=[rf"rank {c} building TinyNet\(d_hidden=64\)", check + r" with sizes .* appears not to match",
                  r"failed \(exitcode: 1\) local_rank: \d"])


def _mx_dl_worker(w, cs, s):
    c, o = cs[0], _others(w, cs)
    return dict(
        script="dataloader_worker_killed.py", cls="host-oom", hint="dataloader-worker-sigkill",
        description=f"On rank {c} of {w} a DataLoader worker SIGKILLs itself while loading sample 37 (as the "
        f"OOM killer would); that rank's main process raises 'DataLoader worker (pid N) is killed by "
        f"signal: Killed.' while rank(s) {_words(o)} wait in DDP's gradient all_reduce.",
        evidence=[rf"\[rank{c}\]: RuntimeError: DataLoader worker \(pid \d+\) is killed by signal: Killed",
                  r"failed \(exitcode: 1\) local_rank: \d"],
        fr=True)


def _mx_single(name):
    """A rank-independent single case, rerun at another world size."""
    def make(w, cs, s):
        base = CASES[name]
        return dict(script=base.script, cls=base.cls, hint=base.hint,
                    description=f"{w}-rank run. " + base.description, evidence=list(base.evidence),
                    env=dict(base.env), fr=base.fr, expect_ok=base.expect_ok)
    return make


def _mx_healthy(w, cs, s):
    return dict(
        script="healthy_ddp.py", cls=None, hint="healthy",
        description=f"Successful {w}-rank DDP training run (40 steps) with tqdm, step/loss lines, warnings and "
        f"INFO-level c10d/DDP logging. Nothing here is a failure.",
        evidence=[r"step\s+40/40", r"training finished"], env=dict(NOISY), expect_ok=True)


# fault -> (builder, [(world, culprits, step, tee), ...]); culprits () = rank-independent
MATRIX_SPEC: dict = {
    "exception": (_mx_exception, [(2, (0,), 3, True), (3, (1,), 5, True), (3, (2,), 7, False),
                                  (4, (0,), 4, True)]),
    "two-exception": (_mx_exception, [(4, (0, 2), 5, True)]),
    "sigkill": (_mx_sigkill, [(2, (1,), 3, True), (3, (0,), 5, True), (4, (2,), 7, False)]),
    "two-sigkill": (_mx_sigkill, [(3, (0, 2), 4, True), (4, (1, 3), 5, True), (4, (0, 3), 6, False)]),
    "straggler": (_mx_straggler, [(2, (0,), 0, True), (3, (2,), 0, True), (4, (1,), 0, False)]),
    "silent-hang": (_mx_silent_hang, [(2, (1,), 10, True), (3, (0,), 9, True), (4, (2,), 11, True),
                                      (4, (3,), 10, False)]),
    "two-silent-hang": (_mx_silent_hang, [(4, (0, 2), 10, True)]),
    "silent-hang-killed": (lambda w, cs, s: _mx_silent_hang(w, cs, s, killed=True), [(3, (1,), 10, True)]),
    "hang-killed": (_mx_hang_killed, [(2, (0,), 3, True), (3, (1,), 4, False)]),
    "compile-desync": (_mx_compile_desync, [(2, (0,), 4, True), (3, (2,), 3, True), (4, (1,), 6, False)]),
    "shape-recompile": (_mx_shape_recompile, [(2, (1,), 3, True), (3, (0,), 2, True), (4, (2,), 5, True)]),
    "extra-collective-same-shape": (_mx_extra_same_shape, [(2, (0,), 3, True), (3, (2,), 2, True),
                                                           (4, (1,), 5, False)]),
    "rank-only-collective": (_mx_rank_only, [(2, (1,), 0, True), (3, (0,), 0, False), (3, (1,), 0, True),
                                             (4, (3,), 0, True)]),
    "rank-only-collective-large": (_mx_rank_only_large, [(2, (0,), 0, True), (3, (1,), 0, True),
                                                         (3, (2,), 0, False), (4, (3,), 0, True)]),
    "dtype-mismatch": (_mx_dtype, [(2, (0,), 0, True), (3, (1,), 0, True), (4, (3,), 0, False)]),
    "nan-loss": (_mx_nan_loss, [(3, (), 0, True), (4, (), 0, False)]),
    "nan-first-rank": (_mx_nan_first, [(2, (1,), 5, True), (3, (0,), 4, True), (3, (2,), 6, False),
                                       (4, (1,), 3, True)]),
    "ddp-model-mismatch": (_mx_model_mismatch, [(2, (1,), 0, True), (3, (0,), 0, True), (4, (2,), 0, False)]),
    "dataloader-worker-killed": (_mx_dl_worker, [(2, (0,), 0, True), (3, (1,), 0, True), (4, (3,), 0, False)]),
    "checkpoint-module-prefix": (_mx_single("checkpoint-module-prefix"), [(3, (), 0, True)]),
    "ddp-unused-params": (_mx_single("ddp-unused-params"), [(4, (), 0, False)]),
    "ddp-mark-ready-twice": (_mx_single("ddp-mark-ready-twice"), [(3, (), 0, True)]),
    "healthy": (_mx_healthy, [(3, (), 0, True), (2, (), 0, False)]),
}
# A second draw of the same faults at other world sizes, culprit ranks and steps, never used to
# fit or tune anything: run it into a fresh folder and measure it once, before any change made
# for it (eval/HISTORY.md), as a held-out check on new runs of known faults.
MATRIX_FRESH: dict = {
    "exception": (_mx_exception, [(5, (3,), 6, True), (6, (5,), 4, False)]),
    "sigkill": (_mx_sigkill, [(5, (4,), 4, True), (6, (1,), 6, False)]),
    "two-sigkill": (_mx_sigkill, [(5, (1, 4), 5, True)]),
    "straggler": (_mx_straggler, [(5, (3,), 0, True), (6, (0,), 0, False)]),
    "silent-hang": (_mx_silent_hang, [(5, (4,), 9, True), (6, (1,), 12, False)]),
    "hang-killed": (_mx_hang_killed, [(5, (2,), 5, True)]),
    "compile-desync": (_mx_compile_desync, [(5, (3,), 5, True)]),
    "shape-recompile": (_mx_shape_recompile, [(5, (4,), 4, False)]),
    "extra-collective-same-shape": (_mx_extra_same_shape, [(5, (3,), 4, True), (6, (0,), 3, False)]),
    "rank-only-collective": (_mx_rank_only, [(5, (2,), 0, True), (6, (4,), 0, False)]),
    "rank-only-collective-large": (_mx_rank_only_large, [(5, (4,), 0, True), (2, (1,), 0, False)]),
    "dtype-mismatch": (_mx_dtype, [(5, (2,), 0, True)]),
    "nan-loss": (_mx_nan_loss, [(5, (), 0, True)]),
    "nan-first-rank": (_mx_nan_first, [(5, (3,), 5, True), (6, (5,), 4, False)]),
    "ddp-model-mismatch": (_mx_model_mismatch, [(5, (4,), 0, True)]),
    "dataloader-worker-killed": (_mx_dl_worker, [(5, (2,), 0, True)]),
    "healthy": (_mx_healthy, [(5, (), 0, True)]),
}
# A third draw (--fresh 2), written down before it was run: larger and odd world sizes (6-8),
# culprits at the top of the rank range, other steps. Held out like MATRIX_FRESH.
MATRIX_FRESH2: dict = {
    "exception": (_mx_exception, [(7, (6,), 5, True), (4, (3,), 8, False)]),
    "two-exception": (_mx_exception, [(7, (2, 5), 4, True)]),
    "sigkill": (_mx_sigkill, [(7, (3,), 5, True), (8, (7,), 3, False)]),
    "two-sigkill": (_mx_sigkill, [(8, (0, 6), 4, True)]),
    "straggler": (_mx_straggler, [(7, (5,), 0, True), (4, (3,), 0, False)]),
    "silent-hang": (_mx_silent_hang, [(7, (6,), 8, True), (3, (2,), 13, False)]),
    "two-silent-hang": (_mx_silent_hang, [(6, (1, 4), 9, True)]),
    "silent-hang-killed": (lambda w, cs, s: _mx_silent_hang(w, cs, s, killed=True), [(5, (3,), 9, True)]),
    "hang-killed": (_mx_hang_killed, [(4, (2,), 6, True)]),
    "compile-desync": (_mx_compile_desync, [(7, (4,), 4, True), (4, (0,), 5, False)]),
    "shape-recompile": (_mx_shape_recompile, [(6, (3,), 3, True)]),
    "extra-collective-same-shape": (_mx_extra_same_shape, [(7, (6,), 3, True)]),
    "rank-only-collective": (_mx_rank_only, [(7, (5,), 0, True)]),
    "rank-only-collective-large": (_mx_rank_only_large, [(4, (2,), 0, True)]),
    "dtype-mismatch": (_mx_dtype, [(6, (5,), 0, True)]),
    "nan-loss": (_mx_nan_loss, [(7, (), 0, True)]),
    "nan-first-rank": (_mx_nan_first, [(7, (2,), 6, True)]),
    "ddp-model-mismatch": (_mx_model_mismatch, [(6, (3,), 0, False)]),
    "dataloader-worker-killed": (_mx_dl_worker, [(4, (2,), 0, True)]),
    "healthy": (_mx_healthy, [(7, (), 0, True), (4, (), 0, False)]),
}
# A fourth draw (--fresh 3), written down on Dec 3 (third session) before it was run: world sizes
# 3-8, culprits in the middle of the rank range, the two-culprit and killed-hang faults at new
# places, and the rank-independent DDP faults at other world sizes. Held out like MATRIX_FRESH.
MATRIX_FRESH3: dict = {
    "exception": (_mx_exception, [(6, (2,), 7, True), (8, (4,), 3, False)]),
    "two-exception": (_mx_exception, [(5, (1, 3), 6, False)]),
    "sigkill": (_mx_sigkill, [(6, (4,), 6, True), (3, (1,), 4, False)]),
    "two-sigkill": (_mx_sigkill, [(6, (2, 3), 5, True)]),
    "straggler": (_mx_straggler, [(6, (2,), 0, True), (8, (6,), 0, False)]),
    "silent-hang": (_mx_silent_hang, [(6, (3,), 11, True), (5, (0,), 10, False)]),
    "two-silent-hang": (_mx_silent_hang, [(5, (2, 3), 10, True)]),
    "silent-hang-killed": (lambda w, cs, s: _mx_silent_hang(w, cs, s, killed=True), [(4, (2,), 10, True)]),
    "hang-killed": (_mx_hang_killed, [(3, (2,), 6, True)]),
    "compile-desync": (_mx_compile_desync, [(6, (1,), 4, True), (3, (1,), 5, False)]),
    "shape-recompile": (_mx_shape_recompile, [(5, (2,), 3, True)]),
    "extra-collective-same-shape": (_mx_extra_same_shape, [(6, (4,), 4, True)]),
    "rank-only-collective": (_mx_rank_only, [(6, (3,), 0, True)]),
    "rank-only-collective-large": (_mx_rank_only_large, [(6, (1,), 0, True)]),
    "dtype-mismatch": (_mx_dtype, [(5, (3,), 0, False)]),
    "nan-loss": (_mx_nan_loss, [(6, (), 0, True)]),
    "nan-first-rank": (_mx_nan_first, [(6, (4,), 7, True)]),
    "ddp-model-mismatch": (_mx_model_mismatch, [(5, (2,), 0, True)]),
    "dataloader-worker-killed": (_mx_dl_worker, [(6, (5,), 0, True)]),
    "ddp-unused-params": (_mx_single("ddp-unused-params"), [(3, (), 0, True)]),
    "healthy": (_mx_healthy, [(6, (), 0, True), (3, (), 0, False)]),
}
# A fifth draw (--fresh 4), written down on Dec 3 (sixth session) before it was run: world sizes
# 3-8 with culprits at rank 0 and at the last rank, more runs without --tee (logs only in
# torchrun's per-rank files), the killed hang at an early step so it shows before torchrun is
# stopped, and the rank-only collectives at new sizes. Held out like MATRIX_FRESH.
MATRIX_FRESH4: dict = {
    "exception": (_mx_exception, [(8, (7,), 3, False), (3, (0,), 6, True)]),
    "two-exception": (_mx_exception, [(6, (0, 5), 5, False)]),
    "sigkill": (_mx_sigkill, [(8, (0,), 5, False), (5, (2,), 7, True)]),
    "two-sigkill": (_mx_sigkill, [(4, (1, 3), 4, False)]),
    "straggler": (_mx_straggler, [(3, (1,), 0, False), (8, (4,), 0, True)]),
    "silent-hang": (_mx_silent_hang, [(8, (7,), 9, False), (4, (0,), 11, True)]),
    "two-silent-hang": (_mx_silent_hang, [(7, (0, 6), 10, False)]),
    "silent-hang-killed": (lambda w, cs, s: _mx_silent_hang(w, cs, s, killed=True), [(6, (5,), 8, False)]),
    "hang-killed": (_mx_hang_killed, [(5, (4,), 3, False)]),
    "compile-desync": (_mx_compile_desync, [(8, (7,), 4, False), (3, (2,), 5, True)]),
    "shape-recompile": (_mx_shape_recompile, [(4, (0,), 3, False)]),
    "extra-collective-same-shape": (_mx_extra_same_shape, [(3, (1,), 3, False), (8, (2,), 4, True)]),
    "rank-only-collective": (_mx_rank_only, [(3, (2,), 0, False), (8, (6,), 0, True)]),
    "rank-only-collective-large": (_mx_rank_only_large, [(5, (2,), 0, False), (8, (7,), 0, True)]),
    "dtype-mismatch": (_mx_dtype, [(4, (1,), 0, True)]),
    "nan-loss": (_mx_nan_loss, [(4, (), 0, False)]),
    "nan-first-rank": (_mx_nan_first, [(8, (0,), 5, False), (4, (3,), 6, True)]),
    "ddp-model-mismatch": (_mx_model_mismatch, [(8, (7,), 0, False)]),
    "dataloader-worker-killed": (_mx_dl_worker, [(8, (0,), 0, False)]),
    "healthy": (_mx_healthy, [(8, (), 0, False), (5, (), 0, True)]),
}
# A sixth draw (--fresh 5), written down on Dec 4 (seventh session) before it was run: world sizes
# 3-8, culprits at ranks not drawn before for each fault where possible, the two-culprit faults at
# adjacent and far-apart ranks, about half without --tee. Held out like MATRIX_FRESH.
MATRIX_FRESH5: dict = {
    "exception": (_mx_exception, [(7, (4,), 4, False), (4, (1,), 5, True)]),
    "two-exception": (_mx_exception, [(8, (3, 4), 4, True)]),
    "sigkill": (_mx_sigkill, [(7, (6,), 4, True), (4, (0,), 6, False)]),
    "two-sigkill": (_mx_sigkill, [(7, (1, 5), 5, False)]),
    "straggler": (_mx_straggler, [(5, (1,), 0, True), (7, (0,), 0, False)]),
    "silent-hang": (_mx_silent_hang, [(5, (3,), 10, False), (7, (2,), 12, True)]),
    "two-silent-hang": (_mx_silent_hang, [(8, (5, 7), 9, True)]),
    "silent-hang-killed": (lambda w, cs, s: _mx_silent_hang(w, cs, s, killed=True), [(7, (3,), 9, True)]),
    "hang-killed": (_mx_hang_killed, [(6, (1,), 3, True)]),
    "compile-desync": (_mx_compile_desync, [(5, (0,), 4, True), (7, (5,), 3, False)]),
    "shape-recompile": (_mx_shape_recompile, [(7, (6,), 4, True)]),
    "extra-collective-same-shape": (_mx_extra_same_shape, [(5, (2,), 3, False), (7, (1,), 4, True)]),
    "rank-only-collective": (_mx_rank_only, [(5, (1,), 0, True), (7, (3,), 0, False)]),
    "rank-only-collective-large": (_mx_rank_only_large, [(7, (4,), 0, True)]),
    "dtype-mismatch": (_mx_dtype, [(7, (2,), 0, False)]),
    "nan-loss": (_mx_nan_loss, [(5, (), 0, True)]),
    "nan-first-rank": (_mx_nan_first, [(7, (6,), 4, True), (5, (1,), 6, False)]),
    "ddp-model-mismatch": (_mx_model_mismatch, [(7, (0,), 0, True)]),
    "dataloader-worker-killed": (_mx_dl_worker, [(7, (5,), 0, True)]),
    "ddp-mark-ready-twice": (_mx_single("ddp-mark-ready-twice"), [(5, (), 0, False)]),
    "healthy": (_mx_healthy, [(7, (), 0, True), (4, (), 0, False)]),
}

# Fault kinds no other lab script injects (lab/new_kinds.py, LAB_FAULT), written down on
# 2026-12-06 before any of them ran: a held-out draw of *new* faults, measured once
# (eval/HISTORY.md) before any change made for it. Labels come from the injection.
_SEGV = "dereferences a null pointer in native code at step {s} (ctypes.string_at(0)): SIGSEGV"
_NATIVE = r"rank {c} calling the native augmentation kernel"
_KINDS = {
    # fault: (LAB_FAULT, class, entry hint, what the culprit does, extra env, evidence of the culprit)
    "early-exit": ("early-exit", "collective-desync", "uneven-inputs-early-exit",
                   "holds only {s} batches (uneven shards): it leaves the loop after step {s_1}, logs that "
                   "it is done, destroys its process group and exits 0 while the others wait in the next "
                   "gradient all_reduce", {}, [r"rank {c}: epoch finished after {s} steps"]),
    "cpu-alloc": ("cpu-alloc", "host-oom", "cpu-allocator-cannot-allocate",
                  "builds a feature cache of 2**38 x 16 floats at step {s} (a bad config value): the CPU "
                  "allocator cannot allocate the 16 TiB and the exception ends the rank", {},
                  [r"rank {c} building feature cache"]),
    "segfault": ("segfault", "peer-rank-crashed", "worker-segfault", _SEGV + ", no Python traceback", {}, [_NATIVE]),
    "segfault-fh": ("segfault", "peer-rank-crashed", "worker-segfault", _SEGV + "; PYTHONFAULTHANDLER=1 prints its Python stack",
                    {"PYTHONFAULTHANDLER": "1"}, [_NATIVE]),
    "monitored-barrier": ("monitored-barrier", "straggler-timeout", "monitored-barrier-slow-rank",
                          "prepares its data 3x slower than the 5 s monitored_barrier timeout (progress "
                          "lines) while the others wait in dist.monitored_barrier", {"LAB_BARRIER_TIMEOUT": "5"},
                          [r"rank {c} preparing data: 2/6 shards"]),
    "detail-mismatch": ("detail-mismatch", "collective-desync", "detail-collective-mismatch",
                        "broadcasts a float32[1] metric at step {s} where the others all_reduce it, under "
                        "TORCH_DISTRIBUTED_DEBUG=DETAIL", {"TORCH_DISTRIBUTED_DEBUG": "DETAIL"},
                        [r"rank {c} step {s} loss"]),
    "allgather-uneven": ("allgather-uneven", "collective-desync", "all-gather-uneven-sizes",
                         "all_gathers 5 predictions at step {s} where the others gather 8 (a short last "
                         "batch)", {}, [r"rank {c} step {s} loss"]),
    "broadcast-src": ("broadcast-src", "collective-desync", "broadcast-src-mismatch",
                      "broadcasts a stop flag with itself as the source at step {s} while the others expect "
                      "it from rank 0", {}, [r"rank {c} step {s} loss"]),
    "dl-worker-exception": ("dl-worker-exception", "peer-rank-crashed", "dataloader-worker-exception",
                            "has a corrupt record at sample {s}*8+3: its DataLoader worker raises ValueError "
                            "and the rank's main process re-raises it", {},
                            [r"truncated line in shard"]),
    "restart-exception": ("restart-exception", "peer-rank-crashed", "python-exception-in-one-rank",
                          "raises KeyError('labels') on a malformed sample at step {s}, on every attempt: "
                          "torchrun restarts the workers once (--max-restarts 1) and the job then fails", {},
                          [r"KeyError: 'labels'"]),
    "ckpt-missing-dir": ("ckpt-missing-dir", "checkpoint-error", "checkpoint-save-missing-dir",
                         "is the rank that saves checkpoints; at step {s} it saves into /nonexistent/ckpt, a "
                         "folder that does not exist", {"LAB_CKPT_DIR": "/nonexistent/ckpt"},
                         [r"rank {c} saving checkpoint to /nonexistent/ckpt"]),
}


def _mx_kind(fault):
    lab_fault, cls, hint, what, env, evidence = _KINDS[fault]

    def make(w, cs, s):
        o = _others(w, cs)
        env2 = {"LAB_FAULT": lab_fault, "LAB_STEP": str(s), **env}
        args = {}
        if fault == "restart-exception":
            args["torchrun_args"] = ["--max-restarts", "1"]
        c = _ranks(cs)
        return dict(
            script="new_kinds.py", cls=cls, hint=hint,
            description=f"Rank{'s' if len(cs) > 1 else ''} {_words(cs)} of {w}: "
            + what.format(s=s, s_1=s - 1, c=c) + f"; rank(s) {_words(o)} are the peers.",
            evidence=[e.format(s=s, s_1=s - 1, c=c) for e in evidence] + [r"failed \(exitcode: -?\d+\)"],
            env=env2, fr=True, **args)
    return make


def _mx_kind_healthy(lab_fault, what):
    """A healthy run of lab/new_kinds.py under DETAIL mode (``what``: the job, as the description says it)."""
    def make(w, cs, s):
        return dict(
            script="new_kinds.py", cls=None, hint="healthy",
            description=f"Successful {w}-rank {what} under TORCH_DISTRIBUTED_DEBUG=DETAIL with a "
            f"monitored_barrier and a checkpoint save by rank 0 at the end. Nothing here is a failure.",
            evidence=[r"rank 0 saved the final checkpoint", r"training finished"],
            env={"LAB_FAULT": lab_fault, "TORCH_DISTRIBUTED_DEBUG": "DETAIL"}, fr=True, expect_ok=True)
    return make


MATRIX_FRESH6: dict = {
    "early-exit": (_mx_kind("early-exit"), [(4, (2,), 5, True), (5, (0,), 3, False)]),
    "cpu-alloc": (_mx_kind("cpu-alloc"), [(3, (1,), 4, True), (6, (4,), 2, False)]),
    "two-cpu-alloc": (_mx_kind("cpu-alloc"), [(5, (1, 3), 3, True)]),
    "segfault": (_mx_kind("segfault"), [(4, (3,), 5, True)]),
    "segfault-fh": (_mx_kind("segfault-fh"), [(5, (1,), 3, True)]),
    "monitored-barrier": (_mx_kind("monitored-barrier"), [(4, (2,), 0, True), (3, (0,), 0, False)]),
    "detail-mismatch": (_mx_kind("detail-mismatch"), [(4, (1,), 3, True), (5, (4,), 2, False)]),
    "allgather-uneven": (_mx_kind("allgather-uneven"), [(3, (2,), 4, True), (5, (1,), 3, True)]),
    "broadcast-src": (_mx_kind("broadcast-src"), [(4, (3,), 2, True), (3, (1,), 4, False)]),
    "dl-worker-exception": (_mx_kind("dl-worker-exception"), [(4, (0,), 3, True), (6, (5,), 2, True)]),
    "restart-exception": (_mx_kind("restart-exception"), [(3, (2,), 4, True), (4, (1,), 2, False)]),
    "ckpt-missing-dir": (_mx_kind("ckpt-missing-dir"), [(3, (0,), 5, True), (4, (0,), 3, False)]),
    "healthy-detail": (_mx_kind_healthy("none", "DDP run (12 steps)"), [(4, (), 0, True), (3, (), 0, False)]),
}
# A second draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-06 after the first
# (MATRIX_FRESH6) had been measured and learned from, before any of these ran.
_KINDS.update({
    "detail-allreduce": ("detail-allreduce", "collective-desync", "detail-collective-mismatch",
                         "broadcasts its loss at step {s} where the others all_reduce it, under "
                         "TORCH_DISTRIBUTED_DEBUG=DETAIL (no DDP: gradients averaged with all_reduce by hand)",
                         {"TORCH_DISTRIBUTED_DEBUG": "DETAIL"}, [r"rank {c} step {s_1} loss"]),
    "exit-silent": ("exit-silent", "peer-rank-crashed", "worker-silent-exit",
                    "exits with status 3 at step {s} through os._exit in a library (no traceback, no message)",
                    {}, [r"rank {c} opening the feature store"]),
    "abort": ("abort", "peer-rank-crashed", "worker-native-abort",
              "calls abort() in native code at step {s} (os.abort: SIGABRT, exit -6, no message)", {}, [_NATIVE]),
    "dtype-matmul": ("dtype-matmul", "device-mismatch", "tensor-dtype-mismatch",
                     "gets its batch as float64 at step {s} (a preprocessing branch): its Linear layer raises a "
                     "dtype mismatch", {}, [r"rank {c} step {s_1} loss"]),
    "ckpt-stale": ("ckpt-stale", "checkpoint-error", "checkpoint-size-mismatch",
                   "resumes at step {s} from a stale checkpoint of a model with another hidden size (48), while the "
                   "others load the one rank 0 just wrote", {}, [r"rank {c} resuming from \S+\.rank{c}"]),
    "ckpt-truncated": ("ckpt-truncated", "checkpoint-error", "checkpoint-truncated",
                       "resumes at step {s} from a copy of the checkpoint cut in half, while the others load the "
                       "whole file rank 0 just wrote", {}, [r"rank {c} resuming from \S+\.rank{c}"]),
})


def _mx_rdzv_missing_node(w, cs, s):
    return dict(
        script="new_kinds.py", cls="rendezvous-init", hint="rendezvous-missing-node",
        description=f"torchrun is told the job has 2 nodes (--nnodes 2, {w} workers per node) but only this node's "
        f"agent is started; the c10d rendezvous waits for the second node until its join timeout (15 s) and the "
        f"agent gives up. No worker starts.",
        evidence=[r"RendezvousTimeoutError"],
        env={"LAB_FAULT": "none"}, torchrun_args=["--nnodes", "2", "--rdzv-conf", "join_timeout=15"],
        initiating_rank=None)


MATRIX_FRESH7: dict = {
    "detail-allreduce": (_mx_kind("detail-allreduce"), [(4, (2,), 3, True), (3, (0,), 4, False)]),
    "healthy-detail-noddp": (_mx_kind_healthy("none-noddp", "run (12 steps, gradients averaged with all_reduce by hand, no DDP)"), [(3, (), 0, True)]),
    "exit-silent": (_mx_kind("exit-silent"), [(4, (1,), 4, True), (5, (4,), 3, False)]),
    "abort": (_mx_kind("abort"), [(4, (2,), 3, True), (3, (0,), 5, False)]),
    "dtype-matmul": (_mx_kind("dtype-matmul"), [(3, (1,), 3, True), (5, (3,), 2, False)]),
    "ckpt-stale": (_mx_kind("ckpt-stale"), [(4, (3,), 4, True)]),
    "ckpt-truncated": (_mx_kind("ckpt-truncated"), [(3, (2,), 3, True), (4, (1,), 5, False)]),
    "rdzv-missing-node": (_mx_rdzv_missing_node, [(2, (), 0, True)]),
}
# A third draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-06 after the second
# (MATRIX_FRESH7) had been measured and learned from, before any of these ran.
_KINDS.update({
    "compile-fullgraph": ("compile-fullgraph", "compile-error", "dynamo-fullgraph-graph-break",
                          "gets a short batch (7 rows) at step {s}: the fullgraph-compiled loss recompiles for it, "
                          "reaches the branch that calls .item() and dynamo refuses the graph break", {},
                          [r"rank {c} step {s_1} loss"]),
    "unused-one-rank": ("unused-one-rank", "ddp-unused-parameters", "ddp-unused-parameters",
                        "has a batch without auxiliary targets at step {s}: its auxiliary head gets no gradient "
                        "(DDP, find_unused_parameters=False), so its reducer never finishes that iteration", {},
                        [r"rank {c} step {s_1} loss"]),
    "late-init": ("late-init", "rendezvous-init", "late-rank-at-init",
                  "starts 2.5x the timeout late (progress lines of a slow image pull) before calling "
                  "init_process_group, while the others wait in it", {},
                  [r"rank {c}: pulling the container image layers 1/5"]),
    "eval-exception": ("eval-exception", "peer-rank-crashed", "python-exception-in-one-rank",
                       "runs the evaluation alone at step {s} and raises ZeroDivisionError (an empty eval split) "
                       "while the others wait in dist.barrier()", {}, [r"rank {c} running the evaluation"]),
})

MATRIX_FRESH8: dict = {
    "compile-fullgraph": (_mx_kind("compile-fullgraph"), [(3, (1,), 3, True), (4, (0,), 2, False)]),
    "unused-one-rank": (_mx_kind("unused-one-rank"), [(4, (2,), 3, True), (3, (1,), 4, False)]),
    "late-init": (_mx_kind("late-init"), [(4, (3,), 0, True), (3, (0,), 0, False)]),
    "eval-exception": (_mx_kind("eval-exception"), [(4, (0,), 3, True), (5, (2,), 4, False)]),
}
# A fourth draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-06 after the third
# (MATRIX_FRESH8) had been measured and learned from, before any of these ran.
_KINDS.update({
    "rank-dup": ("rank-dup", "rendezvous-init", "rank-claimed-twice",
                 "is started with RANK overridden to the next rank's number (a per-node launch script's "
                 "copy-paste): two processes claim one rank and rank {c} is never taken", {},
                 [r"launch script: RANK=\d+ WORLD_SIZE=\d+"]),
    "world-plus-one": ("world-plus-one", "rendezvous-init", "world-size-mismatch",
                       "is started with WORLD_SIZE one larger than the job's (a per-node launch script's "
                       "mistake)", {}, [r"launch script: RANK={c} WORLD_SIZE=\d+"]),
    "barrier-one-rank": ("barrier-one-rank", "collective-desync", "rank-only-barrier",
                         "calls dist.barrier() alone at step {s} (a debug barrier in a rank-dependent branch) "
                         "while the others go on to the gradient all_reduce", {}, [r"rank {c} debug barrier"]),
    "pickle-object": ("pickle-object", "peer-rank-crashed", "object-collective-unpicklable",
                      "is the source of a broadcast_object_list at step {s} whose object holds a lambda: pickling "
                      "it fails there while the others wait in the broadcast", {}, [r"rank {c} step {s} loss"]),
    "anomaly-nan": ("anomaly-nan", "nan-divergence", "anomaly-nan-one-rank",
                    "gets a NaN feature in its batch at step {s} under torch.autograd.set_detect_anomaly(True): "
                    "its backward raises anomaly mode's report", {}, [r"rank {c} step {s_1} loss"]),
    "hook-exception": ("hook-exception", "peer-rank-crashed", "python-exception-in-one-rank",
                       "has a gradient hook that raises ValueError at step {s}", {}, [r"rank {c} step {s_1} loss"]),
})

MATRIX_FRESH9: dict = {
    "rank-dup": (_mx_kind("rank-dup"), [(4, (2,), 0, True), (3, (0,), 0, False)]),
    "world-plus-one": (_mx_kind("world-plus-one"), [(3, (1,), 0, True)]),
    "barrier-one-rank": (_mx_kind("barrier-one-rank"), [(4, (3,), 3, True), (3, (1,), 2, False)]),
    "pickle-object": (_mx_kind("pickle-object"), [(4, (1,), 3, True), (3, (2,), 2, False)]),
    "anomaly-nan": (_mx_kind("anomaly-nan"), [(4, (0,), 3, True), (5, (3,), 4, False)]),
    "hook-exception": (_mx_kind("hook-exception"), [(3, (2,), 3, True)]),
}
# A fifth draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-06 after the fourth
# (MATRIX_FRESH9) had been measured and learned from, before any of these ran through rankdoctor.
_KINDS.update({
    "ckpt-disk-full": ("ckpt-disk-full", "checkpoint-error", "checkpoint-save-disk-full",
                       "saves a checkpoint at step {s} to a disk that is full (/dev/full: every write fails "
                       "with ENOSPC) while the others go on to the next step", {"LAB_CKPT_PATH": "/dev/full"},
                       [r"rank {c} saving checkpoint to /dev/full"]),
    "recursion": ("recursion", "peer-rank-crashed", "python-exception-in-one-rank",
                  "resolves an augmentation config whose entry refers to itself at step {s}: RecursionError", {},
                  [r"rank {c} resolving the augmentation config"]),
    "alltoall-split": ("alltoall-split", "collective-desync", "all-to-all-split-mismatch",
                       "sends 3 rows to every rank in an all_to_all_single token exchange at step {s} where its "
                       "peers expect 2 from it (an MoE router's split sizes)", {}, [r"rank {c} step {s} loss"]),
    "dcp-skip": ("dcp-skip", "collective-desync", "rank-skips-collective-checkpoint",
                 "skips the torch.distributed.checkpoint save at step {s} that every other rank makes (a "
                 "rank-dependent branch) and goes on training", {}, [r"rank {c} checkpoint step done"]),
    "sigterm-one": ("sigterm-one", "peer-rank-crashed", "worker-killed-by-external-sigterm",
                    "receives SIGTERM from outside the job (a node agent, not torchrun) at step {s}", {},
                    [r"rank {c} step {s_1} loss"]),
    "frozen-one-rank": ("frozen-one-rank", "ddp-model-mismatch", "ddp-requires-grad-mismatch",
                        "freezes its input layer before DDP wraps the model (a fine-tuning option read on one "
                        "rank only): its model has fewer parameters that need gradients", {},
                        [r"rank {c} freezing the input layer"]),
})

MATRIX_FRESH10: dict = {
    "ckpt-disk-full": (_mx_kind("ckpt-disk-full"), [(3, (0,), 3, True), (4, (2,), 2, False)]),
    "recursion": (_mx_kind("recursion"), [(4, (3,), 3, True), (3, (1,), 4, False)]),
    "alltoall-split": (_mx_kind("alltoall-split"), [(4, (1,), 2, True), (3, (2,), 3, False)]),
    "dcp-skip": (_mx_kind("dcp-skip"), [(3, (2,), 3, True), (4, (0,), 2, False)]),
    "sigterm-one": (_mx_kind("sigterm-one"), [(4, (2,), 4, True), (5, (0,), 3, False)]),
    "frozen-one-rank": (_mx_kind("frozen-one-rank"), [(3, (1,), 0, True), (4, (3,), 0, False)]),
}
# A sixth draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-06 after the fifth
# (MATRIX_FRESH10) had been measured and learned from, before any of these ran through rankdoctor.
_KINDS.update({
    "wrong-master-port": ("wrong-master-port", "rendezvous-init", "tcpstore-connect-failed",
                          "is started by a launch script that sets MASTER_PORT to another port than the job's: "
                          "it cannot reach the job's store while the others wait for its address", {},
                          [r"launch script: MASTER_ADDR=\S+ MASTER_PORT=\d+"]),
    "skip-step": ("skip-step", "collective-desync", "rank-skips-step-on-error",
                  "catches an error in its batch at step {s}, logs a warning and skips the batch (no backward, "
                  "so one gradient all_reduce fewer than its peers)", {}, [r"rank {c} skipping batch {s}"]),
    "corrupt-shard": ("corrupt-shard", "peer-rank-crashed", "python-exception-in-one-rank",
                      "unpickles a data shard whose first bytes are corrupt (an interrupted copy) at step {s}: "
                      "UnpicklingError", {}, [r"rank {c} loading data shard {s}"]),
    "sysexit-msg": ("sysexit-msg", "peer-rank-crashed", "worker-exit-with-message",
                    "stops itself at step {s} with sys.exit and a message from its health check (exit status 1, "
                    "no traceback)", {}, [r"rank {c}: health check failed"]),
    "sigint-one": ("sigint-one", "peer-rank-crashed", "worker-keyboard-interrupt",
                   "receives SIGINT (a Ctrl-C sent to it alone) at step {s}: KeyboardInterrupt", {},
                   [r"rank {c} step {s_1} loss"]),
})

MATRIX_FRESH11: dict = {
    "wrong-master-port": (_mx_kind("wrong-master-port"), [(3, (2,), 0, True), (4, (1,), 0, False)]),
    "skip-step": (_mx_kind("skip-step"), [(4, (3,), 4, True), (3, (0,), 3, False)]),
    "corrupt-shard": (_mx_kind("corrupt-shard"), [(4, (2,), 3, True), (5, (4,), 2, False)]),
    "sysexit-msg": (_mx_kind("sysexit-msg"), [(3, (1,), 4, True), (4, (0,), 3, False)]),
    "sigint-one": (_mx_kind("sigint-one"), [(5, (3,), 3, True), (3, (2,), 2, False)]),
}
# A seventh draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-06 after the sixth
# (MATRIX_FRESH11) had been measured and learned from, before any of these ran through rankdoctor.
_KINDS.update({
    "nosync-one-rank": ("nosync-one-rank", "collective-desync", "ddp-no-sync-one-rank",
                        "runs its backward at step {s} under DDP's no_sync() (a gradient accumulation counter off "
                        "by one on that rank): one gradient all_reduce fewer than its peers, and no line says so", {},
                        [r"rank {c} step {s} loss"]),
    "broadcast-shape": ("broadcast-shape", "collective-desync", "broadcast-size-mismatch",
                        "receives rank 0's broadcast of a 10-row vocabulary table at step {s} into an 8-row buffer "
                        "(its own config lacks two special tokens)", {}, [r"rank {c} step {s} loss"]),
    "double-init": ("double-init", "rendezvous-init", "process-group-initialized-twice",
                    "calls init_process_group a second time at step {s} from its evaluation helper", {},
                    [r"rank {c} setting up the evaluation process group"]),
    "pg-destroyed-early": ("pg-destroyed-early", "peer-rank-crashed", "python-exception-in-one-rank",
                           "destroys the process group in its evaluation helper at step {s}; its next gradient "
                           "all_reduce finds none", {}, [r"rank {c} evaluation done, cleaning up"]),
    "subgroup-barrier": ("subgroup-barrier", "collective-desync", "barrier-on-another-group",
                         "waits in a barrier on the default group at step {s} while its peers wait in a barrier on "
                         "a group of all ranks built at start", {}, [r"rank {c} step {s} loss"]),
})

MATRIX_FRESH12: dict = {
    "nosync-one-rank": (_mx_kind("nosync-one-rank"), [(4, (2,), 3, True), (3, (0,), 4, False)]),
    "broadcast-shape": (_mx_kind("broadcast-shape"), [(3, (2,), 3, True), (4, (1,), 2, False)]),
    "double-init": (_mx_kind("double-init"), [(4, (3,), 2, True), (3, (0,), 3, False)]),
    "pg-destroyed-early": (_mx_kind("pg-destroyed-early"), [(3, (1,), 3, True), (5, (2,), 2, False)]),
    "subgroup-barrier": (_mx_kind("subgroup-barrier"), [(4, (1,), 3, True), (3, (2,), 2, False)]),
}
# An eighth draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-06 after the seventh
# (MATRIX_FRESH12) had been measured, before any of these ran through rankdoctor. Two are job-wide:
# every rank fails the same way and no rank started it (initiating_rank null).
_KINDS.update({
    "world-minus-one": ("world-minus-one", "rendezvous-init", "world-size-mismatch",
                        "is started with WORLD_SIZE one smaller than the job's (a per-node launch script's "
                        "mistake)", {}, [r"launch script: RANK={c} WORLD_SIZE=\d+"]),
    "sampler-rank": ("sampler-rank", "rendezvous-init", "distributed-sampler-rank-out-of-range",
                     "is the last rank: every rank builds its DistributedSampler with rank+1 (1-based numbering by "
                     "mistake), and only the last rank's is out of range", {},
                     [r"Invalid rank \d+, rank should be in the interval"]),
})


def _mx_jobwide(lab_fault, cls, hint, what, evidence):
    """A fault every rank runs into the same way: no rank started it (initiating_rank null)."""
    def make(w, cs, s):
        return dict(
            script="new_kinds.py", cls=cls, hint=hint,
            description=f"All {w} ranks: {what.format(s=s)}. Every rank fails the same way; no rank started it.",
            evidence=[e.format(s=s) for e in evidence] + [r"failed \(exitcode: -?\d+\)"],
            env={"LAB_FAULT": lab_fault, "LAB_STEP": str(s)}, fr=True, initiating_rank=None)
    return make


MATRIX_FRESH13: dict = {
    "lr-divergence": (_mx_jobwide("lr-divergence", "nan-divergence", "loss-nan-all-ranks",
                                  "a learning-rate schedule's bug sets the rate to 1e6 at step {s}; the loss overflows on "
                                  "every rank at once and each rank's NaN check raises", [r"loss is (?:nan|inf) at step"]),
                      [(4, (), 3, True), (3, (), 2, False)]),
    "unused-all": (_mx_jobwide("unused-all", "ddp-unused-parameters", "ddp-unused-parameters",
                               "the model has an auxiliary head that no batch uses (DDP, find_unused_parameters=False)",
                               [r"Expected to have finished reduction in the prior iteration"]),
                   [(3, (), 0, True), (4, (), 0, False)]),
    "world-minus-one": (_mx_kind("world-minus-one"), [(4, (1,), 0, True), (3, (0,), 0, False)]),
    "sampler-rank": (_mx_kind("sampler-rank"), [(4, (3,), 0, True), (3, (2,), 0, False)]),
}
# A ninth draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-06 after the eighth
# (MATRIX_FRESH13) had been measured and learned from, before any of these ran through rankdoctor.
# One is job-wide (initiating_rank null).
_KINDS.update({
    "thread-exception-hang": ("thread-exception-hang", "peer-rank-crashed", "python-exception-in-one-rank",
                              "hands its batch to a prefetch thread at step {s}; the thread raises KeyError on a "
                              "record without targets and the main thread waits on its queue forever", {},
                              [r"Exception in thread prefetch"]),
    "fd-leak": ("fd-leak", "peer-rank-crashed", "python-exception-in-one-rank",
                "leaks a file handle per sample in its feature cache on a node whose open-file limit is 256; "
                "it runs out at step {s}", {}, [r"Too many open files"]),
    "store-get-missing": ("store-get-missing", "rendezvous-init", "c10d-store-timeout",
                          "waits at step {s} for a store key spelt eval-ready where rank 0 publishes eval_ready "
                          "(5 s wait)", {}, [r"rank {c} waiting for eval-ready in the store"]),
    "inplace-autograd": ("inplace-autograd", "peer-rank-crashed", "python-exception-in-one-rank",
                         "clips its batch's sigmoid outputs in place at step {s}; autograd still needs them for "
                         "the backward", {}, [r"modified by an inplace operation"]),
    "import-missing": ("import-missing", "peer-rank-crashed", "python-exception-in-one-rank",
                       "is the rank that reports metrics; at step {s} it imports its experiment tracker, which is "
                       "not installed on its host", {}, [r"No module named 'wandb'"]),
})

MATRIX_FRESH14: dict = {
    "thread-exception-hang": (_mx_kind("thread-exception-hang"), [(4, (1,), 3, True), (3, (2,), 2, False)]),
    "fd-leak": (_mx_kind("fd-leak"), [(3, (0,), 3, True), (4, (2,), 4, False)]),
    "store-get-missing": (_mx_kind("store-get-missing"), [(4, (3,), 2, True), (3, (1,), 3, False)]),
    "inplace-autograd": (_mx_kind("inplace-autograd"), [(4, (2,), 3, True), (5, (0,), 2, False)]),
    "import-missing": (_mx_kind("import-missing"), [(3, (0,), 4, True), (4, (3,), 3, False)]),
    "resume-missing-all": (_mx_jobwide("resume-missing-all", "checkpoint-error", "checkpoint-file-not-found",
                                       "resume at step {s} from a checkpoint path that does not exist (a wrong "
                                       "--resume argument)", [r"No such file or directory: '[^']*step_001000\.pt'"]),
                           [(4, (), 2, True), (3, (), 3, False)]),
}
# A tenth draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-06 after the ninth
# (MATRIX_FRESH14) had been measured and learned from, before any of these ran through rankdoctor.
# One is job-wide, one healthy (a handled error logged with its traceback).
_KINDS.update({
    "allreduce-dtype": ("allreduce-dtype", "collective-desync", "collective-dtype-mismatch",
                        "all_reduces its metric as float64 at step {s} where its peers all_reduce float32 (its "
                        "metric code upcasts)", {}, [r"rank {c} step {s_1} loss"]),
    "crash-before-init": ("crash-before-init", "peer-rank-crashed", "python-exception-in-one-rank",
                          "raises ValueError before init_process_group on a malformed per-node setting "
                          "(LAB_NODE_SHARDS='4,'); its peers wait in init for it", {},
                          [r"invalid literal for int\(\) with base 10: '4,'"]),
    "master-addr-typo": ("master-addr-typo", "rendezvous-init", "tcpstore-connect-failed",
                         "is started with MASTER_ADDR set to a host name that does not resolve (a typo in a "
                         "per-node launch script)", {}, [r"launch script: MASTER_ADDR=trainnode-03"]),
})


def _mx_healthy_step(lab_fault, what):
    """A healthy run in which the culprit does something that only looks alarming at LAB_STEP."""
    def make(w, cs, s):
        return dict(
            script="new_kinds.py", cls=None, hint="healthy",
            description=f"Successful {w}-rank run: {what.format(s=s, c=_ranks(cs))}. Nothing here is a failure.",
            evidence=[r"rank 0 saved the final checkpoint", r"training finished"],
            env={"LAB_FAULT": lab_fault, "LAB_STEP": str(s)}, fr=True, expect_ok=True, initiating_rank=None)
    return make


MATRIX_FRESH15: dict = {
    "allreduce-dtype": (_mx_kind("allreduce-dtype"), [(4, (1,), 3, True), (3, (2,), 2, False)]),
    "crash-before-init": (_mx_kind("crash-before-init"), [(4, (2,), 0, True), (3, (0,), 0, False)]),
    "master-addr-typo": (_mx_kind("master-addr-typo"), [(3, (1,), 0, True), (4, (3,), 0, False)]),
    "cpu-alloc-all": (_mx_jobwide("cpu-alloc-all", "host-oom", "cpu-allocator-cannot-allocate",
                                  "build a feature cache of 2**38 x 16 floats at step {s} (a bad config value read by "
                                  "every rank): each rank's CPU allocator refuses", [r"building feature cache"]),
                      [(4, (), 3, True), (3, (), 2, False)]),
    "none-handled": (_mx_healthy_step("none-handled", "at step {s} rank {c}'s metrics upload fails and the error "
                                      "is logged with its traceback and skipped; every rank finishes"),
                     [(4, (1,), 3, True), (3, (0,), 2, False)]),
}
# An eleventh draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-06 after the
# tenth (MATRIX_FRESH15) had been measured and learned from, before any of these ran through
# rankdoctor. One is job-wide, one healthy; in p2p-tag-mismatch the sender strays while the
# next rank is the one left waiting in its receive (no line names the sender: the pair of the two
# is an acceptable answer, the receiver alone is not).
_KINDS.update({
    "dl-worker-segv": ("dl-worker-segv", "peer-rank-crashed", "dataloader-worker-crashed",
                       "has a DataLoader worker that dies of SIGSEGV at record {s}*8+3 (a native decoder's null "
                       "pointer); the DataLoader raises in the main process", {},
                       [r"DataLoader worker \(pid \d+\) is killed by signal: Segmentation fault"]),
    "p2p-tag-mismatch": ("p2p-tag-mismatch", "collective-desync", "p2p-send-recv-mismatch",
                         "sends its boundary tensor to the next rank with tag 7 at step {s} where the next rank "
                         "receives with tag 0; the receive never matches and both sides wait until the timeout", {},
                         [r"rank {c} exchanging boundary activations"]),
})


def _mx_pair(fault):
    """_mx_kind, with the culprit and the rank after it accepted as a pair (the stray sender
    and the receiver it left waiting)."""
    base = _mx_kind(fault)

    def make(w, cs, s):
        spec = base(w, cs, s)
        spec["also_ranks"] = [sorted({cs[0], (cs[0] + 1) % w})]
        return spec
    return make


MATRIX_FRESH16: dict = {
    "dl-worker-segv": (_mx_kind("dl-worker-segv"), [(4, (2,), 3, True), (3, (0,), 2, False)]),
    "optim-resume-all": (_mx_jobwide("optim-resume-all", "checkpoint-error", "optimizer-state-resume-mismatch",
                                     "resume the optimizer at step {s} from a state saved with two parameter groups "
                                     "(an older config) into one group: every rank's load_state_dict refuses",
                                     [r"loaded state dict has a different number of parameter groups"]),
                         [(4, (), 3, True), (3, (), 2, False)]),
    "p2p-tag-mismatch": (_mx_pair("p2p-tag-mismatch"), [(4, (1,), 3, True), (3, (2,), 2, False)]),
    "none-slow-eval": (_mx_healthy_step("none-slow-eval", "at step {s} rank {c} evaluates for 3 s while the "
                                        "others wait in a barrier (10 s timeout); every rank finishes"),
                       [(4, (0,), 3, True), (3, (1,), 2, False)]),
}
# A twelfth draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-06 after the
# eleventh (MATRIX_FRESH16) had been measured and learned from, before any of these ran through
# rankdoctor.
_KINDS.update({
    "backward-twice": ("backward-twice", "peer-rank-crashed", "python-exception-in-one-rank",
                       "runs a second backward through the same graph at step {s} (a gradient-norm probe on one "
                       "code path)", {}, [r"Trying to backward through the graph a second time"]),
    "comm-hook-exception": ("comm-hook-exception", "peer-rank-crashed", "python-exception-in-one-rank",
                            "raises in its DDP communication hook (gradient compression) at step {s}", {},
                            [r"compression hook: bucket \d+ has \d+ elements"]),
    "exit-zero-quiet": ("exit-zero-quiet", "collective-desync", "uneven-inputs-early-exit",
                        "ends its process with sys.exit(0) at step {s} (a stop condition computed from its own "
                        "shard), with no message, while the others wait in the next gradient all_reduce", {},
                        [r"rank {c} step {s_1} loss"]),
})

MATRIX_FRESH17: dict = {
    "backward-twice": (_mx_kind("backward-twice"), [(4, (3,), 2, True), (3, (1,), 3, False)]),
    "comm-hook-exception": (_mx_kind("comm-hook-exception"), [(4, (0,), 3, True), (3, (2,), 2, False)]),
    "exit-zero-quiet": (_mx_kind("exit-zero-quiet"), [(4, (2,), 3, True), (3, (1,), 4, False)]),
}
# A thirteenth draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-06 after the
# twelfth (MATRIX_FRESH17) had been measured and learned from, before any of these ran through
# rankdoctor. Two are job-wide, one healthy; in nonfinite-clip every rank raises, but only the
# culprit's loss is inf before the gradient all_reduce spreads it.
_KINDS.update({
    "nonfinite-clip": ("nonfinite-clip", "nan-divergence", "clip-grad-norm-nonfinite",
                       "gets a batch with an inf feature at step {s}: its loss is inf, the gradient all_reduce "
                       "spreads the non-finite values and every rank's clip_grad_norm_(error_if_nonfinite=True) "
                       "raises", {}, [r"rank {c} step {s} loss (?:inf|nan)"]),
    "shard-missing": ("shard-missing", "peer-rank-crashed", "python-exception-in-one-rank",
                      "opens a data shard of its own at step {s} that was never written (FileNotFoundError) "
                      "while the others go on to the next gradient all_reduce", {},
                      [r"rank {c} opening data shard"]),
})

MATRIX_FRESH18: dict = {
    "weights-only-all": (_mx_jobwide("weights-only-all", "checkpoint-error", "torch-load-weights-only-rejected",
                                     "resume at step {s} from a checkpoint that also holds the run's argparse.Namespace; "
                                     "torch.load's default weights_only=True refuses it on every rank",
                                     [r"Unsupported global: GLOBAL argparse\.Namespace"]),
                         [(4, (), 3, True), (3, (), 2, False)]),
    "nccl-unavailable-all": (_mx_jobwide("nccl-unavailable-all", "nccl-cuda-version", "nccl-backend-unavailable",
                                         "ask init_process_group for the nccl backend on a CPU-only build of torch",
                                         [r"Distributed package doesn't have NCCL built in"]),
                             [(3, (), 0, True), (2, (), 0, False)]),
    "nonfinite-clip": (_mx_kind("nonfinite-clip"), [(4, (2,), 3, True), (3, (0,), 2, False)]),
    "shard-missing": (_mx_kind("shard-missing"), [(4, (1,), 3, True), (3, (2,), 4, False)]),
    "none-recompile-limit": (_mx_healthy_step("none-recompile-limit", "every rank's compiled metric sees a new "
                                              "batch length at each step; dynamo hits its recompile limit (4) and "
                                              "runs the rest eagerly, with its warnings; every rank finishes"),
                             [(4, (0,), 0, True), (2, (0,), 0, False)]),
}
# A fourteenth draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-06 after the
# thirteenth (MATRIX_FRESH18) had been measured and learned from, before any of these ran through
# rankdoctor. One is job-wide (which ranks raise is a race), one healthy.
_KINDS.update({
    "dl-timeout": ("dl-timeout", "straggler-timeout", "dataloader-timeout",
                   "reads its data with a DataLoader (one worker, timeout=2 s) whose record {s}*8+3 takes 6 s to "
                   "read (a stalled network read): its DataLoader raises the timeout while the others wait in the "
                   "next all_reduce", {}, [r"DataLoader timed out after 2 seconds"]),
    "unicode-shard": ("unicode-shard", "peer-rank-crashed", "python-exception-in-one-rank",
                      "reads a text shard at step {s} that a tool wrote in latin-1: UnicodeDecodeError", {},
                      [r"rank {c} reading text shard"]),
})

MATRIX_FRESH19: dict = {
    "mkdir-race-all": (_mx_jobwide("mkdir-race-all", "checkpoint-error", "checkpoint-unclassified-exception",
                                   "create the checkpoint folder at step {s} with os.makedirs and no exist_ok; the first "
                                   "rank there wins and every other rank raises FileExistsError",
                                   [r"FileExistsError: \[Errno 17\] File exists"]),
                       [(4, (), 3, True), (3, (), 2, False)]),
    "dl-timeout": (_mx_kind("dl-timeout"), [(4, (3,), 3, True), (3, (1,), 2, False)]),
    "unicode-shard": (_mx_kind("unicode-shard"), [(4, (2,), 3, True), (3, (0,), 4, False)]),
    "none-join-uneven": (_mx_healthy_step("none-join-uneven", "rank {c} has only {s} batches and every rank trains "
                                          "inside DDP's join() context, which shadows the all_reduces it no longer "
                                          "runs; every rank finishes"),
                         [(4, (1,), 6, True), (3, (2,), 8, False)]),
}
# A fifteenth draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-06 after the
# fourteenth (MATRIX_FRESH19) had been measured and learned from, before any of these ran through
# rankdoctor. One is healthy.
_KINDS.update({
    "segfault-at-exit": ("segfault-at-exit", "peer-rank-crashed", "worker-segfault",
                         "trains to the end with the others, logs that it finished, and then dies of SIGSEGV in a "
                         "native extension's exit handler", {}, [r"rank {c} training finished"]),
    "py-memoryerror": ("py-memoryerror", "host-oom", "cpu-allocator-cannot-allocate",
                       "allocates a 16 TiB Python buffer for its sample cache at step {s} (a bad config value): "
                       "MemoryError", {}, [r"rank {c} caching decoded samples"]),
})

MATRIX_FRESH20: dict = {
    "segfault-at-exit": (_mx_kind("segfault-at-exit"), [(4, (2,), 0, True), (3, (0,), 0, False)]),
    "py-memoryerror": (_mx_kind("py-memoryerror"), [(4, (1,), 3, True), (3, (2,), 2, False)]),
    "none-retry-errors": (_mx_healthy_step("none-retry-errors", "at step {s} rank {c}'s metrics upload fails twice "
                                           "with an ERROR record and succeeds on the third try, and every rank's "
                                           "library emits a UserWarning; every rank finishes"),
                          [(4, (3,), 3, True), (3, (1,), 2, False)]),
}
# A sixteenth draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-06 after the
# fifteenth (MATRIX_FRESH20) had been measured, before any of these ran through rankdoctor.
_KINDS.update({
    "noise-then-crash": ("noise-then-crash", "peer-rank-crashed", "python-exception-in-one-rank",
                         "raises ValueError on a label out of range at step {s}, after the rank next to it logged at "
                         "step 1 an ERROR record that an optional fused kernel could not load (libcudart.so.12) and "
                         "went on with the fallback", {}, [r"label index 7 out of range"]),
    "chained-disk-full": ("chained-disk-full", "checkpoint-error", "checkpoint-save-disk-full",
                          "saves a checkpoint to a full disk (/dev/full) at step {s}; its helper raises a RuntimeError "
                          "from torch's write error (a chained exception)", {}, [r"checkpoint save failed at step {s}"]),
})

MATRIX_FRESH21: dict = {
    "noise-then-crash": (_mx_kind("noise-then-crash"), [(4, (2,), 4, True), (3, (0,), 3, False)]),
    "chained-disk-full": (_mx_kind("chained-disk-full"), [(4, (1,), 3, True), (3, (2,), 2, False)]),
}
# A seventeenth draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-06 after the
# sixteenth (MATRIX_FRESH21) had been learned from, before any of these ran through rankdoctor.
# main-first-exception's culprit is always rank 0 (the main process).
_KINDS.update({
    "tqdm-straggler": ("tqdm-straggler", "straggler-timeout", "barrier-timeout-slow-rank",
                       "evaluates for three times the process group's timeout at step {s}, drawn as a tqdm bar, "
                       "while the others wait for it in a barrier", {}, [r"rank {c} eval:"]),
    "main-first-exception": ("main-first-exception", "peer-rank-crashed", "python-exception-in-one-rank",
                             "prepares the validation split at step {s} while the others wait in a barrier (main "
                             "process first), and raises FileNotFoundError on the raw file", {},
                             [r"rank 0 preparing the validation split"]),
})

MATRIX_FRESH22: dict = {
    "tqdm-straggler": (_mx_kind("tqdm-straggler"), [(4, (2,), 3, True), (3, (1,), 2, False)]),
    "main-first-exception": (_mx_kind("main-first-exception"), [(4, (0,), 3, True), (3, (0,), 2, False)]),
}
# An eighteenth draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-06 after the
# seventeenth (MATRIX_FRESH22) had been measured, before any of these ran through rankdoctor.
# gather-list-nondst's culprit is never rank 0 (the gather's destination).
_KINDS.update({
    "static-graph-change": ("static-graph-change", "ddp-unused-parameters", "ddp-unused-parameters",
                            "has a batch without auxiliary targets at step {s} under DDP(static_graph=True): its "
                            "graph leaves out the auxiliary head that the recorded graph had", {},
                            [r"rank {c} step {s} loss"]),
    "gather-list-nondst": ("gather-list-nondst", "peer-rank-crashed", "python-exception-in-one-rank",
                           "passes a gather_list to dist.gather at step {s} although rank 0 is the destination: "
                           "torch's argument check raises there while the others wait in the gather", {},
                           [r"rank {c} step {s} loss"]),
})

MATRIX_FRESH23: dict = {
    "static-graph-change": (_mx_kind("static-graph-change"), [(4, (2,), 3, True), (3, (1,), 2, False)]),
    "gather-list-nondst": (_mx_kind("gather-list-nondst"), [(4, (3,), 3, True), (3, (2,), 2, False)]),
    "none-oom-retry": (_mx_healthy_step("none-oom-retry", "at step {s} rank {c} tries to build a feature cache too "
                                        "large for host memory, logs the allocator's error with its traceback at "
                                        "ERROR level and trains on without the cache"),
                       [(4, (1,), 3, True), (3, (2,), 2, False)]),
}
# A nineteenth draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-06 after the
# eighteenth (MATRIX_FRESH23) had been learned from, before any of these ran through rankdoctor.
# group-order runs at 4 ranks only (at 3 the odd group is one rank, and the culprit's order can
# leave every collective completing).
_KINDS.update({
    "group-order": ("group-order", "collective-desync", "collective-sequence-mismatch",
                    "builds the odd-rank sub-group before the even-rank one at step {s} (every other rank builds "
                    "them the other way round), so its process groups do not line up with its peers'", {},
                    [r"rank {c} building the even and odd sub-groups"]),
})

MATRIX_FRESH24: dict = {
    "group-order": (_mx_kind("group-order"), [(4, (2,), 3, True), (4, (1,), 2, False)]),
    "none-atexit-error": (_mx_healthy_step("none-atexit-error", "every rank trains to the end; rank {c}'s metrics "
                                           "client flushes in an atexit handler that cannot reach its endpoint, and "
                                           "Python prints the exception it ignored at exit"),
                          [(4, (3,), 3, True), (3, (1,), 2, False)]),
}
# A twentieth draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-06 after the
# nineteenth (MATRIX_FRESH24) had been learned from, before it ran through rankdoctor. (A second kind,
# a DDP buffer one element longer on one rank, was dropped before the draw: its sanity run finished
# without any error, a silent corruption no log shows.) scatter-short's culprit is always rank 0.
_KINDS.update({
    "scatter-short": ("scatter-short", "peer-rank-crashed", "python-exception-in-one-rank",
                      "scatters per-rank loss weights at step {s} from a list built for one rank fewer than the "
                      "job has: gloo's size check raises there while the others wait in the scatter", {},
                      [r"rank 0 receiving its loss weight"]),
})

MATRIX_FRESH25: dict = {
    "scatter-short": (_mx_kind("scatter-short"), [(4, (0,), 3, True), (3, (0,), 2, False)]),
}
# A twenty-first draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-06 (twenty-fifth
# session) after the twentieth (MATRIX_FRESH25) had been learned from, before it ran through
# rankdoctor. ckpt-read-race's culprit is never rank 0 (rank 0 writes the checkpoint). (A restart that
# recovers was dropped before the draw: under gloo the restarted workers could not connect.)
_KINDS.update({
    "ckpt-read-race": ("ckpt-read-race", "checkpoint-error", "checkpoint-truncated",
                       "evaluates every new checkpoint as soon as its file appears: at step {s} it loads the one "
                       "rank 0 is still writing (no barrier between save and load) and reads a zip archive cut in "
                       "half", {}, [r"rank {c} evaluating the newest checkpoint"]),
    "new-group-skip": ("new-group-skip", "collective-desync", "collective-sequence-mismatch",
                       "skips building the metrics sub-group at step {s} (its branch logs no metrics) while every "
                       "other rank builds it with dist.new_group and all_reduces a metric in it", {},
                       [r"building the metrics group"]),
})

MATRIX_FRESH26: dict = {
    "ckpt-read-race": (_mx_kind("ckpt-read-race"), [(4, (2,), 3, True), (3, (1,), 2, False)]),
    "new-group-skip": (_mx_kind("new-group-skip"), [(4, (1,), 3, True), (3, (2,), 2, False)]),
    "none-nan-skip": (_mx_healthy_step("none-nan-skip", "every rank checks its loss before the update and "
                                       "all_reduces a flag; at step {s} rank {c}'s batch holds a NaN, it warns with "
                                       "the NaN loss and every rank skips that step's update together, then trains "
                                       "to the end"),
                      [(4, (3,), 3, True), (3, (1,), 2, False)]),
}
# A twenty-second draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-06 (twenty-fifth
# session) after the twenty-first (MATRIX_FRESH26) had been learned from, before it ran through rankdoctor.
_KINDS.update({
    "oom-skip-desync": ("oom-skip-desync", "collective-desync", "collective-sequence-mismatch",
                        "catches a failed allocation at step {s} and skips the batch without a backward (a \"skip "
                        "the batch on OOM\" guard on one rank), so it issues one gradient all_reduce fewer than its "
                        "peers and finishes while they wait in their last", {},
                        [r"rank {c} step {s}: skipping batch"]),
})

MATRIX_FRESH27: dict = {
    "oom-skip-desync": (_mx_kind("oom-skip-desync"), [(4, (3,), 3, True), (3, (1,), 5, False)]),
}
# A twenty-third draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-07 (twenty-sixth
# session) after set DZ was measured and before anything was learned from it or from this draw.
_KINDS.update({
    "uneven-epoch-eval": ("uneven-epoch-eval", "collective-desync", "iterable-dataset-uneven-shards",
                          "holds only {s} batches (uneven shards): its epoch ends first and it runs validation, whose "
                          "all_reduce of the validation loss meets the others' next gradient all_reduce", {},
                          [r"rank {c}: shard exhausted after {s} batches"]),
})

MATRIX_FRESH28: dict = {
    "uneven-epoch-eval": (_mx_kind("uneven-epoch-eval"), [(4, (2,), 3, True), (3, (0,), 2, False)]),
    "none-early-stop": (_mx_healthy_step("none-early-stop", "at step {s} every rank all_reduces a flag that its "
                                         "validation loss has not improved, all stop early together, and the job "
                                         "finishes with a final barrier and checkpoint"),
                        [(4, (1,), 3, True), (3, (2,), 2, False)]),
}
# A twenty-fourth draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-07 (twenty-sixth
# session) after set EA was measured and before anything was learned from it or from this draw.
_KINDS.update({
    "timeout-mismatch": ("timeout-mismatch", "straggler-timeout", "barrier-timeout-slow-rank",
                         "writes evaluation samples for 0.6 x the timeout at step {s} while the next rank, whose "
                         "node sets a collective timeout of 0.3 x, gives up waiting for it in the gradient "
                         "all_reduce first", {}, [r"rank {c} step {s}: writing evaluation samples"]),
})

MATRIX_FRESH29: dict = {
    "timeout-mismatch": (_mx_kind("timeout-mismatch"), [(4, (1,), 3, True), (3, (0,), 2, False)]),
    "none-resume-start": (_mx_healthy_step("none-resume-start", "every rank resumes from the checkpoint rank 0 "
                                           "wrote for the previous job (step {s}), logs it and trains to the end"),
                          [(4, (2,), 3, True), (3, (1,), 2, False)]),
}
# A twenty-fifth draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-07 (twenty-sixth
# session) while set EB was being collected, before either was measured.
_KINDS.update({
    "custom-backward-exception": ("custom-backward-exception", "peer-rank-crashed", "python-exception-in-one-rank",
                                  "raises in the backward of a custom autograd Function (a fused GELU that rejects "
                                  "a non-contiguous gradient) at step {s}, while the others wait in DDP's gradient "
                                  "all_reduce", {}, [r"fused_gelu_backward: expected a contiguous grad_output"]),
})

MATRIX_FRESH30: dict = {
    "custom-backward-exception": (_mx_kind("custom-backward-exception"), [(4, (3,), 3, True), (3, (1,), 2, False)]),
    "none-tqdm-all-ranks": (_mx_healthy_step("none-tqdm-all-ranks", "every rank draws its own tqdm bar over the "
                                             "training steps and trains to the end"),
                            [(4, (0,), 3, True), (3, (2,), 2, False)]),
}
# A twenty-sixth draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-07 (twenty-sixth
# session) while set EC was being collected, before either was measured. bn-single-sample's class is
# TAXONOMY.md's for an uneven last batch (collective-desync), as the knowledge base files it.
_KINDS.update({
    "bn-single-sample": ("bn-single-sample", "collective-desync", "batchnorm-single-sample-batch",
                         "ends its shard at step {s} with a batch of one sample (drop_last=False): BatchNorm's "
                         "training-mode check raises there while the others wait in DDP's gradient all_reduce", {},
                         [r"rank {c} step {s}: last batch of the shard"]),
})

MATRIX_FRESH31: dict = {
    "bn-single-sample": (_mx_kind("bn-single-sample"), [(4, (2,), 3, True), (3, (0,), 2, False)]),
    "none-grad-accum": (_mx_healthy_step("none-grad-accum", "every rank accumulates gradients over two micro-batches, "
                                         "the first under DDP's no_sync(), and trains to the end"),
                        [(4, (1,), 3, True), (3, (2,), 2, False)]),
}
# A twenty-seventh draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-07 (twenty-seventh
# session) while set ED was being collected, before either was measured.
_KINDS.update({
    "dl-worker-sigbus": ("dl-worker-sigbus", "shm-insufficient", "dataloader-worker-shm-bus-error",
                         "has a DataLoader worker that dies of a real SIGBUS at record {s}*8+3, reading a batch "
                         "staged in /dev/shm whose backing pages are gone (a full tmpfs); PyTorch prints its shared-"
                         "memory hint and the DataLoader raises in the main process", {},
                         [r"Unexpected bus error encountered in worker",
                          r"DataLoader worker \(pid \d+\) is killed by signal: Bus error"]),
})

MATRIX_FRESH32: dict = {
    "dl-worker-sigbus": (_mx_kind("dl-worker-sigbus"), [(4, (1,), 3, True), (3, (2,), 2, False)]),
    "none-dcp-save": (_mx_healthy_step("none-dcp-save", "at step {s} every rank writes its shard of a distributed "
                                       "checkpoint (torch.distributed.checkpoint), reads it back and trains to the end"),
                      [(4, (0,), 3, True), (3, (1,), 2, False)]),
}
# A twenty-eighth draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-07 (twenty-seventh
# session) while set EE was being collected, before either was measured.
_KINDS.update({
    "gather-object-unpicklable": ("gather-object-unpicklable", "peer-rank-crashed", "python-exception-in-one-rank",
                                  "cannot pickle the evaluation metrics it gathers with all_gather_object at step {s} "
                                  "(its metric logger left a lambda in the dict) and raises, while the others wait in "
                                  "the object gather", {},
                                  [r"rank {c} step {s}: gathering evaluation metrics", r"Can't pickle"]),
})

MATRIX_FRESH33: dict = {
    "gather-object-unpicklable": (_mx_kind("gather-object-unpicklable"), [(4, (3,), 3, True), (3, (1,), 2, False)]),
    "none-deprecation-warnings": (_mx_healthy_step("none-deprecation-warnings", "every rank uses the deprecated "
                                                   "torch.cuda.amp GradScaler and autocast on a machine without CUDA "
                                                   "and prints their FutureWarning and UserWarning lines, and trains "
                                                   "to the end"),
                                  [(4, (2,), 3, True), (3, (0,), 2, False)]),
}
# A twenty-ninth draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-07 (twenty-seventh
# session) while set EF was being collected, before either was measured.
_KINDS.update({
    "broadcast-src-mismatch": ("broadcast-src-mismatch", "collective-desync", "collective-sequence-mismatch",
                               "broadcasts the run config from its own rank at step {s} (its node config names it the "
                               "leader) while the others broadcast from rank 0: the sends never match and the ranks "
                               "time out", {}, [r"rank {c} step {s}: broadcasting the run config from rank {c}"]),
})

MATRIX_FRESH34: dict = {
    "broadcast-src-mismatch": (_mx_kind("broadcast-src-mismatch"), [(4, (2,), 3, True), (3, (1,), 2, False)]),
    "none-signal-checkpoint": (_mx_healthy_step("none-signal-checkpoint", "at step {s} rank 0 receives the scheduler's "
                                                "warning signal (SIGUSR1), every rank saves a checkpoint at the next "
                                                "step, and the job trains to the end"),
                               [(4, (0,), 3, True), (3, (0,), 2, False)]),
}
# A thirtieth draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-07 (twenty-eighth
# session) while set EG was being collected, before either was measured.
_KINDS.update({
    "stopiteration-short-shard": ("stopiteration-short-shard", "peer-rank-crashed", "python-exception-in-one-rank",
                                  "runs out of batches at step {s} (its data shard is short) inside the generator that "
                                  "hands one batch per step to the loop: the StopIteration becomes 'RuntimeError: "
                                  "generator raised StopIteration' and the rank dies while the others wait in the "
                                  "gradient all_reduce", {}, [r"generator raised StopIteration"]),
})

MATRIX_FRESH35: dict = {
    "stopiteration-short-shard": (_mx_kind("stopiteration-short-shard"), [(4, (1,), 3, True), (3, (2,), 2, False)]),
    "none-profiler-table": (_mx_healthy_step("none-profiler-table", "every rank profiles two steps from step {s} with "
                                             "torch.profiler and prints the operator table (gloo:all_reduce rows, CPU "
                                             "time totals) into its log, and trains to the end"),
                            [(4, (1,), 3, True), (3, (0,), 2, False)]),
}
# A thirty-first draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-07 (twenty-eighth
# session) while set EH was being collected, before either was measured.
_KINDS.update({
    "broadcast-object-len": ("broadcast-object-len", "collective-desync", "collective-sequence-mismatch",
                             "expects two objects where the others expect one when rank 0 broadcasts the resume "
                             "state with broadcast_object_list at step {s}: the sizes it receives do not line up "
                             "with what rank 0 sent and it fails on the garbage size", {},
                             [r"rank {c} step {s}: broadcasting the resume state \(2 slot"]),
    "scatter-object-short": ("scatter-object-short", "peer-rank-crashed", "python-exception-in-one-rank",
                             "is the node leader that scatters each rank's data shards with scatter_object_list at "
                             "step {s}, but builds the list one short of the world size: gloo refuses it on the "
                             "leader while the others wait in the scatter", {},
                             [r"Incorrect input list size"]),
})

MATRIX_FRESH36: dict = {
    "broadcast-object-len": (_mx_kind("broadcast-object-len"), [(4, (2,), 3, True), (3, (1,), 2, False)]),
    "scatter-object-short": (_mx_kind("scatter-object-short"), [(4, (1,), 3, True), (3, (2,), 2, False)]),
    "none-checkpoint-reentrant": (_mx_healthy_step("none-checkpoint-reentrant", "the model recomputes its output "
                                                   "layer with torch.utils.checkpoint without passing use_reentrant, "
                                                   "so every rank prints the UserWarning about the parameter, and "
                                                   "trains to the end"),
                                  [(4, (0,), 3, True), (3, (1,), 2, False)]),
}
# A thirty-second draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-07 (twenty-eighth
# session) while set EI was being collected, before either was measured.
_KINDS.update({
    "allgather-into-tensor-size": ("allgather-into-tensor-size", "peer-rank-crashed", "python-exception-in-one-rank",
                                   "sizes the output of all_gather_into_tensor for a world one larger at step {s} "
                                   "(a stale world size in its launch config): gloo refuses it there while the "
                                   "others wait in the gather", {}, [r"invalid tensor size"]),
})


MATRIX_FRESH37: dict = {
    "allgather-into-tensor-size": (_mx_kind("allgather-into-tensor-size"), [(4, (3,), 3, True), (3, (1,), 2, False)]),
    "none-find-unused-warning": (_mx_healthy_step("none-find-unused-warning", "DDP is built with "
                                                  "find_unused_parameters=True although every parameter gets a "
                                                  "gradient, so every rank prints the reducer's warning about the "
                                                  "flag, and trains to the end"),
                                 [(4, (2,), 3, True), (3, (1,), 2, False)]),
}
# A thirty-third draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-07 (twenty-eighth
# session) while set EJ was being collected, before either was measured.
_KINDS.update({
    "lock-wait-straggler": ("lock-wait-straggler", "straggler-timeout", "rank-zero-straggler",
                            "waits at step {s} for its shard cache's lock file, left by a previous job, logging "
                            "every second which pid holds it, while the others wait in the gradient all_reduce "
                            "until the collective timeout", {}, [r"rank {c} step {s}: waiting for lock"]),
})

MATRIX_FRESH38: dict = {
    "lock-wait-straggler": (_mx_kind("lock-wait-straggler"), [(4, (1,), 3, True), (3, (2,), 2, False)]),
    "none-scheduler-order-warning": (_mx_healthy_step("none-scheduler-order-warning", "the learning-rate scheduler "
                                                      "steps before the optimizer in the first iteration, so every "
                                                      "rank prints torch's UserWarning about the order, and trains "
                                                      "to the end"),
                                     [(4, (0,), 3, True), (3, (2,), 2, False)]),
}
# A thirty-fourth draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-07 (twenty-eighth
# session) after set EJ was learned from, before it was measured.
_KINDS.update({
    "input-prompt-eof": ("input-prompt-eof", "peer-rank-crashed", "python-exception-in-one-rank",
                         "asks 'overwrite? [y/N]' with input() at step {s} (its output folder exists) while stdin is "
                         "/dev/null: EOFError ends the rank while the others wait in the gradient all_reduce", {},
                         [r"EOFError"]),
})

MATRIX_FRESH39: dict = {
    "input-prompt-eof": (_mx_kind("input-prompt-eof"), [(4, (2,), 3, True), (3, (1,), 2, False)]),
    "none-del-exception-ignored": (_mx_healthy_step("none-del-exception-ignored", "rank {c}'s shard cache fails in "
                                                    "its __del__ at interpreter exit, so Python prints 'Exception "
                                                    "ignored in' with a traceback after the rank finished, and the "
                                                    "job ends with exit code 0"),
                                   [(4, (3,), 3, True), (3, (0,), 2, False)]),
}
# A thirty-fifth draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-07 (twenty-eighth
# session) after lab-fresh39 was measured.
_KINDS.update({
    "ckpt-save-unpicklable": ("ckpt-save-unpicklable", "checkpoint-error", "checkpoint-unclassified-exception",
                              "is the rank that saves checkpoints; at step {s} its checkpoint's run config carries the "
                              "learning-rate schedule as a lambda, torch.save cannot pickle it and the rank dies while "
                              "the others wait in the barrier after the save", {},
                              [r"rank {c} step {s}: saving checkpoint", r"[Pp]ickle"]),
})

MATRIX_FRESH40: dict = {
    "ckpt-save-unpicklable": (_mx_kind("ckpt-save-unpicklable"), [(4, (0,), 3, True), (3, (0,), 2, False)]),
    "none-meshgrid-warning": (_mx_healthy_step("none-meshgrid-warning", "every rank builds a position grid with "
                                               "torch.meshgrid without indexing= at step {s} and prints torch's "
                                               "UserWarning about it, and trains to the end"),
                              [(4, (1,), 3, True), (3, (2,), 2, False)]),
}
# A thirty-sixth draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-07 (twenty-ninth
# session) while set EK was being collected, before either was measured.
_KINDS.update({
    "subprocess-check-failed": ("subprocess-check-failed", "peer-rank-crashed", "python-exception-in-one-rank",
                                "stamps its checkpoint metadata at step {s} with `git rev-parse HEAD` run with "
                                "check=True from a folder that is not a git checkout: CalledProcessError ends the "
                                "rank while the others wait in the gradient all_reduce", {},
                                [r"CalledProcessError"]),
})

MATRIX_FRESH41: dict = {
    "subprocess-check-failed": (_mx_kind("subprocess-check-failed"), [(4, (3,), 3, True), (3, (1,), 2, False)]),
    "none-gradscaler-cpu": (_mx_healthy_step("none-gradscaler-cpu", "every rank builds an AMP GradScaler for CUDA "
                                             "at step {s} on a machine without CUDA, so torch warns that CUDA is not "
                                             "available and disables the scaler, and the job trains to the end"),
                            [(4, (2,), 3, True), (3, (0,), 2, False)]),
}
# A thirty-seventh draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-07 (twenty-ninth
# session) while set EL was being collected, before either was measured.
_KINDS.update({
    "zero-division-val": ("zero-division-val", "peer-rank-crashed", "python-exception-in-one-rank",
                          "gets an empty shard of a validation set with fewer files than ranks at step {s}: "
                          "its accuracy, correct / total, raises ZeroDivisionError while the others wait in "
                          "the all_reduce of the accuracy", {}, [r"ZeroDivisionError"]),
})

MATRIX_FRESH42: dict = {
    "zero-division-val": (_mx_kind("zero-division-val"), [(4, (2,), 3, True), (3, (0,), 2, False)]),
    "none-target-size-warning": (_mx_healthy_step("none-target-size-warning", "every rank logs an auxiliary mse "
                                                  "metric at step {s} on a (batch, 1) prediction against a (batch,) "
                                                  "target, so torch warns that the target size differs from the "
                                                  "input size, and the job trains to the end"),
                                 [(4, (1,), 3, True), (3, (2,), 2, False)]),
}
# A thirty-eighth draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-07 (twenty-ninth
# session) while set EM was being collected, before either was measured.
_KINDS.update({
    "json-truncated-cache": ("json-truncated-cache", "peer-rank-crashed", "python-exception-in-one-rank",
                             "loads its shard's metadata cache at step {s}, a JSON file a previous job was killed "
                             "while writing: JSONDecodeError ends the rank while the others wait in the gradient "
                             "all_reduce", {}, [r"JSONDecodeError"]),
})

MATRIX_FRESH43: dict = {
    "json-truncated-cache": (_mx_kind("json-truncated-cache"), [(4, (1,), 3, True), (3, (2,), 2, False)]),
    "none-dataloader-workers-warning": (_mx_healthy_step("none-dataloader-workers-warning", "every rank builds a "
                                                         "DataLoader with more worker processes than the machine has "
                                                         "CPUs at step {s}, so torch warns that excessive worker "
                                                         "creation might make it slow or freeze, and the job trains "
                                                         "to the end"),
                                        [(4, (0,), 3, True), (3, (1,), 2, False)]),
}
# A thirty-ninth draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-07 (twenty-ninth
# session) while set EN was being collected, before either was measured.
_KINDS.update({
    "env-int-empty": ("env-int-empty", "peer-rank-crashed", "python-exception-in-one-rank",
                      "reads its gradient-accumulation setting at step {s} from an environment variable its "
                      "node's launch script exports empty: int('') raises ValueError while the others wait in "
                      "the gradient all_reduce", {}, [r"invalid literal for int\(\)"]),
})

MATRIX_FRESH44: dict = {
    "env-int-empty": (_mx_kind("env-int-empty"), [(4, (3,), 3, True), (3, (0,), 2, False)]),
    "none-detect-anomaly": (_mx_healthy_step("none-detect-anomaly", "every rank runs step {s}'s backward inside "
                                             "torch.autograd.detect_anomaly() (a debugging leftover), so torch warns "
                                             "that Anomaly Detection has been enabled, and the job trains to the end"),
                            [(4, (2,), 3, True), (3, (1,), 2, False)]),
}
# A fortieth draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-07 (twenty-ninth
# session) after set EN was learned from, before it was measured.
_KINDS.update({
    "ckpt-module-prefix": ("ckpt-module-prefix", "checkpoint-error", "checkpoint-unclassified-exception",
                           "resumes at step {s} from its node's copy of the checkpoint, saved by an older script "
                           "from the DDP wrapper: its keys carry the 'module.' prefix, load_state_dict reports "
                           "missing and unexpected keys and the rank dies while the others wait", {},
                           [r"Unexpected key\(s\) in state_dict"]),
})

MATRIX_FRESH45: dict = {
    "ckpt-module-prefix": (_mx_kind("ckpt-module-prefix"), [(4, (2,), 3, True), (3, (1,), 2, False)]),
    "none-tensor-copy-warning": (_mx_healthy_step("none-tensor-copy-warning", "every rank logs its loss through "
                                                  "torch.tensor(loss) at step {s}, so torch warns that copy-constructing "
                                                  "from a tensor should use detach().clone(), and the job trains to "
                                                  "the end"),
                                 [(4, (3,), 3, True), (3, (0,), 2, False)]),
}
# A forty-first draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-07 (thirtieth
# session) while set EP was being collected, before either was measured.
_KINDS.update({
    "embedding-vocab-cpu": ("embedding-vocab-cpu", "peer-rank-crashed", "python-exception-in-one-rank",
                            "embeds its shard's token ids at step {s}; the shard was tokenized with a newer "
                            "tokenizer whose added tokens lie past the embedding table, so F.embedding on the CPU "
                            "raises IndexError (index out of range in self) while the others wait in the gradient "
                            "all_reduce", {}, [r"index out of range in self"]),
})

MATRIX_FRESH46: dict = {
    "embedding-vocab-cpu": (_mx_kind("embedding-vocab-cpu"), [(4, (1,), 3, True), (3, (2,), 2, False)]),
    "none-nested-tensor-warning": (_mx_healthy_step("none-nested-tensor-warning", "every rank builds a small "
                                                    "TransformerEncoder head at step {s} without batch_first, so torch "
                                                    "warns that enable_nested_tensor is True but use_nested_tensor is "
                                                    "False, and the job trains to the end"),
                                   [(4, (0,), 3, True), (3, (2,), 2, False)]),
}
# A forty-second draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-07 (thirtieth
# session) while set ES was being collected, before either was measured.
_KINDS.update({
    "assert-bare": ("assert-bare", "peer-rank-crashed", "python-exception-in-one-rank",
                    "checks its batch against the configured batch size with a bare assert at step {s}; its "
                    "sampler handed it a short batch, so an AssertionError with no message ends the rank while "
                    "the others wait in the gradient all_reduce", {}, [r"AssertionError"]),
})

MATRIX_FRESH47: dict = {
    "assert-bare": (_mx_kind("assert-bare"), [(4, (2,), 3, True), (3, (1,), 2, False)]),
    "none-nonleaf-grad-warning": (_mx_healthy_step("none-nonleaf-grad-warning", "every rank logs the gradient of "
                                                   "an intermediate tensor at step {s}, so torch warns that the .grad "
                                                   "attribute of a non-leaf Tensor is being accessed, and the job "
                                                   "trains to the end"),
                                  [(4, (1,), 3, True), (3, (0,), 2, False)]),
}
# A forty-third draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-07 (thirty-first
# session) while set ET was being collected, before either was measured.
_KINDS.update({
    "view-short-batch": ("view-short-batch", "peer-rank-crashed", "python-exception-in-one-rank",
                         "reshapes its batch into micro-batches of 4 rows at step {s}; its last batch is short "
                         "(7 rows), so view(-1, 4, 16) raises RuntimeError (shape is invalid for input of size) while "
                         "the others wait in the gradient all_reduce", {}, [r"is invalid for input of size"]),
})

MATRIX_FRESH48: dict = {
    "view-short-batch": (_mx_kind("view-short-batch"), [(4, (3,), 3, True), (3, (1,), 2, False)]),
    "none-autocast-cuda-warning": (_mx_healthy_step("none-autocast-cuda-warning", "every rank wraps its forward "
                                                    "pass at step {s} in torch.autocast(device_type='cuda') copied "
                                                    "from a GPU recipe, so torch warns that CUDA is not available "
                                                    "and disables autocast, and the job trains to the end"),
                                   [(4, (2,), 3, True), (3, (0,), 2, False)]),
}
# A forty-fourth draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-07 (thirty-first
# session) after set EU was learned from, before it was run.
_KINDS.update({
    "metrics-json-nan": ("metrics-json-nan", "peer-rank-crashed", "python-exception-in-one-rank",
                         "writes the metrics file at step {s} with json.dumps(allow_nan=False); its validation "
                         "perplexity overflowed to inf, so ValueError (Out of range float values are not JSON "
                         "compliant) ends the rank while the others wait in the gradient all_reduce", {},
                         [r"Out of range float values are not JSON compliant"]),
})

MATRIX_FRESH49: dict = {
    "metrics-json-nan": (_mx_kind("metrics-json-nan"), [(4, (1,), 3, True), (3, (0,), 2, False)]),
    "none-pin-memory-warning": (_mx_healthy_step("none-pin-memory-warning", "every rank re-reads its batch at "
                                                 "step {s} through a DataLoader with pin_memory=True copied from a "
                                                 "GPU recipe, so torch warns that no accelerator is found, and the "
                                                 "job trains to the end"),
                                [(4, (3,), 3, True), (3, (1,), 2, False)]),
}
# A forty-fifth draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-07 (thirty-second
# session) while set EV was being collected, before either was measured.
_KINDS.update({
    "target-out-of-bounds": ("target-out-of-bounds", "peer-rank-crashed", "python-exception-in-one-rank",
                             "computes its loss at step {s} on a batch whose labels were built with a newer "
                             "label map (class id 5 of a 4-class head), so cross_entropy on the CPU raises "
                             "IndexError: Target 5 is out of bounds while the others wait in the gradient "
                             "all_reduce", {}, [r"IndexError: Target 5 is out of bounds"]),
})

MATRIX_FRESH50: dict = {
    "target-out-of-bounds": (_mx_kind("target-out-of-bounds"), [(4, (3,), 2, True), (3, (1,), 4, False)]),
    "none-softmax-dim-warning": (_mx_healthy_step("none-softmax-dim-warning", "every rank logs its mean class "
                                                  "confidence at step {s} through F.softmax(logits) without a "
                                                  "dim, so torch warns that the implicit dimension choice is "
                                                  "deprecated, and the job trains to the end"),
                                 [(3, (0,), 3, True), (4, (2,), 2, False)]),
}
# A forty-sixth draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-07 (thirty-second
# session) after set EV was learned from, before it was run.
_KINDS.update({
    "collate-ragged": ("collate-ragged", "peer-rank-crashed", "python-exception-in-one-rank",
                       "batches four token sequences at step {s} with the DataLoader's default collate; one "
                       "sequence of its shard is a token short (its padding step skipped), so torch.stack raises "
                       "'stack expects each tensor to be equal size' while the others wait in the gradient "
                       "all_reduce", {}, [r"stack expects each tensor to be equal size"]),
})

MATRIX_FRESH51: dict = {
    "collate-ragged": (_mx_kind("collate-ragged"), [(4, (2,), 3, True), (3, (0,), 2, False)]),
    "none-typed-storage-warning": (_mx_healthy_step("none-typed-storage-warning", "every rank reads its batch's "
                                                    "storage size at step {s} through tensor.storage() (an old helper "
                                                    "library), so torch warns that TypedStorage is deprecated, and the "
                                                    "job trains to the end"),
                                   [(4, (1,), 2, True), (3, (2,), 3, False)]),
}
# A forty-seventh draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-07 (thirty-third
# session) while set EW was being collected, before either was measured.
_KINDS.update({
    "dl-worker-killed": ("dl-worker-killed", "host-oom", "dataloader-worker-killed",
                         "has a DataLoader worker ended by SIGKILL at record {s}*8+3, as the OOM killer ends the "
                         "largest process of a memory cgroup (the lab sends the signal; no kernel log); the "
                         "DataLoader raises in the main process while the others wait in the gradient all_reduce",
                         {}, [r"DataLoader worker \(pid \d+\) is killed by signal: Killed"]),
})

MATRIX_FRESH52: dict = {
    "dl-worker-killed": (_mx_kind("dl-worker-killed"), [(4, (1,), 2, True), (3, (2,), 3, False)]),
    "none-get-lr-warning": (_mx_healthy_step("none-get-lr-warning", "every rank logs its learning rate at step {s} "
                                             "through the scheduler's get_lr() (an old logging helper), so torch "
                                             "warns that get_last_lr() is the way to read it, and the job trains to "
                                             "the end"),
                            [(3, (1,), 2, True), (4, (0,), 3, False)]),
}
# A forty-eighth draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-07 (thirty-third
# session) after set EW was learned from, before it was run.
_KINDS.update({
    "tensor-ragged-list": ("tensor-ragged-list", "peer-rank-crashed", "python-exception-in-one-rank",
                           "turns four token lists into a tensor with torch.tensor at step {s}; one list of its batch "
                           "is a token short (its padding step skipped), so torch raises 'expected sequence of length "
                           "16 at dim 1 (got 15)' while the others wait in the gradient all_reduce", {},
                           [r"expected sequence of length 16 at dim 1 \(got 15\)"]),
})

MATRIX_FRESH53: dict = {
    "tensor-ragged-list": (_mx_kind("tensor-ragged-list"), [(4, (3,), 2, True), (3, (1,), 3, False)]),
    "none-clip-grad-norm-warning": (_mx_healthy_step("none-clip-grad-norm-warning", "every rank clips its gradients "
                                                     "at step {s} with the old torch.nn.utils.clip_grad_norm (no "
                                                     "underscore), so torch warns that it is deprecated, and the job "
                                                     "trains to the end"),
                                    [(4, (2,), 3, True), (3, (0,), 2, False)]),
}
# A forty-ninth draw of new fault kinds (lab/new_kinds.py), written down on 2026-12-07 (thirty-fourth
# session) while set EX was being collected, before it was run.
_KINDS.update({
    "batch-size-mismatch": ("batch-size-mismatch", "peer-rank-crashed", "python-exception-in-one-rank",
                            "computes a cross-entropy loss at step {s} against a label batch a row short (a filter "
                            "applied to the labels but not to the inputs), so torch raises 'Expected input "
                            "batch_size (8) to match target batch_size (7)' while the others wait in the gradient "
                            "all_reduce", {},
                            [r"Expected input batch_size \(8\) to match target batch_size \(7\)"]),
})

MATRIX_FRESH54: dict = {
    "batch-size-mismatch": (_mx_kind("batch-size-mismatch"), [(4, (2,), 3, True), (3, (1,), 2, False)]),
    "none-sdp-kernel-warning": (_mx_healthy_step("none-sdp-kernel-warning", "every rank enters the deprecated "
                                                 "torch.backends.cuda.sdp_kernel() context at step {s} (an attention "
                                                 "helper written for an older torch), so torch warns that it is "
                                                 "deprecated, and the job trains to the end"),
                                [(4, (1,), 2, True), (3, (2,), 3, False)]),
}
FRESH_DRAWS = {1: MATRIX_FRESH, 2: MATRIX_FRESH2, 3: MATRIX_FRESH3, 4: MATRIX_FRESH4, 5: MATRIX_FRESH5, 6: MATRIX_FRESH6, 7: MATRIX_FRESH7, 8: MATRIX_FRESH8, 9: MATRIX_FRESH9, 10: MATRIX_FRESH10, 11: MATRIX_FRESH11, 12: MATRIX_FRESH12, 13: MATRIX_FRESH13, 14: MATRIX_FRESH14, 15: MATRIX_FRESH15, 16: MATRIX_FRESH16, 17: MATRIX_FRESH17, 18: MATRIX_FRESH18, 19: MATRIX_FRESH19, 20: MATRIX_FRESH20, 21: MATRIX_FRESH21, 22: MATRIX_FRESH22, 23: MATRIX_FRESH23, 24: MATRIX_FRESH24, 25: MATRIX_FRESH25, 26: MATRIX_FRESH26, 27: MATRIX_FRESH27, 28: MATRIX_FRESH28, 29: MATRIX_FRESH29, 30: MATRIX_FRESH30, 31: MATRIX_FRESH31, 32: MATRIX_FRESH32, 33: MATRIX_FRESH33, 34: MATRIX_FRESH34, 35: MATRIX_FRESH35, 36: MATRIX_FRESH36, 37: MATRIX_FRESH37, 38: MATRIX_FRESH38, 39: MATRIX_FRESH39, 40: MATRIX_FRESH40, 41: MATRIX_FRESH41, 42: MATRIX_FRESH42, 43: MATRIX_FRESH43, 44: MATRIX_FRESH44, 45: MATRIX_FRESH45, 46: MATRIX_FRESH46, 47: MATRIX_FRESH47, 48: MATRIX_FRESH48, 49: MATRIX_FRESH49, 50: MATRIX_FRESH50, 51: MATRIX_FRESH51, 52: MATRIX_FRESH52, 53: MATRIX_FRESH53, 54: MATRIX_FRESH54}

# faults whose script takes LAB_STEP (the others inject at a fixed point)
_STEPPED = {"exception", "two-exception", "sigkill", "two-sigkill", "silent-hang", "two-silent-hang",
            "silent-hang-killed", "hang-killed", "compile-desync", "shape-recompile",
            "extra-collective-same-shape", "nan-first-rank"}


# --------------------------------------------------------------------------
# The production-shape matrix (lab/pg2d.py): 8 ranks with 2-D TP x DP (or 3-D PP x TP x DP)
# process groups made by dist.new_group; each fault at a chosen step on chosen rank(s), a few
# layouts and culprit positions.  Like MATRIX_FRESH it is held out: run it into a folder outside
# tests/ and measure it once before any change made for it.
# Variant names: <fault>-<layout>-r<culprit>[r<culprit2>]-s<step>[-notee].

PG2D_TIMEOUT = 15  # LAB_PG_TIMEOUT (s): long enough for the py-spy pass while the job hangs
PG2D_LAYOUTS = {"tp2dp4": {"LAB_TP": "2", "LAB_PP": "1"}, "tp4dp2": {"LAB_TP": "4", "LAB_PP": "1"},
                "pp2tp2dp2": {"LAB_TP": "2", "LAB_PP": "2"}}


def pg2d_layout(layout: str, rank: int) -> dict:
    """pp/tp/dp coordinates and group members of ``rank`` (the same arithmetic as lab/pg2d.py)."""
    tp, pp = int(PG2D_LAYOUTS[layout]["LAB_TP"]), int(PG2D_LAYOUTS[layout]["LAB_PP"])
    stage = 8 // pp
    dp = stage // tp
    p, i = divmod(rank, stage)
    d, t = divmod(i, tp)
    return {"tp": [p * stage + d * tp + k for k in range(tp)], "dp": [p * stage + k * tp + t for k in range(dp)],
            "pp": [k * stage + i for k in range(pp)] if pp > 1 else None, "pp_rank": p}


def _pg2d_where(layout, c) -> str:
    g = pg2d_layout(layout, c)
    return (f"rank {c} (tp group {g['tp']}, dp group {g['dp']}"
            + (f", pipeline stage {g['pp_rank']}, pp pair {g['pp']}" if g["pp"] else "") + ")")


# In the pipeline layout (ranks 0-3 stage 0, ranks 4-7 stage 1) lab/pg2d.py injects these faults
# only where their code runs: the extra / re-reduced collectives and the wrong-shape send in stage
# 1's step, the swapped recv/send in stage 0's.
_PG2D_STAGE = {"extra-tp": 1, "extra-dp": 1, "same-shape": 1, "p2p-shape": 1, "p2p-order": 0}


# what a run shows when a rank's odd collective meets its peers' in one group: gloo's size check
# fails on one side, or a rank loses its peer or times out, and the launcher records the exits
_SIZE_CHECK_EV = (r"(op\.preamble\.length <= op\.nbytes.*collective mismatch|"
                  rf"\[rank\d\]: RuntimeError: .*({PEER_LOST}|Timed out waiting))",
                  r"failed \(exitcode: -?\d+\) local_rank: \d")


def _pg2d_case(fault: str, layout: str, cs: tuple, s: int, tee: bool) -> Case:
    stage = _PG2D_STAGE.get(fault)
    if layout.startswith("pp") and stage is not None and any(r // 4 != stage for r in cs):
        raise ValueError(f"{fault} in {layout} is injected on stage-{stage} ranks only "
                         f"({'4-7' if stage else '0-3'}), not on {cs}")
    ms = PG2D_TIMEOUT * 1000
    c = cs[0] if cs else None
    o = _others(8, cs)
    lay = {"tp2dp4": "TP 2 x DP 4", "tp4dp2": "TP 4 x DP 2", "pp2tp2dp2": "PP 2 x TP 2 x DP 2"}[layout]
    head = f"8 ranks, gloo, {lay} process groups (dist.new_group). "
    who = " and ".join(_pg2d_where(layout, r) for r in cs)
    last = rf"rank {c} step {s - 1} (loss|act-norm)" if cs else None
    timed_out = rf"\[rank{_ranks(o)}\]: RuntimeError: .*Timed out waiting {ms}ms"
    kw: dict = {}
    if fault == "none":
        cls, hint = None, "healthy"
        desc = (head + "Healthy run: 8 steps, a TP all_reduce and a DP gradient all_reduce per step"
                + (", activations/gradients sent between the two pipeline stages" if layout.startswith("pp")
                   else "") + "; every rank dumps its Flight Recorder buffer when it finishes (at its own "
                "point in time, so the dumps of different groups end at different moments). Nothing here "
                "is a failure.")
        ev = [r"rank \d step 7 (loss|act-norm)", r"rank \d finished 8 steps"]
        kw["expect_ok"] = True
    elif fault == "exception":
        cls, hint = "peer-rank-crashed", "python-exception-in-one-rank"
        desc = (head + f"{who} raise{'' if len(cs) > 1 else 's'} json.decoder.JSONDecodeError (a truncated "
                f"record in the data shard) at step {s}, before the step's collectives; the peers in "
                "their TP / DP groups lose the connection or time out. Script uses @record.")
        ev = [rf"\[rank{_ranks(cs)}\]: json\.decoder\.JSONDecodeError: ",
              rf"\[rank{_ranks(o)}\]: RuntimeError: .*({PEER_LOST}|Timed out waiting)",
              rf"failed \(exitcode: 1\) local_rank: {_ranks(cs)}"]
    elif fault == "sigkill":
        cls, hint = "host-oom", "worker-sigkill-oom"
        desc = (head + f"{who} allocate{'' if len(cs) > 1 else 's'} a buffer and SIGKILL"
                f"{'' if len(cs) > 1 else 's'} {'themselves' if len(cs) > 1 else 'itself'} at step {s} "
                "(as the kernel OOM killer would; no traceback) before the step's collectives.")
        ev = [r"exitcode  : -9 \(pid: \d+\)  \(SIGKILL\)", r"Signal 9 \(SIGKILL\) received by PID",
              rf"\[rank{_ranks(o)}\]: RuntimeError: .*({PEER_LOST}|Timed out waiting)"]
    elif fault in ("hang-gil", "hang-sleep", "sigstop"):
        cls = "straggler-timeout"
        what = {
            "hang-gil": ("gil-held-hang", "enters a huge pure-C computation (builtin sum over range(10**13)) "
                         "that never releases the GIL (no log line; its Python threads, including the lab's "
                         "SIGTERM/FR watcher, never run again, so it ignores torchrun's SIGTERM and is SIGKILLed "
                         "30 s later)"),
            "hang-sleep": ("silent-rank-hang-timeout", "blocks silently in a stalled read (time.sleep, no log "
                           "line, no exception)"),
            "sigstop": ("rank-stopped-sigstop", "SIGSTOPs itself (job-control / debugger stop: the process is "
                        "frozen, SIGTERM stays pending, torchrun SIGKILLs it 30 s after its SIGTERM)"),
        }[fault]
        hint = what[0]
        desc = (head + f"{who} {what[1]} at step {s}, before the step's collectives; the ranks that wait for "
                f"{'them' if len(cs) > 1 else 'it'} in a TP or DP all_reduce hit the {PG2D_TIMEOUT} s gloo "
                "timeout and raise; torchrun then tears the job down. py-spy stacks of every rank taken "
                "from outside while the job hangs (stacks/).")
        ev = [last, timed_out, r"failed \(exitcode: 1\) local_rank: \d"]
        if fault != "hang-sleep":
            ev.append(r"forcefully exiting via 9")
            kw["sigkill_expected"] = True
        kw["stacks_after"] = last
    elif fault == "slow":
        cls, hint = "straggler-timeout", "slow-rank-timeout"
        desc = (head + f"{who} spends {2.5 * PG2D_TIMEOUT:.0f} s prefetching a shard at step {s} (a progress "
                f"line every 4 s) before its TP all_reduce, longer than the {PG2D_TIMEOUT} s gloo timeout: the "
                "waiting ranks time out and raise first; torchrun SIGTERMs the slow rank. py-spy stacks taken "
                "while the job waits (stacks/).")
        ev = [rf"rank {c} step {s}: prefetching shard from object store", timed_out,
              r"failed \(exitcode: 1\) local_rank: \d"]
        kw["stacks_after"] = last
    elif fault in ("extra-tp", "extra-dp", "same-shape"):
        cls = "collective-desync"
        g = pg2d_layout(layout, c)
        grp, gname = (g["dp"], "DP") if fault == "extra-dp" else (g["tp"], "TP")
        peers = [r for r in grp if r != c]
        if fault == "same-shape":
            hint = "extra-collective-same-shape"
            desc = (head + f"At step {s} {who} issues one extra all_reduce in its TP group {grp} of its output "
                    "(float32[8,4], a debug hook), the same shape as the TP activation all_reduce: gloo silently "
                    f"pairs it with rank(s) {_words(peers)}'s next step's all_reduce, every later TP op is "
                    f"shifted by one, and rank {c} is left at the end with one all_reduce nobody joins. Ranks "
                    "that finish dump their Flight Recorder buffer at exit. py-spy stacks (stacks/) taken "
                    "while the job waits.")
            ev = [rf"rank {_ranks(peers)} finished 8 steps",
                  rf"\[rank{c}\]: RuntimeError: .*({PEER_LOST}|Timed out waiting)"]
            kw["stacks_after"] = rf"rank {_ranks(peers)} finished 8 steps"
            kw["stacks_required"] = False  # the job may end before the dumps
            if g["pp"]:  # stage 1 also all-reduces the input gradient (float32[8,16]) in its TP group
                desc = (head + f"At step {s} {who} issues one extra all_reduce in its TP group {grp} of its "
                        "output (float32[8,4], a debug hook), the same shape as the TP activation all_reduce: "
                        f"gloo silently pairs it with rank(s) {_words(peers)}'s next step's activation "
                        "all_reduce, and the shift then pairs rank "
                        f"{c}'s own activation all_reduce (float32[8,4]) with the peer's input-gradient "
                        "all_reduce (float32[8,16]): gloo's size check aborts the culprit (SIGABRT).")
                ev = [r"op\.preamble\.length <= op\.nbytes.*collective mismatch",
                      rf"failed \(exitcode: -6\) local_rank: {c}"]
                del kw["stacks_after"], kw["stacks_required"]
        else:
            hint = "extra-collective-subgroup"
            desc = (head + f"At step {s} {who} issues one extra scalar all_reduce in its {gname} group {grp} "
                    f"(a loss average for logging) that rank(s) {_words(peers)} never issue: gloo pairs it "
                    f"with their next all_reduce in that group (a larger op) and the size check fails.")
            ev = list(_SIZE_CHECK_EV)
    elif fault in ("segv", "abort"):  # a native crash with no Python traceback
        v = "" if len(cs) > 1 else "s"
        hint, what, code, sig = {
            "segv": ("worker-segfault", f"dereference{v} a null pointer at step {s} (ctypes.string_at(0))", -11, "SIGSEGV"),
            "abort": ("worker-fatal-abort", f"fail{v} an internal check at step {s} and call{v} abort()", -6, "SIGABRT"),
        }[fault]
        cls = "peer-rank-crashed"
        desc = (head + f"{who}'s native data-loading extension {what} before the step's collectives: {sig}, no "
                "Python traceback; the peers in its TP / DP groups lose the connection or time out.")
        ev = [rf"exitcode  : {code} \(pid: \d+\)  \({sig}\)",
              rf"\[rank{_ranks(o)}\]: RuntimeError: .*({PEER_LOST}|Timed out waiting)"]
    elif fault == "sigterm":  # one rank preempted from outside: exit -15 like the ranks torchrun stops
        cls, hint = "peer-rank-crashed", "worker-killed-by-external-sigterm"
        desc = (head + f"{who} receive{'' if len(cs) > 1 else 's'} SIGTERM from outside the job at step {s} (a "
                "node agent preempting the node, not torchrun), before the step's collectives: Python's default "
                "action, exit -15, no traceback and no Flight Recorder dump; the peers in its TP / DP groups lose "
                "the connection or time out, and torchrun then stops the rest with SIGTERM too.")
        ev = [r"exitcode  : -15 \(pid: \d+\)  \(SIGTERM\)",
              rf"\[rank{_ranks(o)}\]: RuntimeError: .*({PEER_LOST}|Timed out waiting)"]
    elif fault == "cpu-alloc":  # a host allocation refused by the CPU allocator: a Python exception, with a dump
        cls, hint = "host-oom", "cpu-allocator-cannot-allocate"
        desc = (head + f"{who} build{'' if len(cs) > 1 else 's'} a host-side feature cache of 2**38 x 16 floats at "
                f"step {s} (a config value read as a power of two), before the step's collectives: the CPU "
                "allocator refuses the 16 TiB (RuntimeError, DefaultCPUAllocator) and the rank dumps its Flight "
                "Recorder buffer and dies; the peers in its TP / DP groups lose the connection or time out.")
        ev = [r"DefaultCPUAllocator", rf"\[rank{_ranks(o)}\]: RuntimeError: .*({PEER_LOST}|Timed out waiting)"]
    elif fault == "dp-dtype":
        cls, hint = "collective-desync", "collective-dtype-mismatch"
        g = pg2d_layout(layout, c)
        desc = (head + f"At step {s} {who} all-reduces its flattened gradients in float64 in its DP group "
                f"{g['dp']} (a config read as fp64 gradient reduction on that rank only) while its DP peers "
                "reduce float32: twice the bytes, so gloo's size check fails or the peers wait.")
        ev = list(_SIZE_CHECK_EV)
    elif fault == "tp-dtype":
        cls, hint = "collective-desync", "collective-dtype-mismatch"
        g = pg2d_layout(layout, c)
        desc = (head + f"At step {s} {who} all-reduces its TP partial output in float64 in its TP group {g['tp']} "
                "(a mixed-precision flag read on that rank only) while its TP peers reduce float32: twice the "
                "bytes, so gloo's size check fails or the peers wait.")
        ev = list(_SIZE_CHECK_EV)
    elif fault == "early-return":
        cls, hint = "collective-desync", "uneven-inputs-early-exit"
        desc = (head + f"At step {s} {who}'s data iterator runs dry (its shard is shorter than its peers'): it logs "
                "that its data is exhausted, leaves the training loop, dumps its Flight Recorder buffer and exits 0 "
                "while its TP / DP peers wait for it in the step's collectives (they lose the connection or time out).")
        ev = [rf"rank {c} step {s}: data shard exhausted",
              rf"\[rank{_ranks(o)}\]: RuntimeError: .*({PEER_LOST}|Timed out waiting)"]
    elif fault == "wrong-group":
        cls, hint = "collective-desync", "extra-collective-subgroup"
        g = pg2d_layout(layout, c)
        desc = (head + f"At step {s} {who} all-reduces its flattened gradients in its TP group {g['tp']} instead of "
                f"its DP group {g['dp']} (the wrong group handle): its TP peers meet it with their next TP "
                "all_reduce, a smaller op, and its DP peers wait for a gradient all_reduce it never issues in "
                "their group.")
        ev = list(_SIZE_CHECK_EV)
    elif fault == "skip-dp":
        cls, hint = "collective-desync", "rank-skips-step-on-error"
        g = pg2d_layout(layout, c)
        peers = [r for r in g["dp"] if r != c]
        desc = (head + f"At step {s} {who}'s gradient-accumulation counter is off by one: it takes the step for "
                "a no-sync micro-step and skips its DP gradient all_reduce in DP group "
                f"{g['dp']}. Its later DP all_reduces (same size) pair silently with rank(s) {_words(peers)}'s "
                f"earlier ones; it finishes its 8 steps one DP all_reduce short, and rank(s) {_words(peers)} "
                "are left waiting for the last one (connection closed or timeout).")
        ev = [rf"rank {c} finished 8 steps",
              rf"\[rank{_ranks(peers)}\]: RuntimeError: .*({PEER_LOST}|Timed out waiting)"]
    elif fault == "p2p-shape":
        cls, hint = "collective-desync", "p2p-send-recv-shape-mismatch"
        desc = (head + f"At step {s} {who}, a pipeline stage-1 rank, sends back the input gradient with the "
                f"full hidden width (float32[8,32]) instead of the activation shape its stage-0 peer posted "
                f"its recv for (float32[8,16]); gloo's size check fails on the receiver.")
        ev = [r"op\.preamble\.length <= op\.nbytes.*collective mismatch",
              r"exitcode  : -6 \(pid: \d+\)  \(SIGABRT\)"]
    elif fault == "p2p-order":
        cls, hint = "collective-desync", "p2p-send-recv-order-deadlock"
        desc = (head + f"At step {s} {who}, a pipeline stage-0 rank, posts its recv for the gradient before "
                f"sending the activation, so it and its stage-1 peer both wait in recv (a send/recv order "
                f"mismatch); the TP / DP peers then wait in their all_reduces until the {PG2D_TIMEOUT} s gloo "
                "timeout. py-spy stacks taken while the job hangs (stacks/).")
        ev = [last, rf"\[rank\d\]: RuntimeError: .*Timed out waiting {ms}ms",
              r"failed \(exitcode: 1\) local_rank: \d"]
        kw["stacks_after"] = last
        kw["also_ranks"] = [sorted(pg2d_layout(layout, c)["pp"])]
    else:
        raise ValueError(fault)
    env = dict(PG2D_LAYOUTS[layout], LAB_PG_TIMEOUT=str(PG2D_TIMEOUT), LAB_FAULT=fault)
    if cs:
        env["LAB_CULPRITS" if len(cs) > 1 else "LAB_CULPRIT"] = ",".join(map(str, cs))
        env["LAB_STEP"] = str(s)
    return Case("pg2d.py", 8, cls, c, hint, desc, [e for e in ev if e], env=env, fr=True,
                tee="3" if tee else None, wall_timeout=240,
                initiating_ranks=sorted(cs) if len(cs) > 1 else None, **kw)


# (fault, layout, culprits, step, tee)
MATRIX_PG2D_SPEC = [
    ("none", "tp2dp4", (), 0, True),
    ("none", "tp4dp2", (), 0, False),
    ("none", "pp2tp2dp2", (), 0, True),
    ("exception", "tp2dp4", (5,), 3, True),
    ("exception", "tp2dp4", (0,), 1, True),
    ("exception", "tp4dp2", (2,), 2, False),
    ("exception", "pp2tp2dp2", (6,), 4, True),
    ("exception", "tp2dp4", (1, 6), 3, True),
    ("sigkill", "tp2dp4", (3,), 2, True),
    ("sigkill", "tp4dp2", (7,), 4, False),
    ("sigkill", "pp2tp2dp2", (1,), 3, True),
    ("sigkill", "tp2dp4", (2, 3), 3, True),
    ("hang-gil", "tp2dp4", (4,), 3, True),
    ("hang-gil", "tp4dp2", (1,), 2, False),
    ("hang-sleep", "tp2dp4", (6,), 2, True),
    ("hang-sleep", "tp4dp2", (0,), 4, True),
    ("hang-sleep", "pp2tp2dp2", (5,), 3, False),
    ("hang-sleep", "tp2dp4", (0, 7), 2, True),
    ("sigstop", "tp2dp4", (2,), 3, True),
    ("sigstop", "tp4dp2", (5,), 2, False),
    ("sigstop", "pp2tp2dp2", (3,), 2, True),
    ("slow", "tp2dp4", (7,), 3, True),
    ("slow", "tp4dp2", (3,), 1, False),
    ("slow", "pp2tp2dp2", (0,), 2, True),
    ("extra-tp", "tp2dp4", (3,), 2, True),
    ("extra-tp", "tp4dp2", (6,), 3, False),
    ("extra-dp", "tp2dp4", (4,), 3, True),
    ("extra-dp", "tp4dp2", (1,), 2, True),
    ("same-shape", "tp2dp4", (5,), 2, True),
    ("same-shape", "tp4dp2", (0,), 3, False),
    ("same-shape", "pp2tp2dp2", (6,), 2, True),
    ("p2p-shape", "pp2tp2dp2", (5,), 2, True),
    ("p2p-shape", "pp2tp2dp2", (6,), 3, False),
    ("p2p-order", "pp2tp2dp2", (1,), 2, True),
    ("p2p-order", "pp2tp2dp2", (2,), 3, True),
]


# A second, held-out draw of the 8-rank matrix (`--matrix-pg2d --fresh`): other layouts, culprits and
# steps for the same faults, two-culprit variants of faults the first draw has with one culprit only.
MATRIX_PG2D_FRESH = [
    ("none", "pp2tp2dp2", (), 0, False),
    ("hang-gil", "pp2tp2dp2", (7,), 3, True),
    ("sigstop", "tp2dp4", (1, 4), 2, True),
    ("exception", "tp4dp2", (3, 4), 2, False),
    ("slow", "tp2dp4", (6,), 2, False),
    ("p2p-order", "pp2tp2dp2", (0,), 2, False),
    ("p2p-shape", "pp2tp2dp2", (4,), 3, True),
    ("same-shape", "tp2dp4", (2,), 3, True),
    ("extra-dp", "pp2tp2dp2", (5,), 2, True),
]

# A third draw (`--matrix-pg2d --fresh 2`), written down on Dec 3 before it was run: a two-rank
# hang, a SIGKILL and a SIGSTOP in the pipeline layout, the p2p faults at other stage ranks, and
# steps 2-3, all at culprits and layouts the other draws do not pair.
MATRIX_PG2D_FRESH2 = [
    ("none", "tp4dp2", (), 0, True),
    ("sigkill", "pp2tp2dp2", (6,), 2, False),
    ("hang-sleep", "tp4dp2", (3,), 3, True),
    ("hang-sleep", "tp2dp4", (2, 5), 2, True),
    ("hang-gil", "tp4dp2", (6,), 3, True),
    ("sigstop", "pp2tp2dp2", (4,), 3, False),
    ("exception", "pp2tp2dp2", (1,), 2, True),
    ("slow", "tp4dp2", (5,), 3, True),
    ("extra-tp", "tp2dp4", (6,), 3, False),
    ("same-shape", "tp2dp4", (7,), 2, False),
    ("p2p-order", "pp2tp2dp2", (3,), 3, True),
    ("p2p-shape", "pp2tp2dp2", (7,), 2, True),
]
# A fourth draw (`--matrix-pg2d --fresh 3`), written down on Dec 4 before it was run: culprit /
# layout / step pairs none of the other draws has, a two-rank SIGKILL across TP groups, a two-rank
# silent hang in one DP group, an extra TP op in the pipeline layout, step 1 faults.
MATRIX_PG2D_FRESH3 = [
    ("none", "tp2dp4", (), 0, False),
    ("exception", "tp4dp2", (7,), 1, True),
    ("exception", "pp2tp2dp2", (2, 5), 3, False),
    ("sigkill", "tp4dp2", (1, 6), 2, True),
    ("sigkill", "tp2dp4", (4,), 1, False),
    ("hang-gil", "tp2dp4", (7,), 2, True),
    ("hang-sleep", "tp4dp2", (2, 6), 3, True),
    ("sigstop", "tp4dp2", (0,), 3, False),
    ("slow", "pp2tp2dp2", (5,), 3, True),
    ("extra-dp", "tp2dp4", (7,), 2, False),
    ("same-shape", "tp4dp2", (4,), 2, True),
    # As run on Dec 4 the draw had two more: ("extra-tp", "pp2tp2dp2", (2,), 2, True) and
    # ("p2p-order", "pp2tp2dp2", (6,), 2, True). Neither took (8 steps, exit 0): pg2d.py injects
    # extra-tp on stage-1 ranks only and p2p-order on stage-0 ranks only (_PG2D_STAGE now says so).
]
# A fifth draw, written down on 2026-12-07 (thirtieth session) and committed before it ran: two fault
# kinds the pg2d matrix never injected (a skipped DP gradient all_reduce, a native segfault), and
# known kinds at culprits, layouts and steps not drawn before (rank 0 raising, a two-rank SIGKILL
# inside one TP group of stage 1, a silent hang in stage 1, a slow rank at step 2).
MATRIX_PG2D_FRESH4 = [
    ("none", "pp2tp2dp2", (), 0, False),
    ("skip-dp", "tp2dp4", (5,), 2, True),
    ("skip-dp", "pp2tp2dp2", (3,), 3, False),
    ("segv", "tp4dp2", (6,), 2, True),
    ("segv", "pp2tp2dp2", (1,), 3, False),
    ("exception", "tp2dp4", (0,), 3, False),
    ("sigkill", "pp2tp2dp2", (4, 5), 2, True),
    ("hang-sleep", "pp2tp2dp2", (6,), 2, True),
    ("slow", "tp2dp4", (3,), 2, False),
    ("extra-dp", "tp4dp2", (5,), 3, True),
]
# A sixth draw, written down on 2026-12-07 (thirtieth session) after ES was learned from and
# committed before it ran: two fault kinds pg2d.py never injected (a rank whose data runs dry and
# returns from training early, a rank that all-reduces its gradients in the wrong group) in each
# layout, and skip-dp and segv at new places.
MATRIX_PG2D_FRESH5 = [
    ("early-return", "tp2dp4", (6,), 3, True),
    ("early-return", "pp2tp2dp2", (5,), 2, False),
    ("wrong-group", "tp2dp4", (2,), 2, True),
    ("wrong-group", "tp4dp2", (7,), 3, False),
    ("skip-dp", "tp4dp2", (0,), 4, False),
    ("segv", "tp2dp4", (3,), 1, True),
    ("none", "tp4dp2", (), 0, True),
]
# A seventh draw, written down on 2026-12-07 (thirty-first session) while set ET was being collected
# and committed before it ran: two fault kinds pg2d.py never injected (a native abort(), a rank that
# all-reduces its DP gradients in float64) at two layouts each, and known kinds at new places (an
# early return of stage 0, the wrong group in the pipeline layout, a skipped DP all_reduce at step 5).
MATRIX_PG2D_FRESH6 = [
    ("abort", "tp2dp4", (4,), 3, True),
    ("abort", "pp2tp2dp2", (2,), 2, False),
    ("dp-dtype", "tp2dp4", (1,), 2, True),
    ("dp-dtype", "tp4dp2", (6,), 3, False),
    ("early-return", "pp2tp2dp2", (1,), 3, True),
    ("wrong-group", "pp2tp2dp2", (6,), 2, True),
    ("skip-dp", "tp2dp4", (2,), 5, False),
    ("none", "tp2dp4", (), 0, False),
]
# An eighth draw, written down on 2026-12-07 (thirty-second session) while set EV was being collected
# and committed before it ran: a fault kind pg2d.py never injected (a rank preempted by an outside
# SIGTERM, which exits -15 like the ranks torchrun stops afterwards) at two layouts, two ranks raising
# at once in the pipeline layout, and known kinds at new places.
MATRIX_PG2D_FRESH7 = [
    ("sigterm", "tp2dp4", (5,), 3, True),
    ("sigterm", "pp2tp2dp2", (0,), 2, False),
    ("hang-gil", "tp2dp4", (2,), 3, True),
    ("sigstop", "pp2tp2dp2", (7,), 2, False),
    ("extra-tp", "tp2dp4", (4,), 2, True),
    ("exception", "pp2tp2dp2", (3, 6), 3, True),
    ("none", "pp2tp2dp2", (), 0, True),
]
# The eighth pg2d draw, written down on 2026-12-07 (thirty-third session) while set EW was being collected,
# before either was measured: a new fault (cpu-alloc: a host allocation the CPU allocator refuses) at both
# layouts and on two ranks at once, and earlier faults at places no draw has put them.
MATRIX_PG2D_FRESH8 = [
    ("cpu-alloc", "tp2dp4", (6,), 2, True),
    ("cpu-alloc", "pp2tp2dp2", (5,), 3, False),
    ("cpu-alloc", "tp2dp4", (1, 2), 3, True),
    ("sigterm", "tp2dp4", (3,), 4, False),
    ("extra-dp", "pp2tp2dp2", (6,), 3, True),
    ("segv", "tp2dp4", (7,), 2, True),
    ("none", "tp2dp4", (), 0, False),
]
# A tenth pg2d draw, written down on 2026-12-07 (thirty-fourth session) while set EX was being
# collected, before it was run: known faults at places and layouts no earlier draw used.
MATRIX_PG2D_FRESH9 = [
    ("abort", "tp4dp2", (5,), 2, False),
    ("hang-sleep", "pp2tp2dp2", (2,), 3, True),
    ("slow", "tp2dp4", (4,), 3, True),
    ("dp-dtype", "tp4dp2", (3,), 2, True),
    ("cpu-alloc", "tp4dp2", (7,), 3, False),
    ("none", "tp4dp2", (), 0, False),
]
# An eleventh pg2d draw, written down on 2026-12-08 (thirty-fourth session) after the sibling-group
# comparison of Flight Recorder dumps was added for lab-pg2d-fresh9's DP dtype case, before it was
# run: a new fault, tp-dtype (a rank all-reduces its TP activations in float64), in TP groups of two
# and of four, and known faults at new places.
MATRIX_PG2D_FRESH10 = [
    ("tp-dtype", "tp2dp4", (5,), 2, True),
    ("tp-dtype", "tp4dp2", (2,), 3, False),
    ("tp-dtype", "pp2tp2dp2", (1,), 2, True),
    ("dp-dtype", "pp2tp2dp2", (6,), 3, True),
    ("sigkill", "tp4dp2", (6,), 2, False),
    ("none", "pp2tp2dp2", (), 0, False),
]
PG2D_FRESH_DRAWS = {1: MATRIX_PG2D_FRESH, 2: MATRIX_PG2D_FRESH2, 3: MATRIX_PG2D_FRESH3, 4: MATRIX_PG2D_FRESH4, 5: MATRIX_PG2D_FRESH5, 6: MATRIX_PG2D_FRESH6, 7: MATRIX_PG2D_FRESH7, 8: MATRIX_PG2D_FRESH8, 9: MATRIX_PG2D_FRESH9, 10: MATRIX_PG2D_FRESH10}


def pg2d_cases(spec: list | None = None) -> dict[str, Case]:
    out: dict[str, Case] = {}
    for fault, layout, cs, s, tee in spec or MATRIX_PG2D_SPEC:
        name = ("healthy" if fault == "none" else ("two-" if len(cs) > 1 else "") + fault) + f"-{layout}"
        if cs:
            name += "-r" + "r".join(map(str, cs)) + f"-s{s}"
        if not tee:
            name += "-notee"
        assert name not in out, name
        out[name] = _pg2d_case(fault, layout, cs, s, tee)
    return out


def matrix_cases(spec: dict | None = None) -> dict[str, Case]:
    """Every matrix variant as a Case, keyed by its name."""
    out: dict[str, Case] = {}
    for fault, (build, variants) in (MATRIX_SPEC if spec is None else spec).items():
        for world, culprits, step, tee in variants:
            name = f"{fault}-w{world}"
            if culprits:
                name += "-r" + "r".join(map(str, culprits))
            if not tee:
                name += "-notee"
            spec = build(world, culprits, step)
            env = dict(SHORT)
            if culprits:
                env["LAB_CULPRITS" if len(culprits) > 1 else "LAB_CULPRIT"] = ",".join(map(str, culprits))
            if fault in _STEPPED:
                env["LAB_STEP"] = str(step)
            env.update(spec.pop("env", {}))
            if "initiating_rank" in spec:
                rank = spec.pop("initiating_rank")
            else:
                rank = min(culprits) if culprits else None
            case = Case(
                spec.pop("script"), world, spec.pop("cls"), rank, spec.pop("hint"),
                spec.pop("description"), spec.pop("evidence"), env=env,
                tee="3" if tee else None, wall_timeout=120,
                initiating_ranks=sorted(culprits) if len(culprits) > 1 else None, **spec,
            )
            assert name not in out, name
            out[name] = case
    return out


# --------------------------------------------------------------------------
def yaml_str(s) -> str:
    if s is None:
        return "null"
    if isinstance(s, int):
        return str(s)
    return json.dumps(s, ensure_ascii=False)  # JSON strings are valid YAML


def pick_evidence(console: str, patterns: list[str]) -> tuple[list[str], list[str]]:
    lines = console.splitlines()
    found, missing = [], []
    for pat in patterns:
        rx = re.compile(pat)
        hit = next((ln for ln in lines if rx.search(ln)), None)
        if hit is None:
            missing.append(pat)
        elif hit not in found:
            found.append(hit.rstrip("\r"))
    return found, missing


def _worker_pids(root: int) -> dict[int, int]:
    """Global rank -> pid of the torchrun workers under pid ``root`` (read from /proc, from outside)."""
    parent = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    parent[int(d)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                pass

    def under(pid):
        while pid > 1:
            pid = parent.get(pid, 0)
            if pid == root:
                return True
        return False

    out = {}
    for d in map(str, parent):
        try:
            if not under(int(d)):
                continue
            with open(f"/proc/{d}/environ", "rb") as f:
                env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
        except (OSError, ValueError):
            continue
        if b"RANK" in env and b"TORCHELASTIC_RUN_ID" in env:
            out[int(env[b"RANK"])] = int(d)
    return out


def _py_spy(pid: int, *extra: str) -> tuple[str, str]:
    """``py-spy dump --pid PID`` (retried with --nonblocking if the attach fails): (output, how)."""
    exe = shutil.which("py-spy", path=os.path.dirname(sys.executable)) or shutil.which("py-spy") or "py-spy"
    how = ""
    for opts in ([], ["--nonblocking"]):
        cmd = [exe, "dump", "--pid", str(pid), *opts, *extra]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
        except subprocess.TimeoutExpired:
            how += f"{shlex.join(cmd[1:])}: timed out after 20 s; "
            continue
        except OSError as exc:  # no py-spy: `make lab-pg2d` installs it; the variant is then CHECK
            return "", how + f"{exe}: {exc.strerror} (pip install py-spy==0.4.2)"
        if p.returncode == 0 and p.stdout.strip():
            return p.stdout, how + shlex.join(cmd[1:])
        how += f"{shlex.join(cmd[1:])}: exit {p.returncode} {p.stderr.strip()[:200]}; "
    return "", how


def take_stacks(proc, chunks, case: Case, cdir: str, t0: float, result: dict) -> None:
    """Wait for ``case.stacks_after`` in the console, then py-spy every worker from outside."""
    rx = re.compile(case.stacks_after)
    while proc.poll() is None:
        if rx.search(b"".join(chunks).decode("utf-8", errors="replace")):
            break
        time.sleep(0.2)
    else:
        return
    t_trig = time.time()
    time.sleep(case.stacks_delay)
    pids = _worker_pids(proc.pid)
    sdir = os.path.join(cdir, "stacks")
    os.makedirs(sdir, exist_ok=True)
    hows = {}
    t_start = time.time()
    for rank, pid in sorted(pids.items()):  # text first: it matters most while the job still hangs
        text, how = _py_spy(pid, "--locals")
        hows[rank] = how
        if text:
            with open(os.path.join(sdir, f"rank{rank}.txt"), "w") as f:
                f.write(text)
    t_text = time.time()
    for rank, pid in sorted(pids.items()):
        js, _ = _py_spy(pid, "--locals", "--json")
        if js:
            with open(os.path.join(sdir, f"rank{rank}.json"), "w") as f:
                f.write(js)
    t_end = time.time()
    taken = sorted(int(n[4:-4]) for n in os.listdir(sdir) if n.endswith(".txt"))
    failed = {r: h for r, h in hows.items() if r not in taken}
    result["ranks"] = taken
    result["note"] = (
        f"py-spy {_py_spy_version()} 'dump --pid <pid> --locals' (text, stacks/rank<N>.txt) then 'dump --pid "
        f"<pid> --locals --json' (stacks/rank<N>.json) of every worker, pids found from outside in /proc (RANK in each "
        f"worker's environ); triggered by the first console line matching {case.stacks_after!r} at "
        f"{t_trig - t0:.1f}s, text dumps {t_start - t0:.1f}-{t_text - t0:.1f}s, json dumps until "
        f"{t_end - t0:.1f}s after torchrun started; ranks dumped: {taken or 'none'}"
        + (f"; failed: {failed}" if failed else "")
        + (f"; via: {sorted(set(hows.values()))}" if any("nonblocking" in h for h in hows.values()) else "")
    )


_PY_SPY_VERSION = None


def _py_spy_version() -> str:
    global _PY_SPY_VERSION
    if _PY_SPY_VERSION is None:
        exe = shutil.which("py-spy", path=os.path.dirname(sys.executable)) or "py-spy"
        try:
            _PY_SPY_VERSION = subprocess.run([exe, "--version"], capture_output=True, text=True,
                                             timeout=20).stdout.split()[-1]
        except (OSError, subprocess.SubprocessError, IndexError):
            _PY_SPY_VERSION = "?"
    return _PY_SPY_VERSION


def run_case(name: str, case: Case, out: str) -> dict:
    cdir = os.path.abspath(os.path.join(out, name))
    if os.path.exists(cdir):
        shutil.rmtree(cdir)
    os.makedirs(cdir)
    logs = os.path.join(cdir, "logs")

    lab_env = {"PYTHONUNBUFFERED": "1", "LAB_CASE": name}
    if case.fr:
        lab_env.update(FR)
        lab_env["TORCH_FR_DUMP_TEMP_FILE"] = os.path.join(cdir, "fr", "fr_trace_rank_")
    lab_env.update(case.env)  # a case may override the FR defaults (buffer size)

    cmd = [
        sys.executable, "-m", "torch.distributed.run",
        "--nnodes", "1", "--nproc-per-node", str(case.nproc),
        "--rdzv-backend", "c10d", "--rdzv-endpoint", "localhost:0",
        "--rdzv-id", name, "--log-dir", logs,
    ]
    if case.tee is not None:
        cmd += ["--tee", case.tee]
    cmd += case.torchrun_args
    cmd += [os.path.join("lab", case.script), *case.args]

    env = dict(os.environ)
    env.update(lab_env)
    hook_note = ""
    if case.pre:
        hook_note = HOOKS[case.pre](cmd, env, lab_env, cdir) or ""

    t0 = time.time()
    proc = subprocess.Popen(
        cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    chunks: list[bytes] = []

    def reader():
        for chunk in iter(lambda: proc.stdout.read1(65536), b""):
            chunks.append(chunk)

    th = threading.Thread(target=reader, daemon=True)
    th.start()
    stacks: dict = {}
    st = None
    if case.stacks_after:
        st = threading.Thread(target=take_stacks, args=(proc, chunks, case, cdir, t0, stacks), daemon=True)
        st.start()
    killed_note = ""
    if case.kill_after is not None:
        try:
            proc.wait(timeout=case.kill_after)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGTERM)
            killed_note = f"driver sent SIGTERM to the torchrun process (pid {proc.pid}) after {case.kill_after:.0f}s"
    try:
        rc = proc.wait(timeout=case.wall_timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        rc = proc.wait()
        killed_note += " | wall timeout: driver SIGKILLed the whole process group"
    th.join(timeout=10)
    if st is not None:
        st.join(timeout=60)
    dt = time.time() - t0
    console = b"".join(chunks).decode("utf-8", errors="replace")
    with open(os.path.join(cdir, "console.log"), "w", encoding="utf-8", newline="") as f:
        f.write(console)

    if getattr(HOOKS.get(case.pre or ""), "cleanup", None):
        HOOKS[case.pre].cleanup()

    fr_dir = os.path.join(cdir, "fr")
    fr_files = sorted(os.listdir(fr_dir)) if os.path.isdir(fr_dir) else []

    import torch  # only for the version string

    with open(os.path.join(cdir, "cmd.txt"), "w") as f:
        f.write("# command (cwd = repo root)\n")
        f.write(shlex.join(cmd) + "\n\n")
        f.write("# env vars set by lab/run.py (on top of the caller's environment)\n")
        for k, v in lab_env.items():
            f.write(f"{k}={v}\n")
        f.write("\n# run\n")
        f.write(f"torch_version={torch.__version__}\n")
        f.write(f"python={sys.version.split()[0]}\n")
        f.write(f"torchrun_exit_status={rc}\n")
        f.write(f"wall_seconds={dt:.1f}\n")
        f.write(
            "console=torchrun stdout+stderr merged into one pipe; "
            + (f"--tee {case.tee}: every rank line is prefixed '[default<local_rank>]:' by torchrun; "
               if case.tee else "no --tee: rank output goes straight to the terminal, no [defaultN]: prefix; ")
            + "tracebacks of uncaught exceptions after init_process_group are prefixed "
            "'[rank<N>]:' by torch's distributed excepthook\n"
        )
        if killed_note:
            f.write(f"kill={killed_note.strip(' |')}\n")
        if hook_note:
            f.write(f"setup={hook_note}\n")
        if case.stacks_after:
            f.write(f"stacks={stacks.get('note', 'not taken: the trigger line never appeared')}\n")
        if case.fr:
            f.write(
                "flight_recorder=TORCH_FR_BUFFER_SIZE=2000; each rank writes "
                "torch._C._distributed_c10d._dump_fr_trace() (pickle bytes) to "
                "$TORCH_FR_DUMP_TEMP_FILE<rank> from its exception handler (lab/_common.py "
                "dump_fr) or, when torchrun SIGTERMs the workers, from a wakeup-fd "
                "watcher thread; gloo itself never dumps. "
                f"dumps present: {', '.join(fr_files) or 'none'}\n"
            )

    evidence, missing = pick_evidence(console, case.evidence)
    with open(os.path.join(cdir, "expected.yaml"), "w", encoding="utf-8") as f:
        f.write(f"class: {yaml_str(case.cls)}\n")
        f.write(f"initiating_rank: {yaml_str(case.initiating_rank)}\n")
        if case.initiating_ranks:
            f.write(f"initiating_ranks: [{', '.join(map(str, case.initiating_ranks))}]\n")
        if case.also_ranks:
            f.write("also_acceptable_ranks: [" + ", ".join(f"[{', '.join(map(str, x))}]" for x in case.also_ranks) + "]\n")
        f.write(f"entry_hint: {yaml_str(case.hint)}\n")
        f.write(f"description: {yaml_str(case.description)}\n")
        f.write("evidence:\n")
        for ln in evidence:
            f.write(f"  - {yaml_str(ln)}\n")
        if not evidence:
            f.write("  []\n")

    ok = (rc == 0) == case.expect_ok
    # A worker that ignores torchrun's SIGTERM (torchrun SIGKILLs it 30 s later) is an
    # artefact of the lab's FR-dump SIGTERM handler, not of the injected fault.
    sigkilled_by_torchrun = "forcefully exiting via 9" in console and not case.sigkill_expected
    status = "captured" if ok and not missing and not sigkilled_by_torchrun else "CHECK"
    result = {"case": name, "rc": rc, "seconds": round(dt, 1), "status": status,
              "missing_evidence": missing, "fr_dumps": len(fr_files)}
    if sigkilled_by_torchrun:
        result["note"] = "torchrun had to SIGKILL a worker that ignored SIGTERM"
    if case.stacks_after:
        result["stacks"] = stacks.get("ranks", [])
        if not stacks.get("ranks") and case.stacks_required:
            result["status"] = "CHECK"
    return result


class _PortInUse:
    """Pre-run hook: occupy a TCP port (like a stale job would), then point
    torchrun's default static rendezvous (--master-port) at it."""

    def __init__(self):
        self.sock = None

    def __call__(self, cmd, env, lab_env, cdir):
        import socket

        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        port = self.sock.getsockname()[1]
        i = cmd.index("--rdzv-backend")
        cmd[i:i + 6] = ["--master-addr", "127.0.0.1", "--master-port", str(port)]
        return (f"before starting torchrun the driver bound and listens on 127.0.0.1:{port} "
                f"(a stale process holding the port); torchrun uses its default static "
                f"rendezvous with --master-port {port}")

    def cleanup(self):
        if self.sock:
            self.sock.close()
            self.sock = None


HOOKS: dict = {"port_in_use": _PortInUse()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases", nargs="*", help="case (or with --matrix: variant) names (default: all)")
    ap.add_argument("--out", default=None,
                    help="output folder (default: tests/scenarios/lab, with --matrix tests/scenarios/lab-matrix)")
    ap.add_argument("--matrix", action="store_true", help="run the fault matrix instead of the single cases")
    ap.add_argument("--fresh", nargs="?", type=int, const=1, default=None, choices=sorted(FRESH_DRAWS),
                    help="with --matrix: a held-out draw instead (1: MATRIX_FRESH, 2: MATRIX_FRESH2, 3: MATRIX_FRESH3, 4: MATRIX_FRESH4, 5: MATRIX_FRESH5); with "
                    "--matrix-pg2d: MATRIX_PG2D_FRESH (1), MATRIX_PG2D_FRESH2 (2), MATRIX_PG2D_FRESH3 (3), MATRIX_PG2D_FRESH4 (4), MATRIX_PG2D_FRESH5 (5), MATRIX_PG2D_FRESH6 (6); needs --out")
    ap.add_argument("--matrix-pg2d", action="store_true",
                    help="the 8-rank TP x DP (x PP) process-group matrix (MATRIX_PG2D_SPEC, lab/pg2d.py); "
                    "held out, needs --out")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args(argv)
    if a.fresh and not ((a.matrix or a.matrix_pg2d) and (a.out or a.list)):
        ap.error("--fresh goes with --matrix or --matrix-pg2d and an --out folder outside tests/scenarios")
    if a.fresh and a.matrix_pg2d and a.fresh not in PG2D_FRESH_DRAWS:
        ap.error("--matrix-pg2d has five held-out draws: --fresh 1 to 5")
    if a.matrix_pg2d and not (a.out or a.list):
        ap.error("--matrix-pg2d needs an --out folder outside tests/scenarios")
    table = (pg2d_cases(PG2D_FRESH_DRAWS[a.fresh] if a.fresh else None) if a.matrix_pg2d else
             matrix_cases(FRESH_DRAWS[a.fresh] if a.fresh else None) if a.matrix else CASES)
    out = a.out or (MATRIX_OUT if a.matrix else os.path.join(REPO, "tests", "scenarios", "lab"))
    if a.list:
        for n, c in table.items():
            ranks = c.initiating_ranks or ("-" if c.initiating_rank is None else c.initiating_rank)
            print(f"{n:40s} {c.cls or 'healthy':24s} {str(ranks):8s} {c.script}")
        return 0
    names = a.cases or list(table)
    bad = [n for n in names if n not in table]
    if bad:
        ap.error(f"unknown case(s): {', '.join(bad)}; see --list" + (" --matrix" if a.matrix else ""))
    results = []
    for n in names:
        print(f"[lab] running {n} ...", flush=True)
        r = run_case(n, table[n], out)
        print(f"[lab] {n}: {r}", flush=True)
        results.append(r)
    failed = [r["case"] for r in results if r["status"] != "captured"]
    print(f"[lab] {len(results) - len(failed)} captured, {len(failed)} to check: {failed}")
    if a.matrix and not a.fresh and not a.cases and os.path.isdir(out):
        stale = sorted(set(os.listdir(out)) - set(table))
        if stale:
            print(f"[lab] note: {out} also holds folders that are not matrix variants: {stale}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
