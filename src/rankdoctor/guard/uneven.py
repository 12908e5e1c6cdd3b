"""``rankdoctor check --uneven``: make each rank's batches differ the way real data does.

A job whose ranks always see full, equal batches never takes the partial-batch branch or the
shape-driven recompile that production data reaches at the end of an epoch. With RANKDOCTOR_GUARD_UNEVEN=1 every batch a
torch DataLoader yields on rank r >= 1 loses r samples along dim 0 (at least one is kept) on
every third step (the steps s with s % 3 == r % 3), so ranks have partial batches at
different steps.
"""

from __future__ import annotations

import os

CUT_EVERY = 3


def _cut(batch, n: int):
    import torch

    if isinstance(batch, torch.Tensor):
        return batch[: max(1, batch.shape[0] - n)] if batch.dim() > 0 else batch
    if isinstance(batch, (list, tuple)):
        items = [_cut(b, n) for b in batch]
        return type(batch)(*items) if hasattr(batch, "_fields") else type(batch)(items)
    if isinstance(batch, dict):
        return {k: _cut(v, n) for k, v in batch.items()}
    return batch


def install() -> None:
    """Wrap DataLoader iteration on this rank (the wrapper calls it before the script runs)."""
    from torch.utils.data import DataLoader

    rank = int(os.environ.get("RANK", "0"))
    if rank == 0:
        return  # rank 0 keeps the job's own batches: the others differ from it
    original = DataLoader.__iter__

    def __iter__(self):
        for step, batch in enumerate(original(self)):
            yield _cut(batch, rank) if step % CUT_EVERY == rank % CUT_EVERY else batch

    DataLoader.__iter__ = __iter__
