"""What ships is the wheel: it must carry the knowledge base and the scoring weights."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest

from .conftest import ROOT


def test_wheel_ships_entries_and_weights(tmp_path):
    pytest.importorskip("setuptools")
    r = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", str(ROOT), "-w", str(tmp_path)],
        capture_output=True, timeout=300,
    )
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    (wheel,) = tmp_path.glob("rankdoctor-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {n.split("rankdoctor/_entries/", 1)[1] for n in names if "rankdoctor/_entries/" in n and n.endswith(".yaml")}
    in_repo = {p.relative_to(ROOT / "entries").as_posix() for p in (ROOT / "entries").rglob("*.yaml")}
    assert shipped == in_repo
    assert "rankdoctor/diagnose/weights.json" in names
    # the web app's assets, its icon among them (/favicon.ico is read from it)
    assert {"rankdoctor/web/static/favicon.svg", "rankdoctor/web/static/app.css", "rankdoctor/web/static/diagnose.js"} <= set(names)
    # the Python API: rankdoctor.diagnose(...) is the engine package answering the call
    assert {"rankdoctor/api.py", "rankdoctor/diagnose/__init__.py", "rankdoctor/py.typed"} <= set(names)
    # NCCL RAS reports among the inputs: the reader and the mapping to global ranks
    assert {"rankdoctor/ingest/ncclras.py", "rankdoctor/diagnose/ras.py"} <= set(names)
