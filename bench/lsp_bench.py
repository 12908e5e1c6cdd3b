"""Does `rankdoctor lsp` stay responsive while it diagnoses a large run, and does a second save
stop the first one's stale diagnosis? (issue 16)

One server, driven by pygls's own client over stdio:

1. the workspace is a small real run (lab/compile-desync); once its marks are published,
   hovers on its initiating line are timed with the server idle (the baseline);
2. the folder of a large generated run (bench/gen_corpus.py: per-rank logs ending in a real
   failure) is added to the workspace: the same hovers are timed while that run is diagnosed, until its marks
   arrive (the time that takes is set beside `rankdoctor diagnose` on the same folder, run
   on its own);
3. the large file is saved twice, SECOND_SAVE seconds apart: the time from the second save to
   its marks, and how many times the large run's marks were published after the saves (1:
   the first save's diagnosis was stopped, its answer never published).

    python bench/lsp_bench.py [--ranks 16] [--total-mb 256] [--out bench/lsp.md]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

ROOT = Path(__file__).resolve().parents[1]
SMALL = ROOT / "tests/scenarios/lab/compile-desync/logs"
SMALL_FILE = SMALL / "compile-desync_ydzxd7f5/attempt_0/1/stderr.log"
SMALL_LINE = 57
SECOND_SAVE = 1.0


NOTE = (
    "How to read it: the `diagnose` row is a process of its own (interpreter start, knowledge base "
    "from the cache, the scan, the engine); the server's row is its warm worker's scan and engine "
    "plus the marks. The hovers are answered by the server's own process from the marks it holds, "
    "so the diagnosis in the worker does not hold them up; what they show besides is the "
    "machine's load. The second save stops the first save's diagnosis: its worker is killed and "
    "a new one started (knowledge base again, from the cache) before the second runs; the row "
    "includes that."
)


class Client(LanguageClient):
    def __init__(self) -> None:
        super().__init__("lsp-bench", "1")
        self.published: list[tuple[float, str, list]] = []
        self.event = asyncio.Event()

        @self.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
            self.published.append((time.monotonic(), params.uri, params.diagnostics))
            self.event.set()

        @self.feature(types.WINDOW_SHOW_MESSAGE)
        def on_message(params: types.ShowMessageParams) -> None:
            print("server:", params.message, file=sys.stderr)


async def until(client: Client, check, timeout: float = 600) -> float:
    end = time.monotonic() + timeout
    while not check():
        client.event.clear()
        left = end - time.monotonic()
        if left <= 0:
            raise TimeoutError("no such diagnostics")
        try:
            await asyncio.wait_for(client.event.wait(), left)
        except asyncio.TimeoutError:
            pass
    return time.monotonic()


async def hover_ms(client: Client) -> float:
    t = time.perf_counter()
    h = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(from_fs_path(str(SMALL_FILE))), types.Position(SMALL_LINE, 3))
    )
    assert h is not None, "no hover on the small run's initiating line"
    return (time.perf_counter() - t) * 1000


MARKED = (types.DiagnosticSeverity.Error, types.DiagnosticSeverity.Warning)  # the initiating line (warning: inconclusive)


def has_error(client: Client, uri_prefix: str, after: float = 0.0) -> bool:
    """The initiating line of a run under ``uri_prefix`` was published (after ``after``)."""
    return any(t >= after and u.startswith(uri_prefix) and any(d.severity in MARKED for d in ds) for t, u, ds in client.published)


async def bench(big: Path, big_file: Path) -> dict:
    client = Client()
    await client.start_io(sys.executable, "-m", "rankdoctor.cli", "lsp")
    await client.initialize_async(
        types.InitializeParams(capabilities=types.ClientCapabilities(), workspace_folders=[types.WorkspaceFolder(from_fs_path(str(SMALL)), "small")])
    )
    client.initialized(types.InitializedParams())
    small_uri = from_fs_path(str(SMALL))
    await until(client, lambda: has_error(client, small_uri))
    idle = [await hover_ms(client) for _ in range(30)]

    big_uri = from_fs_path(str(big))
    t0 = time.monotonic()
    # the large run's folder joins the workspace: its per-rank files are one run, diagnosed now
    client.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(
        types.WorkspaceFoldersChangeEvent(added=[types.WorkspaceFolder(big_uri, "big")], removed=[])))
    busy = []
    while not has_error(client, big_uri):
        busy.append(await hover_ms(client))
        await asyncio.sleep(0.1)
    first = await until(client, lambda: has_error(client, big_uri)) - t0

    t_save = time.monotonic()
    params = types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(from_fs_path(str(big_file))))
    client.text_document_did_save(params)
    await asyncio.sleep(SECOND_SAVE)
    t_second = time.monotonic()
    client.text_document_did_save(params)
    done = await until(client, lambda: has_error(client, big_uri, after=t_save))
    await asyncio.sleep(first + 2)  # long enough for a stale answer to arrive, were it sent
    big_file_uri = from_fs_path(str(big_file))
    publishes = len({round(t, 3) for t, u, ds in client.published if t >= t_save and u.startswith(big_uri)})
    errors_after = sum(1 for t, u, ds in client.published if t >= t_save and any(d.severity in MARKED for d in ds))
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return {
        "idle": idle, "busy": busy, "first": first, "second": done - t_second,
        "publish_batches": publishes, "error_publishes": errors_after, "big_file_uri": big_file_uri,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=16)
    ap.add_argument("--total-mb", type=int, default=256)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="lsp-bench-") as tmp:
        big = Path(tmp) / "run"
        subprocess.run([sys.executable, str(ROOT / "bench/gen_corpus.py"), str(big), "--ranks", str(args.ranks), "--total-mb", str(args.total_mb)], check=True)
        files = sorted(p for p in big.rglob("*") if p.is_file())
        size = sum(p.stat().st_size for p in files)
        t = time.monotonic()
        cli = subprocess.run([sys.executable, "-m", "rankdoctor.cli", "diagnose", str(big), "-q", "--jobs", "1", "--format", "json"], capture_output=True)
        cli_s = time.monotonic() - t
        r = asyncio.run(bench(big, files[0]))
    load = os.getloadavg()
    q = lambda xs, p: sorted(xs)[min(len(xs) - 1, int(p * len(xs)))]  # noqa: E731
    lines = [
        f"# rankdoctor lsp: responsiveness on a large run ({time.strftime('%Y-%m-%d')})",
        "",
        f"`python bench/lsp_bench.py --ranks {args.ranks} --total-mb {args.total_mb}` on this project's machine "
        f"({os.cpu_count()} cores shared with other work, load average {load[0]:.1f} at the end). "
        f"Large run: {len(files)} files, {size / 2**20:.0f} MiB (bench/gen_corpus.py). "
        f"Small run: lab/compile-desync, hovered on rank 1's initiating line.",
        "",
        "| what | value |",
        "|---|---|",
        f"| `rankdoctor diagnose` on the large run alone, `--jobs 1` (exit {cli.returncode}) | {cli_s:.1f} s |",
        f"| server: large run's folder added to the workspace -> its marks published | {r['first']:.1f} s |",
        f"| hover while idle: median / p95 / max ({len(r['idle'])} hovers) | {statistics.median(r['idle']):.0f} / {q(r['idle'], .95):.0f} / {max(r['idle']):.0f} ms |",
        f"| hover while the large run is diagnosed: median / p95 / max ({len(r['busy'])} hovers) | "
        f"{statistics.median(r['busy']):.0f} / {q(r['busy'], .95):.0f} / {max(r['busy']):.0f} ms |" if r["busy"] else "| hover while busy | (none: the marks came first) |",
        f"| two saves {SECOND_SAVE:g} s apart: second save -> marks published | {r['second']:.1f} s |",
        f"| publishes carrying the initiating mark after the saves (1 = the stale diagnosis was stopped) | {r['error_publishes']} |",
        "",
        NOTE,
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
