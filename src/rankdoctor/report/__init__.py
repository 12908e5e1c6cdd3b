"""Renderers of one Diagnosis model: text (Rich), JSON, Markdown."""

# an inconclusive answer with no hypothesis: the run failed, but nothing explains how
NO_EXPLANATION = (
    "A failure shows (a rank stopped while waiting, a failure line of no known kind, or a launcher's report that a worker failed), but no explanation "
    "fits it. Collect every rank's full output (torchrun --log-dir logs --tee 3 ...) and run rankdoctor on all of it."
)
