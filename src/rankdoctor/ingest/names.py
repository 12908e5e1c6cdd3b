"""Rank / local rank / host hints from file and directory names."""

from __future__ import annotations

import re
from pathlib import PurePath

from .prefix import Attribution

# torchrun --log-dir: <log_dir>/[<run_id>/]attempt_<n>/<local_rank>/{stdout,stderr}.log
_TORCHRUN = re.compile(r"attempt_(?P<attempt>\d+)/(?P<local_rank>\d+)/(?:stdout|stderr|error)\.(?:log|json)$")
_RANK = re.compile(r"(?:^|[^a-z])(?:global_?)?rank[_-]?(?P<rank>\d+)(?:[^\d]|$)", re.I)
_LOCAL = re.compile(r"(?:^|[^a-z])local_?rank[_-]?(?P<local_rank>\d+)(?:[^\d]|$)", re.I)
_RANK_DIR = re.compile(r"^(?:global_?)?rank[_-]?(?P<rank>\d+)$", re.I)  # a whole folder name
_NODE = re.compile(r"(?:^|[^a-z])node[_-]?(?P<node>\d+)(?:[^\d]|$)", re.I)


def attribution_from_name(path: str) -> Attribution:
    """Called once per input file: a path that holds neither "attempt_", "rank" nor "node"
    (worker-7.log) costs no regex search (a folder of 100,000 such files)."""
    a = Attribution()
    p = PurePath(path)
    posix = p.as_posix()
    if "attempt_" in posix and (m := _TORCHRUN.search(posix)):
        a.local_rank = int(m["local_rank"])
        a.extra["attempt"] = m["attempt"]
        return a
    lower = posix.lower()
    has_rank, has_node = "rank" in lower, "node" in lower
    if not (has_rank or has_node):
        return a
    name = p.name
    if has_rank:
        if (m := _LOCAL.search(name)):
            a.local_rank = int(m["local_rank"])
        elif (m := _RANK.search(name)):
            a.rank = int(m["rank"])
    for part in p.parts[:-1][-2:]:
        if has_rank and a.rank is None and a.local_rank is None and (m := _RANK_DIR.match(part)):
            a.rank = int(m["rank"])
        if has_node and ((m := _NODE.search(part)) or (m := _NODE.search(name))):
            a.extra["node"] = m["node"]
    return a
