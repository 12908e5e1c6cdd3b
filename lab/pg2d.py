"""pg2d: an 8-rank job with 2-D (TP x DP) or 3-D (PP x TP x DP) process groups.

Layout (world 8, LAB_TP = tensor-parallel size, default 2; LAB_PP = 1 or 2):

* LAB_PP=1, LAB_TP=2: rank = dp_rank * 2 + tp_rank
    TP groups {0,1} {2,3} {4,5} {6,7}      DP groups {0,2,4,6} {1,3,5,7}
* LAB_PP=1, LAB_TP=4: TP groups {0,1,2,3} {4,5,6,7}   DP groups {0,4} {1,5} {2,6} {3,7}
* LAB_PP=2, LAB_TP=2: rank = pp_rank * 4 + dp_rank * 2 + tp_rank
    TP groups {0,1} {2,3} {4,5} {6,7}   DP groups {0,2} {1,3} {4,6} {5,7}
    PP pairs (send/recv) {0,4} {1,5} {2,6} {3,7}

Every group is made with ``dist.new_group`` (gloo, the job's timeout LAB_PG_TIMEOUT) by every
rank in the same order (TP, then DP, then PP), with a ``group_desc`` (tp0, dp1, pp2, ...).

The model is a Megatron-style tensor-parallel MLP block: a column-parallel Linear (each TP
rank holds hidden/TP units), ReLU, a row-parallel Linear whose partial outputs are summed by an
``all_reduce`` in the TP group (forward).  Backward needs no collective for the block's own
weights; then the gradients are flattened and ``all_reduce``d in the DP group.  With LAB_PP=2,
stage 0 runs block 1 and ``send``s the activation [8,16] to its stage-1 peer, stage 1 runs
block 2 and the loss, all-reduces the input gradient in its TP group (Megatron's "f" operator)
and ``send``s it back; stage 0 ``recv``s it and finishes its backward.

Each rank logs ``rank N step S loss X`` (stage 0 of the pipeline logs ``... act-norm X``).

Faults (LAB_FAULT), injected at step LAB_STEP on rank(s) LAB_CULPRIT / LAB_CULPRITS:

  none          healthy run; every rank dumps its Flight Recorder buffer at exit
  exception     the rank's data reader hits a truncated JSON record -> JSONDecodeError
  sigkill       the rank hoards memory and SIGKILLs itself (OOM-killer stand-in)
  hang-gil      the rank enters a huge pure-C computation (sum over range(10**13)) that
                never releases the GIL: no Python thread of that process runs again
  hang-sleep    the rank blocks silently (time.sleep, GIL released)
  sigstop       the rank SIGSTOPs itself (as a debugger / job-control stop would)
  slow          the rank sleeps 2.5x the collective timeout (logging progress) before its
                TP all_reduce, then carries on into it
  extra-tp      the rank issues one extra scalar all_reduce in its TP group (peer does not)
  extra-dp      the rank issues one extra scalar all_reduce in its DP group (peers do not)
  same-shape    the rank issues one extra float32[8,4] all_reduce in its TP group, the same
                shape as the TP activation all_reduce (gloo matches it silently)
  p2p-shape     (LAB_PP=2, a stage-1 rank) sends back the gradient of the full hidden layer
                (float32[8,32]) instead of its stage-0 peer's activation shape (float32[8,16])
  p2p-order     (LAB_PP=2, a stage-0 rank) posts its recv for the gradient before its send of
                the activation: it and its stage-1 peer both wait in recv
  skip-dp       the rank's gradient-accumulation counter is off by one at LAB_STEP: it takes
                that step for a no-sync micro-step and skips its DP gradient all_reduce, so
                its later DP all_reduces pair with its peers' earlier ones (same size, gloo
                matches them silently) and at the end the peers wait for one it never issues
  segv          the rank's native data-loading extension dereferences a null pointer
                (ctypes.string_at(0)): SIGSEGV, no Python traceback
  early-return  the rank's data iterator runs dry at LAB_STEP (a shard shorter than its
                peers'): it logs that its data is exhausted, leaves the loop, dumps and
                exits 0 while its TP / DP peers wait in the step's collectives
  wrong-group   at LAB_STEP the rank all-reduces its gradients in its TP group instead of its
                DP group (the wrong group handle): a larger op than its TP peers' activation
                all_reduce, so gloo's size check fails or the peers wait
  abort         the rank's native data-loading extension fails an internal check and calls
                abort(): SIGABRT, no Python traceback (faulthandler prints the stack)
  dp-dtype      at LAB_STEP the rank all-reduces its gradients in float64 in its DP group (a
                config that reads "fp64 grad reduce" on that rank only) while its DP peers
                reduce float32: twice the bytes, so gloo's size check fails or the peers wait
  sigterm       the rank receives SIGTERM from outside the job (a node agent preempting its
                node, not torchrun) before its step's collectives: Python's default action,
                exit -15, no traceback; its peers lose the connection
  cpu-alloc     the rank builds a host-side feature cache whose row count comes from a bad
                config value (2**38 rows of 16 floats, 16 TiB): the CPU allocator refuses it,
                RuntimeError "DefaultCPUAllocator: not enough memory", and the rank dumps and dies
                before its step's collectives

Ranks that finish (healthy runs, and the ranks a fault does not stop) dump their Flight
Recorder buffer at exit; ranks that raise dump from the exception handler; ranks torchrun
SIGTERMs dump from lab/_common.py's watcher thread (when the GIL lets it run).
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import signal
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.elastic.multiprocessing.errors import record

from _common import batches, dump_fr, lab_culprits, lab_int, log, setup

STEPS = int(os.environ.get("LAB_STEPS", 8))
BS, D_IN, D_HID, D_OUT = 8, 16, 32, 4


class TPBlock(nn.Module):
    """Column-parallel fc1 (d_in -> hidden/tp), ReLU, row-parallel fc2 (hidden/tp -> d_out)."""

    def __init__(self, d_in, d_hidden, d_out, tp):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden // tp)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(d_hidden // tp, d_out, bias=False)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def tp_forward(block, x, tp_group, dtype=torch.float32):
    """Partial output of this TP rank, summed over the TP group (identity gradient)."""
    partial = block(x)
    full = partial.detach().clone().to(dtype)
    dist.all_reduce(full, group=tp_group)
    full = full.to(partial.dtype)
    return partial + (full - partial).detach()


def dp_allreduce_grads(params, dp_group, dp_size, dtype=torch.float32):
    flat = torch.cat([p.grad.reshape(-1) for p in params]).to(dtype)
    dist.all_reduce(flat, group=dp_group)
    flat = flat.to(torch.float32) / dp_size
    off = 0
    for p in params:
        n = p.numel()
        p.grad.copy_(flat[off:off + n].view_as(p))
        off += n


def read_record(rank, step, fault, culprit):
    """Read one JSON record of the data shard (the culprit's is truncated on disk)."""
    line = '{"sample": %d, "tokens": [1, 2, 3]}' % step
    if culprit and fault == "exception":
        line = '{"sample": %d, "tokens": [1, 2' % step
    return json.loads(line)


def inject_stop(rank, step, fault, timeout):
    """Faults that stop a rank before its step's first collective."""
    if fault == "sigkill":
        hoard = [torch.empty(64 * 2**20, dtype=torch.uint8)]  # "leak"
        os.kill(os.getpid(), signal.SIGKILL)  # the OOM killer strikes
        return hoard
    if fault == "hang-gil":
        # n comes from a bad config value: a pure-C loop (builtin sum over a range iterator)
        # that never returns to the eval loop, so the GIL is never released
        return sum(range(10**13))
    if fault == "hang-sleep":
        time.sleep(3600)  # blocked read of a stalled mount: no log line, no exception
    if fault == "sigstop":
        os.kill(os.getpid(), signal.SIGSTOP)
    if fault == "segv":
        ctypes.string_at(0)  # the extension's null pointer
    if fault == "abort":
        ctypes.CDLL(None).abort()  # the extension's failed internal check
    if fault == "sigterm":
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the lab's dump-on-SIGTERM watcher is not the agent's
        os.kill(os.getpid(), signal.SIGTERM)  # the node agent preempts this node
        time.sleep(60)
    if fault == "cpu-alloc":
        rows = 2 ** 38  # the config's cache_rows, read as a power of two by mistake
        log.info("rank %d step %d: building feature cache (%d rows x 16)", rank, step, rows)
        return torch.empty(rows, 16)
    if fault == "slow":
        total = 2.5 * timeout
        t0 = time.monotonic()
        while time.monotonic() - t0 < total:
            time.sleep(min(4.0, total - (time.monotonic() - t0)))
            log.info("rank %d step %d: prefetching shard from object store, %.0f s so far",
                     rank, step, time.monotonic() - t0)
    return None


@record
def main():
    timeout = float(os.environ.get("LAB_PG_TIMEOUT", 15))
    rank, world = setup(default_timeout=timeout)
    tp = lab_int("LAB_TP", 2)
    pp = lab_int("LAB_PP", 1)
    fault = os.environ.get("LAB_FAULT", "none")
    fault_step = lab_int("LAB_STEP", 3)
    culprits = lab_culprits(-1) if fault != "none" else ()
    stage_size = world // pp
    dp = stage_size // tp
    pp_rank, in_stage = divmod(rank, stage_size)
    dp_rank, tp_rank = divmod(in_stage, tp)
    td = timedelta(seconds=timeout)

    tp_group = dp_group = pp_group = None
    tp_ranks = dp_ranks = pp_ranks = None
    for s in range(pp):  # every rank creates every group, in the same order
        for d in range(dp):
            ranks = [s * stage_size + d * tp + t for t in range(tp)]
            g = dist.new_group(ranks, timeout=td, group_desc=f"tp{s * dp + d}")
            if rank in ranks:
                tp_group, tp_ranks = g, ranks
    for s in range(pp):
        for t in range(tp):
            ranks = [s * stage_size + d * tp + t for d in range(dp)]
            g = dist.new_group(ranks, timeout=td, group_desc=f"dp{s * tp + t}")
            if rank in ranks:
                dp_group, dp_ranks = g, ranks
    if pp > 1:
        for i in range(stage_size):
            ranks = [s * stage_size + i for s in range(pp)]
            g = dist.new_group(ranks, timeout=td, group_desc=f"pp{i}")
            if rank in ranks:
                pp_group, pp_ranks = g, ranks
    log.info("rank %d: pp_rank %d tp_rank %d dp_rank %d; tp group %s, dp group %s%s", rank, pp_rank,
             tp_rank, dp_rank, tp_ranks, dp_ranks, f", pp group {pp_ranks}" if pp_ranks else "")

    torch.manual_seed(100 + pp_rank * 10 + tp_rank)  # same shard of weights across DP replicas
    d_in = D_IN
    block = TPBlock(d_in, D_HID, D_IN if (pp > 1 and pp_rank == 0) else D_OUT, tp)
    params = list(block.parameters())
    opt = torch.optim.SGD(params, lr=0.05)
    peer = pp_ranks[1 - pp_rank] if pp_ranks else None

    done = 0
    try:
        for step, (x, y) in enumerate(batches(dp_rank, STEPS)):
            culprit = rank in culprits and step == fault_step
            if culprit and fault == "early-return":
                log.info("rank %d step %d: data shard exhausted, leaving the training loop", rank, step)
                break
            read_record(rank, step, fault, culprit)
            if culprit:
                inject_stop(rank, step, fault, timeout)
            opt.zero_grad()
            if pp == 1 or pp_rank == 1:
                if pp > 1:
                    h = torch.empty(BS, D_IN)
                    dist.recv(h, src=peer, group=pp_group)
                    x = h.requires_grad_()
                out = tp_forward(block, x, tp_group, torch.float64 if (culprit and fault == "tp-dtype") else torch.float32)
                loss = nn.functional.mse_loss(out, y)
                loss.backward()
                if pp > 1:
                    gh = x.grad.clone()
                    dist.all_reduce(gh, group=tp_group)  # input grad of a column-parallel layer
                    if culprit and fault == "p2p-shape":
                        gh = torch.cat([gh, gh], dim=1)  # bug: the full hidden width, [8, 32]
                    dist.send(gh, dst=peer, group=pp_group)
                if culprit and fault == "extra-tp":
                    dist.all_reduce(loss.detach().clone(), group=tp_group)  # "TP-averaged loss for logging"
                if culprit and fault == "extra-dp":
                    dist.all_reduce(loss.detach().clone(), group=dp_group)  # "DP-averaged loss for logging"
                if culprit and fault == "same-shape":
                    dist.all_reduce(out.detach().clone(), group=tp_group)  # debug hook re-reduces the output
                if not (culprit and fault == "skip-dp"):  # the off-by-one no-sync micro-step
                    # (wrong-group: the gradient all_reduce handed the TP group's handle)
                    dp_allreduce_grads(params, tp_group if (culprit and fault == "wrong-group") else dp_group, dp,
                                       torch.float64 if (culprit and fault == "dp-dtype") else torch.float32)
                opt.step()
                log.info("rank %d step %d loss %.4f", rank, step, loss.item())
            else:  # pipeline stage 0
                h = tp_forward(block, x, tp_group, torch.float64 if (culprit and fault == "tp-dtype") else torch.float32)
                gh = torch.empty(BS, D_IN)
                if culprit and fault == "p2p-order":
                    dist.recv(gh, src=peer, group=pp_group)  # bug: waits for the grad before sending
                dist.send(h.detach().clone(), dst=peer, group=pp_group)
                if not (culprit and fault == "p2p-order"):
                    dist.recv(gh, src=peer, group=pp_group)
                h.backward(gh)
                if not (culprit and fault == "skip-dp"):
                    dp_allreduce_grads(params, tp_group if (culprit and fault == "wrong-group") else dp_group, dp,
                                       torch.float64 if (culprit and fault == "dp-dtype") else torch.float32)
                opt.step()
                log.info("rank %d step %d act-norm %.4f", rank, step, h.detach().norm().item())
            time.sleep(0.2)  # pretend the step takes a while
            done = step + 1
        log.info("rank %d finished %d steps", rank, done)
        dump_fr("exit")  # every rank that finishes leaves its collective history
    except BaseException:
        dump_fr("exception")
        raise
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
