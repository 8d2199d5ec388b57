"""Named, ordered migrations that bring a warehouse to the catalogue in `goldenset.schema`.

Each migration has a name (`NNNN_what_it_does`) and a function; `migrate` runs, in order,
those a warehouse has not recorded in its `schema_migrations` table, each in one
transaction with the row that records it (as sqlite-utils' migrations do). A writable
`warehouse.connect` calls `migrate`; a fresh warehouse runs them all, and the first four
find nothing to do on it since 0001 creates every table as the catalogue has it now.

Decisions:
- 0001 to 0004 are the changes made before migrations were recorded (0.1 and 0.2 made
  them implicitly on every connect). They are idempotent, because a warehouse from then
  has no record of which it had: each looks at the warehouse before changing it.
- A table or column added to the catalogue from now on needs its own migration at the
  end of MIGRATIONS (`create_tables`, `add_columns` make one in a line). A warehouse
  lacking a catalogue column after every migration ran is refused with the names, not
  half-used; `tests/test_migrations.py` upgrades a warehouse made by 0.2.0.
- Views hold no data: they are replaced from the catalogue after the migrations, every time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from goldenset import schema
from goldenset.connection import Connection
from goldenset.errors import InputError


@dataclass(frozen=True)
class Migration:
    """One step: its name (recorded once applied) and what it does to a connection."""

    name: str
    apply: Callable[[Connection], None]


def _columns(con: Connection) -> set[tuple[str, str]]:
    rows = con.execute("SELECT table_name, column_name FROM duckdb_columns() WHERE schema_name = 'main'").fetchall()
    return {(t, c) for t, c in rows}


def create_tables(*relations: schema.Relation) -> Callable[[Connection], None]:
    """A migration body creating `relations` as the catalogue has them (those that exist are left)."""

    def apply(con: Connection) -> None:
        for rel in relations:
            con.execute(rel.ddl())

    return apply


def add_columns(
    table: schema.Relation, *names: str, backfill: dict[str, str] | None = None
) -> Callable[[Connection], None]:
    """A migration body adding catalogue columns `names` to `table`, then running each one's backfill SQL."""
    by_name = {c.name: c for c in table.columns}

    def apply(con: Connection) -> None:
        existing = _columns(con)
        for name in names:
            if (table.name, name) not in existing:
                con.execute(f"ALTER TABLE {table.name} ADD COLUMN {by_name[name].ddl()}")
                if backfill and name in backfill:
                    con.execute(backfill[name])

    return apply


def _catalogue_tables(con: Connection) -> None:
    create_tables(*(r for r in schema.RELATIONS if not r.is_view))(con)


def _catalogue_columns(con: Connection) -> None:
    """Every column a 0.1 or 0.2 warehouse may lack, with the value it gets where null would be wrong."""
    existing = _columns(con)
    for rel in schema.RELATIONS:
        if rel.is_view:
            continue
        for col in rel.columns:
            if (rel.name, col.name) not in existing:
                con.execute(f"ALTER TABLE {rel.name} ADD COLUMN {col.ddl()}")
                if (rel.name, col.name) in _BACKFILL:
                    con.execute(_BACKFILL[(rel.name, col.name)])


_BACKFILL = {
    ("golden_builds", "labels_build_id"): "UPDATE golden_builds SET labels_build_id = build_id",
    ("build_labels", "source"): "UPDATE build_labels SET source = 'log'",
    ("log_files", "serves"): "UPDATE log_files f SET serves = (SELECT count(*) FROM log_serves s "
    "WHERE s.source_file = f.source_file)",
    ("log_files", "verdicts"): "UPDATE log_files f SET verdicts = (SELECT count(*) FROM log_verdicts v "
    "WHERE v.source_file = f.source_file)",
    ("benchmark_runs", "labels_build_id"): "UPDATE benchmark_runs r SET labels_build_id = "
    "(SELECT labels_build_id FROM golden_builds b WHERE b.build_id = r.build_id)",
    ("build_labels", "grade"): "UPDATE build_labels SET grade = relevance",
    ("label_history", "source"): "UPDATE label_history SET source = 'log'",
    **{
        ("golden_builds", c): f"UPDATE golden_builds SET {c} = 0"
        for c in (
            "n_human_labels",
            "n_judge_labels",
            "human_labels_unused",
            "log_labels_overridden",
            "judge_labels_held_back",
            "label_lines_read",
            "label_lines_rejected",
        )
    },
}


def _closed_label_rows_apart(con: Connection) -> None:
    """A warehouse from before closed label rows were kept apart: move them, in one transaction.

    (Once moved, no row of build_labels is closed, and DuckDB answers the test from the
    column's statistics without reading it.)
    """
    con.execute("INSERT INTO build_labels_closed BY NAME SELECT * FROM build_labels WHERE valid_to_build IS NOT NULL")
    con.execute("DELETE FROM build_labels WHERE valid_to_build IS NOT NULL")


def _build_labels_held_by_runs(con: Connection) -> None:
    """A warehouse from before label rows were held by runs of builds stored them per build.

    Each old row becomes the row of its build up to the next build that computed labels;
    the rows of the latest computed build stay open, which is all the next build reads.
    """
    if ("build_labels", "build_id") not in _columns(con):
        return
    con.execute("DROP VIEW IF EXISTS golden_set_by_build")
    con.execute("DROP VIEW IF EXISTS golden_set")
    con.execute("DROP VIEW IF EXISTS relabel_queue")
    con.execute(
        """UPDATE build_labels l SET valid_from_build = l.build_id,
             valid_to_build = (SELECT min(g.build_id) FROM golden_builds g
                               WHERE g.build_id > l.build_id AND g.labels_build_id = g.build_id)"""
    )
    con.execute("ALTER TABLE build_labels DROP COLUMN build_id")


def _audit_estimates_judge_health(con: Connection) -> None:
    """Issue 24: the audit's design, PPI estimates per query and judge runs; the gate's window."""
    create_tables(
        schema.AUDIT_SAMPLES, schema.AUDIT_QUERIES, schema.AUDIT_PAIRS, schema.BENCHMARK_ESTIMATES, schema.JUDGE_RUNS
    )(con)
    add_columns(schema.BENCHMARK_RUNS, "estimate")(con)
    add_columns(schema.BUILD_JUDGES, "window_pairs")(con)


_GATE_COLUMNS = (
    "sample",
    "audits",
    "queries",
    "kappa_lo",
    "kappa_hi",
    "po",
    "pe",
    "prevalence",
    "ac1",
    "audit_window",
    "bootstrap_resamples",
    "bootstrap_seed",
)


def _active_audit(con: Connection) -> None:
    """Issue 37: an audit's design (uniform or active), each drawn query's inclusion probability, the active
    design's population; the probability an estimate weighed each audited query by. Audits drawn before
    were uniform: design `uniform`, every drawn query drawn with probability sample_size / population."""
    add_columns(
        schema.AUDIT_SAMPLES,
        "design",
        "judge",
        "uniform_share",
        backfill={"design": "UPDATE audit_samples SET design = 'uniform'"},
    )(con)
    add_columns(
        schema.AUDIT_QUERIES,
        "inclusion",
        backfill={
            "inclusion": "UPDATE audit_queries q SET inclusion = (SELECT s.sample_size / s.population "
            "FROM audit_samples s WHERE s.pool_id = q.pool_id)"
        },
    )(con)
    create_tables(schema.AUDIT_POPULATION)(con)
    add_columns(schema.BENCHMARK_ESTIMATES, "inclusion")(con)


def _human_positives_display_text(con: Connection) -> None:
    """Contract v5: the funnel counts queries kept by a human positive; builds record their contract version.

    Builds before v5 kept no query through a human label, so their funnel rows get 0; their
    contract_version stays null, which makes the next build compute every query again.
    """
    zero = {c: f"UPDATE filter_funnel SET {c} = 0" for c in ("judgments_kept_by_human", "units_kept_by_human")}
    add_columns(schema.FILTER_FUNNEL, *zero, backfill=zero)(con)
    add_columns(schema.QUERY_STATS, "human_kept", backfill={"human_kept": "UPDATE query_stats SET human_kept = 0"})(con)
    add_columns(schema.GOLDEN_BUILDS, "contract_version")(con)


MIGRATIONS: tuple[Migration, ...] = (
    Migration("0001_catalogue_tables", _catalogue_tables),
    Migration("0002_catalogue_columns", _catalogue_columns),
    Migration("0003_build_labels_held_by_runs", _build_labels_held_by_runs),
    Migration("0004_closed_label_rows_apart", _closed_label_rows_apart),
    Migration("0005_audit_estimates_judge_health", _audit_estimates_judge_health),
    # Issue 37: the judge's gate reads the audit and reports kappa's interval, prevalence and AC1.
    Migration("0006_judge_gate_on_the_audit", add_columns(schema.BUILD_JUDGES, *_GATE_COLUMNS)),
    Migration("0007_active_audit", _active_audit),
    Migration("0008_human_positives_display_text", _human_positives_display_text),
    # Issue 42: the named measures of `bench run --measure`.
    Migration("0009_benchmark_named_measures", add_columns(schema.BENCHMARK_RUNS, "measures")),
    # Issue 38: what `forget` removed, so that a build leaves the same files out (contract 9.6).
    Migration("0010_forgotten_files", create_tables(schema.FORGOTTEN_FILES)),
)


def applied(con: Connection) -> list[str]:
    """The names of the migrations this warehouse recorded, in the order they were applied."""
    return [r[0] for r in con.execute("SELECT name FROM schema_migrations ORDER BY applied_at, name").fetchall()]


def migrate(con: Connection, migrations: tuple[Migration, ...] = MIGRATIONS) -> list[str]:
    """Apply the migrations not recorded yet, in order, each in one transaction; return their names.

    InputError when a table or column of the catalogue is still missing afterwards (a
    catalogue change without its migration), naming them.
    """
    con.execute(schema.SCHEMA_MIGRATIONS.ddl())
    done = set(applied(con))
    ran = []
    for m in migrations:
        if m.name in done:
            continue
        con.execute("BEGIN TRANSACTION")
        try:
            m.apply(con)
            con.execute("INSERT INTO schema_migrations VALUES (?, ?)", [m.name, datetime.now(UTC).replace(tzinfo=None)])
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        ran.append(m.name)
    present = _columns(con)  # once: duckdb_columns() costs milliseconds per call, and a catalogue has hundreds
    missing = sorted(
        f"{rel.name}.{col.name}"
        for rel in schema.RELATIONS
        if not rel.is_view
        for col in rel.columns
        if (rel.name, col.name) not in present
    )
    if missing:
        raise InputError(
            f"warehouse lacks {', '.join(missing)}, which no migration adds; this goldenset cannot use it "
            "(add a migration to goldenset/migrations.py, or build a new warehouse from the logs)"
        )
    for rel in schema.RELATIONS:
        if rel.is_view:
            con.execute(rel.ddl())
    return ran
