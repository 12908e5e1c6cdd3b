"""Read a Python traceback from the lines before an error: where in the user's code it was."""

from __future__ import annotations

import re

from ..ingest.prefix import parse_prefix

FRAME = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<func>[\w<>.]+)')
# paths of installed libraries and the interpreter: not the user's code
LIBRARY_PATH = re.compile(r"(?:site-packages|dist-packages|/lib/python\d|<frozen |/torch/|\\torch\\|/_pytest/)")


def user_call_site(context: list[str], rank: int | None = None) -> str | None:
    """The innermost frame of the traceback that is not library code, as ``path:line in func``.

    Lines of other ranks interleaved into the same file are skipped when they carry a
    different ``[rankN]:`` prefix."""
    frames: list[tuple[str, str, str]] = []
    for line in context:
        if rank is not None and "[rank" in line:
            a, _ = parse_prefix(line)
            if a.rank is not None and a.rank != rank:
                continue
        m = FRAME.search(line)
        if m:
            frames.append((m["path"], m["line"], m["func"]))
        elif "Traceback (most recent call last)" in line:
            frames = []  # a new traceback starts: only the last one matters
    for path, line, func in reversed(frames):
        if not LIBRARY_PATH.search(path):
            return f"{path}:{line} in {func}"
    return None
