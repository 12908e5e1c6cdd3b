#!/usr/bin/env python3
"""`rankdoctor fr` at 64, 256 and 1,024 ranks, beside torchfrtrace (rankdoctor issue 11).

    .venv/bin/python bench/fr_scale.py gen --ranks 64 --scenario straggler --out /tmp/fr64
    .venv/bin/python bench/fr_scale.py bench [--ranks 64 256 1024] [--out bench/fr_scale.md]

The dump sets are GENERATED: a synthetic workload written in the real Flight Recorder format,
for timing and for the length of the report at scale. Accuracy on real dumps is measured on
the lab's torch runs (tests/scenarios/lab*/, bench/fr_vs_torchfrtrace.md), not here.

The format is the one torch 2.13 writes (version "2.10"; the keys of
torch/csrc/distributed/c10d/FlightRecorderDetail.hpp: ``dump_dict`` and
``getCollectiveTrace``), NCCL-style where gloo leaves fields empty:

- one pickle (protocol 2, strings and frame dicts shared through the memo as torch's
  pickler shares them) per rank, named ``nccl_trace_rank_<rank>``;
- ``pg_config`` lists every group the rank is in, keyed by the group's name:
  ``{"name", "desc", "ranks": "[0, 8, 16]"}`` (``ranks_str``);
- ``pg_status`` keyed by the rank's local group id (``pg_id``): last enqueued / started /
  completed sequence numbers;
- entries: ``state`` scheduled / started / completed with ``time_discovered_*_ns`` set
  when the watchdog saw the start or the end, ``retired`` once it retired the work, the
  thread id as a decimal string, ``timeout_ms`` 600000, 8-15 Python frames, innermost first.

Layout: tensor parallel 8 x data parallel N/8, every group made by every rank in the same
order (default group "0", TP groups "1".."N/8" named tp0.., DP groups after them named
dp0..dp7). A step is 4 TP all_reduces (forward and backward of attention and MLP), a
reduce_scatter of the gradients and an all_gather of the parameters in the DP group, and
every 10th step an all_reduce of the loss in the default group. The ring buffer keeps the
last 2,000 entries (TORCH_FR_BUFFER_SIZE=2000) of about 2,440: every rank's has wrapped.

NCCL enqueues a step's collectives without waiting for them; a rank waits for its step's
collectives at the end of the step (``loss.item()``). A collective completes on a rank once
every member has enqueued it with the same shape and each member's earlier collectives
have completed (one stream a rank).

Scenarios (the answer the analysis should give is in ``expected.json`` beside ``fr/``):

- ``healthy``: every rank finishes; a final ``barrier()`` in the default group, taken at
  exit: the groups end at different sequence numbers (TP 4 a step, DP 2, default 1 every
  10 steps, plus the barrier) and the barrier is still pending (started, not yet seen
  completed) in the dumps of the last ranks to arrive. Not a failure.
- ``straggler``: one rank stops before its step's first collective (a data loader that never
  returns); everyone else enqueues that step and waits.
- ``two-faulted``: two ranks in different TP and DP groups fail in the same step: one raises
  between its forward and backward collectives (it dumps), one is SIGKILLed (no dump).
- ``extra-collective``: one rank all_reduces its loss in its TP group after its backward
  (the others do not): its TP group's next collective pairs a [1] float with the others'
  activations.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TP = 8
STEPS = 400
BUFFER = 2000
PREFIX = "nccl_trace_rank_"
SCENARIOS = ("healthy", "straggler", "two-faulted", "extra-collective")
T0 = 1_796_199_869_000_000_000  # ns, a day in Dec 2026
STEP_NS = 850_000_000
TIMEOUT_MS = 600_000
VERSION = "2.10"  # torch 2.13's FlightRecorder version_val

# -- the program every rank runs --------------------------------------------------------------

_LIB = "/usr/local/lib/python3.12/dist-packages/torch"
_MEG = "/workspace/Megatron-LM/megatron"


def _frame(name: str, filename: str, line: int) -> dict:
    return {"name": name, "filename": filename, "line": line}


_TOP = [
    _frame("forward_backward_no_pipelining", f"{_MEG}/core/pipeline_parallel/schedules.py", 479),
    _frame("train_step", f"{_MEG}/training/training.py", 733),
    _frame("train", f"{_MEG}/training/training.py", 1220),
    _frame("pretrain", f"{_MEG}/training/training.py", 351),
    _frame("<module>", "/workspace/Megatron-LM/pretrain_gpt.py", 243),
]
_AR = [_frame("all_reduce", f"{_LIB}/distributed/distributed_c10d.py", 3245),
       _frame("wrapper", f"{_LIB}/distributed/c10d_logger.py", 83)]


def _tp_frames(fn: str, line: int, caller: str, cline: int) -> list[dict]:
    return _AR + [
        _frame("_reduce", f"{_MEG}/core/tensor_parallel/mappings.py", 39),
        _frame(fn, f"{_MEG}/core/tensor_parallel/mappings.py", line),
        _frame("apply", f"{_LIB}/autograd/function.py", 575),
        _frame(caller, f"{_MEG}/core/tensor_parallel/layers.py", cline),
        _frame("_call_impl", f"{_LIB}/nn/modules/module.py", 1762),
    ] + _TOP


@dataclass(frozen=True)
class OpKind:
    group: str  # tp | dp | world
    name: str  # profiling name without the backend
    in_sizes: tuple
    out_sizes: tuple
    dtype: str
    frames: tuple


_ACT = (4, 2048, 4096)
_SHARD = 23_068_672  # gradient bucket / DP size is set per job in ``_ops``
OPS_TP = [
    OpKind("tp", "all_reduce", (_ACT,), (_ACT,), "BFloat16", tuple(_tp_frames("forward", 216, "forward", 1001))),
    OpKind("tp", "all_reduce", (_ACT,), (_ACT,), "BFloat16", tuple(_tp_frames("forward", 216, "forward", 1003))),
    OpKind("tp", "all_reduce", (_ACT,), (_ACT,), "BFloat16", tuple(_tp_frames("backward", 230, "backward", 512))),
    OpKind("tp", "all_reduce", (_ACT,), (_ACT,), "BFloat16", tuple(_tp_frames("backward", 230, "backward", 514))),
]
_DP_TAIL = [_frame("start_grad_sync", f"{_MEG}/core/distributed/param_and_grad_buffer.py", 422),
            _frame("finish_grad_sync", f"{_MEG}/core/distributed/distributed_data_parallel.py", 371)] + _TOP
LOSS = OpKind("world", "all_reduce", ((1,),), ((1,),), "Float", tuple(_AR + [
    _frame("average_losses_across_data_parallel_group", f"{_MEG}/training/utils.py", 208)] + _TOP))
BARRIER = OpKind("world", "all_reduce_barrier", ((1,),), ((1,),), "Float", tuple([
    _frame("barrier", f"{_LIB}/distributed/distributed_c10d.py", 4811),
    _frame("wrapper", f"{_LIB}/distributed/c10d_logger.py", 83),
    _frame("main", "/workspace/Megatron-LM/pretrain_gpt.py", 246),
    _frame("<module>", "/workspace/Megatron-LM/pretrain_gpt.py", 249)]))
EXTRA = OpKind("tp", "all_reduce", ((1,),), ((1,),), "Float", tuple(_AR + [
    _frame("log_tp_loss", f"{_MEG}/training/training.py", 741)] + _TOP))


def _dp_ops(dp: int) -> list[OpKind]:
    full = (_SHARD * dp // 8,)
    shard = (_SHARD // 8,)
    return [
        OpKind("dp", "_reduce_scatter_base", (full,), (shard,), "BFloat16", tuple(
            [_frame("reduce_scatter_tensor", f"{_LIB}/distributed/distributed_c10d.py", 4433)] + _AR[1:] + _DP_TAIL)),
        OpKind("dp", "_all_gather_base", (shard,), (full,), "BFloat16", tuple(
            [_frame("all_gather_into_tensor", f"{_LIB}/distributed/distributed_c10d.py", 3840)] + _AR[1:]
            + [_frame("start_param_sync", f"{_MEG}/core/distributed/param_and_grad_buffer.py", 380)] + _TOP)),
    ]


def step_ops(step: int, dp: int) -> list[OpKind]:
    ops = OPS_TP + _dp_ops(dp)
    if step % 10 == 9:
        ops = ops + [LOSS]
    return ops


# -- a job and its groups ----------------------------------------------------------------------


@dataclass
class Job:
    n: int

    @property
    def dp(self) -> int:
        return self.n // TP

    def tp_index(self, r: int) -> int:
        return r // TP

    def dp_index(self, r: int) -> int:
        return r % TP

    def group(self, r: int, kind: str) -> tuple[str, str, list[int], int]:
        """(name, desc, members, local pg_id) of rank r's group of this kind."""
        if kind == "world":
            return "0", "default_pg", list(range(self.n)), 0
        if kind == "tp":
            t = self.tp_index(r)
            return str(1 + t), f"tp{t}", list(range(t * TP, t * TP + TP)), 1
        d = self.dp_index(r)
        return str(1 + self.dp + d), f"dp{d}", list(range(d, self.n, TP)), 2

    def key(self, r: int, kind: str) -> str:
        return self.group(r, kind)[0]


# -- what each rank did ------------------------------------------------------------------------


@dataclass
class Issued:
    kind: OpKind
    step: int
    seq: int  # collective_seq_id in its group
    state: str = "scheduled"  # scheduled | started | completed


@dataclass
class Fault:
    stop_step: int = -1  # the step in which the rank stops (-1: never)
    stop_before: int = 0  # index of the first op of that step it does not issue
    extra_after: int | None = None  # index after which it issues EXTRA (once, in stop_step)
    no_dump: bool = False


@dataclass
class Plan:
    job: Job
    scenario: str
    faults: dict[int, Fault] = field(default_factory=dict)
    fail_step: int = STEPS
    steps: int = STEPS
    pending_barrier: list[int] = field(default_factory=list)  # healthy: barrier not seen completed
    expected: dict = field(default_factory=dict)


def plan(scenario: str, n: int, steps: int = STEPS) -> Plan:
    job = Job(n)
    s = steps - 25
    p = Plan(job, scenario, fail_step=s, steps=steps)
    if scenario == "healthy":
        p.fail_step = steps
        p.pending_barrier = [n // 3 + 1, n // 2 + 6, n - 3]  # the last to arrive
        p.expected = {"verdict": "consistent", "culprits": [], "missing": []}
    elif scenario == "straggler":
        r = n // 2 + 3
        p.faults[r] = Fault(stop_step=s, stop_before=0)
        p.expected = {"verdict": "hang", "culprits": [r], "missing": []}
    elif scenario == "two-faulted":
        a, b = n // 4 + 1, 3 * n // 4 + 6
        p.faults[a] = Fault(stop_step=s, stop_before=2)  # raises after its forward
        p.faults[b] = Fault(stop_step=s, stop_before=0, no_dump=True)  # SIGKILL, no dump
        p.expected = {"verdict": "hang", "culprits": [a, b], "missing": [b]}
    elif scenario == "extra-collective":
        x = 5 * n // 8 + 2
        p.faults[x] = Fault(extra_after=3, stop_step=s)
        p.faults[x].stop_before = 10**9  # it does not stop; it issues one more
        p.expected = {"verdict": "mismatch", "culprits": [x], "missing": []}
    else:
        raise SystemExit(f"unknown scenario {scenario}")
    return p


def simulate(p: Plan) -> dict[int, list[Issued]]:
    """The collectives of every rank from the failing step on (earlier steps all completed)."""
    job = p.job
    n = job.n
    seq0 = _seqs_before(p.fail_step, job.dp)
    seqs = {r: dict(seq0) for r in range(n)}
    issued: dict[int, list[Issued]] = {r: [] for r in range(n)}
    step_of = dict.fromkeys(range(n), p.fail_step)  # the step each rank is in
    live = set(range(n))
    if p.fail_step >= p.steps:
        return issued
    for step in range(p.fail_step, p.fail_step + 4):  # no job gets further than a few steps
        entering = [r for r in live if step_of[r] == step]
        if not entering:
            break
        start = {r: len(issued[r]) for r in entering}
        for r in entering:
            f = p.faults.get(r)
            for i, k in enumerate(step_ops(step, job.dp)):
                if f and step == f.stop_step and i >= f.stop_before:
                    break
                seqs[r][k.group] += 1
                issued[r].append(Issued(k, step, seqs[r][k.group]))
                if f and step == f.stop_step and f.extra_after == i:
                    seqs[r]["tp"] += 1
                    issued[r].append(Issued(EXTRA, step, seqs[r]["tp"]))
        _complete(job, issued)
        for r in entering:
            f = p.faults.get(r)
            mine = issued[r][start[r]:]
            stopped = f is not None and step == f.stop_step and f.stop_before < len(step_ops(step, job.dp))
            if not stopped and all(x.state == "completed" for x in mine):
                step_of[r] = step + 1
    return issued


def _seqs_before(step: int, dp: int) -> dict[str, int]:
    c = {"tp": 0, "dp": 0, "world": 0}
    for s in range(step):
        for k in step_ops(s, dp):
            c[k.group] += 1
    return c


def _complete(job: Job, issued: dict[int, list[Issued]]) -> None:
    """Mark what completes: every member enqueued the same shape, and on every member all
    earlier collectives completed (one stream a rank). Repeated until nothing changes."""
    index: dict[tuple[str, int], dict[int, int]] = {}
    for r, ops in issued.items():
        for i, x in enumerate(ops):
            index.setdefault((job.key(r, x.kind.group), x.seq), {})[r] = i
    members = {}
    changed = True
    while changed:
        changed = False
        for (g, seq), at in index.items():
            any_r = next(iter(at))
            kind = issued[any_r][at[any_r]].kind.group
            if g not in members:
                members[g] = job.group(any_r, kind)[2]
            if issued[any_r][at[any_r]].state == "completed":
                continue
            ok = len(at) == len(members[g])
            shapes = {(issued[r][i].kind.name, issued[r][i].kind.in_sizes, issued[r][i].kind.dtype) for r, i in at.items()}
            ok = ok and len(shapes) == 1 and all(i == 0 or issued[r][i - 1].state == "completed" for r, i in at.items())
            if ok:
                for r, i in at.items():
                    issued[r][i].state = "completed"
                changed = True
    for ops in issued.values():
        for i, x in enumerate(ops):
            if x.state != "completed" and (i == 0 or ops[i - 1].state == "completed"):
                x.state = "started"  # its kernel runs, waiting for the peers


# -- writing the dumps -------------------------------------------------------------------------


class _Strings(dict):
    """One object per distinct string: the pickler's memo then shares them, as torch's does."""

    def __missing__(self, key: str) -> str:
        self[key] = key
        return key


def _entry(job: Job, r: int, rid: int, x: Issued, t: int, tid: str, S: _Strings, healthy_done: bool = True) -> dict:
    name, desc, _, pg_id = job.group(r, x.kind.group)
    k = x.kind
    e = {
        "frames": list(k.frames),
        "record_id": rid,
        "pg_id": pg_id,
        "process_group": (S[name], S[desc]),
        "thread_name": S["python"],
        "thread_id": tid,
        "collective_seq_id": x.seq,
        "p2p_seq_id": 0,
        "op_id": x.seq,
        "profiling_name": S["nccl:" + k.name],
        "time_created_ns": t,
        "input_sizes": [list(s) for s in k.in_sizes],
        "input_dtypes": [S[k.dtype]] * len(k.in_sizes),
        "output_sizes": [list(s) for s in k.out_sizes],
        "output_dtypes": [S[k.dtype]] * len(k.out_sizes),
        "state": S[x.state],
        "time_discovered_started_ns": t + 40_000 if x.state != "scheduled" else None,
        "time_discovered_completed_ns": t + 9_000_000 if x.state == "completed" else None,
        "retired": x.state == "completed",
        "timeout_ms": TIMEOUT_MS,
        "is_p2p": False,
    }
    return e


def rank_dump(p: Plan, r: int, tail: list[Issued]) -> dict:
    job = p.job
    S = _Strings()
    tid = str(139_872_412_345_000 + r * 4096)
    jitter = (r * 7919) % 3_000_000
    ops: list[Issued] = []
    seqs = {"tp": 0, "dp": 0, "world": 0}
    last_steps = p.fail_step
    for step in range(last_steps):
        for k in step_ops(step, job.dp):
            seqs[k.group] += 1
            ops.append(Issued(k, step, seqs[k.group], "completed"))
    ops += tail
    if p.scenario == "healthy":
        seqs["world"] += 1
        state = "started" if r in p.pending_barrier else "completed"
        ops.append(Issued(BARRIER, last_steps, seqs["world"], state))
    first = max(0, len(ops) - BUFFER)
    entries = []
    per_step: dict[int, int] = {}
    for rid in range(first, len(ops)):
        x = ops[rid]
        i = per_step[x.step] = per_step.get(x.step, -1) + 1
        t = T0 + x.step * STEP_NS + i * 41_000_000 + jitter
        if x.kind is BARRIER and r in p.pending_barrier:
            t += 2_000_000_000  # the last to arrive
        entries.append(_entry(job, r, rid, x, t, tid, S))
    status = {}
    for kind in ("world", "tp", "dp"):
        mine = [x for x in ops if x.kind.group == kind]
        last = lambda states: max((x.seq for x in mine if x.state in states), default=-1)  # noqa: E731
        status[str(job.group(r, kind)[3])] = {
            "last_enqueued_collective": max((x.seq for x in mine), default=-1),
            "last_started_collective": last(("started", "completed")),
            "last_completed_collective": last(("completed",)),
        }
    cfg = {}
    for kind in ("world", "tp", "dp"):
        name, desc, members, _ = job.group(r, kind)
        cfg[name] = {"name": name, "desc": desc, "ranks": "[" + ", ".join(map(str, members)) + "]"}
    return {
        "version": VERSION,
        "pg_config": cfg,
        "comm_lib_version": "2.27.5",
        "pg_status": status,
        "entries": entries,
    }


def write_set(out: Path, n: int, scenario: str, steps: int = STEPS) -> dict:
    """Write ``out/fr/nccl_trace_rank_<r>`` for every rank that dumps and ``out/expected.json``."""
    if n % TP or n < 2 * TP:
        raise SystemExit("ranks must be a multiple of 8, at least 16")
    p = plan(scenario, n, steps)
    tails = simulate(p)
    fr = out / "fr"
    fr.mkdir(parents=True, exist_ok=True)
    for r in range(n):
        f = p.faults.get(r)
        if f and f.no_dump:
            continue
        data = pickle.dumps(rank_dump(p, r, tails[r]), protocol=2)
        (fr / f"{PREFIX}{r}").write_bytes(data)
    expected = dict(p.expected, ranks=n, scenario=scenario)
    (out / "expected.json").write_text(json.dumps(expected) + "\n")
    return expected


# -- the benchmark -----------------------------------------------------------------------------


@dataclass
class Measure:
    wall: float
    rss_kib: int
    rc: int
    out: str
    err: str
    timed_out: bool = False


def measure(cmd: list[str], timeout: float) -> Measure:
    """Wall time and peak RSS of one child (``ru_maxrss`` of the reaped child, via wait4)."""
    t = time.perf_counter()
    with tempfile.TemporaryFile() as so, tempfile.TemporaryFile() as se:
        proc = subprocess.Popen(cmd, stdout=so, stderr=se, cwd=ROOT)
        timed_out = False
        deadline = t + timeout
        while True:
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                pid, status, ru = os.wait4(proc.pid, 0)
                timed_out = True
                break
            time.sleep(0.01)
        wall = time.perf_counter() - t
        proc.returncode = os.waitstatus_to_exitcode(status)
        so.seek(0)
        se.seek(0)
        return Measure(wall, ru.ru_maxrss, proc.returncode, so.read().decode(errors="replace"), se.read().decode(errors="replace"), timed_out)


def rankdoctor(fr: Path, fmt: str) -> list[str]:
    return [sys.executable, "-m", "rankdoctor.cli", "fr", str(fr), "--format", fmt]


def torchfrtrace(fr: Path) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.flight_recorder.fr_trace", str(fr), "--prefix", PREFIX, "--allow-incomplete-ranks"]


def judge_rankdoctor(js: str, expected: dict) -> str:
    try:
        d = json.loads(js)
    except json.JSONDecodeError:
        return "no JSON"
    culprits = sorted({c for f in d["findings"] for c in f["culprit_ranks"]})
    ok = d["verdict"] == expected["verdict"] and culprits == expected["culprits"] and d["ranks_missing"] == expected["missing"]
    said = d["verdict"] + (f", culprit {', '.join(map(str, culprits))}" if culprits else "")
    return ("right: " if ok else "WRONG: ") + said


def judge_torchfrtrace(m: Measure, expected: dict) -> str:
    text = m.out + m.err
    if m.timed_out:
        return "did not finish"
    if "Traceback (most recent call last)" in text:
        last = [ln for ln in text.strip().splitlines() if ln.strip()][-1].strip()
        return f"crashed ({last[:50]})"
    found = bool(re.search(r"has errors|Not all ranks joining|Culprit rank|mismatch", text))
    culprits = sorted({int(x) for x in re.findall(r"Culprit rank (\d+)", text)})
    if not culprits:
        for grp in re.findall(r"missing ranks: \{([\d, ]+)\}", text):
            culprits += [int(x) for x in grp.split(",") if x.strip()]
        culprits = sorted(set(culprits))
    want_found = expected["verdict"] != "consistent"
    shown = ", ".join(map(str, culprits[:6])) + (f", … ({len(culprits)})" if len(culprits) > 6 else "")
    said = ("a problem" if found else "no problem") + (f", ranks {shown}" if culprits else "")
    ok = found == want_found and (not want_found or culprits == expected["culprits"])
    return ("right: " if ok else "wrong: ") + said


def bench(ranks: list[int], data: Path, out: Path | None, tf_timeout: float) -> str:
    rows = []
    for n in ranks:
        for sc in SCENARIOS:
            d = data / f"{sc}-{n}"
            if not (d / "expected.json").exists():
                shutil.rmtree(d, ignore_errors=True)
                t = time.perf_counter()
                write_set(d, n, sc)
                print(f"generated {d} in {time.perf_counter() - t:.1f} s", file=sys.stderr)
            expected = json.loads((d / "expected.json").read_text())
            size = sum(f.stat().st_size for f in (d / "fr").iterdir())
            rd = measure(rankdoctor(d / "fr", "json"), 600)
            txt = measure(rankdoctor(d / "fr", "text"), 600)
            tf = measure(torchfrtrace(d / "fr"), tf_timeout)
            lines = len(txt.out.splitlines())
            rows.append((n, sc, size, rd, txt, lines, judge_rankdoctor(rd.out, expected), tf, judge_torchfrtrace(tf, expected)))
            print(f"{n} {sc}: rankdoctor {rd.wall:.2f} s {rd.rss_kib // 1024} MiB, {lines} lines; torchfrtrace {tf.wall:.2f} s", file=sys.stderr)
    return _table(rows, tf_timeout)


def _table(rows: list, tf_timeout: float) -> str:
    out = [
        "| ranks | scenario | dumps (MB) | rankdoctor fr --format json: wall, peak RSS | exit | text report: wall, lines | findings right? | torchfrtrace: wall, peak RSS | exit | torchfrtrace's answer |",
        "|---:|---|---:|---:|---:|---:|---|---:|---:|---|",
    ]
    for n, sc, size, rd, txt, lines, judged, tf, tjudged in rows:
        tfw = f"> {tf_timeout:.0f} s (stopped)" if tf.timed_out else f"{tf.wall:.2f} s, {tf.rss_kib // 1024} MiB"
        out.append(
            f"| {n} | {sc} | {size / 1e6:.0f} | {rd.wall:.2f} s, {rd.rss_kib // 1024} MiB | {rd.rc} | {txt.wall:.2f} s, {lines} | {judged} "
            f"| {tfw} | {'-' if tf.timed_out else tf.rc} | {tjudged} |"
        )
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen", help="write one dump set")
    g.add_argument("--ranks", type=int, required=True)
    g.add_argument("--scenario", choices=SCENARIOS, required=True)
    g.add_argument("--out", type=Path, required=True)
    b = sub.add_parser("bench", help="generate (once) and time every set, write the table")
    b.add_argument("--ranks", type=int, nargs="+", default=[64, 256, 1024])
    b.add_argument("--data", type=Path, default=ROOT / "bench" / "data" / "fr_scale")
    b.add_argument("--torchfrtrace-timeout", type=float, default=300)
    b.add_argument("--out", type=Path, default=None, help="write the table here (default: stdout)")
    a = ap.parse_args()
    if a.cmd == "gen":
        print(json.dumps(write_set(a.out, a.ranks, a.scenario)))
        return
    table = bench(a.ranks, a.data, a.out, a.torchfrtrace_timeout)
    if a.out:
        a.out.write_text(table)
    else:
        print(table)


if __name__ == "__main__":
    main()
