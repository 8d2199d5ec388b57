"""What a command does to the pipeline's data, handed to the program that hosts the library.

The library imports nothing from Dagster, yet what `goldenset pool`, `bench run`, `labels
import`, `judge label`, `traces import` and `forget` change must show in the Dagster UI as a
run of its job, the way a run launched there shows. So a command does the part that changes
data through `perform(event, work, **details)`: run without a performer (the library's own
program, a test) that is `work()`; the `goldenset` program installed by the Dagster package
performs it as a run of the event's job in the instance the UI shows, with `work` as the
step's body (`goldenset_dagster.commands`).

Decisions
---------
- **The work runs once, whatever the performer does.** `work` is wrapped so that a second
  call returns the first call's result (or raises its error again), and `perform` returns
  that result itself.
- **The work's own error is the command's error.** When `work` raised, `perform` raises that
  exception, not whatever the performer made of it, so exit codes and messages are the
  command's, as without a performer.
- **A performer that fails never fails the command.** Failing after the work is done (the
  Dagster instance locked, say), the command's work stands: one warning line, and the result.
  Failing before the work started, the work runs without it, after one warning line. Only a
  failure in between (the work started and neither finished nor raised) is raised.
- **Nesting.** `performing` with a performer already installed installs nothing: a command
  run inside another (the demo runs commands through the program's own `main`) is performed
  once, not once per level.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

from goldenset import progress

T = TypeVar("T")
Performer = Callable[[str, Callable[[], Any], dict[str, Any]], object]
_PERFORMERS: list[Performer] = []


@contextmanager
def performing(performer: Performer) -> Iterator[None]:
    """Perform every `perform(...)` inside the block with `performer` (unless one is installed already)."""
    if _PERFORMERS:
        yield
        return
    _PERFORMERS.append(performer)
    try:
        yield
    finally:
        _PERFORMERS.remove(performer)


class _Once(Generic[T]):
    """`work`, called at most once: later calls give the first call's result, or raise its error."""

    def __init__(self, work: Callable[[], T]) -> None:
        self.work = work
        self.started = self.done = False
        self.result: T | None = None
        self.error: BaseException | None = None

    def __call__(self) -> T:
        if self.error is not None:
            raise self.error
        if not self.started:
            self.started = True
            try:
                self.result = self.work()
            except BaseException as exc:
                self.error = exc
                raise
            self.done = True
        return self.result  # type: ignore[return-value]


def perform(event: str, work: Callable[[], T], **details: Any) -> T:
    """Do `work` (what command `event` changes), as the hosting program records it; return its result."""
    if not _PERFORMERS:
        return work()
    once = _Once(work)
    try:
        _PERFORMERS[-1](event, once, details)
    except BaseException as exc:
        if once.error is not None:
            raise once.error from None
        if not isinstance(exc, Exception) or (once.started and not once.done):
            raise  # an interrupt, or a failure while the work ran: nothing to fall back on
        if not once.started:
            progress.notice(f"WARNING: recording {event} for the Dagster UI failed: {_first_line(exc)}; done without")
            return once()
        progress.notice(f"WARNING: {event} done, but recording it for the Dagster UI failed: {_first_line(exc)}")
    if once.error is not None:  # a performer that swallowed the work's error
        raise once.error
    return once()


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0]
