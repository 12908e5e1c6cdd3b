"""Defaults from a config file, so a team can settle the usual options once.

rankdoctor looks, from the current folder upwards, for the first ``rankdoctor.toml`` (its
top-level keys) or ``pyproject.toml`` with a ``[tool.rankdoctor]`` table. Options given on
the command line always win. Keys:

    format  = "json"        # diagnose's --format
    jobs    = 4             # diagnose's --jobs
    quiet   = true          # diagnose's --quiet
    entries = "kb/"         # diagnose's --entries (relative to the config file)
    save    = true          # diagnose's --save: every diagnosis goes to the incident history

``RANKDOCTOR_CONFIG=path`` names the file to use; ``RANKDOCTOR_CONFIG=`` (empty) uses none.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

# config key -> (command, parameter name of that command's option)
KEYS: dict[str, tuple[str, str]] = {
    "format": ("diagnose", "fmt"),
    "jobs": ("diagnose", "jobs"),
    "quiet": ("diagnose", "quiet"),
    "entries": ("diagnose", "entries"),
    "save": ("diagnose", "save"),
}


class ConfigError(Exception):
    """A config file that cannot be used; the message is one line."""


def find_config(start: Path | None = None) -> tuple[Path, dict[str, Any]] | None:
    """The config file that applies here and its rankdoctor table, or None."""
    named = os.environ.get("RANKDOCTOR_CONFIG")
    if named is not None:
        if not named:
            return None
        path = Path(named)
        return path, _table(path, required=True)
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        own = folder / "rankdoctor.toml"
        if own.is_file():
            return own, _table(own, required=True)
        project = folder / "pyproject.toml"
        if project.is_file():
            table = _table(project, required=False)
            if table:
                return project, table
    return None


def _table(path: Path, required: bool) -> dict[str, Any]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        if not required:
            return {}
        raise ConfigError(f"{path}: cannot read the config file ({exc})") from None
    if path.name == "pyproject.toml":
        table = data.get("tool", {}).get("rankdoctor", {})
    else:
        table = data
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.rankdoctor] must be a table")
    return table


def default_map(start: Path | None = None) -> dict[str, dict[str, Any]]:
    """Click's ``default_map`` (command -> option -> value) from the config file."""
    found = find_config(start)
    if found is None:
        return {}
    path, table = found
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {', '.join(unknown)} (known: {', '.join(KEYS)})")
    out: dict[str, dict[str, Any]] = {}
    for key, value in table.items():
        command, param = KEYS[key]
        if key == "entries":
            value = str((path.parent / str(value)).resolve())
        out.setdefault(command, {})[param] = value
    return out
