"""`goldenset pool` is a run of pool_labelling_queue: one materialization of labelling_queue, the asset's metadata."""

from __future__ import annotations

import sys
from pathlib import Path

import dagster as dg
import pytest

HERE = Path(__file__).resolve().parent
for folder in (HERE, HERE.parent / "bench"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from pool_rankers import FIRST, SECOND  # noqa: E402

from goldenset import warehouse  # noqa: E402


@pytest.mark.slow
def test_goldenset_pool_is_one_run_of_its_job_materializing_labelling_queue_once(tmp_path, capsys, pool_worlds):
    from goldenset_dagster.cli import main
    from goldenset_dagster.instance import get_instance

    world = pool_worlds(tmp_path / "w")
    argv = ["pool", "--rankers", f"{FIRST},{SECOND}", "--depth", "5", "--db", str(world.db)]
    assert main([*argv, "--index-dir", str(world.index_dir)]) == 0
    with get_instance() as instance:
        runs = instance.get_runs()
        records = instance.fetch_materializations(dg.AssetKey("labelling_queue"), limit=10).records
    assert [(r.job_name, r.status, r.tags["goldenset/trigger"]) for r in runs] == [
        ("pool_labelling_queue", dg.DagsterRunStatus.SUCCESS, "cli")
    ]
    assert [r.run_id for r in records] == [runs[0].run_id]
    meta = records[0].asset_materialization.metadata
    # test_pool.py's hand-derived queue for these rankers and depth: 1 stale + 5 successor + 6 pooled.
    assert meta["labelling_queue"].value == 12 and meta["dagster/row_count"].value == 12
    assert meta["labelling_queue_by_reason"].value == {"stale": 1, "successor": 5, "pooled": 6}
    assert meta["pool_report"].value.startswith(
        f"| ranker | returned | outside snapshot | shared with {FIRST} | shared with {SECOND} |"
    )
    assert "- queue: 1 stale (1 a ranker returned) + 5 successor (3 a ranker returned) + 6 pooled = 12 pairs" in (
        meta["pool_report"].value
    )
    assert "WARNING" not in capsys.readouterr().err


@pytest.mark.parametrize("after", [False, True])
def test_a_failed_recording_is_a_warning_and_the_pool_stands(tmp_path, capsys, pool_worlds, after):
    from goldenset import hooks
    from goldenset.cli.app import main

    def broken(event, work, details):
        if after:
            work()
        raise OSError("database is locked\nsecond line")

    world = pool_worlds(tmp_path / "w")
    argv = ["pool", "--rankers", f"{FIRST},{SECOND}", "--depth", "5", "--db", str(world.db)]
    with hooks.performing(broken):
        assert main([*argv, "--index-dir", str(world.index_dir)]) == 0
    assert capsys.readouterr().err.strip() == (
        "WARNING: pool done, but recording it for the Dagster UI failed: database is locked"
        if after
        else "WARNING: recording pool for the Dagster UI failed: database is locked; done without"
    )
    con = warehouse.connect(world.db, read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM labelling_queue").fetchone()[0] == 12
    finally:
        con.close()


def test_the_commands_own_error_is_raised_whatever_the_performer_makes_of_it():
    from goldenset import hooks
    from goldenset.errors import NoBuild

    def wrapping(event, work, details):
        try:
            work()
        except Exception as exc:
            raise RuntimeError("step failed") from exc

    def work():
        raise NoBuild("no warehouse at x: run `goldenset build` first")

    with hooks.performing(wrapping), pytest.raises(NoBuild, match="no warehouse at x"):
        hooks.perform("pool", work)
