"""rankdoctor: find the rank that started a distributed-training failure, and say why.

The Python API (see rankdoctor.api): ``rankdoctor.diagnose(paths, fr=None)``,
``rankdoctor.fr(paths)``, ``rankdoctor.stacks(paths)``, ``rankdoctor.load_kb()``.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_API = ("fr", "stacks", "load_kb", "StackGroup", "InputError", "DumpError", "KBError")

# the engine's package answers ``rankdoctor.diagnose(paths, fr=None)`` itself (its __init__)
from . import diagnose  # noqa: E402


def __getattr__(name: str) -> Any:
    # loaded on first use, so `rankdoctor --help` does not pay for the engine's imports
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'rankdoctor' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])


__all__ = ["__version__", "diagnose", *_API]
