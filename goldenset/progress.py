"""Progress of long steps (ingesting many files, embedding, a benchmark over many queries), and notices.

The library reports through `step(...)` and `notice(...)`; it prints nothing itself.
The command line installs a reporter that draws rich progress bars on stderr (on a
terminal) and prints notices (always: "waiting for PID n ..."); everywhere else
(tests, Dagster runs) the default reporter does nothing, so library calls stay silent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol


class Reporter(Protocol):
    """Receives the start, advances and end of a step."""

    def start(self, description: str, total: int | None) -> object: ...

    def advance(self, handle: object, n: int) -> None: ...

    def finish(self, handle: object) -> None: ...

    def notice(self, message: str) -> None: ...


class _Silent:
    def start(self, description: str, total: int | None) -> object:
        return None

    def advance(self, handle: object, n: int) -> None:
        return None

    def finish(self, handle: object) -> None:
        return None

    def notice(self, message: str) -> None:
        return None


_reporter: Reporter = _Silent()


def set_reporter(reporter: Reporter | None) -> Reporter:
    """Install a reporter (None: silence); returns the previous one."""
    global _reporter
    previous = _reporter
    _reporter = reporter if reporter is not None else _Silent()
    return previous


@contextmanager
def step(description: str, total: int | None = None) -> Iterator[Callable[[int], None]]:
    """A long step: yields `advance(n)`; the reporter shows it while it runs."""
    reporter = _reporter
    handle = reporter.start(description, total)

    def advance(n: int = 1) -> None:
        reporter.advance(handle, n)

    try:
        yield advance
    finally:
        reporter.finish(handle)


def notice(message: str) -> None:
    """A one-line message the user should see while a command waits or works (never an error)."""
    _reporter.notice(message)
