"""Generate the benchmark corpus: per-rank training logs of a run that failed.

Deterministic (seeded per file) and fast (one process per core, lines formatted in bulk).
Templates are real lines from the bundled scenarios: the healthy lab runs
(tests/scenarios/lab/healthy-ddp-*/console.log) for start-up chatter, and real failure
lines (tests/scenarios/real/comms-11-*/log.txt, tests/scenarios/lab/exception-rank2) for
the end of the run. The training loop itself prints what real runs print: tqdm bars
glued by carriage returns (with the Unicode block characters), step/loss lines,
DeepSpeed ``log_dist`` lines, Megatron iteration lines and NCCL INFO lines.

    python bench/gen_corpus.py OUT_DIR --ranks 64 --total-mb 1024 [--noisy 0.01] [--single]
    python bench/gen_corpus.py --small OUT_DIR    # one-line.log and one-mb.log
"""

from __future__ import annotations

import argparse
import os
import random
import re
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCEN = ROOT / "tests" / "scenarios"
_PREFIX = re.compile(r"^(?:\[default\d+\]:)?(?:\[rank\d+\]:)?")
_GLOG_TIME = re.compile(r"^\[?[IWE]\d{4} \d\d:\d\d:\d\d\.\d+")
BLOCKS = " ▏▎▍▌▋▊▉█"


def _healthy_templates() -> list[str]:
    """Start-up lines of the healthy lab runs, rank prefixes removed."""
    out: list[str] = []
    for name in ("healthy-ddp-4r", "healthy-ddp-2r"):
        for line in (SCEN / "lab" / name / "console.log").read_text(encoding="utf-8", errors="replace").splitlines():
            line = _PREFIX.sub("", line).replace("2026-11-30", "2025-11-30")
            if line.strip():
                out.append(line)
    return out


def _failure_lines(rank: int, culprit: int, host: str) -> list[str]:
    """The end of the run, from real logs: the culprit's OOM traceback, the peers' timeouts."""
    real = (SCEN / "real" / "comms-11-peer-crash-funasr-rank2-oom" / "log.txt").read_text(encoding="utf-8").splitlines()
    oom, closed, watchdog = real[0], real[1], real[5]
    if rank == culprit:
        tb = (SCEN / "lab" / "exception-rank2" / "console.log").read_text(encoding="utf-8").splitlines()
        frames = [_PREFIX.sub("", ln) for ln in tb if ln.startswith("[default2]:[rank2]:")][:14]
        frames = [f for f in frames if "IndexError" not in f]
        return [f"[rank{rank}]:{f}" for f in frames] + [oom.replace("[rank2]", f"[rank{rank}]")]
    lines = []
    if rank // 8 == culprit // 8:  # same node: NCCL proxy threads see the peer go
        lines.append(re.sub(r"^\S+?:", f"{host}:", closed).replace("localRank 2", f"localRank {culprit % 8}"))
    lines.append(watchdog.replace("[rank5]", f"[rank{rank}]").replace("[Rank 5]", f"[Rank {rank}]"))
    return lines


def _nccl_init(rank: int, world: int, host: str, pid: int) -> list[str]:
    d = rank % 8
    out = [f"{host}:{pid}:{pid} [{d}] NCCL INFO Bootstrap : Using eth0:10.0.{rank // 8}.{d + 10}<0>",
           f"{host}:{pid}:{pid} [{d}] NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file",
           f"{host}:{pid}:{pid} [{d}] NCCL INFO cudaDriverVersion 12040",
           "NCCL version 2.21.5+cuda12.4" if rank == 0 else f"{host}:{pid}:{pid} [{d}] NCCL INFO Using network IB"]
    for ch in range(32):
        out.append(f"{host}:{pid}:{pid + 57} [{d}] NCCL INFO Channel {ch:02d}/0 : {rank}[{d}] -> {(rank + 1) % world}[{(d + 1) % 8}] via P2P/IPC/read")
    out.append(f"{host}:{pid}:{pid + 57} [{d}] NCCL INFO Connected all rings")
    out.append(f"{host}:{pid}:{pid + 57} [{d}] NCCL INFO ncclCommInitRank comm 0x5581f0a0 rank {rank} nranks {world} cudaDev {d} nvmlDev {d} busId {d + 1}0000 commId 0x9d2f6b1c5e0a7f3e - Init COMPLETE")
    return out


def _tqdm(step: int, total: int, secs: float, rate: float) -> str:
    frac = step / total
    filled = frac * 10
    full = int(filled)
    part = BLOCKS[int((filled - full) * 8)] if full < 10 else ""
    bar = ("█" * full + part).ljust(10)
    el = int(secs)
    rem = int((total - step) / rate) if rate else 0
    return (f"\rEpoch {step * 3 // total}: {int(frac * 100):3d}%|{bar}| {step}/{total} "
            f"[{el // 60:02d}:{el % 60:02d}<{rem // 3600}:{rem // 60 % 60:02d}:{rem % 60:02d}, {rate:.2f}it/s, loss={2.5 - frac:.3f}]")


def gen_rank(args: tuple) -> int:
    path, rank, world, target, noisy, seed, culprit, prefix = args
    rnd = random.Random(seed * 1000003 + rank)
    host = f"gpu-node-{rank // 8:02d}"
    pid = 20000 + rank * 37
    t0 = 1764479249.0 + rnd.random()  # 2025-11-30 05:07:29 UTC
    pre = f"[rank{rank}]:" if prefix else ""
    healthy = _healthy_templates()
    noise = [
        "[{ts},{ms:03d}] [INFO] [stage3.py:2323:_overflow_clean_up] [deepscale] OVERFLOW! Rank {rank} Skipping step. Attempted loss scale: 16777216.0, reducing to 8388608.0",
        "{host}:{pid}:{tid} [{d}] NCCL INFO [Service thread] Connection closed by localRank {d}",
    ]
    out: list[str] = []
    written = 0
    with open(path, "w", encoding="utf-8", newline="") as fh:
        head = [pre + h for h in healthy[: 60 + rank % 40]] + [pre + ln for ln in _nccl_init(rank, world, host, pid)]
        text = "\n".join(head) + "\n"
        fh.write(text)
        written += len(text.encode("utf-8"))
        step = 0
        total = 100000
        t = t0
        tail = _failure_lines(rank, culprit, host)
        tail_bytes = sum(len(ln.encode()) + len(pre) + 1 for ln in tail)
        while written < target - tail_bytes - 4096:
            out.clear()
            for _ in range(200):
                step += 1
                t += 0.35 + rnd.random() * 0.05
                tm = time.gmtime(t)
                ts = f"{tm.tm_year}-{tm.tm_mon:02d}-{tm.tm_mday:02d} {tm.tm_hour:02d}:{tm.tm_min:02d}:{tm.tm_sec:02d}"
                ms = int((t % 1) * 1000)
                rate = 2.7 + rnd.random() * 0.2
                loss = 2.5 * (0.9999 ** step) + rnd.random() * 0.05
                # tqdm updates glued by \r, a newline only when logging prints
                bar = _tqdm(step % total, total, t - t0, rate)
                r = rnd.random()
                if noisy and r < noisy * 2.3:  # ~2.3 lines per step: about `noisy` of all lines hit
                    line = noise[step % 2].format(ts=ts, ms=ms, rank=rank, host=host, pid=pid, tid=pid + 3, d=rank % 8)
                    out.append(f"{pre}{line}")
                if step % 5:
                    out.append(f"{pre}{bar}{bar}")
                    out.append(f"{pre}{ts},{ms:03d} INFO train: step {step} loss {loss:.4f} lr {3e-4 * min(1, step / 2000):.3e} grad_norm {0.8 + rnd.random():.3f} tokens/s {int(118000 + rnd.random() * 9000)}")
                else:
                    out.append(f"{pre}[{ts},{ms:03d}] [INFO] [logging.py:96:log_dist] [Rank 0] step={step}, skipped=0, lr=[{3e-4:.6e}], mom=[(0.9, 0.95)]")
                    out.append(f"{pre}[{ts},{ms:03d}] [INFO] [timer.py:264:stop] epoch=0/micro_step={step * 4}/global_step={step}, RunningAvgSamplesPerSec={rate * 32:.6f}, CurrSamplesPerSec={rate * 32 + rnd.random():.6f}, MemAllocated=21.37GB, MaxMemAllocated=38.12GB")
                    out.append(f"{pre} iteration {step:8d}/  {total} | consumed samples: {step * 128:12d} | elapsed time per iteration (ms): {1000 / rate:.1f} | learning rate: {3e-4:.3E} | global batch size:   128 | lm loss: {loss:.6E} | loss scale: 65536.0 | grad norm: {0.8 + rnd.random():.3f} | number of skipped iterations:   0 | number of nan iterations:   0 |")
                if step % 50 == 0:
                    out.append(f"{pre}{host}:{pid}:{pid + 61} [{rank % 8}] NCCL INFO comm 0x5581f0a0 rank {rank} nRanks {world} nNodes {max(1, world // 8)} localRanks 8 localRank {rank % 8} MNNVL 0")
                if step % 97 == 0:
                    out.append(pre + rnd.choice(healthy))
            text = "\n".join(out) + "\n"
            fh.write(text)
            written += len(text.encode("utf-8"))
        text = "\n".join(pre + ln for ln in tail) + "\n"
        fh.write(text)
        written += len(text.encode("utf-8"))
    return written


def gen_corpus(out: Path, ranks: int, total_mb: float, noisy: float = 0.0, seed: int = 6, single: bool = False) -> int:
    out.mkdir(parents=True, exist_ok=True)
    per = int(total_mb * (1 << 20) / ranks)
    culprit = (ranks * 37 // 64) % ranks
    jobs = [(out / f"rank_{r:02d}.log", r, ranks, per, noisy, seed, culprit, single) for r in range(ranks)]
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
        sizes = list(ex.map(gen_rank, jobs))
    if single:  # one combined console log: the per-rank parts, [rankN]: prefixed, one after another
        combined = out.with_suffix(".log")
        with open(combined, "wb") as dst:
            for j in jobs:
                with open(j[0], "rb") as src:
                    while block := src.read(8 << 20):
                        dst.write(block)
                os.unlink(j[0])
        out.rmdir()
    return sum(sizes)


def gen_small(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "one-line.log").write_text("[rank0]:2025-11-30 05:07:29,136 INFO train: step 1 loss 2.5000\n", encoding="utf-8")
    tmp = out / "_one-mb"
    gen_corpus(tmp, 1, 1.0)
    os.replace(tmp / "rank_00.log", out / "one-mb.log")
    tmp.rmdir()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--total-mb", type=float, default=1024)
    ap.add_argument("--noisy", type=float, default=0.0, help="fraction of lines that hit a signature")
    ap.add_argument("--seed", type=int, default=6)
    ap.add_argument("--single", action="store_true", help="one combined file OUT.log with [rankN]: prefixes")
    ap.add_argument("--small", action="store_true", help="write one-line.log and one-mb.log into OUT")
    a = ap.parse_args()
    if a.small:
        gen_small(a.out)
        return
    n = gen_corpus(a.out, a.ranks, a.total_mb, a.noisy, a.seed, a.single)
    print(f"{a.out}{'.log' if a.single else '/'}: {n / (1 << 20):.0f} MiB, {a.ranks} ranks")


if __name__ == "__main__":
    main()
