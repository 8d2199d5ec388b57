"""Generated documentation: the README's CLI and table references cannot drift.

It lives with the orchestration code because the CLI reference covers the whole
program (`build` and `demo` included).

`python -m goldenset_dagster.docs` rewrites the marked sections of README.md; a test
checks that they are current.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from goldenset import schema

WIDTH = 100


def cli_reference() -> str:
    """Every command's --help, as the CLI prints it."""
    import typer.main

    from goldenset_dagster.cli import app

    root = typer.main.get_command(app)
    parts = []

    def walk(cmd, path: str) -> None:
        ctx = cmd.context_class(cmd, info_name=path, terminal_width=WIDTH, max_content_width=WIDTH)
        parts.append(f"#### `{path}`\n\n```text\n{cmd.get_help(ctx).rstrip()}\n```\n")
        if hasattr(cmd, "list_commands"):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                if sub is not None and not sub.hidden:
                    walk(sub, f"{path} {name}")

    walk(root, "goldenset")
    return "\n".join(parts)


def table_reference() -> str:
    return schema.markdown_reference()


SECTIONS = {"cli": cli_reference, "tables": table_reference}


def render(readme: str) -> str:
    """README text with every generated section replaced by its current content."""
    for name, fn in SECTIONS.items():
        pattern = re.compile(rf"(<!-- BEGIN GENERATED {name} -->\n).*?(<!-- END GENERATED {name} -->)", re.DOTALL)
        if not pattern.search(readme):
            raise ValueError(f"README has no generated section {name!r}")
        content = fn()

        def replace(m: re.Match[str], body: str = content) -> str:
            return m.group(1) + body + "\n" + m.group(2)

        readme = pattern.sub(replace, readme)
    return readme


def main(argv: list[str] | None = None) -> int:
    path = Path(argv[0] if argv else "README.md")
    text = path.read_text(encoding="utf-8")
    new = render(text)
    if new != text:
        path.write_text(new, encoding="utf-8")
        print(f"updated {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
