"""The `goldenset` program: the app, its command groups, and errors turned into exit codes.

`create_app` assembles the program from the command modules of this package (one module
per command group; `golden` holds the top-level status, rejects and export). The Dagster
package adds `build` and `demo`, which run its jobs in-process, through the one hook
`create_app(register=...)`, and its `goldenset_dagster.cli` is the installed `goldenset`
program; `app` here is the library's program without them. Errors are turned into exit
codes in one place (`main`): 1 error, 2 usage, 3 golden set too old, 4 a retrieval
component down.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Annotated

import typer
from rich.console import Console

from goldenset import __version__, progress
from goldenset.cli import bench, calibrate, golden, judge, label, labels, pool, rubric, traces
from goldenset.cli import sql as sql_command
from goldenset.cli.shared import command_group, err
from goldenset.errors import GoldensetError

HELP = "Keep a retrieval golden set current from serve logs, and benchmark retrieval against it."

# The command groups, in the order `--help` lists them.
GROUPS: tuple[tuple[str, typer.Typer], ...] = (
    ("rubric", rubric.app),
    ("pool", pool.app),
    ("label", label.app),
    ("labels", labels.app),
    ("bench", bench.app),
    ("calibrate", calibrate.app),
    ("judge", judge.app),
    ("traces", traces.app),
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"goldenset {__version__}")
        raise typer.Exit()


def _root(
    version: Annotated[
        bool,
        typer.Option("--version", is_eager=True, callback=_print_version, help="Print the version and exit."),
    ] = False,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet",
            help="No progress lines or bars for long steps (off a terminal they are a plain line at most every 10 s).",
        ),
    ] = False,
) -> None:
    if quiet:
        progress.quiet()


def create_app(register: Callable[[typer.Typer], None] | None = None) -> typer.Typer:
    """The program: `register` first adds a host package's own top-level commands, then the library's follow."""
    app = command_group("goldenset", HELP)
    app.callback()(_root)
    if register is not None:
        register(app)
    for command in (*golden.COMMANDS, *sql_command.COMMANDS):
        app.command()(command)
    for name, group in GROUPS:
        app.add_typer(group, name=name)
    return app


app = create_app()


class RichReporter:
    """Progress bars on stderr for long steps when it is a terminal; notices on stderr always."""

    def __init__(self, console: Console):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.console = console
        self.bars = console.is_terminal
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self.active = 0

    def start(self, description: str, total: int | None) -> object:
        if not self.bars:
            return None
        if self.active == 0:
            self.progress.start()
        self.active += 1
        return self.progress.add_task(description, total=total)

    def advance(self, handle: object, n: int) -> None:
        if handle is not None:
            self.progress.advance(handle, n)  # type: ignore[arg-type]

    def finish(self, handle: object) -> None:
        if handle is None:
            return
        self.progress.remove_task(handle)  # type: ignore[arg-type]
        self.active -= 1
        if self.active == 0:
            self.progress.stop()

    def notice(self, message: str) -> None:
        self.console.print(message, markup=False, highlight=False, soft_wrap=True)


def main(argv: list[str] | None = None, application: typer.Typer | None = None) -> int:
    """Run the app, turning library errors into their exit codes; no traceback reaches a user."""
    application = application or app
    # Bars on a terminal; under cron, CI or a pipe, a plain line at most every 10 s.
    reporter = RichReporter(err) if err.is_terminal else progress.PlainReporter(_write_stderr)
    previous = progress.set_reporter(reporter)
    try:
        # Without standalone mode click returns a command's exit code (typer.Exit(1)) instead
        # of exiting; it must not be lost (`rubric check` on an open rubric exits 1).
        code = application(args=argv, standalone_mode=False)
    except GoldensetError as exc:
        _report(exc)
        return exc.exit_code
    except typer.Exit as exc:
        return int(exc.exit_code)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 0
    except (typer.Abort, KeyboardInterrupt):
        err.print("Aborted.")
        return 130
    except Exception as exc:
        # Usage errors from the (vendored) click parser carry their own exit code, 2.
        exit_code = getattr(exc, "exit_code", None)
        show = getattr(exc, "show", None)
        if callable(show) and isinstance(exit_code, int):
            show()
            return exit_code
        if isinstance(exc, OSError):
            sys.stderr.write(f"Error: {exc.strerror or exc}: {exc.filename or ''}\n".replace(": \n", "\n"))
            return 1
        sys.stderr.write(
            f"Error: unexpected {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}\n"
            "This is a bug in goldenset; please report it with the command you ran. "
            "GOLDENSET_DEBUG=1 shows the traceback.\n"
        )
        import os

        if os.environ.get("GOLDENSET_DEBUG"):
            raise
        return 1
    finally:
        progress.set_reporter(previous)
    return code if isinstance(code, int) else 0


def _write_stderr(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _report(exc: GoldensetError) -> None:
    msg = str(exc)
    if msg.startswith("COMPONENT DOWN"):
        sys.stderr.write(msg + "\n")
    else:
        sys.stderr.write(f"Error: {msg}\n")
