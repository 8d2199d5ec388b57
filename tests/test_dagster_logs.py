"""Every run's step output is readable after the process that ran it is gone (issue 22).

`dagster dev` started in the checkout without DAGSTER_HOME makes a temporary home it
removes on exit, and takes its settings from the checkout's dagster.yaml; the command line
uses GOLDENSET_HOME/dagster. Both must keep compute logs where the next process finds them.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.instance.ref import InstanceRef

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SAID = "hello from the step, seed 22"


@dg.op
def shout() -> None:
    print(SAID)


@dg.job
def speaking():
    shout()


@dg.op
def hush() -> None:
    pass


@dg.job
def quiet():
    hush()


def _log_data(instance: dg.DagsterInstance, run_id: str):
    """The steps' captured stdout and stderr, read through Dagster's API as the UI reads them."""
    captured = [
        e.dagster_event.event_specific_data
        for e in instance.all_logs(run_id)
        if e.dagster_event is not None and e.dagster_event.event_type_value == "LOGS_CAPTURED"
    ]
    assert len(captured) == 1
    return instance.compute_log_manager.get_log_data([run_id, "compute_logs", captured[0].file_key])


def _stdout_of(instance: dg.DagsterInstance, run_id: str) -> bytes | None:
    """The step's captured stdout, read through Dagster's API as the UI reads it."""
    captured = [
        e.dagster_event.event_specific_data
        for e in instance.all_logs(run_id)
        if e.dagster_event is not None and e.dagster_event.event_type_value == "LOGS_CAPTURED"
    ]
    assert len(captured) == 1
    data = instance.compute_log_manager.get_log_data([run_id, "compute_logs", captured[0].file_key])
    return data.stdout


@contextmanager
def _dev_instance(checkout: Path, tmp_path: Path) -> Iterator[dg.DagsterInstance]:
    """What `dagster dev` opens without DAGSTER_HOME: a temporary home, the settings of ./dagster.yaml."""
    with (
        tempfile.TemporaryDirectory(dir=tmp_path) as home,
        dg.DagsterInstance.from_ref(InstanceRef.from_dir(home, config_dir=str(checkout))) as instance,
    ):
        yield instance


def test_dagster_dev_in_the_checkout_keeps_step_logs_across_a_restart(tmp_path, monkeypatch):
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    shutil.copy(ROOT / "dagster.yaml", checkout / "dagster.yaml")
    monkeypatch.chdir(checkout)  # dagster dev runs in the checkout; relative base_dirs are taken from there
    with _dev_instance(checkout, tmp_path) as first:
        run_id = speaking.execute_in_process(instance=first).run_id
    with _dev_instance(checkout, tmp_path) as second:  # a restart: the first temporary home is gone
        assert _stdout_of(second, run_id) == (SAID + "\n").encode()
    assert (checkout / "var" / "dagster" / "storage" / run_id).is_dir()


def test_the_command_lines_instance_keeps_step_logs_under_the_home(isolated_home):
    from goldenset_dagster.instance import get_instance

    with get_instance() as first:
        run_id = speaking.execute_in_process(instance=first).run_id
    with get_instance() as second:
        assert _stdout_of(second, run_id) == (SAID + "\n").encode()
    assert (isolated_home / "dagster" / "storage" / run_id).is_dir()


def test_a_run_whose_steps_print_nothing_says_no_output_instead_of_no_log_file(isolated_home):
    from goldenset_dagster.instance import get_instance

    # The command line's runs: the console logger quiet, the steps silent.
    hushed = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
    with get_instance() as instance:
        data = _log_data(instance, quiet.execute_in_process(instance=instance, run_config=hushed).run_id)
    # The UI shows "No log file available" for empty bytes (its API turns them into none), this line otherwise.
    assert data.stdout == b"no output: nothing was printed on stdout while the steps ran\n"
    assert data.stderr == b"no output: nothing was printed on stderr while the steps ran\n"
