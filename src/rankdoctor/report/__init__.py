"""Renderers of one Diagnosis model: text (Rich), JSON, Markdown."""

# an inconclusive answer with no hypothesis: the run failed, but nothing explains how
NO_EXPLANATION = (
    "A failure shows (a rank stopped while waiting, a failure line of no known kind, or a launcher's report that a worker failed), but no explanation "
    "fits it. Collect every rank's full output (`torchrun --log-dir logs --tee 3 ...`) and run rankdoctor on all of it."
)

# a run with no failure line (text, Markdown and HTML say the same)
NO_FAILURE = ("No failure stands: no failure signature fired, or each line that looks like one is named in a note "
              "above with why it is not read as the job's failure. Healthy-looking noise (NCCL INFO, warnings) is "
              "ignored on purpose.")

# a run with no failure line: what to do when it did not end well all the same (a hang or a silent stop)
NO_FAILURE_HINT = (
    "If the job hung or stopped without an error, run again with `--hung` (the logs are then read as "
    "ending where it hung), or take each rank's stack while it hangs (`py-spy dump --pid PID > "
    "pyspy_rankN.txt`) and give those files to rankdoctor too."
)


def plain(text: str) -> str:
    """Prose for the terminal: `backticked` spans (code in Markdown and HTML) without the ticks."""
    return text.replace("`", "")
