"""A real editor: headless Neovim (Debian's `neovim`, `make neovim`), set up with the README's
editors/neovim/rankdoctor.lua, starts `rankdoctor lsp` through its built-in LSP client when
rank 0's log of a real 4-rank torchrun run (lab/compile-desync) is opened from the run's log
folder, and the test reads back the diagnostics Neovim received: rank 1's initiating line as
an error, ranks 0 and 2's collateral lines as information linked to it, the entry's fix on
hover, the two code actions taken, and :RankdoctorDiagnose's report."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "tests/scenarios/lab/compile-desync/logs"
TREE = RUN / "compile-desync_ydzxd7f5/attempt_0"
ENTRY = "collective-sequence-mismatch"
NVIM = shutil.which("nvim")

pytestmark = pytest.mark.skipif(NVIM is None, reason="nvim is not installed (make neovim: apt-get install neovim, as root)")


@pytest.fixture(scope="module")
def received(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("nvim") / "diagnostics.json"
    env = {
        **os.environ,
        "RD_PLUGIN": str(ROOT / "editors/neovim/rankdoctor.lua"),
        "RD_FILE": str(TREE / "0/stderr.log"),
        "RD_OUT": str(out),
        "RD_FILES": "3",  # rank 1's file and the two collateral ones
        "RD_HOVER_LINE": "66",  # rank 0's collateral line, in the opened buffer
        "RD_CMD": json.dumps([sys.executable, "-m", "rankdoctor.lsp"]),
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p),
    }
    subprocess.run(
        [NVIM, "--headless", "--clean", "-n", "-i", "NONE", "-S", str(ROOT / "tests/lsp/nvim_diagnostics.lua")],
        env=env, cwd=RUN, capture_output=True, timeout=180, check=True,
    )
    return json.loads(out.read_text())


def test_neovim_shows_the_initiating_line_as_error(received):
    assert received["ok"], received
    errors = [d for d in received["diagnostics"] if d["severity"] == received["error_name"]]
    assert [(d["file"], d["lnum"], d["code"], d["source"]) for d in errors] == [(str(TREE / "1/stderr.log"), 57, ENTRY, "rankdoctor")]
    assert "rank 1 started it" in errors[0]["message"]


def test_neovim_links_collateral_lines_on_other_ranks(received):
    info = {(d["file"], d["lnum"]): d for d in received["diagnostics"] if d["severity"] == received["info_name"]}
    for rank in (0, 2):
        d = info[(str(TREE / f"{rank}/stderr.log"), 66)]
        assert d["code"] == ENTRY and f"collateral on rank {rank}" in d["message"]
        assert d["related"] == [{"file": str(TREE / "1/stderr.log"), "lnum": 57}]


def test_neovim_hover_shows_the_fix(received):
    hover = received["hover"]
    assert hover.startswith("**Ranks stuck in different collectives")
    assert "**Summary.**" in hover and "**Fix**" in hover and "**Verify:** `TORCH_DISTRIBUTED_DEBUG=DETAIL torchrun" in hover


def test_neovim_code_actions_copy_verify_and_name_the_entry_page(received):
    assert received["actions"] == [
        "rankdoctor: Copy the verify command (TORCH_DISTRIBUTED_DEBUG=DETAIL torchrun --nproc_per_node 2 t)",
        f"rankdoctor: Open the encyclopedia entry {ENTRY}",
    ]
    assert received["copied"] == "TORCH_DISTRIBUTED_DEBUG=DETAIL torchrun --nproc_per_node 2 train.py --max-steps 20"
    (message,) = [m for m in received["messages"] if ENTRY in m]
    url = message.split(": ", 2)[2]
    assert url.startswith("file://") and url.endswith(f"/entries/{ENTRY}.html") and Path(url[len("file://"):]).is_file()


def test_neovim_diagnose_command_opens_the_report(received):
    # the buffer alone (rank 0's log): its own lines, as the Markdown report
    report = received["report"]
    assert report.startswith("## rankdoctor: ") and "Inputs: 1 file(s)" in report
    assert "`selection:" in report
