"""Read this rank's own Flight Recorder record in process and turn it into descriptors.

The Flight Recorder (torch.distributed's FR, enabled by ``TORCH_FR_BUFFER_SIZE``) records every
collective at the process-group level - eager ``torch.distributed`` calls, DDP bucket
all-reduces, FSDP all-gathers / reduce-scatters and functional collectives from compiled graphs
alike - with the issuing thread's Python frames. That makes it the one place that sees them all;
wrapping the Python API would miss everything issued from C++. Torch offers no incremental read,
only a dump of the whole ring buffer (``_dump_fr_trace``), so the guard keeps the buffer small
and remembers the last ``record_id`` it folded.
"""

from __future__ import annotations

import os
import pickle
from dataclasses import dataclass

import torch

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep

# FR's dtype names (c10::ScalarType) -> the names users write.
_DTYPES = {
    "Float": "float32", "Double": "float64", "Half": "float16", "BFloat16": "bfloat16",
    "Long": "int64", "Int": "int32", "Short": "int16", "Char": "int8", "Byte": "uint8",
    "Bool": "bool", "ComplexFloat": "complex64", "ComplexDouble": "complex128",
}


@dataclass(frozen=True)
class Collective:
    """One collective as this rank issued it (one FR entry)."""

    record_id: int
    group: str  # the process group's name as FR records it ("0" = the default group)
    group_desc: str  # "default_pg", or the description given to new_group
    seq: int  # collective_seq_id inside the group (1-based)
    op: str  # "all_reduce", "allgather", ... (FR's profiling name without the backend)
    shapes: str  # "float32[4,32]" (several tensors: "float32[4], float32[8]")
    site: str  # first frame outside torch: "train.py:59"
    where: str  # "in a compiled graph", "DDP bucket", "FSDP", or ""
    created_ns: int

    def describe(self, sites: bool = True) -> str:
        text = f"{self.op}({self.shapes})"
        if sites:
            text += f" at {self.site}"
            if self.where:
                text += f" ({self.where})"
        return text


def _tensors(sizes, dtypes) -> str:
    parts = []
    for i, size in enumerate(sizes or []):
        dtype = dtypes[i] if i < len(dtypes or []) else "?"
        parts.append(f"{_DTYPES.get(dtype, dtype)}[{','.join(str(d) for d in size)}]")
    return ", ".join(parts)


def _site(frames) -> tuple[str, str]:
    """The user's call site (innermost frame outside torch) and how torch issued the op."""
    site = "?"
    for frame in frames or []:
        filename = frame.get("filename", "")
        if filename.startswith(_TORCH_DIR) or filename.startswith("<"):
            continue
        site = f"{os.path.basename(filename)}:{frame.get('line')}"
        break
    names = " ".join(f.get("filename", "") + ":" + f.get("name", "") for f in frames or [])
    if "/_dynamo/" in names or "/_inductor/" in names or "__compiled_fn" in names or "torch_dynamo_resume" in names:
        where = "in a compiled graph"
    elif "/distributed/fsdp/" in names:
        where = "FSDP"
    elif "/autograd/" in names and "_tensor.py:backward" in names:
        # A collective issued from inside backward() with no FSDP frames: DDP's reducer.
        where = "DDP bucket"
    else:
        where = ""
    return site, where


def read_own_record(after_record_id: int = -1) -> tuple[list[Collective], list[tuple[str, int, int]], int]:
    """This rank's FR entries newer than ``after_record_id`` (p2p ops left out).

    Also returns the collectives still in flight, old ones included, as (group, seq,
    created_ns), and the smallest record_id still in the buffer (to notice a wrapped ring).
    """
    from torch._C._distributed_c10d import _dump_fr_trace

    dump = pickle.loads(_dump_fr_trace(True, True, False))
    out, in_flight, oldest = [], [], None
    for entry in dump.get("entries", []):
        oldest = entry["record_id"] if oldest is None else min(oldest, entry["record_id"])
        if entry.get("is_p2p"):
            continue
        if not entry.get("retired", False):
            in_flight.append((str(entry.get("process_group", ("?",))[0]),
                              int(entry.get("collective_seq_id", 0)),
                              int(entry.get("time_created_ns") or 0)))
        if entry["record_id"] <= after_record_id:
            continue
        name, desc = entry.get("process_group", ("?", "?"))
        profiling = entry.get("profiling_name", "?")
        op = profiling.split(":", 1)[1] if ":" in profiling else profiling
        shapes = _tensors(entry.get("input_sizes"), entry.get("input_dtypes"))
        out_shapes = _tensors(entry.get("output_sizes"), entry.get("output_dtypes"))
        if out_shapes and out_shapes != shapes:
            shapes = f"{shapes} -> {out_shapes}"
        site, where = _site(entry.get("frames"))
        out.append(Collective(
            record_id=entry["record_id"], group=str(name), group_desc=str(desc),
            seq=int(entry.get("collective_seq_id", 0)), op=op, shapes=shapes, site=site,
            where=where, created_ns=int(entry.get("time_created_ns") or 0),
        ))
    return out, in_flight, (-1 if oldest is None else oldest)


def dump_bytes() -> bytes:
    """This rank's whole FR record, pickled, as torch writes it (``rankdoctor fr`` reads it)."""
    from torch._C._distributed_c10d import _dump_fr_trace

    return _dump_fr_trace()


def recorder_is_off() -> bool:
    """Collectives ran but none was recorded: torch created the recorder with no buffer."""
    from torch._C._distributed_c10d import _dump_fr_trace

    dump = pickle.loads(_dump_fr_trace(True, False, False))
    issued = any(int(s.get("last_enqueued_collective", -1)) > 0 for s in dump.get("pg_status", {}).values())
    return issued and not dump.get("entries")
