"""Generated documentation: the site's CLI and table references cannot drift.

Two pages of the MkDocs site are written by this module, whole:
`docs/reference/cli.md` (every command's `--help`) and `docs/reference/tables.md`
(the table catalogue in `goldenset.schema`). `python -m goldenset_dagster.docs`
rewrites them; a test checks that the committed pages equal what it would write.
Whole pages rather than marked sections of a hand-written page: nothing in them is
edited by hand, so there is nothing a regeneration could overwrite.

It lives with the orchestration code because the CLI reference covers the whole
program (`build` and `demo` included).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from goldenset import schema

WIDTH = 100
ROOT = Path(__file__).resolve().parent.parent

CLI_INTRO = """\
# Command line

Generated from each command's `--help` by `python -m goldenset_dagster.docs`; do not edit by hand.
Exit codes are listed in [Exit codes](exit-codes.md); settings and environment variables in
[Settings and environment](settings.md).
"""

TABLES_INTRO = """\
# Tables

Public names are stable; internal tables (`log_*`, `corpus_loads`, `corpus_documents`,
`build_labels`, `build_labels_closed`, `embedding_cache`) are there to read but may change. Timestamps are
UTC (`TIMESTAMP` without zone). Generated from `goldenset/schema.py` by `python -m goldenset_dagster.docs`;
do not edit by hand. [Query label history in SQL](../guides/label-history.md) shows them in use.
"""


def cli_reference() -> str:
    """Every command's --help, as the CLI prints it, one section per command."""
    import typer.main

    from goldenset_dagster.cli import app

    root = typer.main.get_command(app)
    parts = []

    def walk(cmd, path: str) -> None:
        ctx = cmd.context_class(cmd, info_name=path, terminal_width=WIDTH, max_content_width=WIDTH)
        parts.append(f"## `{path}`\n\n```text\n{cmd.get_help(ctx).rstrip()}\n```\n")
        if hasattr(cmd, "list_commands"):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                if sub is not None and not sub.hidden:
                    walk(sub, f"{path} {name}")

    walk(root, "goldenset")
    return CLI_INTRO + "\n" + "\n".join(parts)


def table_reference() -> str:
    """The table catalogue, one section per public table or view."""
    return TABLES_INTRO + "\n" + schema.markdown_reference().rstrip("\n") + "\n"


# Page (relative to the repository root) -> the function that writes it.
PAGES: dict[str, Callable[[], str]] = {
    "docs/reference/cli.md": cli_reference,
    "docs/reference/tables.md": table_reference,
}


def render() -> dict[str, str]:
    """Every generated page's current text, by its path relative to the repository root."""
    return {path: fn() for path, fn in PAGES.items()}


def stale(root: Path = ROOT) -> list[str]:
    """The generated pages under root whose committed text differs from what render() gives."""
    out = []
    for path, text in render().items():
        page = root / path
        if not page.is_file() or page.read_text(encoding="utf-8") != text:
            out.append(path)
    return out


def main(argv: list[str] | None = None) -> int:
    root = Path(argv[0]) if argv else ROOT
    for path, text in render().items():
        page = root / path
        if page.is_file() and page.read_text(encoding="utf-8") == text:
            continue
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(text, encoding="utf-8")
        print(f"updated {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
