"""Every sensor of the Definitions waits for a change: turned on, it records what it sees and starts nothing.

Each sensor is started (Dagster's sensor testing API, as the daemon would tick it) with no
cursor on an input that exists, then again on the same input, then once more after the
input changed: the first two request nothing, the third one run, tagged with the sensor
as its trigger. A sensor added to the Definitions without a change of its own here fails
`test_every_sensor_of_the_definitions_is_tested`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest

from goldenset.settings import Settings
from goldenset_dagster.definitions import build_definitions
from tests.helpers import doc, ranked, serve, write_corpus, write_log

EXAMPLE = Path(__file__).resolve().parent.parent / "docs" / "examples" / "traces"


@dataclass(frozen=True)
class Inputs:
    """A home with a corpus, one log day and a span file: what the sensors watch."""

    home: Path
    settings: Settings

    @classmethod
    def make(cls, home: Path) -> Inputs:
        write_corpus(home / "corpus.jsonl", [doc("d1")])
        write_log(
            home / "logs",
            "2026-11-01",
            "part-0001.jsonl",
            [serve("s1", "2026-11-01T09:00:00Z", "t", [ranked("d1", 1)])],
        )
        shutil.copytree(EXAMPLE / "export", home / "trace_export")
        # One staging worker: refresh_after_staging watches the staged nightly.
        return cls(home, Settings.resolve({"GOLDENSET_HOME": str(home), "GOLDENSET_INGEST_WORKERS": "1"}))


def _new_corpus(inputs: Inputs, instance: dg.DagsterInstance) -> None:
    write_corpus(inputs.home / "corpus.jsonl", [doc("d1", "v2")])
    os.utime(inputs.home / "corpus.jsonl", (1, 1))


def _touched_span_file(inputs: Inputs, instance: dg.DagsterInstance) -> None:
    os.utime(inputs.home / "trace_export" / "traces.jsonl", (1, 1))


def _staging_succeeded(inputs: Inputs, instance: dg.DagsterInstance) -> None:
    from goldenset_dagster.staging import stage_serve_log

    assert stage_serve_log.execute_in_process(
        instance=instance,
        resources={"logs": build_definitions(inputs.settings).resources["logs"]},
        raise_on_error=True,
    ).success


# Each sensor of the Definitions -> how its input changes.
CHANGES: dict[str, Callable[[Inputs, dg.DagsterInstance], None]] = {
    "corpus_reindex_sensor": _new_corpus,
    "trace_export_sensor": _touched_span_file,
    "refresh_after_staging": _staging_succeeded,
}


def test_every_sensor_of_the_definitions_is_tested(tmp_path):
    defs = build_definitions(Settings.resolve({"GOLDENSET_HOME": str(tmp_path)}))
    assert {s.name for s in defs.sensors} == set(CHANGES)


def _tick(sensor: dg.SensorDefinition, instance, defs, cursor: str | None):
    with dg.build_sensor_context(instance=instance, cursor=cursor, definitions=defs, resources=defs.resources) as ctx:
        return sensor.evaluate_tick(ctx)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CHANGES))
def test_a_sensor_turned_on_records_what_it_sees_and_requests_a_run_only_on_a_change(tmp_path, name):
    inputs = Inputs.make(tmp_path / "home")
    defs = build_definitions(inputs.settings)
    sensor = defs.resolve_sensor_def(name)
    with dg.instance_for_test() as instance:
        first = _tick(sensor, instance, defs, None)
        assert first.run_requests == [] and first.cursor, first.skip_message
        second = _tick(sensor, instance, defs, first.cursor)
        assert second.run_requests == [], second.skip_message
        CHANGES[name](inputs, instance)
        third = _tick(sensor, instance, defs, second.cursor or first.cursor)
        assert len(third.run_requests) == 1, third.skip_message
        assert third.run_requests[0].tags["goldenset/trigger"] == f"sensor:{name}"
