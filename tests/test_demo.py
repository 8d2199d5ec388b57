"""The README's first command: the demo builds, reindexes and has history to show."""

from __future__ import annotations

import duckdb

from goldenset_dagster.cli import main


def test_demo_builds_twice_with_a_reindex_and_leaves_labels_to_relabel(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    assert main(["demo", "--dir", str(tmp_path / "demo")]) == 0
    out = capsys.readouterr().out
    assert "DuckDB file:" in out and "label_changes" in out
    con = duckdb.connect(str(tmp_path / "demo" / "goldenset.duckdb"), read_only=True)
    assert con.execute("SELECT trigger FROM golden_builds ORDER BY build_id").fetchall() == [("manual",), ("reindex",)]
    (queries, helped), = con.execute("SELECT n_queries, n_helped FROM golden_builds WHERE build_id = 2").fetchall()
    assert queries > 20 and helped > 0
    reasons = {r for (r,) in con.execute("SELECT DISTINCT reason FROM relabel_queue").fetchall()}
    assert reasons == {"superseded", "version_changed"}
    changes = {c for (c,) in con.execute("SELECT DISTINCT change FROM label_changes WHERE to_build = 2").fetchall()}
    assert "removed" in changes and "stale_changed" in changes
    reasons = {r for (r,) in con.execute("SELECT DISTINCT reason FROM rejected_records").fetchall()}
    assert {"invalid_json", "conflicting_duplicate_serve"} <= reasons
