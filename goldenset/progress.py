"""Progress of long steps (ingesting many files, embedding, a benchmark over many queries), and notices.

The library reports through `step(...)` and `notice(...)`; it prints nothing itself.
The command line installs a reporter that draws rich progress bars on stderr (on a
terminal) and prints notices (always: "waiting for PID n ..."); everywhere else
(tests, Dagster runs) the default reporter does nothing, so library calls stay silent.

Off a terminal (cron, CI, a pipe) the command line installs `PlainReporter` instead: a
long step prints one plain line at most every `every` seconds (10), with the step, done
of total, the rate and the time left (`embedding texts: 1,200/5,000 (24%), 40.0/s, 1m35s
left`), and one closing line if it printed any. A step shorter than that prints nothing.
`--quiet` keeps the notices and drops the progress (`quiet`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
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


def _duration(seconds: float) -> str:
    """12s, 3m05s, 2h04m: what a reader of a log wants, no more."""
    s = max(0, int(round(seconds)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


@dataclass
class _Step:
    description: str
    total: int | None
    started: float
    last: float
    done: int = 0
    printed: bool = False


class PlainReporter:
    """Plain progress lines at most every `every` seconds, for a log rather than a terminal."""

    def __init__(self, write: Callable[[str], None], every: float = 10.0, clock: Callable[[], float] | None = None):
        self.write = write
        self.every = every
        self.clock = clock or (lambda: time.monotonic())  # looked up on each call (tests move the clock)

    def start(self, description: str, total: int | None) -> object:
        now = self.clock()
        return _Step(description, total, now, now)

    def line(self, step: _Step, now: float) -> str:
        elapsed = max(now - step.started, 1e-9)
        rate = step.done / elapsed
        if step.total:
            text = f"{step.description}: {step.done:,}/{step.total:,} ({step.done / step.total:.0%}), {rate:,.1f}/s"
            if rate > 0 and step.done < step.total:
                text += f", {_duration((step.total - step.done) / rate)} left"
            return text
        return f"{step.description}: {step.done:,} done, {rate:,.1f}/s"

    def advance(self, handle: object, n: int) -> None:
        if not isinstance(handle, _Step):
            return
        handle.done += n
        now = self.clock()
        if now - handle.last >= self.every:
            handle.last = now
            handle.printed = True
            self.write(self.line(handle, now))

    def finish(self, handle: object) -> None:
        if isinstance(handle, _Step) and handle.printed:
            now = self.clock()
            self.write(f"{handle.description}: {handle.done:,} done in {_duration(now - handle.started)}")

    def notice(self, message: str) -> None:
        self.write(message)


class _Quiet(_Silent):
    """`--quiet`: no progress, but the notices (waiting for a lock, a build's one-line notes) stay."""

    def __init__(self, inner: Reporter):
        self.inner = inner

    def notice(self, message: str) -> None:
        self.inner.notice(message)


def quiet() -> None:
    """Silence progress from here on, keeping the current reporter's notices."""
    set_reporter(_Quiet(_reporter))
