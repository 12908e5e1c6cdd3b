"""``diagnose --redact``: the diagnosis of the redacted copies of the inputs, as if the user
had run ``rankdoctor redact`` first and diagnosed its output, with the copies' temporary
location replaced by the inputs' redacted names wherever a report would show it."""

from __future__ import annotations

import dataclasses
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from .redactor import Redactor
from .tree import Redacted, redact_paths


class RedactedInputs:
    """A temporary folder of redacted copies (a context manager: removed on exit)."""

    def __init__(self, paths: list[str], fr: list[str] | None, redactor: Redactor, stdin=None):
        self.folder = Path(tempfile.mkdtemp(prefix="rankdoctor-redact-"))
        given = list(paths)
        if "-" in given:  # stdin can be read once: keep it as a file, redacted like the others
            raw = self.folder / "stdin"
            with open(raw, "wb") as w:
                shutil.copyfileobj(stdin or sys.stdin.buffer, w)
            given = [str(raw) if p == "-" else p for p in given]
        self._fr_count = len(fr or [])
        self.done: Redacted = redact_paths([*given, *(fr or [])], self.folder / "out", redactor)
        roots = [str(r[2]) for r in self.done.roots]
        self.paths = roots[: len(given)]
        self.fr = roots[len(given):] or None
        # longest first: a root that is a prefix of another (out/logs, out/logs-2) goes second
        self._names = sorted(((str(r[2]), "<stdin>" if r[0] == str(self.folder / "stdin") else r[1]) for r in self.done.roots),
                             key=lambda t: -len(t[0]))

    def shown(self, text: str) -> str:
        """``text`` with the copies' paths as the inputs' redacted names."""
        for copy, name in self._names:
            if copy in text:
                text = text.replace(copy, name)
        return text

    def unmask(self, obj: Any, _seen: set[int] | None = None) -> Any:
        """Rewrite, in place where it can, every string in ``obj`` (a Diagnosis, a
        ScanResult: dataclasses, lists, dicts) that names a copy."""
        seen = _seen if _seen is not None else set()
        if isinstance(obj, str):
            return self.shown(obj)
        if id(obj) in seen or obj is None or isinstance(obj, (int, float, bool, bytes)):
            return obj
        seen.add(id(obj))
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            for f in dataclasses.fields(obj):
                v = getattr(obj, f.name)
                nv = self.unmask(v, seen)
                if nv is not v:
                    object.__setattr__(obj, f.name, nv)
            return obj
        if isinstance(obj, list):
            for i, v in enumerate(obj):
                obj[i] = self.unmask(v, seen)
            return obj
        if isinstance(obj, dict):
            items = [(self.unmask(k, seen), self.unmask(v, seen)) for k, v in obj.items()]
            obj.clear()
            obj.update(items)
            return obj
        if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
            return tuple(self.unmask(v, seen) for v in obj)
        if isinstance(obj, (set, frozenset)):
            return type(obj)(self.unmask(v, seen) for v in obj)
        return obj

    def __enter__(self) -> "RedactedInputs":
        return self

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def diagnose_redacted(paths: list[str], fr: list[str] | None, redactor: Redactor, run) -> tuple[Any, Any, Any, Redacted]:
    """``run(paths, fr)`` (a diagnose_paths call) on redacted copies of the inputs; the
    result with the copies' paths shown as the inputs' redacted names."""
    with RedactedInputs(paths, fr, redactor) as copies:
        result, scan, dumps = run(copies.paths, copies.fr)
        copies.unmask(result)
        copies.unmask(scan)
        return result, scan, dumps, copies.done


__all__ = ["RedactedInputs", "diagnose_redacted"]
