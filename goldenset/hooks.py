"""What a command did, told to the program that hosts the library.

The library imports nothing from Dagster, yet what `goldenset pool` and `goldenset bench
run` do must show on their Dagster assets. So a command announces what it did (`pool`
with the warehouse path; `bench_run` with the stored run), and the `goldenset` program
installed by the Dagster package listens while it runs a command and records it in the
instance the UI shows. Run without a listener (the library's own app, a test) an
announcement does nothing.

A listener that fails never fails the command (its work is done and stored): the
announcement returns one line per failure, which the command prints as a warning.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

Listener = Callable[[str, dict[str, Any]], None]
_LISTENERS: list[Listener] = []


@contextmanager
def listening(listener: Listener) -> Iterator[None]:
    """Call `listener(event, details)` for every announcement made inside the block."""
    _LISTENERS.append(listener)
    try:
        yield
    finally:
        _LISTENERS.remove(listener)


def announce(event: str, **details: Any) -> list[str]:
    """Tell every listener that `event` happened; return a one-line reason for each listener that failed."""
    failures = []
    for listener in list(_LISTENERS):
        try:
            listener(event, details)
        except Exception as exc:  # a listener's failure is reported, never raised: the command's work stands
            first = (str(exc).splitlines() or [type(exc).__name__])[0]
            failures.append(f"{event} done, but recording it for the Dagster UI failed: {first}")
    return failures
