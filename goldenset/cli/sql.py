"""`goldenset sql [QUERY] [--format table|csv|json]`: read-only SQL on the warehouse (contract 17.3).

With QUERY it runs it and prints the result; without, and with a terminal, it opens a prompt
(Python's `cmd`, with `readline`'s completion of table, view and column names); without, and
without a terminal, it runs what standard input holds. Each statement goes through
`goldenset.sql.run`, which opens the warehouse read-only for that statement only.
"""

from __future__ import annotations

import cmd
import sys
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Annotated, TextIO

import typer
from rich.table import Table

from goldenset import settings
from goldenset.cli.options import DbOpt, WaitOpt
from goldenset.cli.shared import err, out
from goldenset.warehouse import missing_warehouse

# Words the prompt completes besides the warehouse's names (upper case, as typed in the guides).
KEYWORDS = (
    "SELECT", "FROM", "WHERE", "GROUP", "BY", "ORDER", "LIMIT", "JOIN", "LEFT", "ON", "AS", "AND", "OR",
    "NOT", "NULL", "IS", "IN", "COUNT", "DISTINCT", "HAVING", "DESC", "ASC", "DESCRIBE", "SUMMARIZE",
)  # fmt: skip


def sql(
    query: Annotated[
        str | None,
        typer.Argument(help="The SQL to run (one statement, or several: the last one's result is printed)."),
    ] = None,
    fmt: Annotated[str, typer.Option("--format", help="table, csv (with a header row) or json (an array).")] = "table",
    db: DbOpt = None,
    wait: WaitOpt = None,
) -> None:
    """Read-only SQL on the warehouse; without QUERY a prompt that lists and completes the tables and views.

    Each statement opens the warehouse read-only and closes it when done: it never takes the
    writer's lock, waits while a build runs, and gives way to a build that starts meanwhile
    (the statement runs again once the build is done). Files cannot be read or written from
    the SQL (no COPY TO, no ATTACH): --format csv or json is how results leave.
    """
    from goldenset.sql import check_format, run

    check_format(fmt)
    path = settings.resolve("db", db)
    if not path.exists():
        raise missing_warehouse(path)
    seconds = settings.lock_timeout(wait)

    def execute(text: str) -> None:
        show(run(path, text, wait=seconds, notify=lambda m: err.print(m, markup=False, soft_wrap=True)), fmt)

    if query is not None:
        execute(query)
    elif sys.stdin.isatty():
        Prompt(path, seconds, execute).cmdloop()
    else:
        execute(sys.stdin.read())


def show(result, fmt: str) -> None:
    """Print a result in `fmt`: a table and its row count, CSV, or JSON."""
    from goldenset.sql import as_csv, as_json, cell

    if fmt == "csv":
        typer.echo(as_csv(result), nl=False)
    elif fmt == "json":
        typer.echo(as_json(result))
    elif result.columns:
        t = Table()
        for i, name in enumerate(result.columns):
            values = [r[i] for r in result.rows if r[i] is not None]
            numbers = values and all(isinstance(v, int | float | Decimal) and not isinstance(v, bool) for v in values)
            t.add_column(name, overflow="fold", justify="right" if numbers else "left")
        for row in result.rows:
            t.add_row(*(cell(v) for v in row))
        out.print(t)
        out.print(f"{len(result.rows)} row(s)", markup=False)


class Prompt(cmd.Cmd):
    """The interactive prompt: SQL ending in `;` runs; `.tables`, `.help` and `.quit` (or end of input)."""

    prompt = "goldenset> "

    def __init__(
        self,
        db: Path,
        wait: float,
        execute: Callable[[str], None],
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
    ):
        super().__init__(stdin=stdin, stdout=stdout)
        if stdin is not None:
            self.use_rawinput = False
        self.db, self.wait, self.execute = db, wait, execute
        self.pending: list[str] = []
        self._names: list[str] | None = None

    def preloop(self) -> None:
        self.stdout.write(self.listing() + "\n")
        self.stdout.write("End a statement with ';'. .tables lists them again, .quit (or Ctrl-D) leaves.\n")

    def listing(self) -> str:
        from goldenset.sql import relations

        found = relations(self.db, wait=self.wait)
        tables = ", ".join(n for n, kind in found if kind == "table")
        views = ", ".join(n for n, kind in found if kind == "view")
        return f"tables: {tables}\nviews: {views}"

    def names(self) -> list[str]:
        from goldenset.sql import names

        if self._names is None:
            self._names = names(self.db, wait=self.wait)
        return self._names

    def onecmd(self, line: str) -> bool:
        from goldenset.errors import GoldensetError

        text = line.strip()
        if text == "EOF" or (not self.pending and text in (".quit", ".exit")):
            self.stdout.write("\n" if text == "EOF" else "")
            return True
        if not self.pending and text in (".tables", ".help"):
            self.stdout.write(self.listing() + "\n")
            return False
        if not text:
            return False
        self.pending.append(line)
        if not text.endswith(";"):
            self.prompt = "     ...> "
            return False
        statement, self.pending, self.prompt = "\n".join(self.pending), [], Prompt.prompt
        try:
            self.execute(statement)
        except GoldensetError as exc:  # one line, and the prompt goes on
            err.print(f"Error: {exc}", markup=False, soft_wrap=True)
        return False

    def emptyline(self) -> bool:
        return False

    def completenames(self, text: str, *ignored) -> list[str]:
        return self.completedefault(text)

    def completedefault(self, text: str, *ignored) -> list[str]:
        from goldenset.sql import complete

        return complete([*self.names(), *KEYWORDS, ".tables", ".quit", ".help"], text)


COMMANDS = (sql,)
