"""``rankdoctor serve``: the FastAPI app and the server that runs it."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles
from jinja2 import PackageLoader
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import __version__
from ..kb.loader import KnowledgeBase
from ..report.html import asset, diagnosis_json, make_env, render_html, report_context
from ..site.build import build_site
from .api import make_router
from .limits import BodyLimit, megabytes
from .samples import find_samples
from .state import AppState

HERE = Path(__file__).parent


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


def create_app(kb: KnowledgeBase, max_upload_bytes: int = 200 << 20) -> FastAPI:
    state = AppState(kb, max_upload_bytes, find_samples())
    site_dir = _build_kb_site(kb)
    env = make_env(PackageLoader("rankdoctor.web", "templates"))
    app = FastAPI(
        title="rankdoctor",
        version=__version__,
        description="Diagnose failed distributed training runs from their logs. Runs on this machine; nothing is sent elsewhere.",
        docs_url=None,  # the stock docs page loads its scripts from a CDN; /docs is rendered here instead
        redoc_url=None,
    )
    app.state.rankdoctor = state
    app.state.site_dir = site_dir  # removed when the app goes away
    app.add_middleware(BodyLimit, limit=max_upload_bytes)
    app.include_router(make_router(state))

    def page(template: str, code: int = 200, **ctx) -> HTMLResponse:
        ctx.setdefault("version", __version__)
        html = env.get_template(template).render(**ctx)
        return HTMLResponse(html, status_code=code)

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
        return JSONResponse({"detail": f"internal error: {type(exc).__name__}: {exc}"}, status_code=500)

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index() -> HTMLResponse:
        return page(
            "index.html",
            samples=list(state.samples.values()),
            config=json.dumps({"maxUploadBytes": max_upload_bytes, "sendAllLimit": 2 << 20}),
            limit_text=megabytes(max_upload_bytes),
        )

    @app.get("/report/{rid}", response_class=HTMLResponse, include_in_schema=False)
    def report_page(rid: str) -> HTMLResponse:
        r = state.report(rid)
        ctx = report_context(r.result, r.scan, kb, entry_href=lambda i: f"/kb/entries/{i}.html")
        return page("report.html", rid=rid, doc=diagnosis_json(r.result), **ctx)

    @app.get("/report/{rid}/download", include_in_schema=False)
    def report_download(rid: str) -> HTMLResponse:
        r = state.report(rid)
        headers = {"Content-Disposition": 'attachment; filename="rankdoctor-report.html"'}
        return HTMLResponse(render_html(r.result, r.scan, kb), headers=headers)

    @app.get("/docs", response_class=HTMLResponse, include_in_schema=False)
    def docs() -> HTMLResponse:
        return page("docs.html", spec=app.openapi(), limit_text=megabytes(max_upload_bytes))

    @app.get("/static/report.css", include_in_schema=False)
    def report_css() -> PlainTextResponse:
        return PlainTextResponse(asset("report.css"), media_type="text/css")

    @app.get("/static/report.js", include_in_schema=False)
    def report_js() -> PlainTextResponse:
        return PlainTextResponse(asset("report.js"), media_type="text/javascript")

    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    app.mount("/kb", StaticFiles(directory=site_dir.name, html=True), name="kb")
    return app


def serve(kb: KnowledgeBase, host: str = "127.0.0.1", port: int = 8000, max_upload_bytes: int = 200 << 20) -> None:
    import uvicorn

    app = create_app(kb, max_upload_bytes)
    shown = f"[{host}]" if ":" in host else host
    print(f"rankdoctor web app: http://{shown}:{port}/  (encyclopedia /kb/, API docs /docs; Ctrl-C stops)", flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")
