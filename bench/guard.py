"""Step time with the collective guard off, on, and with TORCH_DISTRIBUTED_DEBUG=DETAIL.

    .venv/bin/python bench/guard.py                 # 4 ranks, 300 timed steps, 3 rounds
    .venv/bin/python bench/guard.py --rounds 1 --steps 100

Three jobs, each a real torchrun run on CPU/gloo: a DDP MLP ("ddp"), the same model with a
torch.compile'd forward ("compiled"), and the same model with one hand-written all_reduce per
gradient instead of DDP ("manual": TORCH_DISTRIBUTED_DEBUG=DETAIL crashes DDP's constructor
with SIGSEGV in torch 2.13 on CPU/gloo, so this is where DETAIL gets a number). For each round the configurations take turns (off,
guard, detail) so that a busy moment on a shared machine hits all of them. Each run times
``--steps`` optimizer steps after 20 warm-up steps, with a barrier-free loop, and reports the
median step time of rank 0. The table gives, per job and configuration, the median over
rounds of those medians and the overhead against "off" of the same round.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ("off", "guard", "detail")
JOBS = ("ddp", "compiled", "manual")
GUARD_CPU: dict[str, list[float]] = {}  # job -> the guard thread's CPU share on rank 0, per round


def worker(job: str, config: str, steps: int) -> None:
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("gloo")
    guard = None
    if config == "guard":
        import rankdoctor.guard

        guard = rankdoctor.guard.enable()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                                torch.nn.ReLU(), torch.nn.Linear(512, 10))
    if job != "manual":
        model = DDP(model)
    forward = torch.compile(model, backend="eager") if job == "compiled" else model
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(dist.get_rank())
    x, y = torch.randn(64, 256, generator=g), torch.randint(0, 10, (64,), generator=g)
    times = []
    cpu0 = wall0 = 0.0
    for i in range(20 + steps):
        if i == 20:
            cpu0, wall0 = (guard.cpu_seconds if guard else 0.0), time.perf_counter()
        t0 = time.perf_counter()
        loss = F.cross_entropy(forward(x), y)
        opt.zero_grad()
        loss.backward()
        if job == "manual":  # data parallel by hand: one all_reduce per gradient
            for p in model.parameters():
                dist.all_reduce(p.grad)
        opt.step()
        if i >= 20:
            times.append(time.perf_counter() - t0)
    # The guard's own cost, measured directly: its side thread's CPU time per second of the
    # timed steps (noise-free, unlike step times on a shared machine).
    share = (guard.cpu_seconds - cpu0) / (time.perf_counter() - wall0) if guard else 0.0
    if dist.get_rank() == 0:
        print("RESULT " + json.dumps({"median_ms": 1000 * statistics.median(times), "guard_cpu": share}), flush=True)
    dist.destroy_process_group()


def run(job: str, config: str, ranks: int, steps: int) -> float | str:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("TORCH_DISTRIBUTED_DEBUG", None)
    if config == "detail":
        env["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
    if config == "guard":
        env["TORCH_FR_BUFFER_SIZE"] = "256"  # what the guard sets when it starts first
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(ranks),
           "--rdzv-backend", "c10d", "--rdzv-endpoint", "localhost:0",
           __file__, "--worker", job, config, str(steps)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            result = json.loads(line[7:])
            if config == "guard":
                GUARD_CPU.setdefault(job, []).append(result["guard_cpu"])
            return result["median_ms"]
    codes = sorted({ln.split("exitcode")[1].split("(")[0].strip(" :") for ln in p.stderr.splitlines()
                    if "exitcode  :" in ln})
    return f"failed (exit {', '.join(codes) or p.returncode})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--worker", nargs=3, metavar=("JOB", "CONFIG", "STEPS"))
    args = ap.parse_args()
    if args.worker:
        worker(args.worker[0], args.worker[1], int(args.worker[2]))
        return
    results: dict[tuple[str, str], list] = {}
    for r in range(args.rounds):
        for job in JOBS:
            for config in CONFIGS:
                value = run(job, config, args.ranks, args.steps)
                results.setdefault((job, config), []).append(value)
                print(f"round {r + 1} {job:8s} {config:6s} {value if isinstance(value, str) else f'{value:.3f} ms'}",
                      file=sys.stderr, flush=True)
    print(f"| job | configuration | median step time (ms) | per-round medians (ms) | overhead vs off |")
    print("|---|---|---:|---|---:|")
    for job in JOBS:
        base = results[(job, "off")]
        for config in CONFIGS:
            vals = results[(job, config)]
            nums = [v for v in vals if not isinstance(v, str)]
            if not nums:
                print(f"| {job} | {config} | {vals[0]} | | |")
                continue
            rounds = ", ".join(f"{v:.3f}" if not isinstance(v, str) else v for v in vals)
            over = [v / b - 1 for v, b in zip(vals, base) if not isinstance(v, str) and not isinstance(b, str)]
            o = "-" if config == "off" or not over else f"{100 * statistics.median(over):+.1f} %"
            print(f"| {job} | {config} | {statistics.median(nums):.3f} | {rounds} | {o} |")
    print()
    print("| job | guard side thread CPU on rank 0, per second of training (per round) |")
    print("|---|---|")
    for job, shares in GUARD_CPU.items():
        print(f"| {job} | {', '.join(f'{100 * s:.2f} %' for s in shares)} |")


if __name__ == "__main__":
    main()
