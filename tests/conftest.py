from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rankdoctor.kb.loader import load_kb
from rankdoctor.scan import Scanner

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "tests" / "scenarios"


@pytest.fixture(scope="session")
def kb():
    return load_kb()


@pytest.fixture(scope="session")
def scanner(kb):
    return Scanner(kb)


def run_cli(*args: str, stdin: bytes | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rankdoctor.cli", *args],
        input=stdin,
        capture_output=True,
        cwd=cwd or ROOT,
        timeout=120,
    )
