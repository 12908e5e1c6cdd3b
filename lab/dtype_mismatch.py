"""dtype-mismatch: ranks all_reduce tensors of different dtype but equal byte size.

Injected: rank 0 all-reduces a float32[8] accuracy counter while rank 1
(LAB_CULPRIT; the other ranks use float32) builds the same counter as
int32[8] (a ``torch.tensor([...])`` of ints vs floats).  Both are 32 bytes,
so gloo moves the bytes without complaint; each rank then sums the peer's
bytes reinterpreted as its own dtype.  The script prints what each rank got;
each rank dumps its Flight Recorder buffer at the end of the run.
"""

import torch
import torch.distributed as dist

from _common import dump_fr, lab_culprits, log, setup


def main():
    rank, world = setup()
    try:
        for step in range(3):
            if rank not in lab_culprits(1):
                correct = torch.tensor([3.0, 5.0, 7.0, 1.0, 0.0, 2.0, 4.0, 6.0])  # float32
            else:
                correct = torch.tensor([3, 5, 7, 1, 0, 2, 4, 6])[: 8].to(torch.int32)  # int32
            dist.all_reduce(correct)
            log.info("rank %d step %d dtype=%s reduced=%s total=%s", rank, step,
                     correct.dtype, correct.tolist(), correct.sum().item())
        dist.barrier()
        log.info("rank %d finished", rank)
        dump_fr("end of run")  # keep the FR record of the silent mismatch
    except BaseException:
        dump_fr("exception")
        raise
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
