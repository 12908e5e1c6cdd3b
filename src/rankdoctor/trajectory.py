"""Numbers a run prints as it trains, read at the end of each log: a jump of the loss, a
collapse of the fp16 loss scale.

A diverging run does not always print NaN. Large pretraining runs report their loss every
few iterations; the loss of a big batch moves smoothly, so a jump of the reported loss to
well above the previous report, or the dynamic loss scale falling by a large factor within
a few reports (the optimizer skipping step after step on overflowing gradients), is what a
divergence looks like before (or instead of) a NaN. Only readings past the first iterations
count: at the start the loss falls fast and the loss scale calibrates itself downwards from
its initial value, which is healthy.

A trainer's per-step records (the dicts Hugging Face's Trainer and ms-swift print) are read for
one thing only: a non-finite gradient norm in a record whose loss is well above the previous
record's.

The readings are Megatron-style iteration lines ("iteration 29050/ 311541 | ... | lm loss:
7.343709E+00 | loss scale: 8192.0 | ..."), printed by Megatron-LM, Megatron-DeepSpeed and
their forks. The loss of small-batch fine-tuning (a trainer's per-step loss) jumps around
too much to read this way, so it is read only together with a non-finite gradient norm (above). The entries whose signatures say
``computed: loss-jump`` / ``computed: loss-scale-collapse`` carry what a jump means and what
to do; this module only finds where one happened.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ITERATION = re.compile(r"\biteration\s+(\d+)\s*/\s*\d+\s*\|")
LM_LOSS = re.compile(r"\blm loss: ([\d.]+(?:[eE][+-]?\d+)?)")
LOSS_SCALE = re.compile(r"\bloss scale: ([\d.]+(?:[eE][+-]?\d+)?)")

# a trainer's per-step record (Hugging Face Trainer, ms-swift and others: a dict printed per
# logging step, "{'loss': 663.56, 'grad_norm': nan, 'learning_rate': ...}", or as JSON)
RECORD_LOSS = re.compile(r"""['"]loss['"]: ?([\d.]+(?:[eE][+-]?\d+)?)""")
RECORD_NONFINITE_GRAD = re.compile(r"""['"]grad_norm['"]: ?['"]?(nan|NaN|-?inf|-?Infinity)\b""")
GRAD_LOSS_JUMP = 1.5  # ... a non-finite gradient norm in a record whose loss is this many times the previous record's
START_STEPS = 20  # ... past the start of training, where fp16 loss scaling calibrates itself (overflow steps, a noisy loss)
START_EPOCH = 0.01  # (the start by the record's epoch when it prints no step)
START_RECORDS = 3  # (or, when it prints neither, the first records read)
START_LOSS_JUMP = 10.0  # ... or, at the start, this many times
RECORD_STEP = re.compile(r"""['"](?:global_step/max_steps|global_step|step)['"]: ?['"]?(\d+)""")
RECORD_EPOCH = re.compile(r"""['"]epoch['"]: ?([\d.]+)""")

AFTER_ITERATION = 1000  # readings before this iteration are the start of training
LOSS_JUMP = 1.7  # a loss this many times the previous report's
SCALE_DROP = 8.0  # a loss scale this many times below the highest of the last reports ...
SCALE_WINDOW = 5  # ... of this many
RECOVERED = 1.05  # a jump whose loss is back within this factor of the loss before it by the last report is a spike the run survived

DETECTORS = ("loss-jump", "loss-scale-collapse", "nonfinite-grad-loss-jump")

# the loss a line of work reports, in any of the usual spellings ("loss 13.2078", "loss: nan",
# "'loss': 0.52", "loss=1.2e+00", "lm loss: 7.34E+00", "Loss 4.2262e+00 (4.3819e+00)"); not a
# "loss scale: 8192" or a "val_loss"
LOSS_VALUE = re.compile(r"""(?i)(?<![\w.])loss['"]?\s*[:=]?\s*['"]?(nan|[-+]?inf(?:inity)?|[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?)(?![\w.])""")


def reported_loss(text: str) -> float | None:
    """The loss value a line reports (``LOSS_VALUE``), nan and inf included; None without one."""
    m = LOSS_VALUE.search(text)
    if not m:
        return None
    try:
        return float(m[1])
    except ValueError:
        return None


@dataclass(frozen=True)
class Jump:
    index: int  # of the line in the lines given
    detector: str  # one of DETECTORS
    detail: str  # what jumped, from what to what, at which iteration


def _number(rx: re.Pattern[str], text: str) -> float | None:
    m = rx.search(text)
    if m is None:
        return None
    try:
        return float(m.group(1))
    except ValueError:
        return None


def numeric_jump(lines: list[str]) -> Jump | None:
    """The first loss jump or loss-scale collapse among ``lines`` (in file order), or None."""
    readings: list[tuple[int, int, float | None, float | None]] = []  # (index, iteration, loss, scale)
    for i, text in enumerate(lines):
        if "iteration" not in text:
            continue
        m = ITERATION.search(text)
        if m is None:
            continue
        readings.append((i, int(m.group(1)), _number(LM_LOSS, text), _number(LOSS_SCALE, text)))
    for k in range(1, len(readings)):
        i, step, loss, scale = readings[k]
        if step < AFTER_ITERATION:
            continue
        before = readings[k - 1][2]
        if loss is not None and before and loss >= LOSS_JUMP * before and not _recovered(before, [r[2] for r in readings[k + 1:]]):
            return Jump(i, "loss-jump", f"lm loss {before:g} -> {loss:g} at iteration {step}")
        scales = [r[3] for r in readings[max(0, k - SCALE_WINDOW):k] if r[3]]
        if scale and scales and max(scales) >= SCALE_DROP * scale:
            return Jump(i, "loss-scale-collapse", f"loss scale {max(scales):g} -> {scale:g} at iteration {step}")
    return _record_jump(lines)


def _recovered(before: float, after: list[float | None]) -> bool:
    """The loss reported last, after a jump, is back near the loss before it: a spike the run
    survived (large runs see them and recover within tens of iterations), not a divergence."""
    last = next((x for x in reversed(after) if x is not None), None)
    return last is not None and last <= RECOVERED * before


def _record_jump(lines: list[str]) -> Jump | None:
    """A trainer's per-step record with a non-finite gradient norm and a loss well above the
    previous record's. A non-finite gradient norm alone is what an fp16 step that the loss
    scaler skips prints; with the loss jumping in the same record the weights have gone bad."""
    records: list[tuple[int, str, float]] = []
    for i, text in enumerate(lines):
        if "loss" not in text:
            continue
        loss = _number(RECORD_LOSS, text)
        if loss is not None:
            records.append((i, text, loss))
    for k in range(1, len(records)):
        i, text, loss = records[k]
        before = records[k - 1][2]
        g = RECORD_NONFINITE_GRAD.search(text)
        if g is None or not before:
            continue
        step, epoch = _number(RECORD_STEP, text), _number(RECORD_EPOCH, text)
        if step is not None:
            start = step < START_STEPS
        elif epoch is not None:
            start = epoch < START_EPOCH
        else:
            start = k < START_RECORDS  # (k records were read before this one)
        if loss >= (START_LOSS_JUMP if start else GRAD_LOSS_JUMP) * before and not _recovered(before, [r[2] for r in records[k + 1:]]):
            return Jump(i, "nonfinite-grad-loss-jump", f"loss {before:g} -> {loss:g} with grad_norm {g.group(1)}")
    return None
