"""`goldenset label serve`: the labelling page (contract 7.6), which writes label lines only.

The page loads the queue, the rubric and LABELS once, closes DuckDB, prints its URL and
serves until interrupted. Library errors (an open rubric, a busy or missing warehouse, a bad
annotator name) propagate as GoldensetError subclasses for goldenset.cli.app to turn into
"Error: ..." and the exit code.
"""

from __future__ import annotations

import getpass
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import urlsplit

import typer

from goldenset import settings
from goldenset.cli.options import DbOpt, LabelsOpt, RubricOpt, WaitOpt
from goldenset.cli.shared import LOOPBACK_NAMES, bind_socket, command_group, is_loopback
from goldenset.errors import UsageError

if TYPE_CHECKING:
    from goldenset.labelling.page import QueueItem

DEFAULT_PORT = 8765

app = command_group(
    "label", "Label queued pairs in a local web page; it appends label lines to LABELS and never writes DuckDB."
)


@app.callback()
def _group() -> None:
    """Label queued pairs."""
    # A callback keeps `label` a command group, so `serve` is a subcommand even while it is the only one.


def _default_annotator() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        raise UsageError("cannot tell who you are from the environment; pass --annotator NAME") from None


def _public_origin(url: str) -> str:
    """scheme://host[:port] of --public-url; UsageError (exit 2) for anything else."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/") or parts.query:
        raise UsageError(
            f"--public-url {url!r} must be an address such as https://label.example.com (scheme and host, "
            "no path: the page's links start at /)"
        )
    return f"{parts.scheme}://{parts.netloc}"


@app.command("serve")
def serve(
    annotator: Annotated[
        str | None,
        typer.Option("--annotator", help="Your name on every label line ([A-Za-z0-9._-]; else your login name)."),
    ] = None,
    team: Annotated[
        bool,
        typer.Option(
            "--team",
            help="Serve a team: each person chooses a name in the page, and pairs are handed out so that "
            "two people do not label the same one.",
        ),
    ] = False,
    overlap: Annotated[
        float | None,
        typer.Option(
            "--overlap",
            metavar="SHARE",
            help="With --team: this share of the pairs (0 to 1, chosen by a seeded hash) goes to two "
            "annotators, for agreement. Default 0.",
        ),
    ] = None,
    seed: Annotated[
        int | None, typer.Option("--seed", metavar="S", help="With --overlap: the hash's seed. Default 0.")
    ] = None,
    lease_minutes: Annotated[
        float | None,
        typer.Option(
            "--lease-minutes",
            metavar="M",
            help="With --team: a pair opened by one annotator is not offered to another for M minutes. Default 30.",
        ),
    ] = None,
    port: Annotated[int, typer.Option("--port", help="Port to listen on (0 picks a free one).")] = DEFAULT_PORT,
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on; the page has no login, so keep it on loopback.")
    ] = "127.0.0.1",
    public_url: Annotated[
        str | None,
        typer.Option(
            "--public-url",
            help="The address people open when a reverse proxy (with its own login) serves the page, "
            "e.g. https://label.example.com: its host and origin are accepted.",
        ),
    ] = None,
    db: DbOpt = None,
    labels: LabelsOpt = None,
    rubric: RubricOpt = None,
    wait: WaitOpt = None,
) -> None:
    """Walk the labelling queue in a local web page; each submission appends one label line to LABELS."""
    if not 0 <= port <= 65535:
        raise UsageError(f"--port must be 0 to 65535, got {port}")
    if team:
        if annotator is not None:
            raise UsageError("--team lets each person choose their name in the page; drop --annotator")
        _serve_team(port, host, public_url, db, labels, rubric, wait, overlap, seed, lease_minutes)
        return
    team_only = (("--overlap", overlap), ("--seed", seed), ("--lease-minutes", lease_minutes))
    given = [flag for flag, value in team_only if value is not None]
    if given:
        raise UsageError(f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} for a team; add --team")

    from goldenset.labelling.page import open_session

    name = annotator if annotator is not None else _default_annotator()
    labels_dir = settings.resolve("labels", labels)
    session = open_session(
        name,
        db=settings.resolve("db", db),
        labels=labels_dir,
        rubric=settings.resolve("rubric", rubric),
        wait=settings.lock_timeout(wait),
        notify=lambda msg: typer.echo(msg, err=True),
    )

    def saved(item: QueueItem, line: dict[str, Any], path: Path) -> None:
        typer.echo(
            f"labelled {item.query_id} {item.doc_id}@{item.doc_version}: {line['label']} "
            f"(decided by {line['decided_by']}) [{len(session.done)}/{len(session.items)}] -> {path}"
        )

    session.on_saved = saved
    sock, allowed, origin, url = _listen(host, port, public_url)
    typer.echo(f"labelling page for {name}: {url}")
    typer.echo(
        f"{len(session.items)} pairs queued, {session.already_labelled} labelled by {name} before "
        "(listed, to correct); "
        f"label lines go to {labels_dir}/dt=<UTC day>/page-{name}.jsonl"
    )
    if session.no_rubric:
        typer.echo(
            f"{session.no_rubric} queued pairs left out: no rubric judges their project "
            "(add a rubric for it, or run `goldenset pool` again)"
        )
    if not is_loopback(host):
        typer.echo(f"WARNING: listening on {host}: anyone who reaches it can write labels as {name}", err=True)
    _run(_page_with_explorer(session, allowed, origin, settings.resolve("db", db), url), sock)
    typer.echo(f"stopped: {len(session.done)} pairs labelled this session")


def _explorer(db: Path, url: str, note: str = "") -> tuple[Any, str]:
    """The set explorer's routes (read-only, contract 15.2) and their prefix; their URL printed."""
    from goldenset.explorer.routes import PREFIX, explorer_routes

    typer.echo(f"the set explorer (read-only): {url.rstrip('/')}{PREFIX}{note}")
    return explorer_routes(db), PREFIX


def _page_with_explorer(session: Any, allowed: list[str] | None, origin: str | None, db: Path, url: str) -> Any:
    """The labelling page's app with the set explorer (read-only) mounted under /set."""
    from goldenset.labelling.page import create_app

    routes, prefix = _explorer(db, url)
    return create_app(session, allowed_hosts=allowed, public_origin=origin, extra_routes=routes, explorer_link=prefix)


def _listen(host: str, port: int, public_url: str | None) -> tuple[socket.socket, list[str] | None, str | None, str]:
    """The bound socket, the Host names allowed, the public origin, and the URL to print."""
    sock = bind_socket(host, port)
    bound = sock.getsockname()[1]
    # A Host header check closes the page to DNS rebinding while it listens on loopback only.
    allowed = list(LOOPBACK_NAMES) if host in LOOPBACK_NAMES else None
    origin = _public_origin(public_url) if public_url is not None else None
    if origin is not None and allowed is not None:
        allowed.append(urlsplit(origin).hostname or "")
    shown = f"[{host}]" if ":" in host else host
    return sock, allowed, origin, f"http://{shown}:{bound}/"


def _run(app: Any, sock: socket.socket) -> None:
    # Imported here, as the page's modules are: Starlette, Jinja2 and uvicorn cost every other command's start-up.
    import uvicorn

    typer.echo("Ctrl+C stops the page.")
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()


def _serve_team(
    port: int,
    host: str,
    public_url: str | None,
    db: str | None,
    labels: str | None,
    rubric: str | None,
    wait: float | None,
    overlap: float | None,
    seed: int | None,
    lease_minutes: float | None,
) -> None:
    """`label serve --team`: one page for several annotators, each by the name they choose in it."""
    from goldenset.labelling.team import DEFAULT_LEASE_MINUTES
    from goldenset.labelling.team_page import TeamApp, open_team

    share = 0.0 if overlap is None else overlap
    if not 0.0 <= share <= 1.0:
        raise UsageError(f"--overlap must be a share from 0 to 1 (0.1: one pair in ten labelled twice), got {overlap}")
    minutes = DEFAULT_LEASE_MINUTES if lease_minutes is None else lease_minutes
    if not minutes > 0:
        raise UsageError(f"--lease-minutes must be more than 0, got {lease_minutes}")
    labels_dir = settings.resolve("labels", labels)
    page = open_team(
        db=settings.resolve("db", db),
        labels=labels_dir,
        rubric=settings.resolve("rubric", rubric),
        overlap=share,
        seed=0 if seed is None else seed,
        lease_minutes=minutes,
        wait=settings.lock_timeout(wait),
        notify=lambda msg: typer.echo(msg, err=True),
    )

    def saved(item: QueueItem, line: dict[str, Any], path: Path) -> None:
        panel = page.team.panel()
        typer.echo(
            f"{line['annotator']} labelled {item.query_id} {item.doc_id}@{item.doc_version}: {line['label']} "
            f"(decided by {line['decided_by']}) [{panel.left} of {panel.pairs} pairs left] -> {path}"
        )

    page.on_saved = saved
    sock, allowed, origin, url = _listen(host, port, public_url)
    typer.echo(f"labelling page for a team: {url} (each person chooses a name there)")
    if page.no_rubric:
        typer.echo(
            f"{page.no_rubric} queued pairs left out: no rubric judges their project "
            "(add a rubric for it, or run `goldenset pool` again)"
        )
    team = page.team
    typer.echo(
        f"{len(team.items)} pairs queued, {len(team.overlap_pairs)} of them to be labelled twice "
        f"(--overlap {share:g}, seed {team.seed}); a pair opened is held {minutes:g} minutes; label lines go "
        f"to {labels_dir}/dt=<UTC day>/page-<name>.jsonl"
    )
    # The explorer sits behind the team's name form, as every page of the team does.
    routes, prefix = _explorer(settings.resolve("db", db), url, " (after choosing a name)")
    if not is_loopback(host):
        typer.echo(f"WARNING: listening on {host}: anyone who reaches it can write labels under any name", err=True)
    _run(TeamApp(page, allowed_hosts=allowed, public_origin=origin, extra_routes=routes, explorer_link=prefix), sock)
    typer.echo(f"stopped: {sum(len(s.done) for s in page.sessions.values())} pairs labelled this session")
