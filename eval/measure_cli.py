#!/usr/bin/env python3
"""Measure a held-out set through the command line, as a user would run it.

    python eval/measure_cli.py SET_DIR [--python PY] [--src SRC_DIR]

For every labelled case folder (case.yaml / truth.yaml / expected.yaml) it runs
`rankdoctor diagnose <evidence files> --format json` with the given interpreter and
source tree (so an older checkout can be measured on the same set), and prints one line
per case and the held-out numbers recorded in eval/HISTORY.md:

- class: top diagnosis's class is the labelled one (or an also_acceptable one);
- rank: initiating rank equals the labelled one, counted where the label has a rank;
- confident wrong: verdict "diagnosed" and the class is wrong, or a rank is named that
  is not the labelled one;
- called healthy: verdict "no-failure-found" on a run that failed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

LABELS = ("case.yaml", "truth.yaml", "expected.yaml")
NOT_EVIDENCE = {*LABELS, "cmd.txt", "README.md", "readme.md", "SUMMARY.md"}


def label_of(case: Path) -> dict:
    for name in LABELS:
        p = case / name
        if p.is_file():
            d = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
            rank = d.get("initiating_rank")
            return {"class": d.get("class") or "none", "rank": rank if isinstance(rank, int) else None,
                    "also": list(d.get("also_acceptable") or [])}
    raise FileNotFoundError(case)


def evidence(case: Path) -> list[str]:
    out = []
    for p in sorted(case.rglob("*")):
        rel = p.relative_to(case).parts
        if p.is_file() and p.name not in NOT_EVIDENCE and not any(x in ("fr", "flight_recorder", "dumps") for x in rel[:-1]):
            out.append(str(p))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("set_dir", type=Path)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--src", default=None, help="source tree to put first on PYTHONPATH (an older checkout's src/)")
    ap.add_argument("--with-dumps", action="store_true",
                    help="also pass each case's Flight Recorder folder (fr/, flight_recorder/, dumps/) with --fr; "
                         "by default a case is measured on its logs alone")
    a = ap.parse_args()
    env = dict(os.environ, RANKDOCTOR_CACHE="0")
    if a.src:
        env["PYTHONPATH"] = a.src
    cases = sorted({p.parent for name in LABELS for p in a.set_dir.rglob(name)})
    n = failed = cls = rank_lab = rank_ok = conf_wrong = healthy = 0
    for case in cases:
        lab = label_of(case)
        paths = evidence(case)
        if a.with_dumps:
            for d in ("fr", "flight_recorder", "dumps"):
                if (case / d).is_dir():
                    paths += ["--fr", str(case / d)]
        r = subprocess.run([a.python, "-m", "rankdoctor.cli", "diagnose", *paths, "--format", "json", "--quiet"],
                           capture_output=True, text=True, env=env)
        try:
            d = json.loads(r.stdout)
        except json.JSONDecodeError:
            print(f"ERR  {case.name}: {r.stderr.strip()[:200]}")
            continue
        top = d["diagnoses"][0] if d["diagnoses"] else None
        got_c = top["class"] if top else None
        got_r = top["initiating_rank"] if top else None
        n += 1
        is_failed = lab["class"] not in ("none", "healthy")
        c_ok = (got_c == lab["class"] or got_c in lab["also"]) if is_failed else d["verdict"] == "no-failure-found"
        r_ok = lab["rank"] is not None and got_r == lab["rank"]
        wrong = is_failed and d["verdict"] == "diagnosed" and (not c_ok or (got_r is not None and lab["rank"] is not None and got_r != lab["rank"]))
        failed += is_failed
        cls += c_ok if is_failed else 0
        rank_lab += lab["rank"] is not None
        rank_ok += r_ok
        conf_wrong += wrong
        healthy += is_failed and d["verdict"] == "no-failure-found"
        mark = "ok " if c_ok and (lab["rank"] is None or r_ok) else "BAD"
        print(f"{mark} {case.name}: want {lab['class']}/{lab['rank']} got {got_c}/{got_r} "
              f"({d['verdict']}{', %.2f' % top['confidence'] if top else ''}){'  CONFIDENT-WRONG' if wrong else ''}")
    healthy_runs = n - failed
    print(f"\nruns {n} (failed {failed}, healthy {healthy_runs}); class {cls}/{failed}; rank {rank_ok}/{rank_lab} where labelled; "
          f"confident wrong {conf_wrong}/{failed}; failed runs called healthy {healthy}/{failed}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
