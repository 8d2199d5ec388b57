"""What the Dagster UI lists of the command line's runs: on their job's page and timeline, with readable tags."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.events import EngineEventData
from dagster._core.utils import make_new_run_id

from goldenset_dagster.cli import main
from goldenset_dagster.instance import get_instance
from goldenset_dagster.launch import announce_process, reclaim_dead_runs

pytestmark = pytest.mark.slow

DATA = Path(__file__).parent / "data" / "conformance"
# The filter the UI's job page puts on its run list (its runs query: job name and this tag).
JOB_PAGE_TAG = ".dagster/repository"


def test_a_cli_build_is_listed_on_its_job_page_and_timeline_with_its_trigger_and_no_process_tags(tmp_path):
    db = tmp_path / "g.duckdb"
    assert main(["build", "--logs", str(DATA / "logs"), "--corpus", str(DATA / "corpus.jsonl"), "--db", str(db)]) == 0
    with get_instance() as instance:
        listed = instance.get_runs(
            filters=dg.RunsFilter(job_name="refresh_golden_set", tags={JOB_PAGE_TAG: "__repository__@goldenset"})
        )
        assert len(listed) == 1
        run = listed[0]
        user_tags = {k for k in run.tags if not k.startswith((".dagster/", "dagster/"))}
        assert user_tags == {"goldenset/trigger", "user"} and run.tags["goldenset/trigger"] == "cli"
        assert run.tags["user"].startswith("cli:") and run.tags["dagster/max_retries"] == "0"
        # The Overview timeline lists a run only with the origin of a code location's launch.
        origin = run.remote_job_origin
        assert (origin.location_name, origin.repository_origin.repository_name) == ("goldenset", "__repository__")
        # The process that ran it is in the run's log, as metadata of its first event.
        first = instance.all_logs(run.run_id)[0].dagster_event
        assert first.event_type == dg.DagsterEventType.ENGINE_EVENT
        meta = first.event_specific_data.metadata
        assert meta["goldenset/pid"].value == os.getpid() and meta["goldenset/host"].value == socket.gethostname()


def test_a_run_whose_process_is_gone_is_failed_and_a_live_one_kept(tmp_path):
    gone = subprocess.Popen(["true"])  # a process that has exited: its pid names no process now
    gone.wait()
    with dg.instance_for_test() as instance:
        live_id = announce_process(instance, "refresh_golden_set")  # this process: alive
        # The second run's process has exited (its identity recorded as announce_process records one).
        dead_id = make_new_run_id()

        instance.report_engine_event(
            "goldenset process",
            engine_event_data=EngineEventData(
                metadata={
                    "goldenset/pid": dg.MetadataValue.int(gone.pid),
                    "goldenset/host": dg.MetadataValue.text(socket.gethostname()),
                    "goldenset/process-start": dg.MetadataValue.text("1"),
                }
            ),
            job_name="refresh_golden_set",
            run_id=dead_id,
        )
        for run_id in (live_id, dead_id):
            instance.add_run(
                dg.DagsterRun(job_name="refresh_golden_set", run_id=run_id, status=dg.DagsterRunStatus.STARTED)
            )
        freed = reclaim_dead_runs(instance)
        assert len(freed) == 1 and dead_id[:8] in freed[0]
        assert instance.get_run_by_id(dead_id).status == dg.DagsterRunStatus.FAILURE
        assert instance.get_run_by_id(live_id).status == dg.DagsterRunStatus.STARTED


def test_a_command_that_changes_nothing_does_not_load_dagster(tmp_path):
    """`goldenset status` stays as quick as it was: Dagster (about 1.4 s to import) loads only for a run."""
    import sys

    probe = (
        "import sys; from goldenset_dagster.cli import main; "
        f"code = main(['status', '--db', {str(tmp_path / 'none.duckdb')!r}]); "
        "print('dagster' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip().splitlines()[-1] == "False", done.stderr[-2000:]
