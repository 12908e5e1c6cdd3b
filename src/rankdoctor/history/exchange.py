"""`history import`: JSON lines written by `history export`, each checked against the
rankdoctor.incident/v1 schema before anything is added (one bad line: nothing is)."""

from __future__ import annotations

import json
import sys

from pydantic import ValidationError

from .store import Incident



class ExchangeError(Exception):
    """An import file that cannot be used; one line, naming the file and line."""


def read_jsonl(files: list[str]) -> list[Incident]:
    from ..schemas import validate

    out: list[Incident] = []
    for name in files:
        try:
            if name == "-":
                text = sys.stdin.buffer.read().decode("utf-8")
            else:
                with open(name, "rb") as f:
                    text = f.read().decode("utf-8")
        except OSError as exc:
            raise ExchangeError(f"{name}: cannot read: {exc.strerror or exc}") from None
        except UnicodeDecodeError:
            raise ExchangeError(f"{name}: not UTF-8 text (expected the JSON lines of rankdoctor history export)") from None
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                doc = json.loads(line)
                validate("incident", doc)
            except json.JSONDecodeError as exc:
                raise ExchangeError(f"{name}:{n}: not JSON ({exc.msg})") from None
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(x) for x in first.get("loc", ())) or "line"
                raise ExchangeError(f"{name}:{n}: not a rankdoctor.incident/v1 line ({where}: {first.get('msg')})") from None
            out.append(Incident.from_json(doc))
    return out
