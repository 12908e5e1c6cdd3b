"""Command line: ``rankdoctor diagnose|kb ...``. Heavy imports stay inside commands so
``rankdoctor --version`` starts fast."""

from __future__ import annotations

import os
import stat
import sys
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from . import __version__

PIPED_WIDTH = 200  # text output when stdout is not a terminal
_PLAIN = {"str": "TEXT", "int": "INT", "float": "FLOAT", "path": "PATH", "int range": "INT", "float range": "FLOAT"}


def _plain_help_types() -> None:
    """Typer 0.29 labels every parameter in --help with its Python annotation (`<bool>`,
    `<list[str]>`). Show what a user types instead: nothing for a switch, the metavar where one
    is given, the choices of a choice, TEXT / INT / PATH otherwise."""
    from typer import core

    original = core._TyperParameter.display_type

    def display_type(self, ctx):  # type: ignore[no-untyped-def]
        if getattr(self, "is_flag", False) or isinstance(self, core.TyperArgument) and self.metavar:
            return None
        if self.metavar:
            return self.metavar
        label = original(self, ctx).strip("<>")
        if label.startswith("list[") and label.endswith("]"):
            inner = label[5:-1]
            return _PLAIN.get(inner, inner.upper()) + "..."
        if "|" in label:
            return "[" + label + "]"
        return _PLAIN.get(label, label.upper())

    core._TyperParameter.display_type = display_type


_plain_help_types()

app = typer.Typer(
    name="rankdoctor",
    help="Find the rank that started a distributed-training failure, and say why.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
kb_app = typer.Typer(help="Browse the failure encyclopedia.", no_args_is_help=True)
app.add_typer(kb_app, name="kb")


class Format(str, Enum):
    text = "text"
    json = "json"
    markdown = "markdown"
    html = "html"
    github = "github"
    junit = "junit"


class Engine(str, Enum):
    local = "local"
    ray = "ray"


def _fail(msg: str) -> None:
    typer.echo(f"rankdoctor: error: {msg}", err=True)
    raise typer.Exit(2)


def _text_or_json(fmt: Format, command: str) -> None:
    """Refuse a --format the command cannot print."""
    if fmt not in (Format.text, Format.json):
        _fail(f"--format {fmt.value}: {command} prints text or json")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"rankdoctor {__version__}")
        raise typer.Exit(0)


@app.callback()
def _main(
    version: bool = typer.Option(False, "--version", "-V", callback=_version, is_eager=True, help="Show the version and exit."),
) -> None:
    pass


def _load_kb(entries: Optional[Path], check: bool = True):
    from .kb.loader import KBError, load_kb

    try:
        return load_kb(entries, check=check)
    except KBError as exc:
        first = str(exc).splitlines()[0]
        _fail(f"knowledge base is invalid: {first}")


def _loader(load):
    """What the main process does while scan workers run: load the knowledge base and
    import the engine that will read the scan."""

    def run() -> None:
        import importlib

        load()
        for module in ("rankdoctor.diagnose.engine", "rankdoctor.report.jsonout"):
            importlib.import_module(module)

    return run


@app.command()
def diagnose(
    paths: list[str] = typer.Argument(..., metavar="PATH", help="Log files, directories, archives (.gz .zst .tar .zip), s3:// gs:// file:// URLs (objects or prefixes), or - for stdin."),
    fmt: Format = typer.Option(Format.text, "--format", "-f", help="text, json (rankdoctor.diagnosis/v1), markdown, html, github (workflow-command annotations on the evidence lines) or junit (JUnit XML: the diagnosis as a failed test case)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the report to this file instead of stdout."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show the reasoning steps."),
    fr: Optional[list[str]] = typer.Option(None, "--fr", metavar="PATH", help="Flight Recorder dumps (files or folders) to use as evidence; dumps inside the log folders are found on their own."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, help="Processes to scan with (default: one per core; small inputs use one)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
    engine: Engine = typer.Option(Engine.local, "--engine", help="Where to scan: local (processes on this machine) or ray (tasks on a Ray cluster; needs the ray extra)."),
    address: Optional[str] = typer.Option(None, "--address", metavar="ADDR", help="With --engine ray: the cluster (default: $RAY_ADDRESS, else the one started on this machine, else a new local one)."),
    entries: Optional[Path] = typer.Option(None, "--entries", help="Use another knowledge-base directory.", hidden=True),
    save: bool = typer.Option(False, "--save/--no-save", help="Save this diagnosis to the local incident history (rankdoctor history); `save = true` in rankdoctor.toml makes it the default."),
    job: Optional[str] = typer.Option(None, "--job", metavar="NAME", help="Job name to save it under (default: from the first input's name)."),
    db: Optional[Path] = typer.Option(None, "--db", metavar="FILE", help="Incident history file (default: $RANKDOCTOR_HOME/history.sqlite3, else the user data folder)."),
    redact: bool = typer.Option(False, "--redact", help="Diagnose redacted copies: hosts, addresses, user names, e-mails and secrets in the report become consistent pseudonyms (host-3)."),
    redact_job_ids: bool = typer.Option(False, "--redact-job-ids", help="With --redact: replace SLURM job ids and Kubernetes pod names too."),
    hung: bool = typer.Option(False, "--hung", help="The job stopped making progress (it hung, or was killed while hung): read the logs as ending where it hung and say why, even when no line shows an error."),
) -> None:
    """Diagnose a failed or hung distributed run from its logs.

    Reports list similar past incidents from the local history (with the fix that worked) once one is saved.

    Exit status: 0 no failure found, 1 failure diagnosed, 3 failure evidence but
    inconclusive, 2 usage or input error.
    """
    from functools import cache

    if engine is Engine.ray:  # first: Ray's library cannot load after hyperscan's (remote/ray_engine.py)
        from .remote.ray_engine import EngineError, import_ray

        try:
            import_ray()
        except EngineError as exc:
            _fail(str(exc))
    elif address:
        _fail("--address is the Ray cluster's: use it with --engine ray")
    from .flightrec.load import DumpError
    from .ingest.sources import InputError
    from .parallel import progress_for, scan_parallel
    from .pipeline import diagnose_paths
    from .scan import scanner_for

    # The knowledge base is validated by `make check-kb` and the tests; here it is only
    # parsed (or taken from the cache). The scanner needs only its pattern table, cached on
    # its own, so on a large input the workers start scanning while this process loads
    # the knowledge base and the engine.
    if output:
        _refuse_input(output, [*paths, *(fr or [])])
    if (redact or redact_job_ids) and any("://" in p for p in paths):
        _fail("--redact reads local files only: copy the objects here first")
    load = cache(lambda: _load_kb(entries, check=False))
    bars = []

    def scan_with_progress(sources):
        bars.append(progress_for(sources, quiet))
        if engine is Engine.ray:
            from .remote.ray_engine import scan_ray
            from .scan import table_for

            return scan_ray(sources, table_for(entries, load), address, jobs, bars[-1], meanwhile=_loader(load))
        scanner = scanner_for(entries, load)
        return scan_parallel(None, sources, jobs=jobs, progress=bars[-1], scanner=scanner, meanwhile=_loader(load))

    try:
        if redact or redact_job_ids:
            from .redact import new_redactor
            from .redact.session import diagnose_redacted

            result, scan, dumps, _ = diagnose_redacted(
                paths, fr, new_redactor(redact_job_ids), lambda p, f: diagnose_paths(load, p, scan_with_progress, f, hung=hung))
        else:
            result, scan, dumps = diagnose_paths(load, paths, scan_with_progress, fr, hung=hung)
    except (InputError, DumpError) as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        raise typer.Exit(130)
    finally:
        for bar in bars:
            if bar:
                bar.close()
    text_inputs = [i for i in scan.inputs if i.bytes and not any("not a text log" in w for w in i.warnings)]
    if not text_inputs and not dumps and not scan.stacks and not scan.ras:
        reasons = [w for i in scan.inputs for w in i.warnings]
        if reasons:
            _fail(reasons[0])
        names = ", ".join(i.path for i in scan.inputs) or "input"
        _fail(f"{names}: empty input, nothing to diagnose")
    _with_history(result, paths, job, db, save)
    if fmt is Format.json:
        from .report.jsonout import render_json

        _emit(render_json(result) + "\n", output)
    elif fmt is Format.markdown:
        from .report.markdown import render_markdown

        _emit(render_markdown(result), output)
    elif fmt is Format.github:
        from .report.ci import render_github

        _emit(render_github(result), output)
    elif fmt is Format.junit:
        from .report.ci import render_junit

        _emit(render_junit(result), output)
    elif fmt is Format.html:
        from .report.html import render_html

        _emit(render_html(result, scan, load()), output)
    else:
        from rich.console import Console

        if output:
            from io import StringIO

            from .report.text import render_text

            buf = StringIO()
            render_text(result, Console(file=buf, width=120, color_system=None), verbose)
            _emit(buf.getvalue(), output)
        else:
            from .report.text import render_text

            # piped (tee, less, a CI log): wide enough that paths and log lines are not cut at
            # 80 columns; a terminal gets its own width
            width = None if sys.stdout.isatty() else PIPED_WIDTH
            render_text(result, Console(highlight=False, soft_wrap=False, width=width), verbose)
    raise typer.Exit(result.exit_code)


def _with_history(result, paths: list[str], job: Optional[str], db: Optional[Path], save: bool) -> None:
    """Similar past incidents into the report, and the report into the history (--save).
    A history that cannot be read only costs the lookup (a warning); one that cannot be
    written to with --save is an error."""
    from .history import HistoryError, attach

    try:
        saved = attach(result, paths, job=job, db=db, save=save)
    except HistoryError as exc:
        if save:
            _fail(str(exc))
        typer.echo(f"rankdoctor: warning: {exc}", err=True)
        return
    if saved is not None:
        typer.echo(f"rankdoctor: saved as incident {saved} (rankdoctor history show {saved})", err=True)


def _refuse_input(output: Path, inputs: list[str]) -> None:
    """A report never lands on an input: refuse an output path that is an input or lies
    inside a folder given as one (links resolved on both sides), or an existing file with
    other hard links (one of them may be a log)."""
    real = os.path.realpath(output)
    for given in inputs:
        if given == "-":
            continue
        top = os.path.realpath(given)
        if real == top or real.startswith(top.rstrip(os.sep) + os.sep):
            _fail(f"{output}: is an input or inside one ({given}); refusing to write the report there")
    try:
        st = os.stat(output)
    except OSError:
        return
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        _fail(f"{output}: has {st.st_nlink} hard links (one may be an input); refusing to write the report there")


def _emit(text: str, output: Optional[Path]) -> None:
    if output:
        try:
            output.write_text(text, encoding="utf-8", errors="surrogateescape")
        except OSError as exc:
            _fail(f"{output}: cannot write the report: {exc.strerror or exc}")
    else:
        sys.stdout.write(text)


@app.command()
def watch(
    paths: list[str] = typer.Argument(..., metavar="PATH", help="Growing log files, folders (a torchrun --log-dir: a new file is a new rank), or - for a pipe."),
    fmt: Format = typer.Option(Format.text, "--format", "-f", help="text (a live view on a terminal, one line per change otherwise) or json (a rankdoctor.diagnosis/v1 document per line on every change)."),
    silent_after: float = typer.Option(60.0, "--silent-after", min=0.1, metavar="SECONDS", help="Warn when a rank writes nothing for this long while the others write."),
    hung_after: Optional[float] = typer.Option(None, "--hung-after", min=0.1, metavar="SECONDS", help="When every rank has written nothing for this long, take the job to have hung and diagnose it as `diagnose --hung` does (for jobs that always print within this time; by default a silent job may also have finished)."),
    alert_webhook: Optional[str] = typer.Option(None, "--alert-webhook", metavar="URL", help="POST each change of the diagnosis (and of silent ranks) here: Alertmanager's webhook JSON with a Slack-style top-level text; retried with backoff."),
    on_diagnosis: Optional[str] = typer.Option(None, "--on-diagnosis", metavar="CMD", help="Run this shell command on each change of the diagnosis and when ranks go silent, with RANKDOCTOR_EVENT, _VERDICT, _ENTRY, _CLASS, _RANKS, _SILENT_RANKS and _JSON (a file) in its environment."),
    metrics_port: Optional[int] = typer.Option(None, "--metrics-port", min=0, max=65535, metavar="PORT", help="Serve Prometheus metrics on this port (all interfaces): fingerprint hits per entry and rank, seconds since each rank's last line, silent ranks, the diagnosis."),
    entries: Optional[Path] = typer.Option(None, "--entries", help="Use another knowledge-base directory.", hidden=True),
) -> None:
    """Follow a live run's logs and keep its diagnosis current.

    Follows growing files through rotation and truncation, new files in folders, and a pipe (kubectl logs -f --prefix ... | rankdoctor watch -). Warns when a rank goes silent while the others write.

    Ctrl-C or SIGTERM ends it with exit status 0; when a watched pipe ends, the exit status is diagnose's (0 no failure found, 1 diagnosed, 3 inconclusive).
    """
    _text_or_json(fmt, "watch")
    from rich.console import Console

    from .ingest.sources import InputError
    from .watch import Watcher
    from .watch.live import StopOnSignals, run

    with StopOnSignals() as stop:
        if stop.signalled:  # (during the imports)
            raise typer.Exit(0)
        kb = _load_kb(entries, check=False)
        try:
            watcher = Watcher(paths, kb=kb, entries=entries, silent_after=silent_after, hung_after=hung_after)
        except InputError as exc:
            _fail(str(exc))
        stop.attach(watcher)
        alerts = metrics = None
        if alert_webhook or on_diagnosis:
            from .watch.alerts import Alerts

            if alert_webhook and not alert_webhook.startswith(("http://", "https://")):
                _fail(f"--alert-webhook {alert_webhook}: not an http:// or https:// URL")
            alerts = Alerts(paths, kb=kb, webhook=alert_webhook, command=on_diagnosis)
            watcher.subscribe(alerts)
        if metrics_port is not None:
            from .watch.metrics import WatchMetrics

            metrics = WatchMetrics(kb)
            metrics.attach(watcher)
            try:
                port = metrics.serve(metrics_port)
            except OSError as exc:
                _fail(f"--metrics-port {metrics_port}: cannot listen: {exc.strerror or exc}")
            typer.echo(f"rankdoctor watch: Prometheus metrics on http://0.0.0.0:{port}/metrics", err=True)
        try:
            last = run(watcher, fmt.value, Console())
        finally:
            if alerts is not None:
                alerts.close()
            if metrics is not None:
                metrics.close()
    raise typer.Exit(0 if stop.signalled or last is None else last.diagnosis.exit_code)


@kb_app.command("list")
def kb_list(
    klass: Optional[str] = typer.Option(None, "--class", help="Only entries of this class."),
    tag: Optional[str] = typer.Option(None, "--tag", help="Only entries with this tag."),
    system: Optional[str] = typer.Option(None, "--system", help="Only entries that affect this system."),
    fmt: Format = typer.Option(Format.text, "--format", "-f"),
) -> None:
    """List the entries of the encyclopedia (one line each when the output is not a terminal)."""
    from .kb.taxonomy import CLASS_IDS

    if klass is not None and klass not in CLASS_IDS:
        _fail(f"--class {klass}: unknown class; the classes are: {', '.join(sorted(CLASS_IDS))}")
    _text_or_json(fmt, "kb list")
    kb = _load_kb(None)
    rows = [
        e
        for e in kb
        if (klass is None or e.class_ == klass) and (tag is None or tag in e.tags) and (system is None or system in e.systems)
    ]
    rows.sort(key=lambda e: (e.class_, e.id))
    if fmt is Format.json:
        import json

        typer.echo(
            json.dumps(
                [{"id": e.id, "title": e.title, "class": e.class_, "severity": e.severity.value, "tags": e.tags} for e in rows],
                indent=2,
            )
        )
        return
    if not sys.stdout.isatty():
        # piped (grep, less, a file): whole ids and titles, one entry a line, tab-separated
        for e in rows:
            typer.echo(f"{e.id}\t{e.class_}\t{e.severity.value}\t{e.title}")
        return
    from rich.console import Console
    from rich.table import Table

    t = Table(show_header=True, header_style="bold")
    t.add_column("id")
    t.add_column("class")
    t.add_column("severity")
    t.add_column("title")
    for e in rows:
        t.add_row(e.id, e.class_, e.severity.value, e.title)
    Console().print(t)
    typer.echo(f"{len(rows)} entries")


@kb_app.command("show")
def kb_show(entry_id: str = typer.Argument(..., help="Entry id (see `rankdoctor kb list`).")) -> None:
    """Print one entry in full."""
    kb = _load_kb(None)
    if entry_id not in kb:
        import difflib

        close = difflib.get_close_matches(entry_id, [e.id for e in kb], n=3)
        _fail(f"no entry {entry_id!r}" + (f"; did you mean: {', '.join(close)}" if close else ""))
    from .report.entry import render_entry

    render_entry(kb, kb.get(entry_id))


@kb_app.command("search")
def kb_search(text: str = typer.Argument(..., help="Words, or a pasted log line.")) -> None:
    """Find entries by words or by a pasted error line (entries whose signatures match come first)."""
    kb = _load_kb(None)
    from .kb.search import search

    hits = search(kb, text)
    if not hits:
        typer.echo("no matching entries")
        raise typer.Exit(1)
    hits = hits[:15]
    if not sys.stdout.isatty():
        # piped: whole ids and titles, one entry a line, tab-separated (as `kb list`)
        for _score, e, why in hits:
            typer.echo(f"{e.id}\t{e.class_}\t{e.title}\t{why}")
        return
    from rich.console import Console
    from rich.table import Table

    t = Table(show_header=True, header_style="bold")
    t.add_column("id", no_wrap=True)
    t.add_column("class")
    t.add_column("title")
    t.add_column("why it matched")
    for _score, e, why in hits:
        t.add_row(e.id, e.class_, e.title, why)
    Console().print(t)


@app.command("fr")
def flight_recorder(
    paths: list[str] = typer.Argument(..., metavar="PATH", help="Flight Recorder dump files, or folders holding them (one file per rank)."),
    fmt: Format = typer.Option(Format.text, "--format", "-f", help="text or json (schema rankdoctor.fr/v1)."),
    prefix: Optional[str] = typer.Option(None, "--prefix", help="File-name prefix before the rank number (default: inferred)."),
    rank: Optional[list[int]] = typer.Option(None, "--rank", metavar="RANK", help="Rank of each dump file, in the order given (overrides file names)."),
) -> None:
    """Find where the ranks' collectives parted in Flight Recorder dumps.

    Exit status: 0 consistent, 1 findings, 3 inconclusive, 2 input error.
    """
    _text_or_json(fmt, "fr")
    from .api import fr_dumps
    from .flightrec.analyze import analyze
    from .flightrec.load import DumpError

    try:
        dumps, problems = fr_dumps(paths, prefix=prefix, ranks=rank or None)
    except DumpError as exc:
        _fail(str(exc))
    report = analyze(dumps)
    if fmt is Format.json:
        import json

        typer.echo(json.dumps(report.to_json(), indent=2))
    else:
        from rich.console import Console

        from .flightrec.render import render_fr_text

        render_fr_text(report, Console(highlight=False), problems)
    raise typer.Exit(report.exit_code)


@app.command("stacks")
def stacks(
    paths: list[str] = typer.Argument(..., metavar="PATH", help="Stack dumps (py-spy text or --json, faulthandler), one per rank, or folders holding them; the rank is read from the file name (pyspy_rank3.txt)."),
    fmt: Format = typer.Option(Format.text, "--format", "-f", help="text or json."),
    depth: int = typer.Option(3, "--depth", min=1, max=20, help="Innermost frames that must agree for two ranks to be in one group."),
) -> None:
    """Group a hung job's ranks by stack; the odd ones out are suspects.

    Like STAT: the ranks that are somewhere else than the rest are the ones to look at.
    Exit status: 0 all in one place, 1 odd ranks found, 3 no clear majority, 2 input error.
    """
    _text_or_json(fmt, "stacks")
    from dataclasses import asdict

    from .api import stack_groups
    from .ingest.sources import InputError

    try:
        dumps, skipped, groups = stack_groups(paths, depth=depth)
    except InputError as exc:
        _fail(str(exc))
    odd = any(g.odd for g in groups)
    code = 0 if len(groups) == 1 else (1 if odd else 3)
    if fmt is Format.json:
        import json

        typer.echo(json.dumps({
            "schema": "rankdoctor.stacks/v1",
            "dumps": len(dumps),
            "groups": [asdict(g) for g in groups],
            "skipped": skipped,
        }, indent=2))
        raise typer.Exit(code)
    from .diagnose.collectives import compress_ranks

    kinds = sorted({d.fmt for d in dumps})
    typer.echo(f"rankdoctor stacks  ·  {len(dumps)} dump(s) ({', '.join(kinds)})  ·  {len(groups)} place(s)")
    for line in skipped:
        typer.echo(f"warning: {line}")
    for g in groups:
        n = len(g.ranks) + len(g.unranked_dumps)
        who = f"rank{'s' if len(g.ranks) > 1 else ''} {compress_ranks(g.ranks)}" if g.ranks else ""
        if g.unranked_dumps:
            who = (who + ", " if who else "") + ", ".join(Path(s).name for s in g.unranked_dumps)
        mark = "  <- the odd one(s) out" if g.odd else ""
        typer.echo(f"{n} process(es) [{who}]{mark}")
        for i, f in enumerate(g.frames):
            typer.echo(f"    {'in' if i == 0 else 'from'} {f}")
    if len(groups) > 1 and not odd:
        typer.echo("no place holds most ranks: compare the groups by hand")
    from .ingest.stacks import describe_waits, p2p_cycles, p2p_waits

    waits = p2p_waits(dumps)
    if cycle := p2p_cycles(waits):
        typer.echo(f"point-to-point wait cycle: {describe_waits(waits, cycle)} - ranks {compress_ranks(sorted(cycle))} wait on each other "
                   "(a send/recv order or pairing mismatch); the ranks waiting behind them are collateral")
        code = 1
    raise typer.Exit(code)


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (loopback by default: logs stay on this machine)."),
    port: int = typer.Option(8000, "--port", help="Port to listen on."),
    max_upload_mb: float = typer.Option(200.0, "--max-upload-mb", help="Largest request body accepted (413 above it)."),
    max_inflated_mb: float = typer.Option(1024.0, "--max-inflated-mb", help="Most that one request's .gz/.zst files may inflate to (413 above it)."),
    request_timeout: float = typer.Option(60.0, "--request-timeout", help="Seconds one diagnosis may take; past it the request gets 503 and its worker is killed."),
    workers: int = typer.Option(0, "--workers", help="Diagnosis worker processes (0: one per core, at most 4)."),
    watch: Optional[list[str]] = typer.Option(None, "--watch", metavar="PATH", help="Follow this live run's logs (a folder or a file; repeat for more) as rankdoctor watch does, and show its diagnosis at /watch, updated as it changes."),
    watch_hung_after: Optional[float] = typer.Option(None, "--watch-hung-after", min=0.1, metavar="SECONDS", help="With --watch: once no watched file has had a line for this long, take the run to have hung (as rankdoctor watch --hung-after)."),
    db: Optional[Path] = typer.Option(None, "--db", metavar="FILE", help="Incident history shown at /history (default: the one rankdoctor history uses)."),
) -> None:
    """Run the local web app: paste logs, get the diagnosis.

    The page shows the per-rank timeline of a diagnosis. Nothing is fetched from the internet. With --watch, /watch shows a live run's diagnosis and timeline and updates itself (server-sent events).
    """
    import socket

    from .web.limits import Limits

    try:
        limits = Limits(max_upload_bytes=int(max_upload_mb * 1024 * 1024), max_inflated_bytes=int(max_inflated_mb * 1024 * 1024),
                        request_timeout=request_timeout, **({"workers": workers} if workers else {}))
    except ValueError as exc:
        _fail(str(exc))

    # a port in use is an input error: one line and exit 2, before any banner
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as exc:
        _fail(f"{host}:{port}: cannot listen there ({exc.strerror or exc}); pick another --port")
    kb = _load_kb(None)
    from .ingest.sources import InputError
    from .web.app import serve as run_server

    try:
        if watch_hung_after is not None and not watch:
            _fail("--watch-hung-after goes with --watch")
        run_server(kb, host=host, port=port, limits=limits, watch=watch or None, history=db, watch_hung_after=watch_hung_after)
    except InputError as exc:  # a --watch path that is not there
        _fail(str(exc))


@app.command()
def schema(
    name: str = typer.Argument(..., help="diagnosis, fr, stacks, incident, compare or redact."),
) -> None:
    """Print the JSON Schema of a document rankdoctor writes.

    diagnosis (rankdoctor.diagnosis/v1, `diagnose --format json`), fr (rankdoctor.fr/v1),
    stacks (rankdoctor.stacks/v1), incident (rankdoctor.incident/v1, a line of `history
    export`), compare (rankdoctor.compare/v1) or redact (rankdoctor.redact/v1).
    """
    import json

    from .schemas import DOCUMENTS, json_schema

    if name not in DOCUMENTS:
        _fail(f"{name}: unknown document; the documents are: {', '.join(DOCUMENTS)}")
    typer.echo(json.dumps(json_schema(name), indent=2))


@app.command()
def site(out_dir: Path = typer.Argument(..., help="Folder to write the static encyclopedia into.")) -> None:
    """Build the static encyclopedia (entries, NCCL error hub, search).

    Index by class and system, a page per entry, the NCCL error hub, and a search that works
    offline.
    """
    kb = _load_kb(None)
    from .site.build import SiteError, build_site

    try:
        files = build_site(kb, out_dir)
    except SiteError as exc:
        _fail(str(exc))
    typer.echo(f"wrote {len(files)} files to {out_dir}/ — open {out_dir / 'index.html'}")


class RulesFormat(str, Enum):
    prometheus = "prometheus"
    loki = "loki"


@app.command()
def rules(
    fmt: RulesFormat = typer.Option(RulesFormat.prometheus, "--format", "-f", help="prometheus (alerting rules over watch's metrics) or loki (ruler rules with LogQL line filters)."),
    entry: Optional[list[str]] = typer.Option(None, "--entry", metavar="ID", help="Only this entry (repeat for more); default: every entry with a cause signature."),
    selector: str = typer.Option("{job=~\".+\"}", "--selector", metavar="LOGQL", help="Loki: the stream selector the rules read (e.g. '{namespace=\"training\"}')."),
) -> None:
    """Export the encyclopedia's cause fingerprints as alerting rules.

    Prometheus rules over the metrics of `rankdoctor watch --metrics-port` (check them with promtool check rules), or Loki ruler rules whose line filters are the literal parts of each cause signature.
    """
    from .rules import render

    kb = _load_kb(None)
    if not (selector.startswith("{") and selector.endswith("}")):
        _fail(f"--selector {selector}: a LogQL stream selector is written in braces, e.g. '{{job=\"train\"}}'")
    try:
        sys.stdout.write(render(kb, fmt.value, entry or None, selector))
    except KeyError as exc:
        _fail(f"--entry {exc.args[0]}: no such entry (see `rankdoctor kb list`)")
    except ValueError as exc:
        _fail(f"--entry {exc}")


# -- the incident history and run comparison (history/) ------------------------------------

history_app = typer.Typer(help="The local incident history: saved diagnoses and what fixed them.", no_args_is_help=True)
app.add_typer(history_app, name="history")
_DB_HELP = "Incident history file (default: $RANKDOCTOR_HOME/history.sqlite3, else the user data folder)."


def _history(db: Optional[Path]):
    from .history import History

    return History(db)


def _history_call(fn):
    """Run ``fn``; a HistoryError is a one-line error."""
    from .history import HistoryError

    try:
        return fn()
    except HistoryError as exc:
        _fail(str(exc))


@history_app.command("list")
def history_list(
    fmt: Format = typer.Option(Format.text, "--format", "-f", help="text or json (a list of rankdoctor.incident/v1 documents with their ids)."),
    entry: Optional[str] = typer.Option(None, "--entry", metavar="ID", help="Only incidents of this entry."),
    limit: int = typer.Option(50, "--limit", min=1, help="Newest this many."),
    db: Optional[Path] = typer.Option(None, "--db", metavar="FILE", help=_DB_HELP),
) -> None:
    """List the saved incidents, newest first (one line each when piped)."""
    _text_or_json(fmt, "history list")
    rows = [i for i in _history_call(_history(db).all) if entry is None or i.entry == entry][:limit]
    if fmt is Format.json:
        import json

        typer.echo(json.dumps([{"id": i.id, **i.to_json()} for i in rows], indent=2, ensure_ascii=False))
        return
    from .history import render

    if not sys.stdout.isatty():
        for line in render.list_lines(rows):
            typer.echo(line)
        return
    from rich.console import Console

    render.list_table(rows, Console(highlight=False))


@history_app.command("show")
def history_show(
    incident: int = typer.Argument(..., metavar="ID", help="Incident number (see rankdoctor history list)."),
    fmt: Format = typer.Option(Format.text, "--format", "-f", help="text or json (rankdoctor.incident/v1, the saved report inside)."),
    db: Optional[Path] = typer.Option(None, "--db", metavar="FILE", help=_DB_HELP),
) -> None:
    """Show one incident: what it was, where it started, and the fix that worked."""
    _text_or_json(fmt, "history show")
    found = _history_call(lambda: _history(db).get(incident))
    if fmt is Format.json:
        import json

        typer.echo(json.dumps(found.to_json(), indent=2, ensure_ascii=False))
        return
    from rich.console import Console

    from .history import render

    render.show(found, Console(highlight=False, width=None if sys.stdout.isatty() else PIPED_WIDTH))


@history_app.command("resolve")
def history_resolve(
    incident: int = typer.Argument(..., metavar="ID", help="Incident number (see rankdoctor history list)."),
    fix: str = typer.Option(..., "--fix", metavar="TEXT", help="What fixed it (a later resolve replaces it)."),
    db: Optional[Path] = typer.Option(None, "--db", metavar="FILE", help=_DB_HELP),
) -> None:
    """Record what fixed an incident; similar incidents' reports will show it."""
    done = _history_call(lambda: _history(db).resolve(incident, fix))
    typer.echo(f"incident {done.id} ({done.job}, {done.entry or done.verdict}): fixed by: {done.fix}")


@history_app.command("export")
def history_export(
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write to this file instead of stdout."),
    db: Optional[Path] = typer.Option(None, "--db", metavar="FILE", help=_DB_HELP),
) -> None:
    """Write every incident as JSON lines (rankdoctor.incident/v1), oldest first, to share one history."""
    import json

    rows = _history_call(_history(db).all)
    text = "".join(json.dumps(i.to_json(), ensure_ascii=False) + "\n" for i in reversed(rows))
    _emit(text, output)
    if output:
        typer.echo(f"exported {len(rows)} incident(s) to {output}", err=True)


@history_app.command("import")
def history_import(
    files: list[str] = typer.Argument(..., metavar="FILE", help="JSON lines written by rankdoctor history export, or - for stdin."),
    db: Optional[Path] = typer.Option(None, "--db", metavar="FILE", help=_DB_HELP),
) -> None:
    """Add the incidents of an export; ones already here (same uid) are skipped, a fix they lack is taken."""
    from .history.exchange import ExchangeError, read_jsonl

    try:
        incidents = read_jsonl(files)
    except ExchangeError as exc:
        _fail(str(exc))
    added, fixed, same = _history_call(lambda: _history(db).merge(incidents))
    typer.echo(f"imported {added} new incident(s); {fixed} fix(es) taken for incidents already here; {same} already here")


@app.command()
def compare(
    run_a: str = typer.Argument(..., metavar="RUN_A", help="A run's logs (a file or folder), or a history incident number."),
    run_b: str = typer.Argument(..., metavar="RUN_B", help="The run to compare with it, the same way."),
    fmt: Format = typer.Option(Format.text, "--format", "-f", help="text or json (rankdoctor.compare/v1)."),
    db: Optional[Path] = typer.Option(None, "--db", metavar="FILE", help=_DB_HELP),
) -> None:
    """Tell whether two runs failed the same way, and what differs.

    Same failure means the same top entry and evidence at least half alike (Jaccard of the templated evidence lines). Exit status: 0 same failure, 1 different failures, 2 usage or input error.
    """
    _text_or_json(fmt, "compare")
    from .history.sides import SideError, load_side

    try:
        a, b = (load_side(arg, db) for arg in (run_a, run_b))
    except SideError as exc:
        _fail(str(exc))
    from .history.compare import Comparison

    c = Comparison(a, b)
    if fmt is Format.json:
        import json

        typer.echo(json.dumps(c.to_json(), indent=2, ensure_ascii=False))
    else:
        from rich.console import Console

        from .history.render import compare_text

        compare_text(c, Console(highlight=False, width=None if sys.stdout.isatty() else PIPED_WIDTH))
    raise typer.Exit(c.exit_code)


@app.command()
def lsp(
    entries: Optional[Path] = typer.Option(None, "--entries", help="Use another knowledge-base directory.", hidden=True),
) -> None:
    """Language server (stdio): failed runs' logs marked in your editor.

    Opening or saving a log (*.log, *.out, *.err, *.txt, a torchrun --log-dir tree) diagnoses its run: the initiating line is marked as an error, collateral lines on other ranks as information linked to it; hover shows the fix. See the README's editor sections.
    """
    if entries is not None:
        _load_kb(entries, check=False)  # a broken folder is one line here, not a server that fails later
    from .lsp.server import serve_stdio

    serve_stdio(str(entries) if entries is not None else None)


@app.command("redact")
def redact_cmd(
    paths: list[str] = typer.Argument(..., metavar="PATH", help="Log files and folders (a run's logs, Flight Recorder dumps); .gz/.zst and archives are written unpacked."),
    out: Path = typer.Option(..., "--output", "-o", metavar="OUT", help="A new (or empty) folder for the redacted copies; never inside an input."),
    job_ids: bool = typer.Option(False, "--job-ids", help="Replace SLURM job ids and Kubernetes pod names too."),
    fmt: Format = typer.Option(Format.text, "--format", "-f", help="text or json (what was written, skipped and replaced)."),
) -> None:
    """Copy logs with hosts, addresses, users and secrets pseudonymized.

    Each value gets one pseudonym across all files (host-3 everywhere), so the copies
    diagnose as the originals do. The inputs are only read. Exit status: 0 done, 2 input error.
    """
    _text_or_json(fmt, "redact")
    from .ingest.sources import InputError
    from .redact import new_redactor, redact_paths

    if "-" in paths:
        _fail("redact reads files and folders, not stdin; save the stream to a file first")
    try:
        done = redact_paths(paths, out, new_redactor(job_ids))
    except InputError as exc:
        _fail(str(exc))
    except OSError as exc:
        _fail(f"{out}: cannot write: {exc.strerror or exc}")
    if fmt is Format.json:
        import json

        typer.echo(json.dumps({"schema": "rankdoctor.redact/v1", "output": str(out), "written": [str(p) for p in done.written],
                               "skipped": done.skipped, "replaced": done.replaced}, indent=2))
        return
    kinds = ", ".join(f"{n} {k}" for k, n in done.replaced.items()) or "nothing"
    typer.echo(f"wrote {len(done.written)} redacted file(s) to {out}/; replaced {kinds}")
    for line in done.skipped:
        typer.echo(f"skipped: {line}")


@app.command()
def check(
    command: Optional[list[str]] = typer.Argument(None, metavar="-- TORCHRUN_COMMAND...", help="The job, e.g. -- torchrun --nproc-per-node 2 train.py --lr 0.1"),
    steps: int = typer.Option(20, "--steps", min=1, help="Stop the job cleanly after this many optimizer steps."),
    uneven: bool = typer.Option(False, "--uneven", help="Give ranks >= 1 partial DataLoader batches at different steps."),
    timeout: float = typer.Option(600.0, "--timeout", min=1.0, metavar="SECONDS", help="Stop the job after this long."),
    keep: Optional[Path] = typer.Option(None, "--keep", metavar="DIR", help="Keep the job's console log and Flight Recorder dumps here."),
) -> None:
    """Pre-flight: run a torchrun job N steps under the collective guard.

    Exit status 0 when no rank issued an asymmetric collective, 1 with the diagnosis, 3 when the job failed and nothing explains it. Run it in CI on every dependency change.
    """
    from .guard.check import CheckError, run_check

    try:
        outcome = run_check(list(command or []), steps, uneven, timeout, keep)
    except CheckError as exc:
        _fail(str(exc))
    typer.echo(f"rankdoctor check: {outcome.summary}")
    raise typer.Exit(outcome.status)


def main() -> None:
    from .config import ConfigError, default_map

    try:
        defaults = default_map()
    except ConfigError as exc:
        typer.echo(f"rankdoctor: error: {exc}", err=True)
        sys.exit(2)
    try:
        app(prog_name="rankdoctor", default_map=defaults)
    except KeyboardInterrupt:
        sys.exit(130)
    except SystemExit:
        raise
    except BaseException as exc:  # never a traceback for the user
        if os.environ.get("RANKDOCTOR_DEBUG"):
            raise
        typer.echo(f"rankdoctor: error: {type(exc).__name__}: {exc}", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
