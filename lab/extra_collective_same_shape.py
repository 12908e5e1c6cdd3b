"""extra-collective-same-shape: one rank issues one extra all_reduce whose
shape/dtype equal the other ranks' next all_reduce.

Injected: every step all-reduces a float32[16] gradient and a float32[16]
metrics vector.  At step 3 rank 1 (LAB_STEP, LAB_CULPRIT) calls its metrics hook
twice (the hook was registered twice), i.e. one extra float32[16] all_reduce.
Gloo pairs it with the others' next float32[16] collective: no error, silently
mixed-up values, everything shifted by one - and at the end rank 1 has one
collective left over that nobody joins, so it waits until the gloo timeout.
"""

import torch
import torch.distributed as dist

from _common import dump_fr, lab_culprits, lab_int, log, setup


def main():
    rank, world = setup()
    g = torch.Generator().manual_seed(10 + rank)
    w = torch.zeros(16)
    target = torch.linspace(-1, 1, 16)
    hooks = [lambda m: dist.all_reduce(m)]
    try:
        for step in range(8):
            x = torch.randn(16, generator=g)
            grad = 2 * (w - target) + 0.01 * x
            dist.all_reduce(grad)
            w -= 0.1 * grad / world
            metrics = (w - target).abs()
            if rank in lab_culprits(1) and step == lab_int("LAB_STEP", 3):
                hooks = hooks * 2  # bug: metrics hook registered twice on this rank
            for h in hooks:
                h(metrics)
            log.info("rank %d step %d err %.6f grad[0] %.6f", rank, step,
                     metrics.sum().item() / world, grad[0].item())
        log.info("rank %d finished", rank)
        dump_fr("exit")  # every rank leaves its collective history, not only the one that fails
    except BaseException:
        dump_fr("exception")
        raise
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
