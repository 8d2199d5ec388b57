"""The explorer's routes, mounted by `goldenset label serve` beside the labelling page (contract 15.2).

Every page opens the warehouse read-only for the length of one request (as `status` does:
no writer's lock is taken, and a build that holds the file gets a 503 page saying to reload,
not a wait) and renders server-side HTML; the only script-free interaction is GET forms. The
app's host check (TrustedHostMiddleware, loopback unless told otherwise) covers these routes
as it covers the labelling page; they write nothing, so they take no form token. In a team
(`label serve --team`) they are served inside each annotator's app (team_page.TeamApp), so a
request without an annotator name gets the team's name form instead (contract 15.2).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from goldenset.connection import Connection
from goldenset.errors import DatabaseBusy, GoldensetError, InputError, NoBuild, UsageError
from goldenset.explorer import data
from goldenset.explorer.plot import difference_bars
from goldenset.html_pages import TEMPLATES
from goldenset.warehouse import connect

PREFIX = "/set"
_env = TEMPLATES
_STATUS = {UsageError: 400, InputError: 404, NoBuild: 404, DatabaseBusy: 503}


def explorer_routes(db: Path) -> list[Route]:
    """The explorer's GET routes over the warehouse `db`."""

    def page(render: Callable[[Connection, Request], tuple[str, dict[str, Any]]]) -> Callable:
        async def endpoint(request: Request) -> Response:
            return await run_in_threadpool(_serve, db, render, request)

        return endpoint

    return [
        Route(PREFIX, page(_queries_page), methods=["GET"]),
        Route(PREFIX + "/query/{query_id}", page(_query_page), methods=["GET"]),
        Route(PREFIX + "/builds", page(_builds_page), methods=["GET"]),
        Route(PREFIX + "/runs", page(_runs_page), methods=["GET"]),
        Route(PREFIX + "/compare", page(_compare_page), methods=["GET"]),
        Route(PREFIX + "/compare-runs", page(_compare_runs_page), methods=["GET"]),
    ]


def _serve(db: Path, render: Callable, request: Request) -> Response:
    try:
        con = connect(db, read_only=True)
    except GoldensetError as exc:
        return _error(exc)
    try:
        name, context = render(con, request)
    except GoldensetError as exc:
        return _error(exc)
    except duckdb.Error as exc:
        # A warehouse no build of this version has opened for writing lacks the v5 views.
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        return _error(
            InputError(
                f"the warehouse could not be read ({first}); if an older goldenset made it, run `goldenset build` "
                "once to upgrade it"
            )
        )
    finally:
        con.close()
    return HTMLResponse(_env.get_template(name).render(prefix=PREFIX, **context))


def _error(exc: GoldensetError) -> HTMLResponse:
    status = next((code for kind, code in _STATUS.items() if isinstance(exc, kind)), 500)
    hint = "a build is writing the warehouse; reload this page in a moment" if status == 503 else None
    body = _env.get_template("explorer_error.html").render(prefix=PREFIX, error=str(exc), hint=hint)
    return HTMLResponse(body, status_code=status)


def _queries_page(con: Connection, request: Request) -> tuple[str, dict[str, Any]]:
    chosen = {k: request.query_params.get(k, "") for k in data.FILTERS}
    rows = data.queries(con, **chosen)
    return "explorer_queries.html", {
        "rows": rows,
        "chosen": chosen,
        "projects": data.projects(con),
        "sources": data.SOURCES,
        "in_set": sum(1 for r in rows if r["status"] == "in"),
    }


def _query_page(con: Connection, request: Request) -> tuple[str, dict[str, Any]]:
    from goldenset.explain import explain, explain_lines, resolve_query

    qid = resolve_query(con, request.path_params["query_id"], None, None)
    x = explain(con, qid)
    builds = con.execute("SELECT build_id, labels_build_id FROM golden_builds ORDER BY build_id").fetchall()
    return "explorer_query.html", {"x": x, "lines": explain_lines(x), "timeline": timeline(x["history"], builds)}


def timeline(history: list[dict[str, Any]], builds: list[tuple[int, int]]) -> dict[str, Any]:
    """The label timeline: per document, the label each build held (None: none), builds as columns.

    A build holds the versions of its labels build (a repeat holds those of the build it repeats).
    Columns run from the first build that held a label of the query to the latest build.
    """
    if not history:
        return {"builds": [], "rows": []}
    first = min(h["valid_from_build"] for h in history)
    shown = [(b, lb) for b, lb in builds if b >= first]
    docs = sorted({h["doc_id"] for h in history})
    rows = []
    for d in docs:
        cells = []
        for _, lb in shown:
            held = [
                h
                for h in history
                if h["doc_id"] == d
                and h["valid_from_build"] <= lb
                and (h["valid_to_build"] is None or h["valid_to_build"] > lb)
            ]
            cells.append(_cell(held[0]) if held else None)
        rows.append({"doc_id": d, "cells": cells})
    return {"builds": [b for b, _ in shown], "rows": rows}


def _cell(h: dict[str, Any]) -> dict[str, Any]:
    value = h["verdict"] if h["source"] == "log" else f"{h['source']}:{h['label']}"
    positive = h["verdict"] == "helped" if h["source"] == "log" else h["label"] not in (None, "irrelevant")
    return {"value": value, "version": h["doc_version"], "stale": h["stale_reason"], "positive": positive}


def _builds_page(con: Connection, request: Request) -> tuple[str, dict[str, Any]]:
    return "explorer_builds.html", {"builds": data.builds(con)}


def _runs_page(con: Connection, request: Request) -> tuple[str, dict[str, Any]]:
    runs = data.runs(con)
    ks = sorted({m for r in runs for m in r["judged"]}, key=lambda m: int(m.split("@")[1]))
    return "explorer_runs.html", {"runs": runs, "judged_ks": ks}


def _compare_page(con: Connection, request: Request) -> tuple[str, dict[str, Any]]:
    from goldenset.bench.metrics import get_metric

    a, b = request.query_params.get("a", ""), request.query_params.get("b", "")
    if not a or not b:
        raise UsageError("choose two runs to compare (a and b) on the runs page")
    c = data.compare(con, a, b, request.query_params.get("metric") or None)
    svg = difference_bars(c, get_metric(c["metric"]).direction, link=PREFIX + "/query/")
    ks = sorted(set(c["a"]["judged"]) | set(c["b"]["judged"]), key=lambda m: int(m.split("@")[1]))
    means = _means_figure(data.compare_runs(con, [a, b], baseline=a)) if c["paired"] else None
    return "explorer_compare.html", {"c": c, "svg": svg, "judged_ks": ks, "means_svg": means}


def _compare_runs_page(con: Connection, request: Request) -> tuple[str, dict[str, Any]]:
    from goldenset.bench import report_many as rm
    from goldenset.bench.compare_many import DECIDING

    params = request.query_params
    comp = data.compare_runs(con, params.getlist("run"), params.get("baseline") or None, params.get("test") or "t")
    summary = [
        {
            "letter": comp.letter(r.run_id),
            "run": r,
            "cells": [(rm.fmt(comp.means[r.run_id][m][0]), rm.marks(comp, r.run_id, m)) for m in comp.metrics],
        }
        for r in comp.runs
    ]
    tests = [
        {
            "t": t,
            "a": comp.letter(t.a),
            "b": comp.letter(t.b),
            "diff": rm.fmt_signed(t.diff),
            "interval": f"[{rm.fmt_signed(t.lo)}, {rm.fmt_signed(t.hi)}]",
            "p": rm.p_text(t),
            "p_corrected": rm.fmt_p(t.p_corrected),
            "verdict": t.verdict_text(comp.alpha),
        }
        for t in comp.tests
        if t.kind == DECIDING
    ]
    return "explorer_compare_runs.html", {
        "comp": comp,
        "header": rm.header(comp),
        "summary": summary,
        "tests": tests,
        "notes": rm.notes(comp),
        "svg": _means_figure(comp),
    }


def _means_figure(comp: Any) -> str:
    """The runs' means with their 95% intervals (goldenset.bench.plot_runs), as inline SVG."""
    from goldenset.bench.report_many import figure

    svg = figure(comp, "svg").decode("utf-8")
    return svg[svg.index("<svg") :]
