"""The web app's view of the incident history (history/): a list, one incident with the fix
that worked (and a form to record it), and two incidents compared; the same as JSON under
/api/history and /api/compare. The history is the one `rankdoctor history` uses (``serve
--db``); the pages only read it, except the resolve form, which the guard lets through only
with this server run's token, as every POST."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter, Body, HTTPException, Query
from fastapi.responses import HTMLResponse

from ..history.compare import Comparison
from ..history.sides import Side
from ..history.similar import lookup
from ..history.store import History, HistoryError, Incident, NoIncident

_404 = {404: {"description": "no incident with that number"}}


def _get(history: History, incident_id: int) -> Incident:
    try:
        return history.get(incident_id)
    except NoIncident as exc:
        raise HTTPException(404, str(exc)) from None
    except HistoryError as exc:
        raise HTTPException(503, str(exc)) from None


def _all(history: History, reports: bool = True) -> list[Incident]:
    try:
        return history.all(reports)
    except HistoryError as exc:
        raise HTTPException(503, str(exc)) from None


def _similar(history: History, i: Incident) -> list:
    try:
        return lookup(i.report, history, exclude_uid=i.uid) or []
    except HistoryError as exc:
        raise HTTPException(503, str(exc)) from None


def _side(i: Incident) -> Side:
    return Side(f"#{i.id} {i.job}", i.report, job=i.job, incident_id=i.id)


def _item(i: Incident) -> dict:
    return {"id": i.id, **i.to_json()}


def make_history_router(history: History, page: Callable[..., HTMLResponse], token: Callable[[], str], token_header: str) -> APIRouter:
    r = APIRouter()

    @r.get("/history", response_class=HTMLResponse, include_in_schema=False)
    def history_page() -> HTMLResponse:
        return page("history.html", incidents=_all(history, reports=False), path=str(history.path))

    @r.get("/history/{incident_id}", response_class=HTMLResponse, include_in_schema=False)
    def incident_page(incident_id: int) -> HTMLResponse:
        i = _get(history, incident_id)
        others = _similar(history, i)
        return page("incident.html", i=i, top=(i.report.get("diagnoses") or [{}])[0], similar=others,
                    token=token(), token_header=token_header)

    @r.get("/compare", response_class=HTMLResponse, include_in_schema=False)
    def compare_page(a: int = Query(...), b: int = Query(...)) -> HTMLResponse:
        c = Comparison(_side(_get(history, a)), _side(_get(history, b)))
        return page("compare.html", c=c, doc=c.to_json())

    @r.get("/api/history", tags=["history"], summary="List the saved incidents")
    def list_incidents(entry: str | None = None) -> list[dict]:
        """Every incident of the local history, newest first: rankdoctor.incident/v1
        documents (as `rankdoctor history export` writes them) with their `id`; filter with
        `?entry=`."""
        return [_item(i) for i in _all(history) if entry is None or i.entry == entry]

    @r.get("/api/history/{incident_id}", tags=["history"], summary="One incident", responses=_404)
    def get_incident(incident_id: int) -> dict:
        """The incident (rankdoctor.incident/v1 with its `id`) and the incidents most like
        it (`similar`, best first, as a report's `similar_incidents`)."""
        i = _get(history, incident_id)
        return {**_item(i), "similar": [m.to_json() for m in _similar(history, i)]}

    @r.post("/api/history/{incident_id}/resolve", tags=["history"], summary="Record what fixed an incident", responses=_404)
    def resolve(incident_id: int, fix: str = Body(..., embed=True, min_length=1, max_length=4000)) -> dict:
        """`{"fix": "..."}`: what fixed it (`rankdoctor history resolve ID --fix`); a later
        one replaces it. A browser needs this server's token, as for every POST."""
        try:
            return _item(history.resolve(incident_id, fix))
        except NoIncident as exc:
            raise HTTPException(404, str(exc)) from None
        except HistoryError as exc:
            raise HTTPException(400, str(exc)) from None

    @r.get("/api/compare", tags=["history"], summary="Compare two incidents", responses=_404)
    def compare(a: int = Query(..., description="incident number"), b: int = Query(..., description="incident number")) -> dict:
        """rankdoctor.compare/v1, as `rankdoctor compare A B --format json`: same failure or
        not, fingerprints only in A / only in B / in both, ranks that changed role."""
        return Comparison(_side(_get(history, a)), _side(_get(history, b))).to_json()

    return r
