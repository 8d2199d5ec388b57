"""A pool run from the command line shows on the labelling_queue asset, with the asset's own metadata."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

import dagster as dg
import pytest

HERE = Path(__file__).resolve().parent
for folder in (HERE, HERE.parent / "bench"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from pool_rankers import FIRST, SECOND  # noqa: E402

from goldenset import warehouse  # noqa: E402
from goldenset.labelling.pool import run_pool  # noqa: E402
from goldenset_dagster.record import record_pool  # noqa: E402


@pytest.mark.slow
def test_a_recorded_pool_materializes_labelling_queue_with_its_table_and_report(tmp_path, pool_worlds):
    world = pool_worlds(tmp_path / "w")
    con = warehouse.connect(world.db)
    try:
        run_pool(con, rankers=(FIRST, SECOND), depth=5, index_dir=world.index_dir, now=datetime(2026, 11, 30, 8))
        rows = con.execute("SELECT count(*) FROM labelling_queue").fetchone()[0]
    finally:
        con.close()
    with dg.instance_for_test() as instance:
        record_pool(world.db, instance)
        event = instance.get_latest_materialization_event(dg.AssetKey("labelling_queue"))
        assert event is not None and event.asset_materialization is not None
        meta = event.asset_materialization.metadata
    # test_pool.py's hand-derived queue for these rankers and depth: 1 stale + 5 successor + 6 pooled.
    assert rows == 12 and meta["labelling_queue"].value == 12 and meta["dagster/row_count"].value == 12
    assert meta["labelling_queue_by_reason"].value == {"stale": 1, "successor": 5, "pooled": 6}
    assert meta["recorded_from"].value == "goldenset pool"
    assert meta["pool_report"].value.startswith(
        f"| ranker | returned | outside snapshot | shared with {FIRST} | shared with {SECOND} |"
    )
    assert "- queue: 1 stale (1 a ranker returned) + 5 successor (3 a ranker returned) + 6 pooled = 12 pairs" in (
        meta["pool_report"].value
    )


@pytest.mark.slow
def test_goldenset_pool_from_the_command_line_shows_on_the_asset(tmp_path, capsys, pool_worlds):
    from goldenset_dagster.cli import main
    from goldenset_dagster.instance import get_instance

    world = pool_worlds(tmp_path / "w")
    argv = ["pool", "--rankers", f"{FIRST},{SECOND}", "--depth", "5", "--db", str(world.db)]
    assert main([*argv, "--index-dir", str(world.index_dir)]) == 0
    with get_instance() as instance:
        event = instance.get_latest_materialization_event(dg.AssetKey("labelling_queue"))
        assert event is not None and event.asset_materialization is not None
        meta = event.asset_materialization.metadata
    assert meta["labelling_queue"].value == 12 and meta["recorded_from"].value == "goldenset pool"
    assert "WARNING" not in capsys.readouterr().err


def test_a_failed_recording_is_a_warning_and_the_pool_stands(tmp_path, capsys, pool_worlds):
    from goldenset import hooks
    from goldenset.cli.app import main

    def broken(event, details):
        raise OSError("database is locked\nsecond line")

    world = pool_worlds(tmp_path / "w")
    argv = ["pool", "--rankers", f"{FIRST},{SECOND}", "--depth", "5", "--db", str(world.db)]
    with hooks.listening(broken):
        assert main([*argv, "--index-dir", str(world.index_dir)]) == 0
    assert capsys.readouterr().err.strip() == (
        "WARNING: pool done, but recording it for the Dagster UI failed: database is locked"
    )
    con = warehouse.connect(world.db, read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM labelling_queue").fetchone()[0] == 12
    finally:
        con.close()
