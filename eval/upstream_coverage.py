#!/usr/bin/env python3
"""How much of what the distributed-training stack prints when it fails does the
encyclopedia know?

    python eval/upstream_coverage.py [--lock eval/upstream/recognized.txt] [-v]

`eval/upstream/*.tsv` lists failure and warning messages taken from upstream source code
(NCCL and gloo, PyTorch, DeepSpeed, Megatron-LM, Lightning, Accelerate, Horovod, NeMo), one
format string per row with the file and line it comes from, an example with its placeholders
filled in, the kind of message, and the failure class the collector thought it most often
shows. Each example is put on a line as a log would show it (NCCL's `host:pid:tid [dev] NCCL
WARN ` prefix for its WARN messages, `RuntimeError: ` for a NCCL or gloo exception text that
PyTorch raises) and read by the encyclopedia alone.

Printed per file: how many rows fire a signature of an entry (and with which role), how many
are read as a failure of a named kind, and how many a one-line diagnosis gives the collector's
class (informative only: a one-line excerpt of a symptom is not expected to give the cause).

`--lock FILE` writes the rows that fire an entry's own signature (not only a catch-all entry's,
the reading of every NCCL WARN line) as `file:row<TAB>entry<TAB>message`; `tests/test_kb.py`
checks that each of them still does.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
TABLES = HERE / "upstream"


def as_logged(row: dict[str, str]) -> str:
    """The example as it would appear on a log line: its first line with text (a message that
    starts with a newline shows its text on the next line of the log)."""
    lines = (row.get("example") or "").replace("\\n", "\n").split("\n")
    text = next((ln for ln in lines if ln.strip()), "")
    repo, kind = row.get("repo", ""), row.get("kind", "")
    if repo == "NVIDIA/nccl" and kind == "warn" and "NCCL WARN" not in text:
        return "node1:2345:2390 [0] NCCL WARN " + text
    head = text.split(":", 1)[0]
    if kind == "exception" and repo in ("NVIDIA/nccl", "facebookincubator/gloo") and not head.endswith(("Error", "Exception")):
        return "RuntimeError: " + text
    return text


def rows(tables: Path = TABLES) -> list[tuple[str, int, dict[str, str]]]:
    out = []
    for path in sorted(tables.glob("*.tsv")):
        with path.open(newline="", encoding="utf-8") as f:
            for i, r in enumerate(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE), start=2):
                out.append((path.stem, i, r))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lock", type=Path, help="write the rows an entry's own signature recognizes to this file")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every row the encyclopedia does not know")
    a = ap.parse_args(argv)

    import tempfile

    from rankdoctor.kb.check import fired_roles
    from rankdoctor.kb.loader import load_kb
    from rankdoctor.pipeline import diagnose_paths
    from rankdoctor.scan import Scanner, scan_sources

    kb = load_kb(check=False)
    scanner = Scanner(kb)
    catch_all = {e.id for e in kb if e.catch_all}  # the reading of every NCCL WARN line
    stats: dict[str, dict[str, int]] = {}
    locked: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, (table, n, r) in enumerate(rows()):
            line = as_logged(r)
            fired = {e: roles for e, roles in fired_roles(kb, line, scanner).items() if e}
            own = {e: roles for e, roles in fired.items() if e not in catch_all}
            p = Path(tmp) / f"{i}.log"
            p.write_text(line + "\n", encoding="utf-8")
            result, _, _ = diagnose_paths(kb, [str(p)], lambda s: scan_sources(kb, s, scanner), None)
            j = result.to_json()
            top = (j.get("diagnoses") or [{}])[0]
            s = stats.setdefault(table, {"rows": 0, "entry": 0, "cause": 0, "catch_all": 0, "failure": 0, "class": 0})
            s["rows"] += 1
            s["entry"] += bool(own)
            s["cause"] += any("cause" in roles for roles in own.values())
            s["catch_all"] += bool(fired) and not own
            s["failure"] += j.get("verdict") != "no-failure-found"
            s["class"] += top.get("class") == (r.get("class") or "").strip()
            if own:
                locked.append(f"{table}:{n}\t{sorted(own)[0]}\t{line[:160]}")
            elif a.verbose:
                print(f"unknown  {table}:{n}  [{r.get('kind')}] {line[:150]}")
    print(f"{'table':<12} {'rows':>5} {'an entry':>9} {'as cause':>9} {'catch-all':>10} {'a failure':>10} {'collector class':>16}")
    total = {k: 0 for k in next(iter(stats.values()))} if stats else {}
    for table, s in stats.items():
        for k, v in s.items():
            total[k] += v
        print(f"{table:<12} {s['rows']:>5} {s['entry']:>9} {s['cause']:>9} {s['catch_all']:>10} {s['failure']:>10} {s['class']:>16}")
    if total:
        print(f"{'all':<12} {total['rows']:>5} {total['entry']:>9} {total['cause']:>9} {total['catch_all']:>10} {total['failure']:>10} {total['class']:>16}")
    if a.lock:
        a.lock.write_text(
            "# Upstream messages an entry's own signature recognizes (eval/upstream_coverage.py --lock);\n"
            "# tests/test_kb.py fails when one of them stops firing that entry.\n" + "\n".join(locked) + "\n",
            encoding="utf-8")
        print(f"wrote {a.lock}: {len(locked)} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
