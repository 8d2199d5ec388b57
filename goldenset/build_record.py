"""A committed build's record: one typed object per `golden_builds` row.

`BuildRecord` has exactly the columns of `schema.GOLDEN_BUILDS`, in order (a
test holds them equal), and is what the build writes and what checks, export,
status, the benchmark, the Dagster assets and the CLI read. No positional
tuples or string-keyed dicts of a build travel between them.

Named `build_record` (it was `builds`) so that it is not taken for the build itself,
`goldenset.build`, which computes what this module records.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from datetime import datetime

from goldenset.connection import Connection
from goldenset.errors import NoBuild

# The counts a manifest and `status` show, in the order they show them.
COUNT_FIELDS = (
    "n_queries",
    "n_projects",
    "n_helped",
    "n_noise",
    "n_wrong",
    "n_human_labels",
    "n_judge_labels",
    "n_stale",
    "unjudged_items",
    "orphan_verdicts",
    "unserved_item_verdicts",
    "lines_read",
    "lines_rejected",
    "conflicting_serves",
    "near_duplicate_merges",
    "human_labels_unused",
    "log_labels_overridden",
    "judge_labels_held_back",
    "label_lines_read",
    "label_lines_rejected",
)


@dataclass(frozen=True)
class FunnelStep:
    """One step of a build's filter funnel: what it dropped and what was left after it."""

    step: str
    judgments_dropped: int
    judgments_left: int
    units_left: int
    # Contract v5 (section 3, filter 4): of what no_positive left, the queries (and their
    # judgments) that passed only through a human positive; 0 on every other step.
    judgments_kept_by_human: int = 0
    units_kept_by_human: int = 0


@dataclass(frozen=True)
class BuildRecord:
    """One committed build (contract section 4, `golden_builds`)."""

    build_id: int
    built_at: datetime  # UTC, naive
    trigger: str
    corpus_fingerprint: str
    corpus_active_docs: int
    n_queries: int
    n_projects: int
    n_helped: int
    n_noise: int
    n_wrong: int
    unjudged_items: int
    orphan_verdicts: int
    unserved_item_verdicts: int
    n_stale: int
    lines_read: int
    lines_rejected: int
    conflicting_serves: int
    near_duplicate_merges: int
    corpus_content_sha256: str
    input_signature: str
    labels_build_id: int
    computation: str
    n_human_labels: int = 0
    n_judge_labels: int = 0
    human_labels_unused: int = 0
    log_labels_overridden: int = 0
    judge_labels_held_back: int = 0
    label_lines_read: int = 0
    label_lines_rejected: int = 0
    rubric_sha256: str | None = None
    labels_signature: str = ""
    # The contract version whose rules computed the labels (5: human positives and display
    # text); null for builds made before v5. An incremental build needs the same version.
    contract_version: int | None = None

    @property
    def n_labels(self) -> int:
        return self.n_helped + self.n_noise + self.n_wrong + self.n_human_labels + self.n_judge_labels

    def counts(self) -> dict[str, int]:
        """The counts, by name, in COUNT_FIELDS order."""
        return {name: getattr(self, name) for name in COUNT_FIELDS}

    def insert(self, con: Connection) -> None:
        """Write this record as a new `golden_builds` row (inside the caller's transaction)."""
        names = [f.name for f in fields(self)]
        row = asdict(self)
        con.execute(
            "INSERT INTO golden_builds BY NAME SELECT "
            + ", ".join(f"? AS {n}" for n in names),  # column names come from this dataclass, never from input
            [row[n] for n in names],
        )


_COLUMNS = ", ".join(f.name for f in fields(BuildRecord))


def _from_row(row) -> BuildRecord:
    values = dict(zip((f.name for f in fields(BuildRecord)), row, strict=True))
    for name in COUNT_FIELDS:
        if values.get(name) is None:  # a warehouse made before the column existed
            values[name] = 0
    return BuildRecord(**values)


def load_build(con: Connection, build_id: int | None = None) -> BuildRecord:
    """Build `build_id`, or the latest; NoBuild saying what to run when there is none."""
    if build_id is None:
        row = con.execute(f"SELECT {_COLUMNS} FROM golden_builds ORDER BY build_id DESC LIMIT 1").fetchone()
        if row is None:
            raise NoBuild("no golden set has been built yet: run `goldenset build` first")
        return _from_row(row)
    row = con.execute(f"SELECT {_COLUMNS} FROM golden_builds WHERE build_id = ?", [build_id]).fetchone()
    if row is None:
        latest = con.execute("SELECT max(build_id) FROM golden_builds").fetchall()[0][0]
        hint = f"the latest is {latest}" if latest is not None else "no build has been published yet"
        raise NoBuild(f"build {build_id} does not exist; {hint}")
    return _from_row(row)


def latest_build_or_none(con: Connection) -> BuildRecord | None:
    """The latest build, or None before the first one."""
    try:
        return load_build(con)
    except NoBuild:
        return None
