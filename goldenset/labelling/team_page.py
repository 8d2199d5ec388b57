"""The labelling page for a team (`goldenset label serve --team`): one server, each person by name.

`open_team` reads the queue, the rubric and LABELS once (as `page.open_session` does) and
makes a `team.Team`. `TeamApp` is the ASGI app: `/who` asks for a name and keeps it in a
cookie; every other request goes to that annotator's own page (`page.create_app` over their
`LabellingSession`, made at their first request), which asks the team which pair to offer.

Decisions
---------
- **A name, not a login.** The name is checked against the one annotator rule
  (`annotator.is_annotator_name`: it names the label file) and kept in a cookie
  (`goldenset_annotator`, SameSite=Strict, HttpOnly, a year); anyone who reaches the page
  can type any name, so a team that needs to know who is who puts the page behind a
  reverse proxy with a login (docs/guides/label.md).
- **Every annotator sees the same pair numbers** (the queue's priorities): the queue is loaded
  once and shared, pairs labelled before start included (the team decides who still has to
  label them); each annotator's own labels, from before start too, can be opened and corrected.
- **The name form** is a form of the page like the label form: same-origin and the
  server's per-run token, so another site cannot set a name.
- **The set explorer** (`/set`, goldenset.explorer) is served inside each annotator's app,
  behind the name: a browser without the cookie gets the name form and, once it has chosen
  a name, the explorer page it asked for. It reads what the labelling pages already show
  anyone with a name (tasks, documents, labels), so a team page reveals no more than before;
  like those pages it is no more private than the host rule and the proxy in front make it.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import HTTPConnection, Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from goldenset import clock
from goldenset.counts import labelling_queue_by_reason
from goldenset.labelling.annotator import ANNOTATOR_PATTERN, is_annotator_name
from goldenset.labelling.page import (
    LabellingSession,
    LabelWriter,
    QueueItem,
    SubmissionError,
    _check_same_origin,
    _read_form,
    _render,
    create_app,
    load_queue,
)
from goldenset.labelling.rubric_set import RubricSet, load_rubrics
from goldenset.labelling.team import DEFAULT_LEASE_MINUTES, Team, queue_label_lines
from goldenset.warehouse import connect

COOKIE = "goldenset_annotator"
COOKIE_MAX_AGE = 365 * 24 * 3600


class TeamPage:
    """What one team server knows: the team, the rubric, LABELS, and each annotator's session."""

    def __init__(
        self,
        team: Team,
        rubric: RubricSet,
        labels_dir: Path,
        *,
        on_saved: Callable[[QueueItem, dict[str, Any], Path], None] | None = None,
        no_rubric: int = 0,
        queue_counts: dict[str, int] | None = None,
    ):
        self.team = team
        self.queue_counts = dict(queue_counts or {})  # the labelling queue by reason as loaded (goldenset.counts)
        self.rubric = rubric
        self.no_rubric = no_rubric  # queued pairs left out: no rubric judges their project (contract 9.5)
        self.labels_dir = labels_dir
        self.on_saved = on_saved
        self.token = secrets.token_urlsafe(32)  # one per run, shared by every annotator's forms
        self.sessions: dict[str, LabellingSession] = {}
        self._lock = threading.Lock()

    def session_for(self, name: str) -> LabellingSession:
        """`name`'s session (made at their first request); the name must pass the annotator rule."""
        with self._lock:
            session = self.sessions.get(name)
            if session is None:
                items: list[QueueItem] = list(self.team.items)  # type: ignore[arg-type]
                session = LabellingSession(
                    name,
                    self.rubric,
                    items,
                    self.team.lines_of(name),
                    LabelWriter(self.labels_dir, name),
                    # One clock for the leases and the lines' ts (the team's, naive UTC).
                    clock=lambda: self.team.clock().replace(tzinfo=UTC),
                    on_saved=self.on_saved,
                    token=self.token,
                    team=self.team,
                    no_rubric=self.no_rubric,
                    queue_counts=self.queue_counts,
                )
                self.sessions[name] = session
                self.team.join(name)
            return session


def open_team(
    *,
    db: Path,
    labels: Path,
    rubric: Path,
    overlap: float = 0.0,
    seed: int = 0,
    lease_minutes: float = DEFAULT_LEASE_MINUTES,
    wait: float = 0.0,
    notify: Callable[[str], None] | None = None,
    clock: Callable[[], datetime] = clock.utcnow,
) -> TeamPage:
    """Load the rubric, the queue and LABELS once, close DuckDB, and make the team's page."""
    rb = load_rubrics(rubric).require_closed()
    con = connect(db, read_only=True, wait=wait, notify=notify)
    try:
        loaded = load_queue(con)
        counts = labelling_queue_by_reason(con)
    finally:
        con.close()
    # Contract 9.5: only pairs some rubric judges are offered; each under its project's rubric.
    queue = [it for it in loaded if rb.for_project(it.project) is not None]
    team = Team(
        queue,
        queue_label_lines(labels, rb, queue),
        overlap=overlap,
        seed=seed,
        lease=timedelta(minutes=lease_minutes),
        clock=clock,
    )
    return TeamPage(team, rb, labels, no_rubric=len(loaded) - len(queue), queue_counts=counts)


class TeamApp:
    """The ASGI app of a team server: `/who` sets the name; the rest is the named annotator's page.

    `extra_routes` (`label serve --team` adds the set explorer's) are served inside each
    annotator's app, so they sit behind the same gate as the labelling pages: a request
    without a name gets the name form, whatever path it asked for.
    """

    def __init__(
        self,
        page: TeamPage,
        allowed_hosts: list[str] | None = None,
        public_origin: str | None = None,
        extra_routes: Sequence[BaseRoute] = (),
        explorer_link: str | None = None,
    ):
        self.page = page
        self.allowed_hosts = allowed_hosts
        self.public_origin = public_origin
        self.extra_routes = tuple(extra_routes)
        self.explorer_link = explorer_link
        self.apps: dict[str, Starlette] = {}
        middleware = [Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts)] if allowed_hosts else []
        self.who_app = Starlette(
            routes=[Route("/who", self._who, methods=["GET", "POST"])],
            middleware=middleware,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] != "/who":
            name = HTTPConnection(scope).cookies.get(COOKIE)
            if name is not None and is_annotator_name(name):
                app = self.apps.get(name)
                if app is None:
                    app = self.apps[name] = create_app(
                        self.page.session_for(name),
                        allowed_hosts=self.allowed_hosts,
                        public_origin=self.public_origin,
                        extra_routes=self.extra_routes,
                        explorer_link=self.explorer_link,
                    )
                await app(scope, receive, send)
                return
            # No name yet: the name form first, then back to what was asked for (a form posted
            # without a name is not written; the page kept its answers in the browser).
            if scope["method"] == "GET":
                target = scope["path"] + (
                    f"?{scope['query_string'].decode('latin-1')}" if scope["query_string"] else ""
                )
                query = f"next={quote(target, safe='')}"
            else:
                query = "next=%2F&unsaved=1"
            scope = {**scope, "path": "/who", "method": "GET", "query_string": query.encode()}
        await self.who_app(scope, receive, send)

    def _who_page(self, request: Request, *, error: str | None = None, name: str = "", status: int = 200) -> Response:
        nxt = request.query_params.get("next", "/")
        return _render(
            "labelling_who.html",
            status,
            token=self.page.token,
            rubric=self.page.rubric,
            error=error,
            chosen_name=name or request.cookies.get(COOKIE, ""),
            # Browsers compile `pattern` with the v flag, where a class's literal '-' is escaped.
            pattern=ANNOTATOR_PATTERN.replace("-]", r"\-]"),
            next=nxt if nxt.startswith("/") and not nxt.startswith("//") else "/",
            pairs=len(self.page.team.items),
        )

    async def _who(self, request: Request) -> Response:
        if request.method == "GET":
            unsaved = request.query_params.get("unsaved") == "1"
            return self._who_page(
                request,
                error="Not saved: this browser has no annotator name (its cookie is gone). Choose your name; "
                "the answers you typed are kept in the page, so open the pair again and press Enter."
                if unsaved
                else None,
                status=403 if unsaved else 200,
            )
        try:
            form = await _read_form(request)
            _check_same_origin(request, form, self.page.token, self.public_origin)
        except SubmissionError as exc:
            return self._who_page(request, error=str(exc), status=exc.status)
        name = form.get("name", "").strip()
        if not is_annotator_name(name):
            return self._who_page(
                request,
                error=f"{name!r} cannot be an annotator name: use 1 to 64 letters, digits, '.', '_' or '-' "
                "(it names your label file), e.g. ana or j.doe",
                name=name,
                status=400,
            )
        nxt = form.get("next", "/")
        response = RedirectResponse(nxt if nxt.startswith("/") and not nxt.startswith("//") else "/", status_code=303)
        response.set_cookie(COOKIE, name, max_age=COOKIE_MAX_AGE, httponly=True, samesite="strict")
        self.page.session_for(name)
        return response
