"""Every command that changes an asset is one run of its job, recorded once, as the UI would list it.

After the conformance build, `labels import`, `traces import`, `judge label`, `forget` and
one more `build` each run once, in this process, against the instance the UI shows; the
instance is read after each: its runs (job, status, trigger, the origin the Overview
timeline needs), the materializations and observations each recorded, and the checks the
build evaluated. (`pool` and `bench run`: tests/labelling/test_pool_recorded.py and
tests/bench/test_asset.py.)
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import dagster as dg
import pytest

from goldenset.checks import CHECKS
from goldenset_dagster.cli import main
from goldenset_dagster.instance import get_instance
from tests.helpers import copy_build

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "conformance"
TRACES = ROOT / "docs" / "examples" / "traces"
GOLDEN_SET_CHECKS = 1 + len(CHECKS)  # the checks of goldenset/checks.py and judge_health


def _events(instance: dg.DagsterInstance, run_id: str) -> Counter:
    """(event type, asset) -> how many, in run `run_id`."""
    seen: Counter = Counter()
    for entry in instance.all_logs(run_id):
        event = entry.dagster_event
        if event is None or event.event_type not in (
            dg.DagsterEventType.ASSET_MATERIALIZATION,
            dg.DagsterEventType.ASSET_OBSERVATION,
            dg.DagsterEventType.ASSET_CHECK_EVALUATION,
        ):
            continue
        key = event.asset_key if event.asset_key is not None else event.event_specific_data.asset_key
        seen[(event.event_type.value, key.to_user_string())] += 1
    return seen


def _run_of(argv: list[str]) -> tuple[dg.DagsterRun, Counter]:
    """Run the command; the one run it added (asserted to be one, and listed as the UI's are) and its events."""
    with get_instance() as instance:
        before = {r.run_id for r in instance.get_runs()}
    assert main(argv) == 0, argv
    with get_instance() as instance:
        new = [r for r in instance.get_runs() if r.run_id not in before]
        assert len(new) == 1, (argv, [r.job_name for r in new])
        run = new[0]
        assert run.status == dg.DagsterRunStatus.SUCCESS
        # The timeline's query keeps runs with start and end times and a repository origin.
        record = instance.get_run_record_by_id(run.run_id)
        assert record.start_time is not None and record.end_time is not None
        assert run.remote_job_origin is not None and run.remote_job_origin.location_name == "goldenset"
        assert run.tags["goldenset/trigger"] == "cli" and run.tags[".dagster/repository"] == "__repository__@goldenset"
        return run, _events(instance, run.run_id)


def test_each_command_is_one_run_of_its_job_recording_each_change_once(tmp_path, conformance_build, isolated_home):
    db = copy_build(conformance_build, tmp_path / "g.duckdb", isolated_home)
    logs, labels = tmp_path / "logs", tmp_path / "labels"
    shutil.copytree(DATA / "logs", logs)
    paths = ["--db", str(db)]

    run, events = _run_of(
        ["labels", "import", str(DATA / "labels" / "dt=2026-11-03" / "part-0001.jsonl"), "--labels", str(labels)]
        + ["--rubric", str(DATA / "rubric.yaml")]
    )
    assert run.job_name == "import_labels"
    assert events == {("ASSET_OBSERVATION", "label_files"): 1}

    traces = ["traces", "import", str(TRACES / "export"), "--format", "otlp-json", "--mapping"]
    run, events = _run_of([*traces, str(TRACES / "mapping.yaml"), "--logs", str(logs), *paths])
    assert run.job_name == "import_trace_export"
    assert events == {("ASSET_MATERIALIZATION", "trace_export"): 1, ("ASSET_OBSERVATION", "serve_log_files"): 1}

    # An empty queue: the judge is never asked (the URL answers nothing), the run is recorded.
    judge = ["judge", "label", "--annotator", "qwen", "--judge-url", "http://127.0.0.1:9", "--judge-model", "m"]
    run, events = _run_of([*judge, "--labels", str(labels), "--rubric", str(DATA / "rubric.yaml"), *paths])
    assert run.job_name == "judge_label_queue"
    assert events == {("ASSET_OBSERVATION", "label_files"): 1}

    run, events = _run_of(["forget", "--logs", "dt=2026-11-01/*", "--yes", *paths])
    assert run.job_name == "forget_files"
    assert events == {("ASSET_MATERIALIZATION", "serve_log"): 1}
    with get_instance() as instance:
        day = instance.get_latest_materialization_event(dg.AssetKey("serve_log"))
    assert day.asset_materialization.partition == "2026-11-01"
    meta = day.asset_materialization.metadata
    assert (meta["files"].value, meta["serves"].value, meta["files_forgotten_this_run"].value) == (0, 0, 1)

    # The forget sticks (9.6) until it is taken back (no run: no asset changes until a build reads
    # the file), then the next build reads the day again.
    assert main(["forget", "--undo", "dt=2026-11-01/*", *paths]) == 0
    run, events = _run_of(["build", "--logs", str(DATA / "logs"), "--corpus", str(DATA / "corpus.jsonl"), *paths])
    assert run.job_name == "refresh_golden_set"  # the day whose forget was taken back is read again
    build = {k: n for k, n in events.items() if k[1] not in ("serve_log", "human_labels")}
    assert build == {
        ("ASSET_OBSERVATION", "serve_log_files"): 1,
        ("ASSET_OBSERVATION", "label_files"): 1,
        ("ASSET_OBSERVATION", "corpus_file"): 1,
        ("ASSET_MATERIALIZATION", "corpus_snapshot"): 1,
        ("ASSET_MATERIALIZATION", "golden_set"): 1,
        ("ASSET_CHECK_EVALUATION", "golden_set"): GOLDEN_SET_CHECKS,
        ("ASSET_MATERIALIZATION", "relabel_queue"): 1,
        ("ASSET_MATERIALIZATION", "golden_set_export"): 1,
    }

    # Synced after the build; a new code version of golden_set's module makes it Unsynced, and what reads it.
    assert _stale(db) == {k: "FRESH" for k in ("corpus_snapshot", "golden_set", "relabel_queue", "golden_set_export")}
    edited = {"goldenset_dagster.assets.golden_set": "edited"}
    assert _stale(db, edited) == {
        "corpus_snapshot": "FRESH",
        "golden_set": "STALE",
        "relabel_queue": "STALE",
        "golden_set_export": "STALE",
    }


def _stale(db: Path, edited: dict[str, str] | None = None) -> dict[str, str]:
    """What the UI's Unsynced badge says of the build's assets, with some modules' code versions replaced."""
    from dagster._core.definitions.data_version import CachingStaleStatusResolver
    from dagster._core.loader import LoadingContextForTest

    from goldenset.settings import Settings
    from goldenset_dagster import definitions, versions

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(
            definitions, "code_version", lambda module: (edited or {}).get(module, versions.code_version(module))
        )
        graph = definitions.build_definitions(Settings.resolve(db=str(db))).resolve_asset_graph()
    with get_instance() as instance:
        resolver = CachingStaleStatusResolver(instance, graph, LoadingContextForTest(instance))
        keys = ("corpus_snapshot", "golden_set", "relabel_queue", "golden_set_export")
        return {k: resolver.get_status(dg.AssetKey(k)).value for k in keys}
