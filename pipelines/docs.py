"""Generated documentation: the site's CLI, table and settings references cannot drift.

Two pages of the MkDocs site are written by this module, whole:
`docs/reference/cli.md` (every command's `--help`) and `docs/reference/tables.md`
(the table catalogue in `goldenset.schema`). One page is hand-written around a
generated section between `<!-- BEGIN GENERATED name -->` and `<!-- END GENERATED name -->`
markers: the settings table in `docs/reference/settings.md` (from `goldenset.settings.VARIABLES`),
whose page also explains the home, the writer lock and the variables outside that table.
The guide to the Dagster UI (`docs/guides/dagster-ui.md`) has three generated sections: the
jobs, the asset checks and the schedules and sensors, from the Definitions themselves.
`python -m goldenset_dagster.docs` rewrites them; a test checks that the committed pages
equal what it would write.

It lives with the orchestration code because the CLI reference covers the whole
program (`build` and `demo` included).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

from goldenset import schema, settings

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


def _definitions():
    """The Definitions as a deployment with no variable set loads them (the defaults)."""
    from goldenset_dagster.definitions import build_definitions

    return build_definitions(settings.Settings.resolve({}))


def _cell(text: str | None) -> str:
    return " ".join((text or "").split()).replace("|", "\\|")


def checks_reference() -> str:
    """Every asset check of the Definitions: its asset, whether it blocks, what it checks."""
    graph = _definitions().resolve_asset_graph()
    rows = ["| asset | check | blocking | what it checks |", "| --- | --- | --- | --- |"]
    for key in sorted(graph.asset_check_keys, key=lambda k: (k.asset_key.to_user_string(), k.name)):
        spec = graph.get_check_spec(key)
        rows.append(
            f"| `{key.asset_key.to_user_string()}` | `{key.name}` | {'yes' if spec.blocking else 'no'} "
            f"| {_cell(spec.description)} |"
        )
    return "\n".join(rows) + "\n"


def jobs_reference() -> str:
    """Every job of the Definitions (Dagster's hidden asset job aside) and its description."""
    rows = ["| job | what it does |", "| --- | --- |"]
    for job in sorted(_definitions().resolve_all_job_defs(), key=lambda j: j.name):
        if not job.name.startswith("__"):
            rows.append(f"| `{job.name}` | {_cell(job.description)} |")
    return "\n".join(rows) + "\n"


def automation_reference() -> str:
    """The schedules and sensors, their default status and when they act."""
    defs = _definitions()
    rows = ["| name | kind | starts | when | what it does |", "| --- | --- | --- | --- | --- |"]
    for schedule in sorted(defs.schedules, key=lambda s: s.name):
        when = f"`{schedule.cron_schedule}` ({schedule.execution_timezone or 'UTC'})"
        status = schedule.default_status.value.lower()
        rows.append(f"| `{schedule.name}` | schedule | {status} | {when} | {_cell(schedule.description)} |")
    for sensor in sorted(defs.sensors, key=lambda s: s.name):
        when = f"every {sensor.minimum_interval_seconds} s" if sensor.minimum_interval_seconds else "each tick"
        status = sensor.default_status.value.lower()
        rows.append(f"| `{sensor.name}` | sensor | {status} | {when} | {_cell(sensor.description)} |")
    return "\n".join(rows) + "\n"


# Page -> {section name -> the function that writes the section}, for hand-written pages.
SECTIONS: dict[str, dict[str, Callable[[], str]]] = {
    "docs/reference/settings.md": {"settings": settings.markdown_reference},
    "docs/guides/dagster-ui.md": {
        "jobs": jobs_reference,
        "checks": checks_reference,
        "automation": automation_reference,
    },
}


def fill_sections(text: str, sections: dict[str, Callable[[], str]], path: str = "page") -> str:
    """text with each marked section's body replaced by its function's current output."""
    for name, fn in sections.items():
        pattern = re.compile(rf"(<!-- BEGIN GENERATED {name} -->\n).*?(<!-- END GENERATED {name} -->)", re.DOTALL)
        if not pattern.search(text):
            raise ValueError(f"{path} has no generated section {name!r}: add its BEGIN and END markers")
        body = fn().rstrip("\n") + "\n"

        def replace(m: re.Match[str], body: str = body) -> str:
            return m.group(1) + body + m.group(2)

        text = pattern.sub(replace, text)
    return text


def render(root: Path = ROOT) -> dict[str, str]:
    """Every generated page's current text, by its path relative to the repository root."""
    pages = {path: fn() for path, fn in PAGES.items()}
    for path, sections in SECTIONS.items():
        pages[path] = fill_sections((root / path).read_text(encoding="utf-8"), sections, path)
    return pages


def stale(root: Path = ROOT) -> list[str]:
    """The generated pages under root whose committed text differs from what render() gives."""
    out = []
    for path, text in render(root).items():
        page = root / path
        if not page.is_file() or page.read_text(encoding="utf-8") != text:
            out.append(path)
    return out


USAGE = (
    "usage: python -m goldenset_dagster.docs [ROOT]  (rewrite the generated pages under ROOT, the checkout by default)"
)


def main(argv: list[str] | None = None) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    root = Path(argv[0]) if argv else ROOT
    if not (root / "docs").is_dir():
        print(f"error: {root} has no docs folder; {USAGE}", file=sys.stderr)
        return 2
    for path, text in render(root).items():
        page = root / path
        if page.is_file() and page.read_text(encoding="utf-8") == text:
            continue
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(text, encoding="utf-8")
        print(f"updated {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
