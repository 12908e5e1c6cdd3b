"""Read a Python traceback from the lines before an error: where in the user's code it was."""

from __future__ import annotations

import re

from ..ingest.prefix import parse_prefix

FRAME = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<func>[\w<>.]+)')
# paths of installed libraries and the interpreter: not the user's code
LIBRARY_PATH = re.compile(r"(?:site-packages|dist-packages|/lib/python\d|<frozen |/torch/|\\torch\\|/_pytest/)")


# torch.distributed and the communication layers of Accelerate and DeepSpeed
DIST_PATH = re.compile(r"[/\\](?:torch[/\\]distributed|accelerate|deepspeed[/\\]comm)[/\\]")
# the autograd engine: a collective raised from here is DDP's gradient all-reduce (its buckets
# are all-reduced from backward hooks), the collective every rank of a DDP job issues each step
AUTOGRAD_PATH = re.compile(r"[/\\]torch[/\\]autograd[/\\]")


def frames_of(context: list[str], rank: int | None = None) -> list[tuple[str, str, str]]:
    """The (path, line, func) frames of the last traceback in ``context``, outermost first.

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
    return frames


def user_call_site(context: list[str], rank: int | None = None) -> str | None:
    """The innermost frame of the traceback that is not library code, as ``path:line in func``."""
    for path, line, func in reversed(frames_of(context, rank)):
        if not LIBRARY_PATH.search(path):
            return f"{path}:{line} in {func}"
    return None


def distributed_call(context: list[str], rank: int | None = None) -> str | None:
    """The function of torch.distributed (or Accelerate's / DeepSpeed's communication layer)
    the traceback stopped in, innermost: ``all_reduce``, ``barrier``, ``recv`` ..."""
    for path, _line, func in reversed(frames_of(context, rank)):
        if DIST_PATH.search(path):
            return func
    return None


def in_backward(context: list[str], rank: int | None = None) -> bool:
    """The traceback stopped inside the autograd engine's backward pass."""
    frames = frames_of(context, rank)
    return bool(frames) and bool(AUTOGRAD_PATH.search(frames[-1][0]))
