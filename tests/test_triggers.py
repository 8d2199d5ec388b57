"""`goldenset/trigger` tells apart what started a run: cli, ui, schedule, sensor:NAME or backfill.

The command line, the schedules and the sensors set it when they create a run; a run
launched in the UI or by a backfill carries only Dagster's own tags and is given its
trigger when its first resource starts (goldenset_dagster.jobs.stamp_trigger).
"""

from __future__ import annotations

import dagster as dg
import pytest

from goldenset.settings import Settings
from goldenset_dagster.definitions import build_definitions
from goldenset_dagster.jobs import trigger_of


@pytest.mark.parametrize(
    ("tags", "trigger"),
    [
        ({"dagster/from_ui": "true"}, "ui"),
        ({"dagster/backfill": "abcdefgh"}, "backfill"),
        # A backfill launched in the UI: its runs are the backfill's.
        ({"dagster/backfill": "abcdefgh", "dagster/from_ui": "true"}, "backfill"),
        ({"dagster/schedule_name": "nightly_golden_set", "goldenset/trigger": "schedule"}, "schedule"),
        ({"dagster/sensor_name": "corpus_reindex_sensor"}, "sensor:corpus_reindex_sensor"),
        # A run re-executed in the UI copies its parent's tags: the UI launched it.
        ({"dagster/sensor_name": "corpus_reindex_sensor", "dagster/from_ui": "true"}, "ui"),
        ({"dagster/schedule_name": "nightly_golden_set", "dagster/from_ui": "true"}, "ui"),
        ({"goldenset/trigger": "cli"}, "cli"),
        # Created by a program with no tag of its own (Dagster's command line, a script).
        ({}, "cli"),
        ({"dagster/from_ui": "false"}, "cli"),
    ],
)
def test_the_trigger_of_a_run_comes_from_dagsters_own_tags_first(tags, trigger):
    assert trigger_of(tags) == trigger


@pytest.mark.slow
def test_a_run_launched_in_the_ui_or_by_a_backfill_gets_its_trigger_when_it_starts(tmp_path):
    defs = build_definitions(Settings.resolve({"GOLDENSET_HOME": str(tmp_path)}))
    job = defs.resolve_job_def("import_labels")  # one step, using the LABELS folder
    with dg.instance_for_test() as instance:
        stamped = {}
        for launched_by in ({"dagster/from_ui": "true"}, {"dagster/backfill": "abcdefgh"}):
            run_id = job.execute_in_process(instance=instance, tags=launched_by).run_id
            stamped[next(iter(launched_by))] = instance.get_run_by_id(run_id).tags.get("goldenset/trigger")
    assert stamped == {"dagster/from_ui": "ui", "dagster/backfill": "backfill"}
