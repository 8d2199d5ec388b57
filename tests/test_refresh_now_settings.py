"""`refresh_now`'s settings and trace note (contract 18.6), without a run: what the location was given."""

from __future__ import annotations

import contextlib

from goldenset.settings import Settings, named
from goldenset_dagster.refresh_now import settings_of, trace_note, trace_source
from goldenset_dagster.resources import CorpusSource, LabelSource, LogSource, TraceExportSource, WarehouseResource
from tests.traces.test_trace_export_dagster import leave_a_spool


def _resources(settings: Settings, **changed: str):
    values = {name: str(getattr(settings, name)) for name in ("db", "logs", "staging", "corpus", "labels", "rubric")}
    values.update(changed)
    trace = TraceExportSource(
        path=str(settings.trace_export), mapping_path=str(settings.trace_mapping), spool_path=str(settings.trace_spool)
    )
    return (
        WarehouseResource(db_path=values["db"], lock_timeout=settings.lock_timeout),
        LogSource(path=values["logs"], staging_path=values["staging"], workers=settings.ingest_workers),
        CorpusSource(path=values["corpus"]),
        LabelSource(path=values["labels"], rubric_path=values["rubric"]),
        trace,
    )


def test_a_variables_value_stays_the_variables_even_written_with_a_tilde_or_a_slash(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GOLDENSET_LOGS", "~/logs/")
    own = Settings.resolve()
    # A resource holds the variable's text as written (Dagster's EnvVar): the same place.
    settings = settings_of(*_resources(own, logs="~/logs/"))
    assert settings.logs == tmp_path / "logs"
    assert str(named("logs")) == f"GOLDENSET_LOGS={own.logs}"
    # A value configured otherwise (in the Launchpad) is that setting's flag.
    settings = settings_of(*_resources(own, logs=str(tmp_path / "elsewhere")))
    assert settings.logs == tmp_path / "elsewhere" and str(named("logs")) == f"--logs {tmp_path / 'elsewhere'}"


def test_the_trace_import_is_skipped_only_when_neither_folder_nor_spool_holds_anything(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GOLDENSET_TRACE_SPOOL", "~/spool")
    settings = Settings.resolve()
    source = trace_source(settings, TraceExportSource(format="openinference"))
    assert source.format == "openinference" and source.spool == tmp_path / "spool"
    assert trace_note(source) == (
        f"trace import skipped: no span files in {settings.trace_export} and nothing waiting in {tmp_path / 'spool'}"
    )
    leave_a_spool(tmp_path / "spool")  # what a receiver killed before its merge leaves
    assert trace_note(source) is None


def test_a_setting_it_cannot_read_fails_the_run_as_the_builds_refusal(tmp_path, monkeypatch):
    import dagster as dg

    from goldenset_dagster.definitions import build_definitions
    from goldenset_dagster.instance import get_instance
    from goldenset_dagster.launch import execute

    job = build_definitions(Settings.resolve()).resolve_job_def("refresh_now")
    monkeypatch.setenv("GOLDENSET_LOCK_TIMEOUT", "soon")  # after the location loaded: the step reads it
    with get_instance() as instance:
        with contextlib.suppress(Exception):  # the step fails: the run's log says why
            execute(job, instance, tags={"dagster/from_ui": "true"})
        (run,) = instance.get_runs()
        failures = [
            e.dagster_event
            for e in instance.all_logs(run.run_id)
            if e.dagster_event and e.dagster_event.is_step_failure
        ]
    assert run.status == dg.DagsterRunStatus.FAILURE
    message = failures[0].step_failure_data.error.message
    assert "the build refused: GOLDENSET_LOCK_TIMEOUT" in message and "`goldenset build`" in message
