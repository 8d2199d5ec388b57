"""Named migrations: a warehouse of the previous release is upgraded in recorded, ordered steps."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import duckdb
import pytest

from goldenset import schema
from goldenset.errors import InputError
from goldenset.migrations import MIGRATIONS, Migration, applied, migrate
from goldenset.warehouse import connect

PREVIOUS_RELEASE = Path(__file__).parent / "data" / "warehouse-0.2.0" / "goldenset.duckdb.gz"
NAMES = [
    "0001_catalogue_tables",
    "0002_catalogue_columns",
    "0003_build_labels_held_by_runs",
    "0004_closed_label_rows_apart",
    "0005_audit_estimates_judge_health",
    "0006_judge_gate_on_the_audit",
    "0007_active_audit",
    "0008_human_positives_display_text",
    "0009_benchmark_named_measures",
    "0010_forgotten_files",
]


def _catalogue() -> set[tuple[str, str]]:
    return {(r.name, c.name) for r in schema.RELATIONS if not r.is_view for c in r.columns}


def _columns(con) -> set[tuple[str, str]]:
    rows = con.execute("SELECT table_name, column_name FROM duckdb_columns() WHERE schema_name = 'main'").fetchall()
    return {(t, c) for t, c in rows if t in {r.name for r in schema.RELATIONS if not r.is_view}}


@pytest.fixture
def warehouse_of_0_2_0(tmp_path) -> Path:
    """A copy of the warehouse goldenset 0.2.0 made from the conformance example (see its README)."""
    path = tmp_path / "goldenset.duckdb"
    with gzip.open(PREVIOUS_RELEASE) as src, path.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return path


def _snapshot(con) -> dict[str, list]:
    return {
        "golden_set": con.execute("SELECT * EXCLUDE (judged_at) FROM golden_set ORDER BY ALL").fetchall(),
        "golden_builds": con.execute(
            "SELECT build_id, n_queries, n_helped, n_human_labels FROM golden_builds"
        ).fetchall(),
        "human_labels": con.execute("SELECT count(*) FROM human_labels").fetchall(),
        "log_serves": con.execute("SELECT count(*) FROM log_serves").fetchall(),
    }


def test_a_warehouse_made_by_0_2_0_is_upgraded_by_the_named_migrations_and_reads_the_same(warehouse_of_0_2_0):
    old = duckdb.connect(str(warehouse_of_0_2_0), read_only=True)
    assert "schema_migrations" not in {r[0] for r in old.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    before = _snapshot(old)  # through the views as 0.2.0 defined them
    old.close()
    assert before["golden_set"] and before["golden_builds"] == [(1, 1, 0, 5)]  # as 0.2.0 recorded its build

    con = connect(warehouse_of_0_2_0)
    assert applied(con) == NAMES
    assert _columns(con) == _catalogue()
    assert _snapshot(con) == before
    con.close()
    # A second writable open has nothing left to do.
    con = connect(warehouse_of_0_2_0)
    assert migrate(con) == [] and applied(con) == NAMES


def test_a_fresh_warehouse_records_every_migration_in_order(tmp_path):
    con = connect(tmp_path / "new.duckdb")
    assert applied(con) == [m.name for m in MIGRATIONS] == NAMES
    assert _columns(con) == _catalogue()


def test_a_failing_migration_leaves_nothing_of_itself_and_no_record(tmp_path):
    con = connect(tmp_path / "g.duckdb")

    def half_done(c) -> None:
        c.execute("CREATE TABLE half_done (x INTEGER)")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        migrate(con, (*MIGRATIONS, Migration("0005_half_done", half_done)))
    assert applied(con) == NAMES
    assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'half_done'").fetchone() == (0,)


def test_a_warehouse_from_before_issue_24_gains_its_tables_and_columns(tmp_path):
    path = tmp_path / "g.duckdb"
    con = connect(path)
    for table in ("audit_samples", "audit_queries", "audit_pairs", "benchmark_estimates", "judge_runs"):
        con.execute(f"DROP TABLE {table}")
    con.execute("ALTER TABLE benchmark_runs DROP COLUMN estimate")
    con.execute("ALTER TABLE build_judges DROP COLUMN window_pairs")
    con.execute("DELETE FROM schema_migrations WHERE name = '0005_audit_estimates_judge_health'")
    con.close()
    con = connect(path)
    assert applied(con)[-1] == "0005_audit_estimates_judge_health"
    assert _columns(con) == _catalogue()


def test_a_warehouse_from_before_issue_37_gains_the_gates_columns(tmp_path):
    path = tmp_path / "g.duckdb"
    con = connect(path)
    gate = ["sample", "audits", "queries", "kappa_lo", "kappa_hi", "po", "pe", "prevalence", "ac1"]
    for column in [*gate, "audit_window", "bootstrap_resamples", "bootstrap_seed"]:
        con.execute(f"ALTER TABLE build_judges DROP COLUMN {column}")
    con.execute("DELETE FROM schema_migrations WHERE name = '0006_judge_gate_on_the_audit'")
    con.close()
    con = connect(path)
    assert applied(con)[-1] == "0006_judge_gate_on_the_audit"
    assert _columns(con) == _catalogue()


def test_an_audit_drawn_before_issue_37_reads_as_uniform_with_its_chance_n_over_n(tmp_path):
    path = tmp_path / "g.duckdb"
    con = connect(path)
    con.execute("DROP TABLE audit_population")
    for table, column in (
        ("audit_samples", "design"),
        ("audit_samples", "judge"),
        ("audit_samples", "uniform_share"),
        ("audit_queries", "inclusion"),
        ("benchmark_estimates", "inclusion"),
    ):
        con.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    con.execute(
        "INSERT INTO audit_samples (pool_id, build_id, drawn_at, unit, population, requested, sample_size, seed) "
        "VALUES (3, 1, TIMESTAMP '2026-11-30 08:00:00', 'query', 8, 2, 2, 0)"
    )
    con.execute("INSERT INTO audit_queries VALUES (3, 'q1', 1), (3, 'q2', 2)")
    con.execute("DELETE FROM schema_migrations WHERE name = '0007_active_audit'")
    con.close()
    con = connect(path)
    assert applied(con)[-1] == "0007_active_audit"
    assert _columns(con) == _catalogue()
    assert con.execute("SELECT design, judge FROM audit_samples").fetchall() == [("uniform", None)]
    assert con.execute("SELECT query_id, inclusion FROM audit_queries ORDER BY draw").fetchall() == [
        ("q1", 0.25),
        ("q2", 0.25),
    ]


def test_a_catalogue_column_that_no_migration_adds_is_refused_by_name(tmp_path):
    path = tmp_path / "g.duckdb"
    con = connect(path)
    con.execute("ALTER TABLE pool_runs DROP COLUMN build_id")
    con.close()
    with pytest.raises(InputError, match=r"warehouse lacks pool_runs\.build_id, which no migration adds"):
        connect(path)
