"""A fast subset of the failure lab, run for real: torchrun + gloo on CPU with torch 2.13,
then `rankdoctor fr` and `rankdoctor diagnose` on what the run left behind."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from .conftest import ROOT, run_cli

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="torch is not installed (make test installs torch==2.13.0)"
)

# case -> (class, initiating rank, the user line in the Flight Recorder finding,
#          the user line the diagnosis names)
LIVE = {
    "extra-collective-same-shape": ("collective-desync", 1, "extra_collective_same_shape.py:23", "extra_collective_same_shape.py:23"),
    # the dumps show where the peers waited; the logs show where rank 2 raised
    "exception-rank2": ("peer-rank-crashed", 2, "_common.py", "exception_rank2.py:26"),
    "dtype-mismatch": ("collective-desync", None, "dtype_mismatch.py:25", "dtype_mismatch.py:25"),
}


@pytest.fixture(scope="module")
def lab_runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("lab")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "lab" / "run.py"), *LIVE, "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=ROOT,
    )
    assert "captured" in proc.stdout + proc.stderr, proc.stdout[-2000:] + proc.stderr[-2000:]
    return out


@pytest.mark.parametrize("case", list(LIVE))
def test_fr_and_diagnose_on_a_fresh_run(lab_runs, case):
    want_class, want_rank, site, diag_site = LIVE[case]
    run = lab_runs / case
    assert (run / "console.log").is_file()

    r = run_cli("fr", str(run / "fr"), "--format", "json")
    fr = json.loads(r.stdout)
    assert r.returncode == 1, fr
    culprits = sorted({c for f in fr["findings"] for c in f["culprit_ranks"]})
    assert culprits == ([] if want_rank is None else [want_rank])
    sites = [v["call_site"] or "" for f in fr["findings"] for v in f["per_rank"].values()]
    assert any(site in s for s in sites), sites

    r = run_cli("diagnose", str(run), "--format", "json")
    d = json.loads(r.stdout)
    top = d["diagnoses"][0]
    assert (top["class"], top["initiating_rank"]) == (want_class, want_rank), top["root_cause"]
    assert any(diag_site in e["text"] for e in top["evidence"]) or diag_site in top["root_cause"], top["evidence"]


def _lab_run():
    """lab/run.py as a module (it is a script, not a package member)."""
    spec = importlib.util.spec_from_file_location("lab_run", ROOT / "lab" / "run.py")
    lab_run = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = lab_run  # dataclasses look their module up while the class is built
    try:
        spec.loader.exec_module(lab_run)
    finally:
        del sys.modules[spec.name]
    return lab_run


def test_pg2d_matrix_table():
    """The 8-rank process-group matrix (lab/run.py --matrix-pg2d) lists without running anything."""
    proc = subprocess.run([sys.executable, str(ROOT / "lab" / "run.py"), "--matrix-pg2d", "--list"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    rows = proc.stdout.splitlines()
    assert len(rows) >= 24 and all(r.split()[-1] == "pg2d.py" for r in rows)
    lab_run = _lab_run()
    assert lab_run.pg2d_layout("tp2dp4", 5) == {"tp": [4, 5], "dp": [1, 3, 5, 7], "pp": None, "pp_rank": 0}
    assert lab_run.pg2d_layout("pp2tp2dp2", 6)["pp"] == [2, 6]


def test_pg2d_draws_put_stage_faults_on_their_stage():
    """Every pg2d draw builds (a pipeline fault on a rank of the stage whose code never runs it
    would be a healthy run labelled as a fault), and such a variant is refused."""
    lab_run = _lab_run()
    for draw in (None, *lab_run.PG2D_FRESH_DRAWS.values()):
        assert lab_run.pg2d_cases(draw)
    with pytest.raises(ValueError, match="stage-1 ranks only"):
        lab_run.pg2d_cases([("extra-tp", "pp2tp2dp2", (2,), 2, True)])
    with pytest.raises(ValueError, match="stage-0 ranks only"):
        lab_run.pg2d_cases([("p2p-order", "pp2tp2dp2", (6,), 2, True)])
