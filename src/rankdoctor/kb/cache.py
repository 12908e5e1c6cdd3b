"""Where the entries are, and what is derived from them, kept between runs.

Parsing 160 YAML files into pydantic models takes ~0.15 s; a diagnosis of a small log takes
less than that. The parsed knowledge base and the scanner's pattern table are therefore
kept in the user's cache directory (``$XDG_CACHE_HOME/rankdoctor``, ``~/.cache/rankdoctor``),
keyed by a fingerprint of every entry file (path, size, modification time) and of the code
that reads them: an edited entry, a new release or another Python makes a new key, and the
old files are never read again. ``RANKDOCTOR_CACHE=0`` turns caching off. Anything wrong
with a cached file (missing, truncated, unreadable, from another version) means it is
rebuilt from the YAML. Only files this module wrote are ever unpickled; user input never is.

This module imports nothing heavy: the CLI starts its scan workers before pydantic loads.
"""

from __future__ import annotations

import os
import pickle
import sys
import zlib
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve()
# code whose change makes cached objects stale: the models, how they are loaded, how the
# pattern table is built
_CODE = (_HERE.parent / "model.py", _HERE.parent / "loader.py", _HERE.parents[1] / "scan.py", _HERE.parents[1] / "facts.py")


def default_entries_dir() -> Path:
    """Where the entries live: $RANKDOCTOR_ENTRIES, the checkout, or the packaged copy."""
    env = os.environ.get("RANKDOCTOR_ENTRIES")
    if env:
        return Path(env)
    checkout = _HERE.parents[3] / "entries"  # src/rankdoctor/kb/cache.py -> repo root
    if checkout.is_dir():
        return checkout
    return _HERE.parents[1] / "_entries"


def cache_dir() -> Path | None:
    """The user's cache directory for rankdoctor; None when caching is turned off."""
    if os.environ.get("RANKDOCTOR_CACHE", "1").lower() in ("0", "off", "no", "false"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rankdoctor"


def fingerprint(directory: Path) -> str | None:
    """A key that changes whenever an entry file or the code reading it changes (the list of
    files with their sizes and modification times, in full: cached objects carry it and are
    used only when it is equal); None when the directory cannot be listed."""
    from .. import __version__

    parts = [__version__, sys.version, str(directory.resolve())]
    try:
        for path in (*_CODE, *_libraries(), *sorted(_yaml_files(directory))):
            st = os.stat(path)
            parts.append(f"{path}\0{st.st_size}\0{st.st_mtime_ns}")
    except OSError:
        return None
    return "\n".join(parts)


def _libraries() -> list[str]:
    """The installed pydantic and hyperscan (a cached knowledge base holds pydantic objects, a
    cached scanner a hyperscan database): found without importing them."""
    from importlib.util import find_spec

    out = []
    for name in ("pydantic", "hyperscan"):
        spec = find_spec(name)
        if spec is not None and spec.origin:
            out.append(spec.origin)
    return out


def _name(key: str) -> str:
    data = key.encode("utf-8", "surrogateescape")
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


def _yaml_files(directory: Path) -> list[str]:
    out = []
    for root, dirs, files in os.walk(directory):
        dirs.sort()
        out.extend(os.path.join(root, f) for f in files if f.endswith(".yaml"))
    return out


KEEP = 4  # cached files of one kind kept (several checkouts or versions side by side)


def _path(kind: str, key: str | None) -> Path | None:
    base = cache_dir()
    return None if base is None or key is None else base / f"{kind}-{_name(key)}.pickle"


def load(kind: str, key: str | None) -> Any | None:
    """The object stored under (kind, key), or None."""
    path = _path(kind, key)
    if path is None:
        return None
    try:
        stored_key, obj = pickle.loads(path.read_bytes())
    except Exception:  # missing, partial or foreign: rebuild
        return None
    return obj if stored_key == key else None


def store(kind: str, key: str | None, obj: Any) -> None:
    """Keep ``obj`` under (kind, key), written atomically, and drop all but the newest few
    files of that kind; failures are ignored (a read-only home directory only costs speed)."""
    path = _path(kind, key)
    if path is None:
        return
    try:
        data = pickle.dumps((key, obj), protocol=pickle.HIGHEST_PROTOCOL)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_bytes(data)
        os.replace(tmp, path)
        old = sorted(path.parent.glob(f"{kind}-*.pickle"), key=lambda p: p.stat().st_mtime, reverse=True)
        for stale in old[KEEP:]:
            stale.unlink(missing_ok=True)
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        pass
