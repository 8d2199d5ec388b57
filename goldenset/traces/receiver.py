"""`goldenset traces serve`: an OTLP/HTTP receiver at /v1/traces that writes what `traces import` writes.

Contract 14.8. A request is checked and read (`otlp`), its spans appended to the spool and
fsynced (`spool`), and only then answered 200; a merger thread moves the spool into the
LOGS day files with the import's own conversion and merge, then deletes what it merged.

Decisions:

- **Nothing acknowledged is lost.** The 200 follows the fsync. A receiver killed before a
  merge leaves its requests in the spool; the next one to start seals and merges them
  first (and the pipeline's `trace_export` asset merges them when no receiver runs). A
  crash during a merge merges the same segments again, which writes the same bytes.
- **The warehouse is held briefly, and only read.** DuckDB lets one process write, and
  builds run in the pool `duckdb`, so the receiver never writes it during a merge. It
  opens it read-only only when a document carries no version and a corpus snapshot must
  give one, for the conversion of one batch (at most `MERGE_BATCH_BYTES` of spool), and
  closes it before writing LOGS. While a build holds the file, such a batch, and the
  batches after it (the oldest is always merged first), wait and the spool fills (503 once
  full); while every document carries its version, merges go on.
- **Rejects reach `rejected_records` through the spool.** A merge writes its reject rows
  to `rejects/` in the spool; the receiver stores them when the warehouse is free (a
  write of a few rows, no wait), and the pipeline's import stores them when it runs.
  Until then they are on disk, never lost, and `goldenset rejects` shows them after.
- **Merging is paced.** A tick every `MERGE_SECONDS` seals the open segment and merges what
  is sealed; while requests keep coming, after a merge that took m seconds the next waits
  `MERGE_PACE` * m, so merges (whose cost grows with the day files they rewrite) take at
  most a fifth of the time and the requests the rest. Once requests stop for
  `MERGE_SECONDS`, what the spool holds is merged. Lines reach LOGS later under load;
  nothing is dropped.
- **Bounded memory.** A body is read up to the size limit and refused past it; one
  request at a time is decoded and checked (`_decoding`); uvicorn takes at most
  `MAX_CONNECTIONS` connections and answers 503 past them; a merge reads at most
  `MERGE_BATCH_BYTES` of spool (plus the day files it rewrites, as the import does).
- **Refusals, in this order**: 400 when bound to loopback and the Host header names another
  host (DNS rebinding: a page of another site resolved to 127.0.0.1 must not post spans;
  answered as every refusal is, a google.rpc.Status, so an OTLP client reads why), 401 (a
  token is set and the request lacks it: compared in constant time), 415 (content type or encoding), 413 (size), 400 (does not parse),
  503 (the spool is full, or its disk refuses the write; `Retry-After` says when to try
  again).
"""

from __future__ import annotations

import hmac
import signal
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from goldenset import failpoints
from goldenset.connection import Connection
from goldenset.errors import DatabaseBusy, InputError, RequestRefused, SpoolBusy, SpoolFull
from goldenset.traces.importer import SnapshotVersions, TraceImport
from goldenset.traces.mapping import Mapping
from goldenset.traces.otlp import (
    JSON,
    Receipt,
    check_encoding,
    decode,
    gunzip,
    media_type,
    receive,
    status_body,
    success_body,
    too_large,
)
from goldenset.traces.spool import (
    MERGE_BATCH_BYTES,
    Spool,
    flush_rejects,
    merge_lock,
    merge_segments,
    pending_rejects,
    sealed_segments,
    spool_rejects,
)
from goldenset.warehouse import connect

PATH = "/v1/traces"
MERGE_SECONDS = 2.0
MERGE_PACE = 4.0
MAX_CONNECTIONS = 16
RETRY_AFTER_SECONDS = 5


@dataclass(frozen=True)
class ReceiverConfig:
    spool: Path
    logs: Path
    labels: Path | None
    db: Path
    mapping: Mapping
    max_body: int
    spool_limit: int
    token: str | None = None
    merge_seconds: float = MERGE_SECONDS
    merge_batch_bytes: int = MERGE_BATCH_BYTES


def _quiet(message: str) -> None:
    """connect()'s notices are for a person waiting at a prompt; the receiver never waits."""


class WarehouseVersions:
    """Snapshot versions (14.2) for a merge: the warehouse read only when a document needs one, closed after."""

    def __init__(self, db: Path):
        self.db = db
        self._con: Connection | None = None
        self._lookup: Callable[[str, datetime], str | None] | None = None

    def __call__(self, doc_id: str, at: datetime) -> str | None:
        if self._lookup is None:
            if not self.db.exists():
                self._lookup = lambda _doc, _at: None  # no warehouse: no snapshot was ever loaded
            else:
                self._con = connect(self.db, read_only=True, wait=0.0, notify=_quiet)
                self._lookup = SnapshotVersions(self._con)
        return self._lookup(doc_id, at)

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None


class Receiver:
    """The spool, the merger thread and the checks of one `traces serve`."""

    def __init__(self, config: ReceiverConfig, report: Callable[[str], None]):
        self.config = config
        self.report = report
        self.spool = Spool(config.spool, config.spool_limit)
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._decoding = threading.Lock()
        self._last_problem: str | None = None
        self._last_request = 0.0  # time.monotonic() of the last request spooled

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Claim the spool (recovering what a stopped receiver left) and start merging."""
        self.spool.claim()
        waiting = sealed_segments(self.config.spool)
        if waiting:
            self.report(f"recovered {len(waiting)} spooled segment(s) not yet merged; merging them now")
        self._thread = threading.Thread(target=self._run, name="goldenset-trace-merger", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop merging, merge what the spool holds once more, and let the spool go."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
        self.merge_now()
        self.spool.release()

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            self.merge_now()
            took = time.monotonic() - started
            # A merge rewrites each day file it touches, so its cost grows with the day: while
            # requests come, waiting MERGE_PACE times as long as it took keeps merging under a
            # fifth of the time (the next merge takes a larger batch for the same rewrite). Once
            # they stop, the spool is merged within merge_seconds of the last one.
            paced_until = started + took + MERGE_PACE * took
            self._wake.wait(self.config.merge_seconds)
            while (
                not self._stop.is_set()
                and (now := time.monotonic()) < paced_until
                and now - self._last_request < self.config.merge_seconds
            ):
                self._wake.wait(min(paced_until - now, self.config.merge_seconds))
            self._wake.clear()

    # ------------------------------------------------------------------ receiving
    def authorized(self, header: str | None) -> bool:
        """Whether `Authorization` carries the token (`Bearer <token>`, the scheme in any case), when one is set."""
        token = self.config.token
        if token is None:
            return True
        scheme, _, given = (header or "").partition(" ")
        # Constant-time: a wrong token takes as long to refuse whatever its first wrong character.
        return hmac.compare_digest(given.encode(), token.encode()) and scheme.lower() == "bearer"

    def accept(self, body: bytes, media: str, gzipped: bool) -> Receipt:
        """Decompress, decode and check one request, then spool it; RequestRefused or SpoolFull when it is not taken."""
        with self._decoding:
            if gzipped:
                body = gunzip(body, self.config.max_body)
            receipt = receive(decode(body, media), self.config.mapping)
            del body
            if receipt.line is not None:
                if len(receipt.line) + 1 > self.config.spool_limit:
                    # Never taken, however long the sender waits: not a 503 it would retry for ever.
                    raise RequestRefused(
                        413,
                        f"this request alone needs {len(receipt.line) + 1} bytes of spool, more than its limit of "
                        f"{self.config.spool_limit} (GOLDENSET_TRACE_SPOOL_LIMIT); send smaller batches",
                    )
                self.spool.append(receipt.line)
                self._last_request = time.monotonic()
        return receipt

    # ------------------------------------------------------------------ merging
    def merge_now(self) -> list[TraceImport]:
        """Seal the open segment, merge everything sealed, store spooled rejects; what each batch did.

        Never raises: a busy warehouse or spool, or a failure, is reported once and tried
        again at the next tick, the spool keeping every request until then.
        """
        self.spool.seal()
        done: list[TraceImport] = []
        try:
            with merge_lock(self.config.spool, wait=0.0):
                while sealed_segments(self.config.spool):
                    failpoints.hit("traces.before_merge")
                    result = self._merge_batch()
                    if result is None:
                        break
                    done.append(result)
                    self.report("merged: " + "; ".join(result.summary()[1:]))
                if pending_rejects(self.config.spool):
                    self._flush_rejects()
            self._last_problem = None
        except (DatabaseBusy, SpoolBusy) as exc:
            self._tell(f"merge waits: {exc}")
        except Exception as exc:  # the merger thread must outlive any failure: the spool keeps the requests
            self._tell(f"merge failed, will retry: {type(exc).__name__}: {exc}")
        self.spool.refresh_size()
        return done

    def _merge_batch(self) -> TraceImport | None:
        lookup = WarehouseVersions(self.config.db)
        try:
            return merge_segments(
                self.config.spool,
                self.config.mapping,
                self.config.logs,
                self.config.labels,
                lookup,
                spool_rejects(self.config.spool),
                self.config.merge_batch_bytes,
            )
        finally:
            lookup.close()

    def _flush_rejects(self) -> None:
        con = connect(self.config.db, read_only=False, wait=0.0, notify=_quiet)
        try:
            stored = flush_rejects(self.config.spool, con)
        finally:
            con.close()
        self.report(f"stored {stored} reject row(s) in {self.config.db} (goldenset rejects --file 'traces/spool/*')")

    def _tell(self, problem: str) -> None:
        if problem != self._last_problem:
            self.report(problem)
            self._last_problem = problem


def create_app(receiver: Receiver, allowed_hosts: list[str] | None = None) -> Any:
    """The Starlette app: POST /v1/traces; with `allowed_hosts`, only requests whose Host header names one."""
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    limit = receiver.config.max_body

    async def traces(request: Request) -> Response:
        media = media_type(request.headers.get("content-type"))
        answer = media or JSON
        try:
            host = request.headers.get("host")
            if allowed_hosts and not host_allowed(host, allowed_hosts):
                raise RequestRefused(
                    400,
                    f"the Host header {host!r} names another host: a receiver bound to loopback answers only "
                    f"requests sent to {' or '.join(allowed_hosts)} (a page elsewhere may resolve to this machine)",
                )
            if not receiver.authorized(request.headers.get("authorization")):
                raise RequestRefused(401, "a bearer token is required: send Authorization: Bearer <token>")
            if media is None:
                raise RequestRefused(
                    415,
                    f"Content-Type {request.headers.get('content-type')!r} is not supported; "
                    "send application/x-protobuf or application/json",
                )
            gzipped = check_encoding(request.headers.get("content-encoding"))
            body = await _read_body(request, limit)
            receipt = await run_in_threadpool(receiver.accept, body, media, gzipped)
        except RequestRefused as exc:
            headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
            return Response(status_body(answer, exc.status, str(exc)), exc.status, headers, media_type=answer)
        except SpoolFull as exc:
            headers = {"Retry-After": str(RETRY_AFTER_SECONDS)}
            return Response(status_body(answer, 503, str(exc)), 503, headers, media_type=answer)
        return Response(success_body(media, receipt), 200, media_type=media)

    return Starlette(routes=[Route(PATH, traces, methods=["POST"])])


def host_allowed(header: str | None, names: list[str]) -> bool:
    """Whether a Host header is one of `names` (any case), alone or followed by `:` and a port in digits."""
    name, colon, port = (header or "").lower().partition(":")
    return name in names and (not colon or (port.isascii() and port.isdigit()))


async def _read_body(request: Any, limit: int) -> bytes:
    """The body, refused (413) as soon as it passes `limit` bytes: never more than that is held."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise too_large(int(declared), limit, "declared as")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise too_large(len(body), limit, "more than")
    return bytes(body)


def read_token(path: Path) -> str:
    """The bearer token in `path`: its text without surrounding white space, printable ASCII with no spaces."""
    try:
        token = Path(path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(
            f"token file {path} cannot be read ({getattr(exc, 'strerror', None) or exc}); check the path"
        ) from None
    if not token:
        raise InputError(f"token file {path} is empty; write the token the senders will use in it")
    if not all("!" <= c <= "~" for c in token):
        raise InputError(
            f"token file {path} holds spaces or characters an HTTP header cannot carry; use printable ASCII"
        )
    return token


def serve(receiver: Receiver, sock: socket.socket, allowed_hosts: list[str] | None, ready: Callable[[], None]) -> None:
    """Run a started receiver on a bound socket until interrupted; then merge what the spool holds and let it go.

    `ready` is called (to say so) once a SIGTERM would stop it cleanly.
    """
    import uvicorn

    # uvicorn shuts down on SIGTERM, then raises it again with the handler it found: make that
    # handler end the process through `finally`, so the spool is merged and let go as on Ctrl+C.
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        ready()
        config = uvicorn.Config(
            create_app(receiver, allowed_hosts), log_level="warning", limit_concurrency=MAX_CONNECTIONS
        )
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        receiver.stop()
        sock.close()


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(0)
