"""The web app's redaction of what the page is about to send: the selected lines of each
file, redacted together (one pseudonym per value across files), with where each
replacement landed so the page can show it before anything is sent for diagnosis."""

from __future__ import annotations

from bisect import bisect_right

from . import new_redactor


def redact_selection(files: list[tuple[str, list[str]]], job_ids: bool = False) -> dict:
    """``files``: (name, lines). Returns ``{"files": [{"name", "lines", "marks"}],
    "replaced": {kind: count}}``; ``marks[i]`` lists ``[start, end, kind, original]`` of
    line i's replacements (the original goes back only to the page that sent it)."""
    red = new_redactor(job_ids)
    texts = [(name, "\n".join(lines)) for name, lines in files]
    for name, text in texts:
        red.learn(name)
        red.learn(text)
    red.seal()
    out = []
    for name, text in texts:
        marks: list[tuple[int, int, str, str]] = []
        lines = red.apply(text, marks).split("\n")
        starts = [0]
        for ln in lines[:-1]:
            starts.append(starts[-1] + len(ln) + 1)
        per: list[list] = [[] for _ in lines]
        for s, e, kind, original in marks:
            i = bisect_right(starts, s) - 1
            while i < len(lines) and starts[i] < e:  # a key body spans lines: marked on each
                a, b = max(s, starts[i]) - starts[i], min(e, starts[i] + len(lines[i])) - starts[i]
                if b > a:
                    per[i].append([a, b, kind, original])
                i += 1
        out.append({"name": red.apply(name), "lines": lines, "marks": per})
    return {"files": out, "replaced": red.replaced()}
