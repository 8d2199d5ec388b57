"""The Dagster code location run in-process: assets, checks, schedule and sensor."""

from __future__ import annotations

import json
import os
from pathlib import Path

import dagster as dg
import pytest

from goldenset.settings import Settings
from goldenset.warehouse import connect
from goldenset_dagster.assets.corpus import corpus_snapshot
from goldenset_dagster.assets.golden_set import golden_set, golden_set_export, relabel_queue
from goldenset_dagster.assets.labels import human_labels
from goldenset_dagster.assets.serve_log import serve_log
from goldenset_dagster.definitions import build_definitions
from goldenset_dagster.jobs import build_run_config
from goldenset_dagster.partitions import days as day_partitions
from goldenset_dagster.partitions import range_tags
from goldenset_dagster.resources import CorpusSource, LabelSource, LogSource, WarehouseResource
from goldenset_dagster.resources.embedder import EmbedderResource
from goldenset_dagster.schedules import nightly_schedules
from goldenset_dagster.sensors import corpus_reindex_sensor, decide
from tests.helpers import doc, ranked, serve, verdict, write_corpus, write_log

DATA = Path(__file__).parent / "data" / "conformance"
ALL_ASSETS = [serve_log, human_labels, corpus_snapshot, golden_set, relabel_queue, golden_set_export]


@pytest.fixture
def resources(tmp_path):
    return {
        "warehouse": WarehouseResource(db_path=str(tmp_path / "g.duckdb")),
        "logs": LogSource(path=str(DATA / "logs")),
        "corpus_source": CorpusSource(path=str(DATA / "corpus.jsonl")),
        "embedder": EmbedderResource(),
        "labels": LabelSource(path=str(tmp_path / "no-labels"), rubric_path=str(tmp_path / "no-rubric.yaml")),
    }


def _materialize(instance, resources, tmp_path, trigger="manual", **config):
    days = ["2026-11-01", "2026-11-02"]
    instance.add_dynamic_partitions(
        day_partitions.name, [d for d in days if d not in instance.get_dynamic_partitions(day_partitions.name)]
    )
    run_config = build_run_config(trigger, **config)
    run_config["ops"]["golden_set_export"] = {"config": {"out_dir": str(tmp_path / "export")}}
    return dg.materialize(
        ALL_ASSETS,
        instance=instance,
        resources=resources,
        run_config=run_config,
        tags=range_tags(days),
        raise_on_error=False,
    )


def test_definitions_load_with_every_job_schedule_and_sensor():
    defs = build_definitions(Settings.resolve())
    dg.Definitions.validate_loadable(defs)
    assert [defs.resolve_job_def(name).name for name in ("refresh_golden_set", "rebuild_golden_set")] == [
        "refresh_golden_set",
        "rebuild_golden_set",
    ]
    assert defs.resolve_schedule_def("nightly_golden_set").default_status == dg.DefaultScheduleStatus.STOPPED
    assert defs.resolve_sensor_def("corpus_reindex_sensor").default_status == dg.DefaultSensorStatus.STOPPED


@pytest.mark.slow
def test_one_run_materializes_every_partition_and_the_build(tmp_path, resources):
    with dg.instance_for_test() as instance:
        result = _materialize(instance, resources, tmp_path)
        assert result.success
        mats = result.asset_materializations_for_node("serve_log")
        assert sorted(m.partition for m in mats) == ["2026-11-01", "2026-11-02"]
        meta = result.asset_materializations_for_node("golden_set")[0].metadata
        assert meta["build_id"].value == 1
        # A first build computes every judged query and has nothing to fold new lines into.
        assert meta["queries_folded"].value == 0 and meta["queries_recomputed"].value >= meta["n_queries"].value
        funnel = meta["funnel"].value.records
        assert [r.data["judgments_left"] for r in funnel] == [8, 7, 6, 5, 3]
        checks = {c.check_name: c for c in result.get_asset_check_evaluations()}
        assert checks["funnel_adds_up"].passed
        assert checks["labels_point_at_active_documents"].passed
        # 2 malformed lines of 20 is above the 1% warning line but not above the 10% block.
        assert checks["rejected_share"].passed and not checks["rejected_share_warning"].passed
        assert (tmp_path / "export" / "qrels" / "test.tsv").read_text().count("\n") == 4


def test_every_duckdb_writer_is_in_the_duckdb_pool():
    for a in ALL_ASSETS:
        assert a.op.pool == "duckdb", a.key


@pytest.mark.slow
def test_a_blocked_build_keeps_the_previous_build_current(tmp_path, resources):
    with dg.instance_for_test() as instance:
        assert _materialize(instance, resources, tmp_path).success
        # Now a day of mostly garbage arrives: more than 10% of all lines are rejected.
        logs = tmp_path / "logs"
        import shutil

        shutil.copytree(DATA / "logs", logs)
        write_log(logs, "2026-11-03", "part-0001.jsonl", ["not json"] * 10)
        resources["logs"] = LogSource(path=str(logs))
        instance.add_dynamic_partitions(day_partitions.name, ["2026-11-03"])
        run_config = build_run_config("manual")
        run_config["ops"]["golden_set_export"] = {"config": {"out_dir": str(tmp_path / "export")}}
        result = dg.materialize(
            ALL_ASSETS,
            instance=instance,
            resources=resources,
            run_config=run_config,
            tags=range_tags(["2026-11-01", "2026-11-03"]),
            raise_on_error=False,
        )
        assert not result.success
        failure = [e for e in result.all_events if e.is_step_failure][0]
        assert "build not published" in failure.step_failure_data.user_failure_data.description
        # The check that blocked shows its own failed result with its figures (not "execution
        # failed"), and the failure asks not to be retried: it would refuse the same way again.
        evaluations = {
            e.event_specific_data.check_name: e.event_specific_data
            for e in result.all_events
            if e.event_type_value == "ASSET_CHECK_EVALUATION"
        }
        blocked = evaluations["rejected_share"]
        assert not blocked.passed and blocked.severity == dg.AssetCheckSeverity.ERROR
        meta = {k: v.value for k, v in blocked.metadata.items()}
        assert meta["log_lines_rejected_at_ingest"] == 12 and meta["log_lines_read"] == 30
        # The share and its threshold in one unit, fractions (docs/reference/counts.md): 12 of 30 lines
        # is 0.4, against 0.1.
        assert meta["rejected_share"] == 0.4 and meta["block_above"] == 0.1
        assert evaluations["funnel_adds_up"].passed
        assert failure.step_failure_data.error is None or "RetryRequested" not in str(failure.step_failure_data.error)
        assert not any(e.event_type_value == "STEP_UP_FOR_RETRY" for e in result.all_events)
    con = connect(tmp_path / "g.duckdb", read_only=True)
    assert con.execute("SELECT max(build_id), count(*) FROM golden_builds").fetchall() == [(1, 1)]
    assert con.execute("SELECT count(*) FROM golden_set").fetchall() == [(3,)]
    # The quarantine rows were committed all the same.
    assert con.execute("SELECT count(*) FROM rejected_records WHERE source_file LIKE 'dt=2026-11-03/%'").fetchall() == [
        (10,)
    ]


@pytest.mark.slow
def test_the_relabel_queue_of_a_repeat_is_said_again_and_a_new_build_counts_its_own(tmp_path, resources):
    def queue(result):
        meta = result.asset_materializations_for_node("relabel_queue")[0].metadata
        con = connect(tmp_path / "g.duckdb", read_only=True)
        try:
            n = con.execute("SELECT count(*) FROM relabel_queue").fetchone()[0]
            built = con.execute(
                "SELECT build_id, labels_build_id FROM golden_builds ORDER BY 1 DESC LIMIT 1"
            ).fetchone()
        finally:
            con.close()
        return meta["relabel_queue"].value, n, str(meta["labels_build_id"].value), built

    with dg.instance_for_test() as instance:
        first = queue(_materialize(instance, resources, tmp_path))
        repeat = queue(_materialize(instance, resources, tmp_path))
        # Every document at a newer version: every label goes stale, a computed build.
        moved = tmp_path / "moved.jsonl"
        moved.write_text(
            "".join(
                json.dumps({**r, "version": r["version"] + "-next"}) + "\n"
                for r in map(json.loads, (DATA / "corpus.jsonl").read_text().splitlines())
            )
        )
        resources["corpus_source"] = CorpusSource(path=str(moved))
        after = queue(_materialize(instance, resources, tmp_path))
    assert first[0] == first[1] and first[2:] == ("1", (1, 1))
    assert repeat[:3] == first[:3] and repeat[3] == (2, 1)
    assert after[0] == after[1] > first[0] and after[2:] == ("3", (3, 3))


@pytest.mark.slow
def test_reindex_trigger_is_stamped_on_the_build(tmp_path, resources):
    with dg.instance_for_test() as instance:
        assert _materialize(instance, resources, tmp_path, trigger="reindex").success
    con = connect(tmp_path / "g.duckdb", read_only=True)
    assert con.execute("SELECT trigger FROM golden_builds").fetchall() == [("reindex",)]


def test_sensor_decides_one_rebuild_per_fingerprint_change_including_a_to_b_to_a():
    fps = iter(["A", "B", "A", "B"])
    # The first evaluation reads the fingerprint and records it: no rebuild.
    cursor, key, why = decide(None, (10, 1.0), lambda: next(fps))
    assert key is None and cursor["fingerprint"] == "A" and why.startswith("first evaluation")
    keys = []
    for stat in [(11, 2.0), (10, 3.0), (11, 4.0)]:
        cursor, key, _ = decide(cursor, stat, lambda: next(fps))
        keys.append(key)
    # A to B to A to B: three changes, three rebuilds, three run keys.
    assert len(keys) == 3 and all(keys) and len(set(keys)) == 3
    # Unchanged size and mtime: the file is not even read.
    same, key, why = decide(cursor, (11, 4.0), lambda: pytest.fail("read an unchanged file"))
    assert key is None and "unchanged" in why
    # Touched but same content: no rebuild.
    _, key, _ = decide(cursor, (10, 5.0), lambda: "B")
    assert key is None


def test_sensor_launches_a_reindex_run_when_the_corpus_file_changes_not_when_turned_on(tmp_path):
    corpus = write_corpus(tmp_path / "corpus.jsonl", [doc("d1")])
    logs = tmp_path / "logs"
    write_log(logs, "2026-11-01", "part-0001.jsonl", [serve("s1", "2026-11-01T09:00:00Z", "t", [ranked("d1", 1)])])
    defs = build_definitions(Settings.resolve())
    res = {
        "corpus_source": CorpusSource(path=str(corpus)),
        "logs": LogSource(path=str(logs)),
        "labels": LabelSource(path=str(tmp_path / "no-labels")),
    }
    with dg.instance_for_test() as instance:
        with dg.build_sensor_context(instance=instance, resources=res, definitions=defs) as ctx:
            first = corpus_reindex_sensor(ctx)
        assert first.run_requests == [] and first.cursor
        with dg.build_sensor_context(instance=instance, resources=res, cursor=first.cursor, definitions=defs) as ctx2:
            assert corpus_reindex_sensor(ctx2).run_requests in ([], None)
        write_corpus(corpus, [doc("d1", "v2")])
        os.utime(corpus, (1, 1))
        with dg.build_sensor_context(instance=instance, resources=res, cursor=first.cursor, definitions=defs) as ctx3:
            third = corpus_reindex_sensor(ctx3)
        assert [r.run_config["ops"]["golden_set"]["config"]["trigger"] for r in third.run_requests] == ["reindex"]
        assert third.run_requests[0].tags["goldenset/trigger"] == "sensor:corpus_reindex_sensor"
        assert third.dynamic_partitions_requests[0].partition_keys == ["2026-11-01"]
    # The sensor has no way to reach the warehouse: it is not among its resources.
    assert "warehouse" not in corpus_reindex_sensor.required_resource_keys


def test_nightly_schedule_registers_log_days_and_covers_them_in_one_run(tmp_path):
    logs = tmp_path / "logs"
    for day in ("2026-11-01", "2026-11-02"):
        write_log(logs, day, "part-0001.jsonl", [verdict("s1", "d1", "helped", f"{day}T09:00:00Z")])
    with dg.instance_for_test() as instance:
        with dg.build_schedule_context(
            instance=instance,
            resources={"logs": LogSource(path=str(logs)), "labels": LabelSource(path=str(tmp_path / "no-labels"))},
        ) as ctx:
            req = nightly_schedules()[0](ctx)
        assert instance.get_dynamic_partitions(day_partitions.name) == ["2026-11-01", "2026-11-02"]
        assert req.tags["dagster/asset_partition_range_start"] == "2026-11-01"
        assert req.tags["dagster/asset_partition_range_end"] == "2026-11-02"
        assert req.run_config["ops"]["golden_set"]["config"]["trigger"] == "schedule"
        assert req.tags["goldenset/trigger"] == "schedule"  # and the run says the schedule launched it


@pytest.mark.slow
def test_a_busy_warehouse_is_retried_by_the_step_and_a_refusal_is_not(tmp_path, resources, monkeypatch):
    import subprocess
    import sys

    import goldenset_dagster.assets as asset_helpers

    monkeypatch.setattr(asset_helpers, "BUSY_RETRY_SECONDS", 0)
    db = tmp_path / "g.duckdb"
    connect(db).close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('held', flush=True); time.sleep(120)",
            str(db),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        resources["warehouse"] = WarehouseResource(db_path=str(db), lock_timeout=0)
        with dg.instance_for_test() as instance:
            result = _materialize(instance, resources, tmp_path)
        assert not result.success
        retried = [e.step_key for e in result.all_events if e.event_type_value == "STEP_UP_FOR_RETRY"]
        assert retried.count("serve_log") == asset_helpers.BUSY_RETRIES
        assert retried.count("corpus_snapshot") == asset_helpers.BUSY_RETRIES
        failure = [e for e in result.all_events if e.is_step_failure][0]
        assert "database busy: held by PID" in str(
            failure.step_failure_data.error.cause or failure.step_failure_data.error
        )
    finally:
        holder.kill()
        holder.wait()
