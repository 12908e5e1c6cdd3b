"""`rankdoctor lsp` end to end: pytest-lsp's client talks LSP to the real server process over
stdio, on a real 4-rank torchrun run (lab/compile-desync: rank 1's gloo enforce failure,
ranks 0 and 2 see the connection close), and on a copy of a real run that is edited and saved."""

from __future__ import annotations

import ast
import asyncio
import shutil
import sys
from pathlib import Path

import pytest

pytest_lsp = pytest.importorskip("pytest_lsp", reason="pytest-lsp is not installed (pip install -e '.[test]')")
from lsprotocol import types  # noqa: E402
from pygls.uris import from_fs_path  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

from rankdoctor.kb.loader import load_kb  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "tests/scenarios/lab/compile-desync/logs"
TREE = RUN / "compile-desync_ydzxd7f5/attempt_0"
ENTRY = "collective-sequence-mismatch"
# the initiating line: rank 1's gloo enforce failure (line 58, 0-based 57)
INITIATING = (TREE / "1/stderr.log", 57)
COLLATERAL = [(TREE / "0/stderr.log", 66), (TREE / "2/stderr.log", 66)]
REAL_LOG = ROOT / "tests/scenarios/real/comms-11-peer-crash-funasr-rank2-oom/log.txt"

pytestmark = pytest.mark.asyncio(loop_scope="module")


def uri(path: Path) -> str:
    return from_fs_path(str(path))


async def wait_for(client: LanguageClient, path: Path, check=lambda diags: bool(diags), timeout: float = 60) -> list[types.Diagnostic]:
    """The diagnostics published for ``path`` once ``check`` holds for them."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while True:
        diags = list(client.diagnostics.get(uri(path), []))
        if check(diags):
            return diags
        left = end - loop.time()
        assert left > 0, f"no diagnostics for {path} after {timeout} s: {client.diagnostics.keys()}"
        try:
            await asyncio.wait_for(client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), left)
        except asyncio.TimeoutError:
            pass


def command_of(action) -> types.Command:
    """The command of a code action as the server sent it. lsprotocol 2025.0.0's client-side
    hook structures any object with a "command" key as a Command, so a CodeAction that carries
    a command arrives as a Command whose ``command`` is the repr of the real one."""
    if isinstance(action, types.CodeAction):
        return action.command
    raw = ast.literal_eval(action.command)
    return types.Command(raw["title"], raw["command"], arguments=raw.get("arguments"))


def open_doc(client: LanguageClient, path: Path) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri(path), "log", 1, path.read_text(errors="replace")))
    )


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=[sys.executable, "-m", "rankdoctor.cli", "lsp"]))
async def client(lsp_client: LanguageClient):
    caps = pytest_lsp.client_capabilities("visual-studio-code")
    await lsp_client.initialize_session(
        types.InitializeParams(capabilities=caps, workspace_folders=[types.WorkspaceFolder(uri(RUN), "logs")])
    )
    yield
    await lsp_client.shutdown_session()


async def test_workspace_run_marks_initiating_and_collateral_lines(client: LanguageClient):
    # opening the log folder is enough: its run is diagnosed without a file being opened
    path, line = INITIATING
    diags = await wait_for(client, path)
    errors = [d for d in diags if d.severity == types.DiagnosticSeverity.Error]
    assert [(d.range.start.line, d.code, d.source) for d in errors] == [(line, ENTRY, "rankdoctor")]
    assert "rank 1 started it" in errors[0].message
    assert errors[0].range.end.character > 40  # the whole line, not an empty range
    linked = {(d.location.uri, d.location.range.start.line) for d in errors[0].related_information}
    assert {(uri(p), n) for p, n in COLLATERAL} <= linked
    for p, n in COLLATERAL:
        theirs = await wait_for(client, p)
        info = [d for d in theirs if d.range.start.line == n]
        assert info and info[0].severity == types.DiagnosticSeverity.Information, theirs
        assert info[0].code == ENTRY and "collateral on rank" in info[0].message
        back = info[0].related_information[0].location
        assert (back.uri, back.range.start.line) == (uri(path), line)  # across files, to rank 1's line
    # a file of the run that holds no evidence gets nothing
    assert not client.diagnostics.get(uri(TREE / "3/stdout.log"))


async def test_open_file_keeps_the_run_answer(client: LanguageClient):
    path, line = COLLATERAL[0]
    open_doc(client, path)
    diags = await wait_for(client, path)
    assert any(d.range.start.line == line for d in diags)


async def test_hover_shows_summary_fix_and_verify(client: LanguageClient):
    path, line = INITIATING
    await wait_for(client, path)
    entry = load_kb().get(ENTRY)
    hover = await client.text_document_hover_async(types.HoverParams(types.TextDocumentIdentifier(uri(path)), types.Position(line, 5)))
    text = hover.contents.value
    assert hover.contents.kind == types.MarkupKind.Markdown
    assert "**Summary.**" in text and " ".join(entry.summary.split())[:40] in text.replace("\\", "")
    assert "**Fix**" in text and "**Verify:**" in text
    assert entry.verify.partition("  # ")[0].strip()[:30] in text
    nothing = await client.text_document_hover_async(types.HoverParams(types.TextDocumentIdentifier(uri(path)), types.Position(0, 0)))
    assert nothing is None


async def test_code_actions_open_entry_and_copy_verify(client: LanguageClient):
    path, line = INITIATING
    diags = await wait_for(client, path)
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            types.TextDocumentIdentifier(uri(path)),
            types.Range(types.Position(line, 0), types.Position(line, 0)),
            types.CodeActionContext(diagnostics=[d for d in diags if d.range.start.line == line]),
        )
    )
    titles = [a.title for a in actions]
    assert titles[0] == f"rankdoctor: Open the encyclopedia entry {ENTRY}"
    assert titles[1].startswith("rankdoctor: Copy the verify command")
    opened = command_of(actions[0])
    url = await client.workspace_execute_command_async(types.ExecuteCommandParams(opened.command, opened.arguments))
    assert url.startswith("file://") and url.endswith(f"/entries/{ENTRY}.html")
    assert client.shown_documents[-1].uri == url and client.shown_documents[-1].external
    page = Path(url[len("file://"):])
    assert page.is_file() and load_kb().get(ENTRY).title.split()[0] in page.read_text()
    copy = command_of(actions[1])
    verify = await client.workspace_execute_command_async(types.ExecuteCommandParams(copy.command, copy.arguments))
    assert verify == load_kb().get(ENTRY).verify.partition("  # ")[0].strip()
    assert any(verify in m.message for m in client.messages)


async def test_diagnose_text_returns_markdown(client: LanguageClient):
    text = REAL_LOG.read_text()
    md = await client.workspace_execute_command_async(types.ExecuteCommandParams("rankdoctor.diagnoseText", [text]))
    assert md.startswith("## rankdoctor: Diagnosed")
    assert "| Class | `cuda-oom` |" in md and "| Initiating rank | 2" in md
    assert "`selection:" in md and "rankdoctor-lsp-" not in md  # the temporary file is not named
    with pytest.raises(Exception, match="nothing to diagnose"):
        await client.workspace_execute_command_async(types.ExecuteCommandParams("rankdoctor.diagnoseText", ["  \n"]))


async def test_per_rank_files_in_an_added_workspace_folder(client: LanguageClient, tmp_path_factory):
    # the same real run as per-rank files side by side (rank_<n>.log), a folder added to the
    # workspace: opening rank 0's file diagnoses the files beside it, and rank 1's is marked
    flat = tmp_path_factory.mktemp("lsp-flat")
    for rank in range(4):
        shutil.copy(TREE / f"{rank}/stderr.log", flat / f"rank_{rank}.log")
    client.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(types.WorkspaceFoldersChangeEvent(added=[types.WorkspaceFolder(uri(flat), "flat")], removed=[]))
    )
    open_doc(client, flat / "rank_0.log")
    diags = await wait_for(client, flat / "rank_1.log")
    assert [(d.range.start.line, d.code) for d in diags if d.severity == types.DiagnosticSeverity.Error] == [(57, ENTRY)]
    theirs = await wait_for(client, flat / "rank_0.log")
    assert any(d.range.start.line == 66 and d.severity == types.DiagnosticSeverity.Information for d in theirs)


async def test_save_rediagnoses_and_the_last_save_wins(client: LanguageClient, tmp_path_factory):
    # a copy of a real 2-rank run outside the workspace: rank 1's shape mismatch, rank 0 collateral
    src = ROOT / "tests/scenarios/lab/ddp-model-mismatch/logs"
    run = tmp_path_factory.mktemp("lsp-run") / "logs"
    shutil.copytree(src, run)
    rank1 = next(run.glob("*/attempt_0/1/stderr.log"))
    open_doc(client, rank1)
    diags = await wait_for(client, rank1, lambda ds: any(d.severity == types.DiagnosticSeverity.Error for d in ds))
    first = [d for d in diags if d.severity == types.DiagnosticSeverity.Error][0]
    assert first.code == "ddp-param-shape-mismatch" and first.range.start.line == 14
    # two saves in a row: 10 lines put before the cause, then 20. The first diagnosis is
    # stopped or its answer dropped; only the last save's lines are published
    original = rank1.read_text()
    for pad in (10, 20):
        rank1.write_text("".join(f"[rank1]: padding {i}\n" for i in range(pad)) + original)
        client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri(rank1))))
    diags = await wait_for(client, rank1, lambda ds: any(d.range.start.line == 34 for d in ds))
    assert [d.range.start.line for d in diags if d.severity == types.DiagnosticSeverity.Error] == [34]
    await asyncio.sleep(1)  # nothing stale arrives after it
    assert [d.range.start.line for d in client.diagnostics[uri(rank1)] if d.severity == types.DiagnosticSeverity.Error] == [34]
