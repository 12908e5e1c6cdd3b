from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from rankdoctor.kb.loader import load_kb
from rankdoctor.scan import Scanner

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "tests" / "scenarios"

# the tests never read or write the user's own incident history (rankdoctor history): every
# process they start looks in an empty folder of their own instead
os.environ["RANKDOCTOR_HOME"] = tempfile.mkdtemp(prefix="rankdoctor-test-home-")
atexit.register(shutil.rmtree, os.environ["RANKDOCTOR_HOME"], True)


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
