"""Consoles for tables and messages: the terminal's width on a terminal, the content's width elsewhere.

Rich lays out for 80 columns when it does not write to a terminal, so a table piped to
a file or read by cron's mail was cut there (the rejects table showed `dt=2026-11-06/…`
and hid the file). Decision: off a terminal the width is PIPE_WIDTH, so a table takes the
width its content needs (tables are not expanded, so nothing is padded out to it) and a
line is never wrapped; on a terminal nothing changes. Asked for on every print, not when
the console is made, since tests and callers swap sys.stdout after import.
"""

from __future__ import annotations

from rich.console import Console, ConsoleDimensions

# Wide enough for any row a command prints; a cap only so a runaway cell cannot make
# rich lay out a line of millions of columns.
PIPE_WIDTH = 10_000


class ContentWidthConsole(Console):
    """A rich Console that, off a terminal, lays out at PIPE_WIDTH columns instead of 80."""

    @property
    def size(self) -> ConsoleDimensions:
        dims = super().size
        return dims if self.is_terminal else ConsoleDimensions(PIPE_WIDTH, dims.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]


def console(stderr: bool = False) -> Console:
    """The console commands print tables and messages with (stdout, or stderr)."""
    return ContentWidthConsole(stderr=stderr, highlight=False)
