"""Consoles for tables and messages: the terminal's width on a terminal, the content's width elsewhere.

Rich lays out for 80 columns when it does not write to a terminal, so a table piped to
a file or read by cron's mail was cut there (the rejects table showed `dt=2026-11-06/…`
and hid the file). Decision: off a terminal the width is PIPE_WIDTH, so a table takes the
width its content needs (tables are not expanded, so nothing is padded out to it) and a
line is never wrapped; on a terminal nothing changes. Asked for on every print, not when
the console is made, since tests and callers swap sys.stdout after import.

Off a terminal a table's title and caption are one line each, never wrapped to the table's
width nor padded out to it: rich justifies a title within the table's width, so a title line
of 18 characters was followed by some 180 blanks when one cell of the table below it was
long (cron's mail and `diff` showed every one), and a title wider than its table wrapped.
On a terminal rich lays out as it always has.
"""

from __future__ import annotations

import copy
from typing import Any

from rich.console import Console, ConsoleDimensions
from rich.table import Table
from rich.text import Text

# Wide enough for any row a command prints; a cap only so a runaway cell cannot make
# rich lay out a line of millions of columns.
PIPE_WIDTH = 10_000


def _one_line(title: Any) -> Any:
    """A table title as a Text that is never wrapped (off a terminal)."""
    if isinstance(title, str):
        return Text(title, no_wrap=True, overflow="ignore")
    return title


def _unwrapped(obj: Any) -> Any:
    """A table whose title and caption stay on one line; anything else as it is."""
    if not isinstance(obj, Table) or (obj.title is None and obj.caption is None):
        return obj
    table = copy.copy(obj)
    table.title, table.caption = _one_line(obj.title), _one_line(obj.caption)
    return table


class ContentWidthConsole(Console):
    """A rich Console that, off a terminal, lays out at the content's width (PIPE_WIDTH at most)."""

    @property
    def size(self) -> ConsoleDimensions:
        dims = super().size
        return dims if self.is_terminal else ConsoleDimensions(PIPE_WIDTH, dims.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]

    def print(self, *objects: Any, **kwargs: Any) -> None:
        super().print(*(objects if self.is_terminal else [_unwrapped(o) for o in objects]), **kwargs)


def console(stderr: bool = False) -> Console:
    """The console commands print tables and messages with (stdout, or stderr)."""
    return ContentWidthConsole(stderr=stderr, highlight=False)
