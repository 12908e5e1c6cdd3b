"""The JSON API (documented at /docs, schema at /openapi.json)."""

from __future__ import annotations

import difflib
import json
import secrets
import tempfile
from pathlib import Path

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import Response

from .patterns import signatures_payload
from .state import AppState, Report
from .uploads import read_uploads
from .worker import Outcome, diagnose_uploads

_LOG_BODY = {
    "requestBody": {
        "required": True,
        "description": "A log as the request body (text/plain; gzip or zstd bytes are decompressed; "
        "`?name=rank_3.log` names it), or multipart/form-data with one or more `files` parts, an "
        "optional `text` field, and an optional `meta` JSON line map (original line numbers of the "
        "lines sent, see rankdoctor.web.uploads).",
        "content": {
            "text/plain": {"schema": {"type": "string"}},
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "files": {"type": "array", "items": {"type": "string", "format": "binary"}},
                        "text": {"type": "string"},
                        "meta": {"type": "string", "description": "JSON line map"},
                    },
                }
            },
        },
    }
}


_ERRORS = {
    400: {"description": "no log, empty or binary input, bad line map"},
    403: {"description": "refused: a Host that is not this server, a cross-origin browser request, or one without the page's token"},
    413: {"description": "request body over the upload limit, or compressed parts that inflate past --max-inflated-mb"},
    415: {"description": "unsupported content type"},
    503: {"description": "server busy (too many uploads or diagnoses at once), or the diagnosis ran past --request-timeout"},
}


def entry_summary(e) -> dict:
    return {
        "id": e.id,
        "title": e.title,
        "class": e.class_,
        "severity": e.severity.value,
        "systems": list(e.systems),
        "tags": list(e.tags),
        "summary": " ".join(e.summary.split()),
    }


_HUNG = ("The job stopped making progress (it hung): when no line shows a failure, the logs are read as ending "
         "where it hung, as `rankdoctor diagnose --hung` does.")


def make_router(state: AppState) -> APIRouter:
    api = APIRouter(prefix="/api", tags=["api"])

    async def run(request: Request, report_id: str | None, hung: bool) -> Outcome:
        """Admit, stream the body to disk, diagnose in a worker; the files go when it is done."""
        with state.pool.slot(), tempfile.TemporaryDirectory(prefix="rankdoctor-upload-") as folder:
            uploads = await read_uploads(request, Path(folder))
            return await state.pool.run(diagnose_uploads, uploads, state.limits.max_inflated_bytes, report_id, state.history, hung)

    @api.post("/diagnose", summary="Diagnose logs", openapi_extra=_LOG_BODY, response_class=Response, responses=_ERRORS)
    async def diagnose_logs(request: Request, hung: bool = Query(False, description=_HUNG)) -> Response:
        """The diagnosis as schema rankdoctor.diagnosis/v1 — the same document as
        `rankdoctor diagnose --format json` (`?hung=true`: as `diagnose --hung`)."""
        outcome = await run(request, None, hung)
        return Response(outcome.json, media_type="application/json")

    @api.post("/reports", status_code=201, summary="Diagnose logs and keep the report", openapi_extra=_LOG_BODY,
              response_class=Response, responses=_ERRORS)
    async def create_report(request: Request, hung: bool = Query(False, description=_HUNG)) -> Response:
        """Like /api/diagnose, and also keeps the report (with its timeline) in memory:
        `url` is its page, `download` the self-contained HTML file."""
        rid = secrets.token_urlsafe(9)
        outcome = await run(request, rid, hung)
        state.keep(rid, Report(outcome.page or "", outcome.download or ""))
        head = json.dumps({"id": rid, "url": f"/report/{rid}", "download": f"/report/{rid}/download"}, separators=(",", ":"))
        return Response(head[:-1].encode() + b',"diagnosis":' + outcome.json + b"}", status_code=201, media_type="application/json")

    @api.post("/redact", summary="Redact lines before they are sent", responses={400: {"description": "not a list of files with lines"}})
    async def redact_lines(request: Request) -> dict:
        """`{"files": [{"name": "rank_3.log", "lines": ["...", ...]}]}` with host names,
        addresses, user names, e-mails and secrets replaced by pseudonyms consistent across
        the files (`host-3`), `marks` saying where (`[start, end, kind, original]` per line)
        and `replaced` how many of each kind. The diagnose page shows this before it sends."""
        from starlette.concurrency import run_in_threadpool

        from ..redact.selection import redact_selection

        try:
            doc = json.loads(await request.body())
            files = [(str(f["name"]), [str(x) for x in f["lines"]]) for f in doc["files"]]
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
            raise HTTPException(400, f"not a list of files with lines ({type(exc).__name__})") from None
        return await run_in_threadpool(redact_selection, files, bool(doc.get("job_ids")))

    @api.get("/entries", summary="List the encyclopedia entries")
    def list_entries(klass: str | None = Query(None, alias="class"), system: str | None = None) -> list[dict]:
        """Every entry (id, title, class, severity, systems, tags, summary); filter with
        `?class=` (a taxonomy class) or `?system=`."""
        rows = [e for e in state.kb if (klass is None or e.class_ == klass) and (system is None or system in e.systems)]
        return [entry_summary(e) for e in sorted(rows, key=lambda e: (e.class_, e.id))]

    @api.get("/entries/{entry_id}", summary="One entry in full", responses={404: {"description": "no such entry"}})
    def get_entry(entry_id: str) -> dict:
        """The entry as stored in entries/*.yaml, plus `related` in both directions."""
        if entry_id not in state.kb:
            close = difflib.get_close_matches(entry_id, [e.id for e in state.kb], n=3)
            raise HTTPException(404, f"no entry {entry_id!r}" + (f"; did you mean: {', '.join(close)}" if close else ""))
        e = state.kb.get(entry_id)
        doc = e.model_dump(mode="json", by_alias=True)
        doc["related"] = sorted(state.kb.related_to(entry_id))
        return doc

    @api.get("/signatures", summary="Patterns for the browser's pre-filter")
    def signatures() -> dict:
        """Every signature regex (in JavaScript syntax), the structural lines the engine
        reads, rank prefixes, and how many lines of context to keep around a hit."""
        return signatures_payload(state.kb)

    @api.get("/samples", summary="List the sample logs")
    def list_samples() -> list[dict]:
        """Real logs from the scenario corpus (or the packaged copy)."""
        return [s.summary() for s in state.samples.values()]

    @api.get("/samples/{sample_id}", summary="One sample log", responses={404: {"description": "no such sample"}})
    def get_sample(sample_id: str) -> dict:
        s = state.samples.get(sample_id)
        if s is None:
            raise HTTPException(404, f"no sample {sample_id!r}")
        files = [{"name": n, "text": p.read_bytes().decode("utf-8", "replace")} for n, p in s.files]
        return {**s.summary(), "files": files}

    return api
