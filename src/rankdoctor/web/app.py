"""``rankdoctor serve``: the FastAPI app and the server that runs it."""

from __future__ import annotations

import json
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response, StreamingResponse
from fastapi.staticfiles import StaticFiles
from jinja2 import PackageLoader
from markupsafe import Markup
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import __version__
from ..history.store import History
from ..kb.loader import KnowledgeBase
from ..report.html import asset, make_env
from ..site.build import build_site
from .api import make_router
from .guard import TOKEN_HEADER, Guard
from .history import make_history_router
from .limits import BodyLimit, HeaderTimeoutH11, Limits, megabytes
from .samples import find_samples
from .state import AppState
from .watching import WatchedRun

HERE = Path(__file__).parent
SHUTDOWN_GRACE = 2  # seconds the requests in flight get to finish once SIGTERM/SIGINT arrives
MAX_CONNECTIONS = 256  # open connections and requests; uvicorn answers 503 past it


def _build_kb_site(kb: KnowledgeBase) -> tempfile.TemporaryDirectory:
    """The static encyclopedia, built once at startup by the same generator as
    `rankdoctor site`; its links are relative, so it works under /kb/ as it is. Each
    page gets a link back to the diagnose page."""
    tmp = tempfile.TemporaryDirectory(prefix="rankdoctor-site-")
    out = Path(tmp.name)
    build_site(kb, out)
    for page in out.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        page.write_text(html.replace("<nav>", '<nav>\n    <a href="/">Diagnose a log</a>', 1), encoding="utf-8")
    return tmp


def create_app(kb: KnowledgeBase, limits: Limits | None = None, host: str = "127.0.0.1", watch: list[str] | None = None,
               history: Path | None = None, watch_hung_after: float | None = None) -> FastAPI:
    """The app. ``limits`` bounds what it admits (``limits.py``); ``host`` is the address it
    is served on: with the loopback names, the only Host header it accepts (``guard.py``);
    ``watch``: paths to follow while the app runs, shown live at /watch (``watching.py``;
    ``InputError`` for a path that is not there); ``history``: the incident history file
    shown at /history (default: the one `rankdoctor history` uses; ``history.py``);
    ``watch_hung_after``: the watched run is taken to have hung after that many seconds
    without a line (``rankdoctor watch --hung-after``)."""
    limits = limits or Limits()
    watched = WatchedRun(kb, watch, hung_after=watch_hung_after) if watch else None
    state = AppState(kb, limits, find_samples())
    site_dir = _build_kb_site(kb)
    env = make_env(PackageLoader("rankdoctor.web", "templates"))

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        state.pool.start()
        if watched is not None:
            watched.start()
        try:
            yield
        finally:
            if watched is not None:
                watched.stop()
            state.pool.close()

    app = FastAPI(
        title="rankdoctor",
        version=__version__,
        description="Diagnose failed distributed training runs from their logs. Runs on this machine; nothing is sent elsewhere.",
        docs_url=None,  # the stock docs page loads its scripts from a CDN; /docs is rendered here instead
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.rankdoctor = state
    app.state.site_dir = site_dir  # removed when the app goes away
    app.state.watched = watched
    app.add_middleware(BodyLimit, limits=limits)
    app.add_middleware(Guard, bind_host=host, token=state.token)  # outermost: a refused request reserves nothing
    app.include_router(make_router(state))

    def page(template: str, code: int = 200, **ctx) -> HTMLResponse:
        ctx.setdefault("version", __version__)
        html = env.get_template(template).render(**ctx)
        return HTMLResponse(html, status_code=code)

    incidents = History(history)
    state.history = str(incidents.path)
    app.include_router(make_history_router(incidents, page, lambda: state.token, TOKEN_HEADER))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if request.url.path.startswith(("/api/", "/openapi")) or "text/html" not in request.headers.get("accept", ""):
            return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=getattr(exc, "headers", None))
        return page("error.html", exc.status_code, status=exc.status_code, message=exc.detail)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        parts = [f"{'.'.join(str(x) for x in e.get('loc', ()))}: {e.get('msg')}" for e in exc.errors()]
        return JSONResponse({"detail": "; ".join(parts) or "invalid request"}, status_code=422)

    @app.exception_handler(Exception)
    async def crashed(request: Request, exc: Exception) -> JSONResponse:
        line = " ".join(f"internal error: {type(exc).__name__}: {exc}".split())[:500]
        return JSONResponse({"detail": line}, status_code=500)

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index() -> HTMLResponse:
        return page(
            "index.html",
            samples=list(state.samples.values()),
            config=json.dumps({"maxUploadBytes": limits.max_upload_bytes, "sendAllLimit": 2 << 20,
                               "tokenHeader": TOKEN_HEADER, "token": state.token}),
            limit_text=megabytes(limits.max_upload_bytes),
        )

    @app.get("/report/{rid}", response_class=HTMLResponse, include_in_schema=False)
    async def report_page(rid: str) -> HTMLResponse:
        return HTMLResponse(state.report(rid).page)

    @app.get("/report/{rid}/download", include_in_schema=False)
    async def report_download(rid: str) -> HTMLResponse:
        headers = {"Content-Disposition": 'attachment; filename="rankdoctor-report.html"'}
        return HTMLResponse(state.report(rid).download, headers=headers)

    def watched_run() -> WatchedRun:
        if watched is None:
            raise StarletteHTTPException(404, "this server watches no run: start it with rankdoctor serve --watch DIR")
        return watched

    @app.get("/watch", response_class=HTMLResponse, include_in_schema=False)
    def watch_page() -> HTMLResponse:
        run = watched_run()
        version, fragment = run.latest()
        return page("watch.html", paths=run.paths, version=version, fragment=Markup(fragment))

    @app.get("/watch/events", include_in_schema=False)
    def watch_events() -> StreamingResponse:
        # server-sent events: the report fragment after each update of the watch
        return StreamingResponse(watched_run().events(), media_type="text/event-stream", headers={"Cache-Control": "no-store"})

    @app.get("/docs", response_class=HTMLResponse, include_in_schema=False)
    def docs(request: Request) -> HTMLResponse:
        # the examples name the address this page was fetched from (the guard has already
        # refused any Host that is not this server), not a port it might not be on
        base = str(request.base_url).rstrip("/")
        return page("docs.html", spec=app.openapi(), limit_text=megabytes(limits.max_upload_bytes), base=base)

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> Response:
        return Response((HERE / "static" / "favicon.svg").read_bytes(), media_type="image/svg+xml")

    @app.get("/static/report.css", include_in_schema=False)
    def report_css() -> PlainTextResponse:
        return PlainTextResponse(asset("report.css"), media_type="text/css")

    @app.get("/static/report.js", include_in_schema=False)
    def report_js() -> PlainTextResponse:
        return PlainTextResponse(asset("report.js"), media_type="text/javascript")

    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    app.mount("/kb", StaticFiles(directory=site_dir.name, html=True), name="kb")
    return app


def serve(kb: KnowledgeBase, host: str = "127.0.0.1", port: int = 8000, limits: Limits | None = None, watch: list[str] | None = None,
          history: Path | None = None, watch_hung_after: float | None = None) -> None:
    """Run the app until SIGINT/SIGTERM. Shutdown takes seconds even while diagnoses run:
    requests still going after SHUTDOWN_GRACE are cancelled, which kills their workers."""
    import uvicorn

    limits = limits or Limits()
    app = create_app(kb, limits, host, watch, history, watch_hung_after)
    protocol = type("H11", (HeaderTimeoutH11,), {"read_timeout": limits.read_timeout})
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", http=protocol,
        timeout_graceful_shutdown=SHUTDOWN_GRACE, limit_concurrency=MAX_CONNECTIONS,
    )

    class Server(uvicorn.Server):
        async def shutdown(self, sockets=None) -> None:  # type: ignore[no-untyped-def]
            # the watched run's event streams never end by themselves: end them first, so the
            # graceful shutdown does not wait SHUTDOWN_GRACE for them and cancel them
            if app.state.watched is not None:
                app.state.watched.closing.set()
            await super().shutdown(sockets)

    shown = f"[{host}]" if ":" in host else host
    watching = "the watched run /watch, " if watch else ""
    print(f"rankdoctor web app: http://{shown}:{port}/  ({watching}incident history /history, encyclopedia /kb/, API docs /docs; Ctrl-C stops)", flush=True)
    Server(config).run()
