#!/usr/bin/env python3
"""Side by side: PyTorch's own Flight Recorder analyzer (torchfrtrace) and `rankdoctor fr`
on every lab dump set (tests/scenarios/lab/*/fr), against the lab's known answer.

    python bench/fr_vs_torchfrtrace.py [--out bench/fr_vs_torchfrtrace.md]

torchfrtrace runs as shipped with the installed torch (`python -m
torch.distributed.flight_recorder.fr_trace DIR --prefix fr_trace_rank_
--allow-incomplete-ranks`), once on the raw dumps and once on copies whose `pg_config` is
rewritten to name the default group and its ranks (the raw gloo dumps of torch 2.13 key it
by an empty name, which is what makes it crash). The user's files are never modified: the
copies go to a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import pickle
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
LAB = ROOT / "tests" / "scenarios" / "lab"


def torchfrtrace(fr_dir: Path) -> dict:
    cmd = [sys.executable, "-m", "torch.distributed.flight_recorder.fr_trace", str(fr_dir), "--prefix", "fr_trace_rank_", "--allow-incomplete-ranks"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    out = p.stdout + p.stderr
    crashed = "Traceback (most recent call last)" in out
    error = ""
    if crashed:
        last = [ln for ln in out.strip().splitlines() if ln.strip()][-1]
        error = last.strip()[:60]
    # what torchfrtrace prints when it finds something: "... has errors" with "Culprit rank N",
    # or "Not all ranks joining collective ... missing ranks: {…}" (the ranks it blames)
    found = bool(re.search(r"has errors|Not all ranks joining|Culprit rank", out)) and not crashed
    culprits = {int(x) for x in re.findall(r"Culprit rank (\d+)", out)}
    if not culprits:
        for group in re.findall(r"missing ranks: \{([\d, ]+)\}", out):
            culprits |= {int(x) for x in group.split(",") if x.strip()}
    culprits = sorted(culprits)
    return {"exit": p.returncode, "crashed": crashed, "error": error, "found": found, "culprits": culprits}


def rankdoctor_fr(fr_dir: Path) -> dict:
    p = subprocess.run([sys.executable, "-m", "rankdoctor.cli", "fr", str(fr_dir), "--format", "json"], capture_output=True, text=True, timeout=120)
    try:
        d = json.loads(p.stdout)
    except json.JSONDecodeError:
        return {"exit": p.returncode, "crashed": True, "error": p.stderr.strip()[:60], "found": False, "culprits": []}
    culprits = sorted({c for f in d["findings"] for c in f["culprit_ranks"]})
    return {"exit": p.returncode, "crashed": False, "error": "", "found": d["verdict"] in ("mismatch", "hang"), "culprits": culprits, "verdict": d["verdict"]}


def repaired_copy(fr_dir: Path, tmp: Path) -> Path:
    """Copies of the dumps with pg_config naming the default group (plain data only)."""
    out = tmp / fr_dir.parent.name
    out.mkdir(parents=True)
    dumps = {}
    for f in sorted(fr_dir.iterdir()):
        with open(f, "rb") as fh:
            dumps[f.name] = pickle.load(fh)  # our own lab files, written by torch in this repo
    ranks = set()
    for d in dumps.values():
        for cfg in d.get("pg_config", {}).values():
            r = cfg.get("ranks")
            ranks |= set(json.loads(r) if isinstance(r, str) else (r or []))
    for name, d in dumps.items():
        d["pg_config"] = {"0": {"name": "0", "desc": "default_pg", "ranks": json.dumps(sorted(ranks))}}
        with open(out / name, "wb") as fh:
            pickle.dump(d, fh)
    return out


def verdict(res: dict, want_problem: bool, want_rank) -> str:
    if res["crashed"]:
        return "crashed"
    if res["found"] != want_problem:
        return "missed" if want_problem else "false alarm"
    if not want_problem:
        return "right (no problem)"
    want = [] if want_rank is None else [want_rank]
    return "right" if res["culprits"] == want else f"wrong culprit {res['culprits'] or '-'}"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    import torch  # fails early with a clear message when torch is absent

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for fr_dir in sorted(LAB.glob("*/fr")):
            case = fr_dir.parent
            if not any(fr_dir.iterdir()):
                continue
            want = yaml.safe_load((case / "expected.yaml").read_text())
            problem = want["class"] is not None
            raw = torchfrtrace(fr_dir)
            fixed = torchfrtrace(repaired_copy(fr_dir, Path(tmp)))
            ours = rankdoctor_fr(fr_dir)
            rows.append((case.name, f"{want['class'] or 'healthy'} / {want['initiating_rank']}", raw, fixed, ours, problem, want["initiating_rank"]))

    lines = [
        f"# torchfrtrace vs rankdoctor fr (torch {torch.__version__}, lab dumps under tests/scenarios/lab)",
        "",
        "Expected = the lab's injected fault (class / initiating rank). A problem counts as found when the",
        "tool reports a mismatch or hang; the culprit must equal the injected rank (none when the dumps",
        "cannot tell, e.g. two equal camps).",
        "",
        "| case | expected | torchfrtrace (raw dumps) | torchfrtrace (pg_config repaired) | torchfrtrace exit | rankdoctor fr | rankdoctor exit |",
        "|---|---|---|---|---|---|---|",
    ]
    score = {"raw": 0, "fixed": 0, "ours": 0}
    for name, exp, raw, fixed, ours, problem, rank in rows:
        v_raw, v_fixed, v_ours = verdict(raw, problem, rank), verdict(fixed, problem, rank), verdict(ours, problem, rank)
        score["raw"] += v_raw.startswith("right")
        score["fixed"] += v_fixed.startswith("right")
        score["ours"] += v_ours.startswith("right")
        raw_s = v_raw + (f" (`{raw['error']}`)" if raw["crashed"] else "")
        fixed_s = v_fixed + (f" (`{fixed['error']}`)" if fixed["crashed"] else "") + (f", culprit {fixed['culprits']}" if fixed["culprits"] else "")
        ours_s = f"{v_ours} — {ours.get('verdict', '?')}, culprit {ours['culprits'] or '-'}"
        lines.append(f"| {name} | {exp} | {raw_s} | {fixed_s} | {raw['exit']} / {fixed['exit']} | {ours_s} | {ours['exit']} |")
    n = len(rows)
    lines += ["", f"Right on {score['raw']}/{n} (torchfrtrace raw), {score['fixed']}/{n} (torchfrtrace repaired), {score['ours']}/{n} (rankdoctor fr).", ""]
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
