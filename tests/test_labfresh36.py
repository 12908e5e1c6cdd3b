"""Learned from lab-fresh36 (tests/scenarios/lab-fresh36, measured before any change): when an
object collective sizes its receive buffer from the object sizes the ranks exchanged and the
allocation fails, the sizes were garbage - the ranks' object collectives did not line up (here one
rank passed broadcast_object_list two slots where rank 0 sent one) - and the host did not run out of
memory. The allocator's line is the same as for a real shortage; the code line under the last torch
frame tells them apart."""

from __future__ import annotations

import rankdoctor
from rankdoctor.kb.loader import load_kb
from rankdoctor.scan import iter_events, scan_text

from .conftest import SCENARIOS

RUN = SCENARIOS / "lab-fresh36" / "broadcast-object-len-w4-r2"

# rank 2's traceback in that run's console, verbatim (the allocation size differs run to run)
FRAME = (
    '[default2]:[rank2]:   File "/work/main/.venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", '
    'line 4039, in broadcast_object_list\n'
    "[default2]:[rank2]:     object_tensor = torch.empty(  # type: ignore[call-overload]\n"
    "[default2]:[rank2]:                     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
)
REFUSAL = ("[default2]:[rank2]: RuntimeError: [enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't "
           "allocate memory: you tried to allocate 94843780910039 bytes. Error code 12 (Cannot allocate memory)\n")


def entries_of(text: str) -> set[str]:
    return {e.entry for e in iter_events(scan_text(load_kb(), text)) if e.entry}


def test_the_buffer_sized_from_exchanged_sizes_is_an_object_collective_line():
    assert "object-collective-unpickle-failure" in entries_of(FRAME + REFUSAL)
    # the allocator's refusal alone stays the host's
    assert entries_of(REFUSAL) == {"cpu-allocator-cannot-allocate"}


def test_a_garbage_size_in_broadcast_object_list_is_a_desync_at_the_rank_that_got_it():
    d = rankdoctor.diagnose(str(RUN))
    top = d.diagnoses[0]
    assert top.klass == "collective-desync", [(x.entry, x.confidence) for x in d.diagnoses]
    assert top.entry == "object-collective-unpickle-failure"
    assert top.initiating_rank == 2
