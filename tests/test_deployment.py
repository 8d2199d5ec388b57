"""The sample deployment of docs/deploy as the guides show it: unit files, the cron line, where state goes.

Each command runs in a real subprocess with only the environment systemd or cron would
give it, from a working directory that must stay empty.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from goldenset_dagster.instance import INSTANCE_YAML
from tests.deploy_units import DEPLOY, ROOT, cron_command, make_layout, service_command, unit_lines
from tests.helpers import doc, ranked, serve, verdict, write_corpus, write_log

UNITS = ["goldenset-build.service", "goldenset-build.timer", "dagster-daemon.service", "dagster-webserver.service"]


def write_inputs(home: Path) -> None:
    """A day of logs and a corpus where GOLDENSET_HOME puts them when nothing else is said."""
    write_log(
        home / "logs",
        "2026-11-01",
        "a.jsonl",
        [
            serve("s1", "2026-11-01T09:00:00Z", "How do refunds work?", [ranked("d1", 1), ranked("d2", 2)]),
            verdict("s1", "d1", "helped", "2026-11-01T09:01:00Z"),
            verdict("s1", "d2", "noise", "2026-11-01T09:01:00Z"),
        ],
    )
    write_corpus(home / "corpus.jsonl", [doc("d1"), doc("d2")])


# The guides include each sample file through a snippet line, so a page shows the file as
# it is in the repository; `mkdocs build --strict` fails on a snippet whose file is missing.
GUIDES = {"nightly": ROOT / "docs" / "guides" / "nightly.md", "scale-out": ROOT / "docs" / "guides" / "scale-out.md"}


def included(name: str) -> list[str]:
    """The guides that include docs/deploy/NAME."""
    line = f'--8<-- "docs/deploy/{name}"'
    return sorted(guide for guide, path in GUIDES.items() if line in path.read_text(encoding="utf-8").splitlines())


@pytest.mark.parametrize("name", sorted(p.name for p in DEPLOY.iterdir()))
def test_a_guide_includes_each_deploy_file_as_it_is(name):
    assert included(name), f"docs/deploy/{name} is shown by no guide"


def test_the_nightly_guide_shows_the_cron_and_timer_files_and_scale_out_the_instance_files():
    assert [n for n in sorted(p.name for p in DEPLOY.iterdir()) if included(n) == ["nightly"]] == [
        "crontab",
        "goldenset-build.service",
        "goldenset-build.timer",
    ]


def test_k8s_instance_shares_the_postgres_storage_and_the_project_settings():
    k8s = yaml.safe_load((DEPLOY / "dagster-k8s.yaml").read_text(encoding="utf-8"))
    plain = yaml.safe_load((DEPLOY / "dagster.yaml").read_text(encoding="utf-8"))
    generated = yaml.safe_load(INSTANCE_YAML)
    k8s_db, plain_db = k8s["storage"]["postgres"]["postgres_db"], plain["storage"]["postgres"]["postgres_db"]
    assert {**k8s_db, "hostname": None} == {**plain_db, "hostname": None}
    assert k8s["concurrency"]["pools"]["default_limit"] == generated["concurrency"]["pools"]["default_limit"]
    assert k8s["run_retries"] == generated["run_retries"] and k8s["telemetry"] == generated["telemetry"]
    env = dict(v.split("=", 1) for v in k8s["run_launcher"]["config"]["env_vars"])
    mounts = {m["mount_path"] for m in k8s["run_launcher"]["config"]["volume_mounts"]}
    assert env["GOLDENSET_HOME"] in mounts


def test_unit_files_pass_systemd_analyze_verify(tmp_path):
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed (Debian package systemd)")
    layout = make_layout(tmp_path)
    (layout.etc / "secrets.env").write_text((DEPLOY / "secrets.env").read_text(encoding="utf-8"), encoding="utf-8")
    units = tmp_path / "units"
    units.mkdir()
    for name in UNITS:
        (units / name).write_text(layout.place((DEPLOY / name).read_text(encoding="utf-8")), encoding="utf-8")
    # It checks every key and section, that each ExecStart program exists, and the timer's unit.
    done = subprocess.run(
        [analyze, "verify", "--man=no", *UNITS], cwd=units, capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stderr) == (0, "")


def test_the_timer_fires_the_build_unit_nightly_at_two_utc():
    settings = dict(unit_lines("goldenset-build.timer"))
    assert settings["OnCalendar"] == "*-*-* 02:00:00 UTC" and settings["Unit"] == "goldenset-build.service"
    assert settings["Persistent"] == "true"


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.mark.slow
def test_the_build_unit_writes_everything_under_goldenset_home_and_nothing_where_it_runs(tmp_path):
    layout = make_layout(tmp_path)
    write_inputs(layout.home)
    inputs = _tree(layout.home)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    argv, env = service_command("goldenset-build.service", layout)
    assert argv == [str(layout.programs / "goldenset"), "build"] and Path(env["GOLDENSET_HOME"]).is_absolute()
    assert "DAGSTER_HOME" not in env and not (layout.etc / "secrets.env").exists()  # optional, as the unit says

    done = subprocess.run(argv, cwd=elsewhere, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "build 1 published" in done.stdout
    made = _tree(layout.home) - inputs
    assert {"goldenset.duckdb", "dagster/dagster.yaml", "export/latest/manifest.json"} <= made
    assert (layout.home / "dagster" / "dagster.yaml").read_text(encoding="utf-8") == INSTANCE_YAML
    assert any(p.endswith("runs.db") for p in made)  # without a PostgreSQL dagster.yaml: SQLite, in the home
    assert not list(elsewhere.iterdir()) and not list(layout.user_home.iterdir())


@pytest.mark.slow
def test_the_cron_line_builds_from_the_users_home_with_crons_environment(tmp_path):
    layout = make_layout(tmp_path)
    write_inputs(layout.home)
    schedule, command, env = cron_command(layout)
    assert schedule == "0 2 * * *"
    # cron runs the line with /bin/sh from the user's home, with HOME, LOGNAME, PATH=/usr/bin:/bin, SHELL.
    done = subprocess.run(
        ["/bin/sh", "-c", command], cwd=layout.user_home, env=env, capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    log = (layout.home / "build.log").read_text(encoding="utf-8")
    assert "build 1 published" in log
    assert (layout.home / "goldenset.duckdb").is_file() and (layout.home / "dagster" / "dagster.yaml").is_file()
    assert not list(layout.user_home.iterdir())


def test_without_goldenset_home_an_editable_install_keeps_its_state_in_the_checkouts_var(tmp_path):
    # Asked from an unrelated directory, with nothing set: the answer is the checkout's var/,
    # never the working directory (running a build here would write into the checkout).
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    probe = "from goldenset import settings; print(settings.home()); print(settings.default_path('dagster_home'))"
    if os.environ.get("PYTHONPATH"):  # only when the suite runs the code from a path rather than an install
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == [str(ROOT / "var"), str(ROOT / "var" / "dagster")]
