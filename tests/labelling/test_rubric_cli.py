"""`goldenset rubric check`: output and exit codes, on the sub-app and mounted under a parent."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from goldenset.cli.rubric import app
from goldenset.labelling.rubric import RubricError

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "conformance"
SHIPPED = ROOT / "goldenset" / "data"


@pytest.fixture
def runner():
    return CliRunner()


def test_check_closed_rubric_prints_counts_and_exits_0(runner):
    result = runner.invoke(app, ["check", str(DATA / "rubric.yaml")])
    assert result.exit_code == 0
    assert result.output == "closed: 32 assignments, 3 labels\n"


def test_check_open_rubric_lists_assignments_and_exits_1(runner):
    result = runner.invoke(app, ["check", str(SHIPPED / "open-rubric.yaml")])
    assert result.exit_code == 1
    assert result.output == (
        "fail: [recency, coverage] -> partial, outdated\n"
        "fail: [authority] -> no label\n"
        "fail: [authority, coverage] -> no label\n"
    )


def test_check_invalid_rubric_raises_rubric_error_for_the_main_cli(runner, tmp_path):
    path = tmp_path / "rubric.yaml"
    path.write_text("name: r\nname: s\n", encoding="utf-8")
    result = runner.invoke(app, ["check", str(path)])
    assert result.exit_code == 1
    assert isinstance(result.exception, RubricError)
    assert (
        str(result.exception) == f"{path}: line 2: key 'name' appears twice in one mapping (first at line 1); keep one"
    )


def test_check_without_a_file_is_a_usage_error(runner):
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 2
    assert "Missing argument 'FILE'" in result.output


def test_rubric_app_mounts_as_goldenset_rubric(runner):
    parent = typer.Typer()
    parent.add_typer(app)

    @parent.command()
    def other() -> None:  # a second command, so the parent is a group like the real CLI
        """Placeholder."""

    result = runner.invoke(parent, ["rubric", "check", str(DATA / "rubric.yaml")])
    assert result.exit_code == 0
    assert result.output == "closed: 32 assignments, 3 labels\n"


def test_every_rubric_command_is_documented(runner):
    group = runner.invoke(app, ["--help"])
    assert group.exit_code == 0 and "check" in group.output
    for command in app.registered_commands:
        assert command.callback is not None and (command.callback.__doc__ or "").strip(), command.name


def test_shipped_support_policies_rubric_is_the_conformance_rubric():
    assert (SHIPPED / "support-policies.yaml").read_bytes() == (DATA / "rubric.yaml").read_bytes()


def test_shipped_support_policies_rubric_checks_closed(runner):
    result = runner.invoke(app, ["check", str(SHIPPED / "support-policies.yaml")])
    assert (result.exit_code, result.output) == (0, "closed: 32 assignments, 3 labels\n")
