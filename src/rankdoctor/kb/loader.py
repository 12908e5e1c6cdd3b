"""Load the knowledge base from ``entries/``: every YAML file, validated, with errors
that name the file they came from."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml
from pydantic import ValidationError

from . import cache
from .cache import default_entries_dir
from .model import Entry, Signature

__all__ = ["KBError", "KnowledgeBase", "default_entries_dir", "load_entry", "load_kb", "cached_kb"]


_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: ten times faster


class KBError(Exception):
    """The knowledge base could not be loaded; the message names the file and field."""


@dataclass(frozen=True)
class KnowledgeBase:
    entries: tuple[Entry, ...]
    paths: dict[str, Path] = field(default_factory=dict)
    related: dict[str, frozenset[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        by_id = {e.id: e for e in self.entries}
        object.__setattr__(self, "_by_id", by_id)
        computed = {s.computed: (e, s) for e in self.entries for s in e.signatures if s.computed}
        object.__setattr__(self, "_computed", computed)

    def get(self, entry_id: str) -> Entry:
        return self._by_id[entry_id]  # type: ignore[attr-defined]

    def signature(self, entry_id: str, signature_id: str) -> "Signature | None":
        """An entry's signature by id (None for ids the knowledge base does not have)."""
        entry = self._by_id.get(entry_id)  # type: ignore[attr-defined]
        try:
            return entry.signature(signature_id) if entry is not None else None
        except KeyError:
            return None

    def computed(self, detector: str | None) -> "tuple[Entry, Signature] | None":
        """The entry and signature that read ``detector`` (a signature's ``computed``: a jump
        trajectory.py finds in a run's numbers, a rank claims.py finds announced twice), None
        when no entry reads it."""
        return self._computed.get(detector)  # type: ignore[attr-defined]

    def __contains__(self, entry_id: str) -> bool:
        return entry_id in self._by_id  # type: ignore[attr-defined]

    def __iter__(self):
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def related_to(self, entry_id: str) -> frozenset[str]:
        """Related ids in both directions (a relation written on one side counts for both)."""
        return self.related.get(entry_id, frozenset())


def _format_validation_error(path: Path, exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"]) or "(entry)"
        parts.append(f"{loc}: {err['msg']}")
    return f"{path}: " + "; ".join(parts)


def load_entry(path: Path) -> Entry:
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_YAML_LOADER)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise KBError(f"{path}: cannot read entry: {exc}") from exc
    if not isinstance(data, dict):
        raise KBError(f"{path}: an entry is a YAML mapping")
    try:
        entry = Entry.model_validate(data)
    except ValidationError as exc:
        raise KBError(_format_validation_error(path, exc)) from exc
    if path.stem != entry.id:
        raise KBError(f"{path}: file name must be the entry id ({entry.id}.yaml)")
    return entry


def load_kb(directory: Path | None = None, *, check: bool = True) -> KnowledgeBase:
    """Every entry under ``directory``. With ``check`` (the default) the whole knowledge base
    is validated; without it (``diagnose``: validation is the tests' and ``make check-kb``'s
    job) a knowledge base parsed before from exactly these files is taken from the cache."""
    directory = directory or default_entries_dir()
    if not directory.is_dir():
        raise KBError(f"{directory}: no entries directory")
    lenient = bool(os.environ.get("RANKDOCTOR_KB_LENIENT"))
    key = None if lenient else cache.fingerprint(directory)
    if not check:
        kb = cache.load("kb", key)
        if isinstance(kb, KnowledgeBase):
            return kb
    entries: list[Entry] = []
    paths: dict[str, Path] = {}
    errors: list[str] = []
    for path in sorted(directory.rglob("*.yaml")):
        try:
            entry = load_entry(path)
        except KBError as exc:
            errors.append(str(exc))
            continue
        if entry.id in paths:
            errors.append(f"{path}: duplicate id {entry.id!r} (also {paths[entry.id]})")
            continue
        entries.append(entry)
        paths[entry.id] = path
    related: dict[str, set[str]] = {e.id: set() for e in entries}
    for e in entries:
        for r in e.related:
            related[e.id].add(r)
            if r in related:
                related[r].add(e.id)
    kb = KnowledgeBase(
        entries=tuple(entries),
        paths=paths,
        related={k: frozenset(v) for k, v in related.items()},
    )
    if check:
        from .validate import validate_kb

        errors.extend(validate_kb(kb))
    if errors and lenient:
        # authoring aid only: skip what is broken instead of refusing the whole KB
        import sys

        print(f"rankdoctor: {len(errors)} knowledge-base problem(s) ignored (RANKDOCTOR_KB_LENIENT)", file=sys.stderr)
        return KnowledgeBase(entries=kb.entries, paths=kb.paths, related=kb.related)
    if errors:
        raise KBError("\n".join(errors))
    cache.store("kb", key, kb)
    return kb


@lru_cache(maxsize=4)
def cached_kb(directory: str | None = None) -> KnowledgeBase:
    return load_kb(Path(directory) if directory else None)
