"""Running the jobs in-process for the CLI, against the instance the UI shows."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import dagster as dg

from goldenset.corpus import read_corpus
from goldenset.errors import GoldensetError, InputError
from goldenset.logfiles import list_partitions
from goldenset.settings import Paths
from goldenset.status import golden_status
from goldenset.warehouse import connect
from pipelines.instance import get_instance
from pipelines.jobs import build_run_config
from pipelines.partitions import range_tags, register_log_days

EXAMPLE_SQL = """\
-- What changed between the last two builds, and why?
SELECT change, count(*) FROM label_changes
WHERE to_build = (SELECT max(build_id) FROM golden_builds) GROUP BY change;

-- The full history of one label: every version and the builds it held in.
SELECT * FROM label_history
WHERE (query_id, doc_id) IN (SELECT query_id, doc_id FROM relabel_queue LIMIT 1)
ORDER BY valid_from_build;

-- Labels to re-check now, oldest flag first.
SELECT project, task, doc_id, judged_version, current_version, superseded_by, reason, first_flagged_build
FROM relabel_queue ORDER BY first_flagged_build, project LIMIT 10;
"""


def _unwrap(exc: BaseException) -> BaseException:
    """The library error behind a Dagster step failure, if there is one."""
    seen = exc
    while seen is not None:
        if isinstance(seen, GoldensetError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return exc


def run_refresh(paths: Paths, trigger: str = "manual", golden_set_config: dict | None = None) -> dict:
    """Ingest, snapshot and build in one in-process run; return the resulting status."""
    for env, value in (("GOLDENSET_LOGS", paths.logs), ("GOLDENSET_CORPUS", paths.corpus),
                       ("GOLDENSET_DB", paths.db)):
        os.environ[env] = str(Path(value).resolve())
    from pipelines.definitions import build_definitions  # reads the variables just set

    # A bad corpus must change nothing, so it is refused before any log is ingested.
    read_corpus(paths.corpus)
    if not Path(paths.logs).is_dir():
        # An empty folder is a valid (empty) log; a missing one is almost always a typo.
        raise InputError(f"log directory {paths.logs} does not exist; set --logs or GOLDENSET_LOGS")

    defs = build_definitions()
    days = list_partitions(Path(paths.logs))
    with get_instance() as instance:
        keys = register_log_days(instance, days) if days else []
        job = defs.resolve_job_def("refresh_golden_set" if keys else "rebuild_golden_set")
        try:
            job.execute_in_process(
                instance=instance,
                run_config=build_run_config(trigger, log_level="CRITICAL", **(golden_set_config or {})),
                tags=range_tags(keys),
            )
        except dg.Failure as exc:
            cause = _unwrap(exc)
            if isinstance(cause, GoldensetError):
                raise cause from None
            raise GoldensetError(exc.description or str(exc)) from None
        except Exception as exc:
            cause = _unwrap(exc)
            if isinstance(cause, GoldensetError):
                raise cause from None
            raise
    con = connect(paths.db, read_only=True)
    try:
        return golden_status(con, paths.corpus)
    finally:
        con.close()


def _example_answers(db: Path) -> str:
    con = connect(db, read_only=True)
    try:
        out = []
        for block in EXAMPLE_SQL.strip().split("\n\n"):
            out.append(block)
            out.append(str(con.sql(block)))
        return "\n".join(out)
    finally:
        con.close()


def run_demo(root: Path, seed: int = 7, echo=print) -> dict:
    """Write sample data, build it, reindex to the second corpus, build again."""
    from goldenset.demo_data import write_demo_data

    root = Path(root)
    data = write_demo_data(root / "data", seed=seed)
    db = root / "goldenset.duckdb"
    for stale in (db, Path(str(db) + ".wal")):
        stale.unlink(missing_ok=True)  # the demo starts from an empty warehouse each time
    corpus = root / "corpus.jsonl"
    shutil.copyfile(data.corpus_before, corpus)
    paths = Paths(logs=data.logs, corpus=corpus, db=db)
    echo(f"sample data: {data.n_serves} serves, {data.n_verdicts} verdicts, "
         f"{data.n_malformed} malformed lines under {data.logs}")
    first = run_refresh(paths, trigger="manual")
    echo(f"build {first['build_id']}: {first['counts']['n_queries']} queries, "
         f"{first['rejected_records']} rejected lines")
    shutil.copyfile(data.corpus_after, corpus)  # the reindex: what the sensor would see
    second = run_refresh(paths, trigger="reindex")
    epilogue = (
        f"\nDuckDB file: {db.resolve()}\n"
        "Query it from Python (duckdb.connect(PATH, read_only=True).sql(...)) or any DuckDB client. "
        "Three questions about label history, with their answers:\n\n"
        + _example_answers(db)
        + "\nSee it in the UI:\n  export DAGSTER_HOME=$PWD/var/dagster "
        f"GOLDENSET_DB={db.resolve()} GOLDENSET_LOGS={Path(data.logs).resolve()} "
        f"GOLDENSET_CORPUS={corpus.resolve()}\n  dagster dev\n"
    )
    return {"status": second, "epilogue": epilogue}
