"""The VS Code extension (editors/vscode) builds into a .vsix with `make vsix` (npm ci from the
lockfile, the pinned @vscode/vsce), and the manifest inside it says what VS Code reads: the
name, the engine, when it activates, its two commands and settings, and a main script that is
in the package. Built from a copy of the folder, so the checkout gets no node_modules."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXT = ROOT / "editors/vscode"
NPM = shutil.which("npm")
# npm's words when the registry cannot be reached (a CI runner without network)
OFFLINE = re.compile(r"ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ECONNREFUSED|ECONNRESET|network request .* failed")

pytestmark = pytest.mark.skipif(NPM is None or shutil.which("make") is None, reason="npm (Node.js 20+) or make is not installed: the VS Code extension is not built")


@pytest.fixture(scope="module")
def vsix(tmp_path_factory) -> zipfile.ZipFile:
    tmp = tmp_path_factory.mktemp("vsix")
    shutil.copytree(EXT, tmp / "vscode", ignore=shutil.ignore_patterns("node_modules", "out", "*.vsix"))
    out = tmp / "rankdoctor.vsix"
    done = subprocess.run(
        ["make", "-s", "vsix", f"VSCODE_DIR={tmp / 'vscode'}", f"VSIX={out}"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    if done.returncode != 0 and OFFLINE.search(done.stdout + done.stderr):
        pytest.skip(f"the npm registry cannot be reached: {OFFLINE.search(done.stdout + done.stderr).group()}")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return zipfile.ZipFile(out)


def test_vsix_manifest(vsix):
    names = set(vsix.namelist())
    manifest = json.loads(vsix.read("extension/package.json"))
    assert manifest["name"] == "rankdoctor" and manifest["publisher"] == "rankdoctor"
    assert manifest["engines"]["vscode"] == "^1.91.0"
    assert "onLanguage:log" in manifest["activationEvents"]
    assert "workspaceContains:**/attempt_*/*/stderr.log" in manifest["activationEvents"]
    commands = {c["command"]: c["title"] for c in manifest["contributes"]["commands"]}
    assert commands == {"rankdoctor.diagnoseSelection": "Diagnose selection", "rankdoctor.diagnoseTerminal": "Diagnose terminal output"}
    settings = manifest["contributes"]["configuration"]["properties"]
    assert settings["rankdoctor.path"]["default"] == "rankdoctor"
    main = "extension/" + manifest["main"].removeprefix("./")
    assert main in names  # compiled by the prepublish step
    script = vsix.read(main).decode()
    assert '"lsp"' in script and "rankdoctor.diagnoseText" in script
    # the runtime dependency travels inside the package; the build tools do not
    assert "extension/node_modules/vscode-languageclient/package.json" in names
    assert not any(n.startswith(("extension/node_modules/typescript/", "extension/node_modules/@vscode/vsce/", "extension/src/")) for n in names)
    pinned = json.loads((EXT / "package-lock.json").read_text())["packages"]["node_modules/vscode-languageclient"]["version"]
    assert json.loads(vsix.read("extension/node_modules/vscode-languageclient/package.json"))["version"] == pinned == "11.0.0"
