"""fr-formats: a healthy 2-rank run that leaves Flight Recorder dumps in both formats.

Nothing fails. Each rank runs 12 all_reduces with a ring buffer of only 4 entries
(TORCH_FR_BUFFER_SIZE=4, so the buffer wraps), then writes its trace twice: the pickle of
``_dump_fr_trace`` into fr/ and the JSON of ``_dump_fr_trace_json`` into fr-json/. These
are the real formats rankdoctor's Flight Recorder reader must accept.
"""

import os

import torch
import torch.distributed as dist

from _common import dump_fr, log, setup


def main():
    rank, world = setup()
    t = torch.ones(4)
    for step in range(12):
        dist.all_reduce(t)
        t /= world
    log.info("rank %d done: %s", rank, t.tolist())
    dump_fr("exit")
    from torch._C._distributed_c10d import _dump_fr_trace_json

    target = os.path.dirname(os.environ["TORCH_FR_DUMP_TEMP_FILE"]) + "-json"
    os.makedirs(target, exist_ok=True)
    with open(os.path.join(target, f"fr_json_rank_{rank}.json"), "wb") as f:
        f.write(_dump_fr_trace_json())
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
