"""Every warehouse table and view: names, columns and their meaning, in one place.

The DDL, the docs site's table reference and the tests all read from here, so the
public surface cannot drift from what is created. This module is the catalogue only:
how an existing warehouse reaches it is `goldenset.migrations` (named, ordered steps). Internal tables (prefix `log_`,
`corpus_`, `build_`) hold the raw material; the public names of contract section 4
are tables or views over them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    doc: str
    # DuckDB's compression for the column, when its default is the wrong trade. Raw
    # lines (JSON text, read only to quarantine a line) are written with zstd: at ten
    # million served items the serves' raw lines took 2.8 s to store with DuckDB's
    # default dictionary and FSST compression and 1.4 s with zstd, in 221 MB less file.
    compression: str | None = None

    def ddl(self) -> str:
        return f"{self.name} {self.type}" + (f" USING COMPRESSION {self.compression}" if self.compression else "")


@dataclass(frozen=True)
class Relation:
    name: str
    grain: str
    columns: tuple[Column, ...]
    public: bool = True
    view_sql: str | None = None  # a view when set, else a table
    primary_key: tuple[str, ...] = ()

    @property
    def is_view(self) -> bool:
        return self.view_sql is not None

    def ddl(self) -> str:
        if self.view_sql is not None:
            return f"CREATE OR REPLACE VIEW {self.name} AS {self.view_sql}"
        cols = [c.ddl() for c in self.columns]
        if self.primary_key:
            cols.append(f"PRIMARY KEY ({', '.join(self.primary_key)})")
        return f"CREATE TABLE IF NOT EXISTS {self.name} (\n  " + ",\n  ".join(cols) + "\n)"


def C(name: str, type_: str, doc: str, *, compression: str | None = None) -> Column:
    return Column(name, type_, doc, compression)


def raw_line(doc: str) -> Column:
    """A line as read: JSON text stored once and rarely read."""
    return C("raw", "VARCHAR", doc, compression="zstd")


# Contract 7.2: a line whose (doc_id, doc_version) no snapshot of a committed build holds
# is rejected as unknown_document_version, and joins once a build's snapshot holds it.
KNOWN_VERSIONS_SQL = """
SELECT DISTINCT d.doc_id, d.version FROM corpus_documents d
WHERE d.content_sha256 IN (SELECT corpus_content_sha256 FROM golden_builds)
"""


# --------------------------------------------------------------------------- raw log
LOG_FILES = Relation(
    "log_files",
    "log file ever ingested",
    (
        C("source_file", "VARCHAR", "path relative to LOGS, e.g. dt=2026-11-28/part-0001.jsonl"),
        C("dt", "VARCHAR", "the partition: the date part of the dt= folder"),
        C("file_name", "VARCHAR", "the file's own name"),
        C("content_sha256", "VARCHAR", "sha256 of the file's bytes when read; null if it could not be read"),
        C("size_bytes", "BIGINT", "size when read"),
        C("mtime", "DOUBLE", "modification time when read (seconds since the epoch)"),
        C("lines_total", "BIGINT", "lines read, blank ones included (the rejected share's denominator)"),
        C("lines_read", "BIGINT", "non-blank lines read"),
        C("lines_rejected", "BIGINT", "lines quarantined at ingest (duplicates across files are found at build)"),
        C("ingested_at", "TIMESTAMP", "when this content was ingested (UTC)"),
        C("serves", "BIGINT", "valid serve lines of this content"),
        C("verdicts", "BIGINT", "valid verdict lines of this content"),
        C("verified_at", "TIMESTAMP", "when the file was last read and found to hold this content (UTC)"),
    ),
    public=False,
    primary_key=("source_file",),
)
LOG_SERVES = Relation(
    "log_serves",
    "valid serve line",
    (
        C("source_file", "VARCHAR", "file relative to LOGS"),
        C("dt", "VARCHAR", "partition"),
        C("file_name", "VARCHAR", "file name (second ordering key)"),
        C("line", "INTEGER", "line number in the file, from 1"),
        C("serve_id", "VARCHAR", "serve id"),
        C("ts", "TIMESTAMP", "serve time, UTC"),
        C("project", "VARCHAR", "project"),
        C("task", "VARCHAR", "task text as logged"),
        C("task_norm", "VARCHAR", "NFKC, casefolded, white space collapsed"),
        C("query_id", "VARCHAR", "first 16 hex of sha256(project \\x1f task_norm)"),
        C("session_id", "VARCHAR", "session id if logged (never checked)"),
        C("content_key", "VARCHAR", "hash of what makes two serves identical (ts, project, task, items)"),
        raw_line("the line as read, kept to quarantine a conflicting duplicate"),
    ),
    public=False,
)
LOG_SERVE_ITEMS = Relation(
    "log_serve_items",
    "item of a valid serve line",
    (
        C("source_file", "VARCHAR", "file relative to LOGS"),
        C("line", "INTEGER", "line of the serve"),
        C("serve_id", "VARCHAR", "serve id"),
        C("doc_id", "VARCHAR", "served document"),
        C("doc_version", "VARCHAR", "version served"),
        C("channel", "VARCHAR", "ranked or always"),
        C("rank", "BIGINT", "rank for ranked items"),
        C("score", "DOUBLE", "score if numeric"),
    ),
    public=False,
)
LOG_VERDICTS = Relation(
    "log_verdicts",
    "valid verdict line",
    (
        C("source_file", "VARCHAR", "file relative to LOGS"),
        C("dt", "VARCHAR", "partition"),
        C("file_name", "VARCHAR", "file name"),
        C("line", "INTEGER", "line number"),
        C("serve_id", "VARCHAR", "serve judged"),
        C("doc_id", "VARCHAR", "document judged"),
        C("verdict", "VARCHAR", "helped, noise or wrong"),
        C("ts", "TIMESTAMP", "verdict time, UTC"),
    ),
    public=False,
)
LOG_REJECTS = Relation(
    "log_rejects",
    "line rejected at ingest, or unreadable file",
    (
        C("source_file", "VARCHAR", "file relative to LOGS"),
        C("dt", "VARCHAR", "partition"),
        C("file_name", "VARCHAR", "file name"),
        C("line", "INTEGER", "line number (for unreadable_file: first line not read, or null)"),
        C(
            "reason",
            "VARCHAR",
            "invalid_json, not_an_object, unknown_event, missing_field, invalid_field, unreadable_file",
        ),
        C("detail", "VARCHAR", "what exactly was wrong"),
        raw_line("the line as read (invalid UTF-8 replaced)"),
        C("rejected_at", "TIMESTAMP", "when it was quarantined (UTC)"),
    ),
    public=False,
)

LOG_DIRTY = Relation(
    "log_dirty",
    "serve touched by an ingest since the last committed build",
    (
        C("serve_id", "VARCHAR", "serve whose lines or verdicts were added, replaced or removed"),
        C("query_id", "VARCHAR", "query of a serve line added or removed (null for verdict lines)"),
        C("source_file", "VARCHAR", "file the line was added to or removed from"),
        # Queries whose only change is added lines are folded into the labels they held
        # (goldenset.delta); a removed line sends its query through the whole recompute.
        C("removed", "BOOLEAN", "the line was removed (its file replaced); null (older warehouses) counts as removed"),
    ),
    public=False,
)

# --------------------------------------------------------------------------- corpus
CORPUS_SNAPSHOTS = Relation(
    "corpus_snapshots",
    "distinct fingerprint seen",
    (
        C("fingerprint", "VARCHAR", "corpus fingerprint (contract section 2)"),
        C("taken_at", "TIMESTAMP", "first seen (UTC)"),
        C("active_docs", "BIGINT", "active documents"),
        C("retired_docs", "BIGINT", "retired documents"),
        C("source", "VARCHAR", "file it was read from"),
    ),
    primary_key=("fingerprint",),
)
CORPUS_LOADS = Relation(
    "corpus_loads",
    "successful read of the corpus file",
    (
        C("load_id", "BIGINT", "1, 2, 3 ..."),
        C("loaded_at", "TIMESTAMP", "when (UTC)"),
        C("fingerprint", "VARCHAR", "fingerprint read"),
        C("content_sha256", "VARCHAR", "identity of the whole snapshot (retired rows, titles, superseded_by too)"),
        C("source", "VARCHAR", "file read"),
        C("size_bytes", "BIGINT", "the file's size when read"),
        C("mtime", "DOUBLE", "the file's modification time when read"),
    ),
    public=False,
    primary_key=("load_id",),
)
CORPUS_DOCUMENTS = Relation(
    "corpus_documents",
    "document of a distinct snapshot content",
    (
        C("content_sha256", "VARCHAR", "the snapshot it belongs to"),
        C("doc_id", "VARCHAR", "document"),
        C("version", "VARCHAR", "version"),
        C("status", "VARCHAR", "active or retired"),
        C("title", "VARCHAR", "title"),
        C("text", "VARCHAR", "indexed text"),
        C("text_sha256", "VARCHAR", "sha256 of text"),
        C("superseded_by", "VARCHAR", "replacing doc_id"),
        C("updated_at", "VARCHAR", "as given"),
    ),
    public=False,
)

# --------------------------------------------------------------------------- builds
GOLDEN_BUILDS = Relation(
    "golden_builds",
    "committed build",
    (
        C("build_id", "BIGINT", "1, 2, 3 ... per committed build"),
        C("built_at", "TIMESTAMP", "when the build committed (UTC)"),
        C("trigger", "VARCHAR", "schedule, reindex or manual"),
        C("corpus_fingerprint", "VARCHAR", "fingerprint of the snapshot the build used"),
        C("corpus_active_docs", "BIGINT", "active documents in it"),
        C("n_queries", "BIGINT", "golden queries"),
        C("n_projects", "BIGINT", "projects with a golden query"),
        C("n_helped", "BIGINT", "labels judged helped"),
        C("n_noise", "BIGINT", "labels judged noise"),
        C("n_wrong", "BIGINT", "labels judged wrong"),
        C("unjudged_items", "BIGINT", "served items of accepted serves, either channel, with no verdict"),
        C("orphan_verdicts", "BIGINT", "accepted verdict records whose serve_id matches no accepted serve"),
        C("unserved_item_verdicts", "BIGINT", "accepted verdict records naming a doc_id their serve did not serve"),
        C("n_stale", "BIGINT", "labels flagged stale"),
        C("lines_read", "BIGINT", "log lines read in all, blank ones included"),
        C(
            "lines_rejected",
            "BIGINT",
            "log lines rejected at ingest (label lines and conflicting duplicates not included)",
        ),
        C("conflicting_serves", "BIGINT", "lines rejected as conflicting_duplicate_serve"),
        C("near_duplicate_merges", "BIGINT", "queries merged by the optional embedding step (0 when off)"),
        C("corpus_content_sha256", "VARCHAR", "identity of the whole snapshot used"),
        C("input_signature", "VARCHAR", "hash of every ingested file's content, the snapshot and the query merges"),
        C(
            "labels_build_id",
            "BIGINT",
            "the build whose stored labels this build holds (itself, or an "
            "earlier build with the same input_signature)",
        ),
        C("computation", "VARCHAR", "full, incremental (only the queries new log lines touched) or repeat"),
        C("n_human_labels", "BIGINT", "labels with source human (n_helped, n_noise, n_wrong count log labels)"),
        C("n_judge_labels", "BIGINT", "labels with source judge (a judge that passed its kappa gate)"),
        C(
            "human_labels_unused",
            "BIGINT",
            "current human labels (one per annotator and pair) whose query is not "
            "golden or whose document is not active",
        ),
        C("log_labels_overridden", "BIGINT", "log labels replaced by a human (or judge) label"),
        C("judge_labels_held_back", "BIGINT", "current judge labels (one per judge and pair) kept out by the gate"),
        C("label_lines_read", "BIGINT", "label-file lines read in all, blank ones included"),
        C("label_lines_rejected", "BIGINT", "label lines in rejected_records at build time"),
        C(
            "rubric_sha256",
            "VARCHAR",
            "sha256 of the rubric file (or a rubric folder's record, contract 9.5) the labels were checked "
            "against (null without labels)",
        ),
        C("labels_signature", "VARCHAR", "hash of every ingested label file's content and rubric"),
        C(
            "contract_version",
            "INTEGER",
            "the contract version whose rules computed the labels (5: human positives, display text); "
            "null for builds made before v5",
        ),
    ),
    primary_key=("build_id",),
)
FILTER_FUNNEL = Relation(
    "filter_funnel",
    "(build, step)",
    (
        C("build_id", "BIGINT", "build"),
        C("step_order", "INTEGER", "0 judged, 1 always_served, 2 retired, 3 repeats, 4 no_positive"),
        C("step", "VARCHAR", "judged, always_served, retired, repeats, no_positive"),
        C("judgments_dropped", "BIGINT", "judgments this step dropped"),
        C("judgments_left", "BIGINT", "judgments left after it"),
        C("units_left", "BIGINT", "serves holding a judgment before repeats, queries from repeats on"),
        C(
            "judgments_kept_by_human",
            "BIGINT",
            "no_positive: judgments of queries that passed only through a human positive (contract v5); "
            "0 on other steps",
        ),
        C(
            "units_kept_by_human",
            "BIGINT",
            "no_positive: queries that passed only through a human positive (contract v5); 0 on other steps",
        ),
    ),
    primary_key=("build_id", "step"),
)
# A label row is stored once and held by every build from the one that computed it up
# to (not including) the first computed build that no longer holds it identically, so a
# nightly writes only what changed and the warehouse grows with changes, not with builds.
# The open rows (those the latest computed build holds) are `build_labels`; a build that
# closes a row moves it to `build_labels_closed`, once. What a build reads is the open
# rows, so its reads do not grow with the rows earlier builds closed (at 61 days of 10 M
# items, 2.0 of 5.9 million label rows are closed). `label_rows` is both.
BUILD_LABELS = Relation(
    "build_labels",
    "open label row: held by the latest computed build (valid_to_build is null)",
    (
        C("valid_from_build", "BIGINT", "first build holding this row"),
        C("valid_to_build", "BIGINT", "first computed build not holding it (null while the latest holds it)"),
        C("query_id", "VARCHAR", "stable query id"),
        C("project", "VARCHAR", "project"),
        C("task", "VARCHAR", "task text of the query's latest serve"),
        C("doc_id", "VARCHAR", "document"),
        C("doc_version", "VARCHAR", "version judged: served by the winning serve, or labelled"),
        C("verdict", "VARCHAR", "helped, noise or wrong (null for human and judge rows)"),
        C("relevance", "INTEGER", "1 when grade >= 1 (log: helped), else 0"),
        C("serve_id", "VARCHAR", "the winning serve (null for human and judge rows)"),
        C("judged_at", "TIMESTAMP", "the winning verdict's or label line's ts (UTC)"),
        C("stale_reason", "VARCHAR", "superseded, version_changed or null"),
        C("source", "VARCHAR", "log (an agent verdict), human (an annotator's label) or judge (a gated LLM judge)"),
        C("label", "VARCHAR", "the rubric label (null for log rows)"),
        C("grade", "INTEGER", "the label's grade; log rows: 1 for helped, else 0"),
        C("decided_by", "VARCHAR", "the rubric dimension that decided the label (null for log rows)"),
        C("annotators", "INTEGER", "annotators with a current label on the pair, at any version (null for log rows)"),
        # A log label a human (or judge) label replaced stays, flagged, so that an incremental
        # build can carry every query's log labels over; the public views leave it out.
        C("overridden", "BOOLEAN", "a log label replaced by a human or judge label (left out of golden_set)"),
        # What the nightly fold (goldenset.delta) orders a previous winner by.
        C("serve_ts", "TIMESTAMP", "the winning serve's ts (log rows; null for human and judge rows)"),
    ),
    public=False,
)
BUILD_LABELS_CLOSED = Relation(
    "build_labels_closed",
    "closed label row: held by a run of builds up to valid_to_build (excluded)",
    BUILD_LABELS.columns,
    public=False,
)
_ALL_LABEL_COLUMNS = ", ".join(c.name for c in BUILD_LABELS.columns)
LABEL_ROWS = Relation(
    "label_rows",
    "label row, open or closed, with the run of builds that hold it",
    BUILD_LABELS.columns,
    public=False,
    view_sql=(
        f"SELECT {_ALL_LABEL_COLUMNS} FROM build_labels UNION ALL SELECT {_ALL_LABEL_COLUMNS} FROM build_labels_closed"
    ),
)
_INTERVAL = ("valid_from_build", "valid_to_build")
# What a label row says (everything but its run of builds): two builds hold the same
# row when all of these are equal.
LABEL_ROW_COLUMNS = tuple(c.name for c in BUILD_LABELS.columns if c.name not in _INTERVAL)
_INTERNAL = ("overridden", "serve_ts")  # kept out of the public views
_LABEL_COLUMNS = ", ".join(c for c in LABEL_ROW_COLUMNS if c not in _INTERNAL)


def open_row(alias: str = "l") -> str:
    """SQL: build_labels row `alias` is open (no build closed it): it belongs to the latest
    build that computed labels, and so to every build since (repeats)."""
    return f"{alias}.valid_to_build IS NULL"


def held_by(build: str, alias: str = "l") -> str:
    """SQL: build_labels row `alias` is held by the build whose labels are `build` (an SQL expression).

    `build` is a labels build id (golden_builds.labels_build_id): a repeat build holds
    the rows of the build it repeats.
    """
    return (
        f"{alias}.valid_from_build <= {build} AND ({alias}.valid_to_build IS NULL OR {alias}.valid_to_build > {build})"
    )


def active_documents(sha: str) -> str:
    """SQL: the active documents of the snapshot whose content is `sha` (a parameter), with version and successor."""
    return (
        f"(SELECT doc_id, version, superseded_by FROM corpus_documents WHERE content_sha256 = {sha} "
        "AND status = 'active')"
    )


# The content key of a serve_id's first line in (dt, file name, line) order: a later line
# with another key is a conflicting duplicate (contract section 1). An aggregate.
FIRST_CONTENT_KEY = "arg_min(content_key, {'dt': dt, 'file_name': file_name, 'line': line})"


def stale_reason(alias: str) -> str:
    """SQL: section 3's stale reason of the version `alias`.doc_version, given the snapshot's
    `alias`.current_version and `alias`.superseded_by of its document."""
    return (
        f"CASE WHEN {alias}.superseded_by IS NOT NULL THEN 'superseded' "
        f"WHEN {alias}.current_version <> {alias}.doc_version THEN 'version_changed' END"
    )


def log_label_row(j: str, q: str, stale: str) -> str:
    """SQL select list: a log label row from judgment `j` (the repeats winner), the query's
    project and task in `q`, and the stale reason expression `stale`."""
    helped = f"CASE WHEN {j}.verdict = 'helped' THEN 1 ELSE 0 END"
    return (
        f"{j}.query_id, {q}.project, {q}.task, {j}.doc_id, {j}.doc_version, {j}.verdict, {helped} AS relevance, "
        f"{j}.serve_id, {j}.judged_at, {stale} AS stale_reason, 'log' AS source, NULL::VARCHAR AS label, "
        f"{helped} AS grade, NULL::VARCHAR AS decided_by, NULL::INTEGER AS annotators, {j}.serve_ts"
    )


def same_label_row(a: str, b: str, columns: tuple[str, ...] = LABEL_ROW_COLUMNS) -> str:
    """SQL: label rows `a` and `b` say the same (nulls equal)."""
    return " AND ".join(f"{a}.{c} IS NOT DISTINCT FROM {b}.{c}" for c in columns)


# An unchanged rebuild stores no labels of its own: it points at the build it repeats.
GOLDEN_SET_BY_BUILD = Relation(
    "golden_set_by_build",
    "label in a committed build",
    (C("build_id", "BIGINT", "build"),)
    + tuple(c for c in BUILD_LABELS.columns if c.name not in (*_INTERNAL, *_INTERVAL)),
    view_sql=(
        "SELECT b.build_id, "
        + ", ".join("l." + c for c in _LABEL_COLUMNS.split(", "))
        + " FROM golden_builds b JOIN label_rows l ON "
        + held_by("b.labels_build_id")
        + " WHERE NOT coalesce(l.overridden, false)"
    ),
)
GOLDEN_SET = Relation(
    "golden_set",
    "label in the latest build",
    tuple(c for c in BUILD_LABELS.columns if c.name not in (*_INTERNAL, *_INTERVAL)),
    # The open rows are the labels of the latest build that computed labels, and every
    # later (repeat) build holds those: the rows held_by(latest) selects, read with a
    # filter DuckDB pushes into the scan (six times faster over 14 million label rows
    # than comparing each row with the latest build's id).
    view_sql=(
        f"SELECT {', '.join('l.' + c for c in _LABEL_COLUMNS.split(', '))} FROM build_labels l WHERE "
        + open_row()
        + " AND NOT coalesce(l.overridden, false)"
    ),
)
# Contract 12.2, rule (2) of the prediction: the log label an audit's human label replaced.
OVERRIDDEN_LOG_LABELS = Relation(
    "overridden_log_labels",
    "log label of the latest build that a human or judge row replaced (left out of golden_set)",
    GOLDEN_SET.columns,
    view_sql=(
        f"SELECT {', '.join('l.' + c for c in _LABEL_COLUMNS.split(', '))} FROM build_labels l WHERE "
        + open_row()
        + " AND coalesce(l.overridden, false) AND l.source = 'log'"
    ),
)
# Contract v5: one row per golden query, marked by what kept it through filter 4.
GOLDEN_QUERIES = Relation(
    "golden_queries",
    "golden query of the latest build",
    (
        C("query_id", "VARCHAR", "golden query"),
        C("project", "VARCHAR", "project"),
        C("task", "VARCHAR", "its display text (contract v5), as golden_set has it"),
        C("labels", "BIGINT", "its rows in golden_set"),
        C("relevant", "BIGINT", "of these, rows with relevance 1"),
        C("log_labels", "BIGINT", "rows with source log"),
        C("human_labels", "BIGINT", "rows with source human"),
        C("judge_labels", "BIGINT", "rows with source judge"),
        C("stale_labels", "BIGINT", "rows flagged stale"),
        C(
            "kept_by",
            "VARCHAR",
            "log: a log helped survived filters 1-3 (overridden or not); human: it passed no_positive "
            "only through a human positive (contract v5)",
        ),
    ),
    view_sql=(
        """SELECT l.query_id, any_value(l.project) AS project, any_value(l.task) AS task,
       count(*) FILTER (WHERE NOT coalesce(l.overridden, false)) AS labels,
       count(*) FILTER (WHERE NOT coalesce(l.overridden, false) AND l.relevance = 1) AS relevant,
       count(*) FILTER (WHERE NOT coalesce(l.overridden, false) AND l.source = 'log') AS log_labels,
       count(*) FILTER (WHERE l.source = 'human') AS human_labels,
       count(*) FILTER (WHERE l.source = 'judge') AS judge_labels,
       count(*) FILTER (WHERE NOT coalesce(l.overridden, false) AND l.stale_reason IS NOT NULL) AS stale_labels,
       CASE WHEN bool_or(l.source = 'log' AND l.verdict = 'helped') THEN 'log' ELSE 'human' END AS kept_by
FROM build_labels l WHERE """
        + open_row()
        + " GROUP BY l.query_id"
    ),
)
# Contract v5: the raw task texts a query's serves carried (golden_set.task is their display text).
QUERY_VARIANTS = Relation(
    "query_variants",
    "(query, raw task text) of accepted serves",
    (
        C("query_id", "VARCHAR", "the query of the serves (section 3; before any near-duplicate merge)"),
        C("project", "VARCHAR", "project"),
        C("task", "VARCHAR", "the task text exactly as served"),
        C("serves", "BIGINT", "accepted serves that carried it"),
        C("first_seen", "TIMESTAMP", "the earliest of those serves' ts (UTC)"),
        C("last_seen", "TIMESTAMP", "the latest of those serves' ts (UTC)"),
    ),
    view_sql="""SELECT query_id, project, task, count(*) AS serves, min(ts) AS first_seen, max(ts) AS last_seen
FROM accepted_serves GROUP BY query_id, project, task""",
)
QUERY_STATS = Relation(
    "query_stats",
    "query of the latest computed build: its share of the funnel and side counts",
    (
        C("query_id", "VARCHAR", "query"),
        C("judged", "BIGINT", "judgments"),
        C("judged_serves", "BIGINT", "serves holding a judgment"),
        C("always_dropped", "BIGINT", "judgments of always-served items"),
        C("ranked", "BIGINT", "judgments of ranked items"),
        C("ranked_serves", "BIGINT", "serves holding a ranked judgment"),
        C("retired_dropped", "BIGINT", "ranked judgments of documents not active"),
        C("active", "BIGINT", "ranked judgments of active documents"),
        C("active_serves", "BIGINT", "serves holding one"),
        C("repeats_dropped", "BIGINT", "judgments that lost to a later serve of the query"),
        C("repeats_left", "BIGINT", "judgments left after repeats"),
        C("no_positive_dropped", "BIGINT", "judgments of the query if it has no helped"),
        C("kept", "BIGINT", "labels"),
        C("unjudged", "BIGINT", "served items of its serves with no verdict"),
        C("unserved", "BIGINT", "verdict records on its serves naming a doc_id they did not serve"),
        C("human_kept", "BIGINT", "labels kept only through a human positive (contract v5; else 0)"),
    ),
    public=False,
)
LABEL_HISTORY = Relation(
    "label_history",
    "version of a label",
    (
        C("query_id", "VARCHAR", "query"),
        C("doc_id", "VARCHAR", "document"),
        C("verdict", "VARCHAR", "verdict of this version (null for human and judge rows)"),
        C("doc_version", "VARCHAR", "document version judged"),
        C("stale_reason", "VARCHAR", "stale flag of this version"),
        C("valid_from_build", "BIGINT", "first build holding this version"),
        C("valid_to_build", "BIGINT", "first build where it no longer holds; null while current"),
        C("source", "VARCHAR", "log, human or judge"),
        C("label", "VARCHAR", "the rubric label (null for log rows)"),
    ),
)
LABEL_CHANGES = Relation(
    "label_changes",
    "changed attribute between consecutive builds",
    (
        C("query_id", "VARCHAR", "query"),
        C("doc_id", "VARCHAR", "document"),
        C("from_build", "BIGINT", "the build before; null for a label's first appearance"),
        C("to_build", "BIGINT", "the build where the change shows"),
        C("change", "VARCHAR", "added, removed, verdict_changed, version_changed, stale_changed"),
        C("old_value", "VARCHAR", "before (the label's value for removed: a log verdict, else source:label)"),
        C("new_value", "VARCHAR", "after (the label's value for added)"),
    ),
    view_sql="""
WITH v AS (
  -- a label's value: the verdict of a log row, source:label otherwise (contract 7.3)
  SELECT *, CASE WHEN source = 'log' THEN verdict ELSE source || ':' || label END AS value,
         CASE WHEN source = 'log' THEN verdict ELSE label END AS plain
  FROM label_history
),
starts AS (
  SELECT h.*, p.value AS p_value, p.plain AS p_plain, p.source AS p_source, p.doc_version AS p_doc_version,
         p.stale_reason AS p_stale_reason,
         (p.query_id IS NOT NULL) AS has_prev,
         EXISTS (SELECT 1 FROM label_history e WHERE e.query_id = h.query_id AND e.doc_id = h.doc_id
                 AND e.valid_from_build < h.valid_from_build) AS seen_before
  FROM v h
  LEFT JOIN v p ON p.query_id = h.query_id AND p.doc_id = h.doc_id
       AND p.valid_to_build = h.valid_from_build
)
SELECT query_id, doc_id, CASE WHEN seen_before THEN valid_from_build - 1 END AS from_build,
       valid_from_build AS to_build, 'added' AS change, NULL AS old_value, value AS new_value
FROM starts WHERE NOT has_prev
UNION ALL
SELECT query_id, doc_id, valid_from_build - 1, valid_from_build, 'verdict_changed',
       CASE WHEN source = 'log' AND p_source = 'log' THEN p_plain ELSE p_source || ':' || p_plain END,
       CASE WHEN source = 'log' AND p_source = 'log' THEN plain ELSE source || ':' || plain END
FROM starts WHERE has_prev AND (p_source IS DISTINCT FROM source OR p_plain IS DISTINCT FROM plain)
UNION ALL
SELECT query_id, doc_id, valid_from_build - 1, valid_from_build, 'version_changed', p_doc_version, doc_version
FROM starts WHERE has_prev AND p_doc_version IS DISTINCT FROM doc_version
UNION ALL
SELECT query_id, doc_id, valid_from_build - 1, valid_from_build, 'stale_changed', p_stale_reason, stale_reason
FROM starts WHERE has_prev AND p_stale_reason IS DISTINCT FROM stale_reason
UNION ALL
SELECT h.query_id, h.doc_id, h.valid_to_build - 1, h.valid_to_build, 'removed', h.value, NULL
FROM v h
WHERE h.valid_to_build IS NOT NULL AND NOT EXISTS (
  SELECT 1 FROM label_history n WHERE n.query_id = h.query_id AND n.doc_id = h.doc_id
  AND n.valid_from_build = h.valid_to_build)
""",
)
RELABEL_QUEUE = Relation(
    "relabel_queue",
    "stale label now",
    (
        C("query_id", "VARCHAR", "query"),
        C("doc_id", "VARCHAR", "document"),
        C("judged_version", "VARCHAR", "version that was judged"),
        C("current_version", "VARCHAR", "version in the build's snapshot"),
        C("superseded_by", "VARCHAR", "replacing doc_id, if any"),
        C("reason", "VARCHAR", "superseded or version_changed"),
        C("first_flagged_build", "BIGINT", "first build of its current stale run"),
        C("project", "VARCHAR", "project"),
        C("task", "VARCHAR", "task text"),
        C("verdict", "VARCHAR", "verdict to re-check"),
    ),
    view_sql="""
WITH latest AS (SELECT * FROM golden_builds WHERE build_id = (SELECT max(build_id) FROM golden_builds)),
-- Only the pairs stale now: the windows are per pair, so the history of the others (most
-- of it, and growing with every build) need not be read. And only their stale versions:
-- a pair holds one version at a time, so two stale versions follow each other without a
-- break exactly when one ends at the build the other starts (a version between them
-- would have to fit in no time); any other version only breaks a run.
stale AS (SELECT query_id, doc_id FROM golden_set WHERE stale_reason IS NOT NULL),
hist AS (
  SELECT h.*, lag(h.valid_to_build) OVER w AS prev_to
  FROM label_history h SEMI JOIN stale s ON s.query_id = h.query_id AND s.doc_id = h.doc_id
  WHERE h.stale_reason IS NOT NULL
  WINDOW w AS (PARTITION BY h.query_id, h.doc_id ORDER BY h.valid_from_build)
),
runs AS (
  SELECT *, sum(CASE WHEN prev_to = valid_from_build THEN 0 ELSE 1 END)
            OVER (PARTITION BY query_id, doc_id ORDER BY valid_from_build) AS run_no
  FROM hist
),
run_start AS (
  SELECT query_id, doc_id, run_no, min(valid_from_build) AS first_flagged_build
  FROM runs GROUP BY ALL
)
SELECT g.query_id, g.doc_id, g.doc_version AS judged_version, d.version AS current_version,
       d.superseded_by, g.stale_reason AS reason, s.first_flagged_build,
       g.project, g.task, g.verdict
FROM golden_set g
JOIN runs r ON r.query_id = g.query_id AND r.doc_id = g.doc_id AND r.valid_to_build IS NULL
JOIN run_start s ON s.query_id = r.query_id AND s.doc_id = r.doc_id AND s.run_no = r.run_no
CROSS JOIN latest b
LEFT JOIN corpus_documents d ON d.content_sha256 = b.corpus_content_sha256 AND d.doc_id = g.doc_id
WHERE g.stale_reason IS NOT NULL
""",
)
REJECTED_RECORDS = Relation(
    "rejected_records",
    "rejected line or unreadable file",
    (
        C(
            "source_file",
            "VARCHAR",
            "file relative to LOGS; label files as labels/ + the path relative to LABELS; "
            "traces import inputs as traces/ + the path relative to the imported folder",
        ),
        C("line", "INTEGER", "line number (null for an unreadable file read no further than its start)"),
        C(
            "reason",
            "VARCHAR",
            "invalid_json, not_an_object, unknown_event, missing_field, invalid_field, "
            "conflicting_duplicate_serve, unreadable_file; label lines also "
            "label_contradicts_rubric, unknown_document_version; traces also unknown_label, unknown_span",
        ),
        C("raw", "VARCHAR", "the line as read"),
        C("rejected_at", "TIMESTAMP", "when it was quarantined (UTC)"),
        C("detail", "VARCHAR", "what exactly was wrong"),
    ),
    view_sql="""
SELECT source_file, line, reason, raw, rejected_at, detail FROM log_rejects
UNION ALL
SELECT 'labels/' || source_file, line, reason, raw, rejected_at, detail FROM label_rejects
UNION ALL
SELECT 'traces/' || source_file, line, reason, raw, rejected_at, detail FROM trace_rejects
UNION ALL
SELECT 'labels/' || h.source_file, h.line, 'unknown_document_version', h.raw, f.ingested_at,
       'no snapshot of a committed build holds ' || h.doc_id || ' at version ' || h.doc_version
FROM human_labels h JOIN label_files f ON f.source_file = h.source_file
WHERE (h.doc_id, h.doc_version) NOT IN ("""
    + KNOWN_VERSIONS_SQL
    + """)
UNION ALL
SELECT s.source_file, s.line, 'conflicting_duplicate_serve', s.raw, f.ingested_at,
       'serve_id ' || s.serve_id || ' was first accepted with other content'
FROM log_serves s
-- The first line of each serve_id seen more than once, by (dt, file name, line): a count
-- of serve_ids finds those, so only their lines are ranked and only conflicts' raw is read.
JOIN (SELECT serve_id, """
    + FIRST_CONTENT_KEY
    + """ AS first_key
      FROM log_serves
      WHERE serve_id IN (SELECT serve_id FROM log_serves GROUP BY serve_id HAVING count(*) > 1)
      GROUP BY serve_id) d USING (serve_id)
JOIN log_files f ON f.source_file = s.source_file
WHERE s.content_key <> d.first_key
""",
)
# Contract section 1: of several lines for one serve_id the first in (dt, file name,
# line) order is the accepted serve. The one definition: appended to a query over log_serves.
ACCEPTED_LINE = "QUALIFY row_number() OVER (PARTITION BY serve_id ORDER BY dt, file_name, line) = 1"
ACCEPTED_SERVES = Relation(
    "accepted_serves",
    "accepted serve (first valid line per serve_id)",
    LOG_SERVES.columns,
    public=False,
    view_sql="SELECT * FROM log_serves " + ACCEPTED_LINE,
)
# Contract section 1: of several verdicts for one (serve_id, doc_id) the latest ts wins;
# on a tie the later line in (dt, file name, line) order. The one definition of that
# rule: the `judgments` view and the build both append it to a query over log_verdicts.
LATEST_LINE = "ts DESC, dt DESC, file_name DESC, line DESC"
WINNING_VERDICT = f"QUALIFY row_number() OVER (PARTITION BY serve_id, doc_id ORDER BY {LATEST_LINE}) = 1"
# Contract 7.2: an annotator's current label on a pair is their accepted line with the
# latest ts; on a tie the later one in (dt, file name, line) order. Same shape, one rule.
CURRENT_LABEL = f"QUALIFY row_number() OVER (PARTITION BY annotator, query_id, doc_id ORDER BY {LATEST_LINE}) = 1"

JUDGMENTS = Relation(
    "judgments",
    "served item of an accepted serve with its winning verdict",
    (
        C("serve_id", "VARCHAR", "serve"),
        C("serve_ts", "TIMESTAMP", "serve time (UTC)"),
        C("project", "VARCHAR", "project"),
        C("task", "VARCHAR", "task as logged"),
        C("task_norm", "VARCHAR", "normalised task"),
        C("query_id", "VARCHAR", "query id"),
        C("doc_id", "VARCHAR", "document"),
        C("doc_version", "VARCHAR", "version served"),
        C("channel", "VARCHAR", "ranked or always"),
        C("rank", "BIGINT", "rank served"),
        C("verdict", "VARCHAR", "winning verdict"),
        C("judged_at", "TIMESTAMP", "winning verdict's ts (UTC)"),
    ),
    view_sql="""
SELECT s.serve_id, s.ts AS serve_ts, s.project, s.task, s.task_norm, s.query_id,
       i.doc_id, i.doc_version, i.channel, i.rank, v.verdict, v.ts AS judged_at
FROM accepted_serves s
JOIN log_serve_items i ON i.source_file = s.source_file AND i.line = s.line
JOIN (SELECT serve_id, doc_id, verdict, ts FROM log_verdicts """
    + WINNING_VERDICT
    + """) v
  ON v.serve_id = s.serve_id AND v.doc_id = i.doc_id
""",
)

# --------------------------------------------------------------------------- labels (contract 7)
LABEL_FILES = Relation(
    "label_files",
    "label file ever ingested",
    (
        C("source_file", "VARCHAR", "path relative to LABELS, e.g. dt=2026-12-01/page-ana.jsonl"),
        C("dt", "VARCHAR", "the partition: the date part of the dt= folder"),
        C("file_name", "VARCHAR", "the file's own name"),
        C("content_sha256", "VARCHAR", "sha256 of the file's bytes when read; null if it could not be read"),
        C("rubric_sha256", "VARCHAR", "sha256 of the rubric file its lines were checked against"),
        C("size_bytes", "BIGINT", "size when read"),
        C("mtime", "DOUBLE", "modification time when read (seconds since the epoch)"),
        C("lines_total", "BIGINT", "lines read, blank ones included"),
        C("lines_read", "BIGINT", "non-blank lines read"),
        C("lines_rejected", "BIGINT", "lines quarantined at ingest (unknown_document_version is decided at build)"),
        C("ingested_at", "TIMESTAMP", "when this content was ingested (UTC)"),
        C("verified_at", "TIMESTAMP", "when the file was last read and found to hold this content (UTC)"),
    ),
    public=False,
    primary_key=("source_file",),
)
HUMAN_LABELS = Relation(
    "human_labels",
    "label line that passed the line and rubric rules (contract 7.2)",
    (
        C("source_file", "VARCHAR", "file relative to LABELS"),
        C("dt", "VARCHAR", "partition"),
        C("file_name", "VARCHAR", "file name (second ordering key)"),
        C("line", "INTEGER", "line number in the file, from 1"),
        C("query_id", "VARCHAR", "query labelled"),
        C("doc_id", "VARCHAR", "document labelled"),
        C("doc_version", "VARCHAR", "version the annotator saw"),
        C("label", "VARCHAR", "the rubric label"),
        C("grade", "INTEGER", "the label's grade in the rubric the line was checked against"),
        C("decided_by", "VARCHAR", "the dimension that decided it"),
        C("annotator", "VARCHAR", "who labelled"),
        C("kind", "VARCHAR", "human or judge"),
        C("rubric", "VARCHAR", "the rubric's name"),
        C("ts", "TIMESTAMP", "when it was labelled (UTC)"),
        C("dimensions", "VARCHAR", "the pass/fail answers as JSON, if given"),
        C("note", "VARCHAR", "the annotator's note, if a string"),
        raw_line("the line as read, kept to quarantine it while its version is unknown"),
    ),
)
LABEL_REJECTS = Relation(
    "label_rejects",
    "label line rejected at ingest, or unreadable label file",
    LOG_REJECTS.columns,
    public=False,
)
# Contract section 14: spans and annotations `goldenset traces import` could not turn into
# lines. Written by the import (which writes no log line for them), replaced per input
# file on re-import; listed in rejected_records as traces/ + the input file's name.
TRACE_REJECTS = Relation(
    "trace_rejects",
    "span, document or annotation rejected by a traces import",
    (
        C("source_file", "VARCHAR", "input file relative to the imported path (a file: its name)"),
        C("line", "INTEGER", "line (JSON lines) or row (Parquet) from 1; null for an unreadable file"),
        C(
            "reason",
            "VARCHAR",
            "invalid_json, not_an_object, missing_field, invalid_field, unreadable_file, "
            "unknown_label, unknown_span, unknown_document_version",
        ),
        C("detail", "VARCHAR", "what exactly was wrong"),
        raw_line("the line or row as read"),
        C("rejected_at", "TIMESTAMP", "when it was quarantined (UTC)"),
    ),
    public=False,
)
CURRENT_LABELS = Relation(
    "current_labels",
    "(annotator, query_id, doc_id): the annotator's current label (contract 7.2)",
    HUMAN_LABELS.columns,
    view_sql=f"""
SELECT * FROM human_labels h
WHERE (h.doc_id, h.doc_version) IN ({KNOWN_VERSIONS_SQL})
{CURRENT_LABEL}
""",
)
LABELLING_QUEUE = Relation(
    "labelling_queue",
    "pair to label now, from the latest pool (contract 7.4)",
    (
        C("pool_id", "BIGINT", "the pool that made the queue"),
        C("query_id", "VARCHAR", "golden query"),
        C("doc_id", "VARCHAR", "document to label"),
        C("doc_version", "VARCHAR", "its current version"),
        C("reason", "VARCHAR", "stale, successor, audit or pooled"),
        C("rankers", "VARCHAR[]", "rankers that returned it, in --rankers order"),
        C("best_rank", "INTEGER", "best rank any ranker gave it (null when none did)"),
        C("priority", "BIGINT", "1, 2, 3 ... in the order to label"),
        C("pooled_at", "TIMESTAMP", "when the pool ran (UTC)"),
        C("project", "VARCHAR", "the query's project"),
        C("task", "VARCHAR", "the query's task text (the golden set's task)"),
    ),
    primary_key=("query_id", "doc_id"),
)
POOL_RUNS = Relation(
    "pool_runs",
    "pool run (contract 7.4)",
    (
        C("pool_id", "BIGINT", "1, 2, 3 ..."),
        C("pooled_at", "TIMESTAMP", "when it ran (UTC)"),
        C("build_id", "BIGINT", "the golden build it pooled for"),
        C("rankers", "VARCHAR[]", "the rankers asked, in order"),
        C("depth", "INTEGER", "documents asked of each ranker per query"),
        C(
            "report",
            "VARCHAR",
            "JSON: pairs per ranker, union before and after removing duplicates, pairs "
            "shared by each two rankers, pooled pairs the log never judged, already labelled",
        ),
    ),
    primary_key=("pool_id",),
)

AUDIT_SAMPLES = Relation(
    "audit_samples",
    "audit sample drawn with a pool run (contract 12.1)",
    (
        C("pool_id", "BIGINT", "the pool run that drew it and queued its pairs"),
        C("build_id", "BIGINT", "the golden build whose queries were the population"),
        C("drawn_at", "TIMESTAMP", "when it was drawn (UTC): the pool run's pooled_at"),
        C("unit", "VARCHAR", "the sampling unit: query"),
        C("population", "BIGINT", "its population: golden queries of the build whose project a rubric judges (N_pop)"),
        C("requested", "BIGINT", "queries asked for (--audit N)"),
        C(
            "sample_size",
            "BIGINT",
            "queries drawn: min(requested, population) for a uniform audit; for an active one the number its "
            "Poisson draw took (random; its expected size is min(requested, population))",
        ),
        C("seed", "BIGINT", "seed of numpy's default_rng that drew it (given or recorded)"),
        C("design", "VARCHAR", "uniform (--audit N) or active (--audit N --active: contract 12.1)"),
        C("judge", "VARCHAR", "active: the judge annotator whose labels set the inclusion probabilities"),
        C("uniform_share", "DOUBLE", "active: the uniform share s of the inclusion probabilities (1/2)"),
    ),
    primary_key=("pool_id",),
)
AUDIT_QUERIES = Relation(
    "audit_queries",
    "query drawn by an audit (contract 12.1)",
    (
        C("pool_id", "BIGINT", "the audit's pool run"),
        C("query_id", "VARCHAR", "golden query drawn"),
        C("draw", "BIGINT", "1, 2, 3 ... in the order drawn"),
        C("inclusion", "DOUBLE", "the probability the design drew it with: n/N uniform, pi(q) active"),
    ),
    primary_key=("pool_id", "query_id"),
)
AUDIT_POPULATION = Relation(
    "audit_population",
    "query of an active audit's population, drawn or not, with what decided its chance (contract 12.1)",
    (
        C("pool_id", "BIGINT", "the audit's pool run"),
        C("query_id", "VARCHAR", "golden query of the population"),
        C("uncertainty", "DOUBLE", "u(q): the judge's uncertainty on the query's pooled pairs"),
        C("inclusion", "DOUBLE", "pi(q): the probability of drawing it"),
        C("drawn", "BOOLEAN", "whether the draw took it"),
    ),
    primary_key=("pool_id", "query_id"),
)
AUDIT_PAIRS = Relation(
    "audit_pairs",
    "pair an audit asked humans to label (contract 12.1)",
    (
        C("pool_id", "BIGINT", "the audit's pool run"),
        C("query_id", "VARCHAR", "drawn query"),
        C("doc_id", "VARCHAR", "document the pool returned for it"),
        C("doc_version", "VARCHAR", "its version when asked"),
    ),
    primary_key=("pool_id", "query_id", "doc_id"),
)

BUILD_HUMAN_LABELS = Relation(
    "build_human_labels",
    "(build, pair): the human label of contract 7.3, for every pair that takes part",
    (
        C("build_id", "BIGINT", "the build that computed it"),
        C("query_id", "VARCHAR", "golden query"),
        C("doc_id", "VARCHAR", "active document"),
        C("source", "VARCHAR", "human, or judge for a gated judge's label"),
        C("doc_version", "VARCHAR", "from the latest voting line with the winning label"),
        C("label", "VARCHAR", "the winning label"),
        C("grade", "INTEGER", "its grade"),
        C("decided_by", "VARCHAR", "from the latest voting line with the winning label"),
        C("judged_at", "TIMESTAMP", "that line's ts (UTC)"),
        C("annotators", "INTEGER", "annotators with a current label on the pair, at any version"),
        C("stale_reason", "VARCHAR", "section 3's rule applied to doc_version"),
        C("in_golden_set", "BOOLEAN", "false when a log label that is not stale outranks this stale one"),
    ),
    public=False,
)
BUILD_AGENT_LABELS = Relation(
    "build_agent_labels",
    "(build, pair) an annotator labelled: the agent's judgment after filters 1-3",
    (
        C("build_id", "BIGINT", "the build that computed it"),
        C("query_id", "VARCHAR", "query (golden or dropped by no_positive)"),
        C("doc_id", "VARCHAR", "document"),
        C("doc_version", "VARCHAR", "version the winning serve served"),
        C("verdict", "VARCHAR", "helped, noise or wrong"),
    ),
    public=False,
)
BUILD_JUDGES = Relation(
    "build_judges",
    "(build, judge annotator): the judge's gate of contracts 8.3 and 13.2",
    (
        C("build_id", "BIGINT", "the build that gated it"),
        C("annotator", "VARCHAR", "the judge"),
        C("n", "BIGINT", "pairs of the gate's sample: the judge's and the human label at the same doc_version"),
        C("kappa", "DOUBLE", "Cohen's kappa over the rubric's labels (null when pe = 1 or n = 0)"),
        C("passed", "BOOLEAN", "took part in the golden set"),
        C("labels", "BIGINT", "the judge's current labels (one per pair)"),
        C("min_pairs", "BIGINT", "the gate's minimum pairs"),
        C("min_kappa", "DOUBLE", "the gate's minimum for kappa's lower bound"),
        C("window_pairs", "BIGINT", "before contract v5: the latest shared pairs the gate read; null since"),
        C("sample", "VARCHAR", "audit (the audited queries' pairs, 13.2) or shared (none: not a random sample)"),
        C("audits", "BIGINT", "audits the gate read (0: none drawn yet)"),
        C("queries", "BIGINT", "queries of the sample (the bootstrap's units)"),
        C("kappa_lo", "DOUBLE", "lower bound of kappa's 95% bootstrap interval over queries (null: none)"),
        C("kappa_hi", "DOUBLE", "upper bound of that interval"),
        C("po", "DOUBLE", "observed agreement"),
        C("pe", "DOUBLE", "Cohen's chance agreement"),
        C("prevalence", "DOUBLE", "share of the sample's pairs whose human label has grade >= 1"),
        C("ac1", "DOUBLE", "Gwet's AC1, the prevalence-robust agreement"),
        C("audit_window", "BIGINT", "the latest audits the gate reads (--judge-audits; 0: every audit)"),
        C("bootstrap_resamples", "BIGINT", "resamples of the bootstrap (B)"),
        C("bootstrap_seed", "BIGINT", "seed of the bootstrap's numpy default_rng"),
    ),
    public=False,
)
JUDGE_RUNS = Relation(
    "judge_runs",
    "`goldenset judge label` run (contract 13.1)",
    (
        C("run_id", "BIGINT", "1, 2, 3 ..."),
        C("annotator", "VARCHAR", "the judge's annotator name"),
        C("started_at", "TIMESTAMP", "when the run started (UTC)"),
        C("finished_at", "TIMESTAMP", "when it finished (UTC)"),
        C("scorer_version", "VARCHAR", "the judge model and the prompt version: MODEL/prompt-VERSION"),
        C("scored", "BIGINT", "queue rows asked"),
        C("answers", "BIGINT", "answers received (scored - errors)"),
        C("labels_written", "BIGINT", "label lines written"),
        C("invalid", "VARCHAR", "JSON: invalid answers by reason, every reason of contract 8.3 (0 included)"),
        C("errors", "BIGINT", "transport errors"),
        C("hallucinated_span_rate", "DOUBLE", "hallucinated spans / answers (0 when no answer came)"),
        C("unusable_share", "DOUBLE", "(invalid + errors) / scored (0 when nothing was asked)"),
        C("incomplete", "BOOLEAN", "unusable_share above --max-unusable: the run exited 6"),
    ),
    primary_key=("run_id",),
)

# --------------------------------------------------------------------------- benchmark
# --------------------------------------------------------------------------- sources (contract 9)
SOURCE_ROOTS = Relation(
    "source_roots",
    "(kind, root) a warehouse has ingested from, the current one open",
    (
        C("kind", "VARCHAR", "logs or labels"),
        C("root", "VARCHAR", "the directory, absolute with symbolic links resolved"),
        C("recorded_at", "TIMESTAMP", "when a build first ingested from it (UTC)"),
        C(
            "replaced_at",
            "TIMESTAMP",
            "when a build moved on with --new-source, or `forget` removed its last file (UTC); null: current",
        ),
    ),
)
FORGOTTEN_FILES = Relation(
    "forgotten_files",
    "file `goldenset forget` removed, left out of every build while its bytes stay the same",
    (
        C("kind", "VARCHAR", "logs or labels"),
        C("source_file", "VARCHAR", "path relative to the root (LOGS or LABELS)"),
        C("content_sha256", "VARCHAR", "sha256 of the bytes it held when forgotten"),
        C("size_bytes", "BIGINT", "its size when forgotten"),
        C("forgotten_at", "TIMESTAMP", "when `forget` removed it (UTC)"),
    ),
    primary_key=("kind", "source_file"),
)
RUBRICS = Relation(
    "rubrics",
    "rubric a build checked label lines against",
    (
        C(
            "rubric_sha256",
            "VARCHAR",
            "sha256 of the rubric file's bytes, or of a rubric folder's record (golden_builds.rubric_sha256)",
        ),
        C("name", "VARCHAR", "the rubric's name (a folder: its rubrics' names in file order, joined by ', ')"),
        C("content", "VARCHAR", "the rubric file as UTF-8 text, or a rubric folder's record (contract 9.5)"),
        C("first_used_at", "TIMESTAMP", "when a build first used it (UTC)"),
    ),
    primary_key=("rubric_sha256",),
)

BENCHMARK_RUNS = Relation(
    "benchmark_runs",
    "benchmark run",
    (
        C("run_id", "VARCHAR", "run id printed by `bench run`"),
        C("started_at", "TIMESTAMP", "when it started (UTC)"),
        C("build_id", "BIGINT", "golden build measured against"),
        C("corpus_fingerprint", "VARCHAR", "fingerprint of the corpus the retriever searched"),
        C("retriever", "VARCHAR", "retriever name or import path"),
        C("retriever_config", "VARCHAR", "its configuration as JSON"),
        C("degraded", "BOOLEAN", "ran with a component of the retriever down (--allow-degraded)"),
        C("warnings", "VARCHAR", "JSON list of warnings printed"),
        C("k_values", "VARCHAR", "JSON list of the k of recall@k, precision@k, noise@k, hole@k"),
        C("depth", "INTEGER", "documents asked per query (MRR and MAP read this deep)"),
        C("exclude_stale", "BOOLEAN", "stale labels left out of the qrels (--exclude-stale)"),
        C("n_queries", "BIGINT", "queries scored in the deciding row"),
        C("stale_labels", "BIGINT", "stale labels in the golden set (used unless exclude_stale)"),
        C("corpus_drift", "DOUBLE", "drift from the build's corpus to the one searched"),
        C("down_components", "VARCHAR", "JSON list of the retriever's components down at the probe"),
        C("metrics", "VARCHAR", "JSON list of the canonical metric names measured"),
        C(
            "labels_build_id",
            "BIGINT",
            "the build whose labels were measured: golden_builds.labels_build_id of "
            "build_id (a repeat build shares an earlier build's labels); null for runs "
            "stored before it was kept",
        ),
        C(
            "skipped_queries",
            "BIGINT",
            "golden queries skipped: no label with grade >= 1 in the qrels (null for runs stored before it was kept)",
        ),
        C(
            "estimate",
            "VARCHAR",
            "JSON: the prediction-powered estimates of `bench run --estimate ppi` (judge, design, audit, "
            "one estimate per row and metric; contract 12.2); null without --estimate",
        ),
        C(
            "measures",
            "VARCHAR",
            "JSON list of ir_measures' canonical names measured with `bench run --measure` (contract 16.5), "
            "stored in benchmark_results beside the metrics; null for runs stored before it was kept",
        ),
    ),
    primary_key=("run_id",),
)
BENCHMARK_ESTIMATES = Relation(
    "benchmark_estimates",
    "(run, row, query, metric) of a run with --estimate ppi (contract 12.2)",
    (
        C("run_id", "VARCHAR", "run"),
        C("row_name", "VARCHAR", "benchmark row"),
        C("query_id", "VARCHAR", "measured query"),
        C("metric", "VARCHAR", "canonical metric name"),
        C("prediction", "DOUBLE", "the metric with every label but the audit's, the judge's filling open pairs"),
        C("truth", "DOUBLE", "the metric with the audit's human labels (null: query not audited)"),
        C("inclusion", "DOUBLE", "an active audit's pi(q) for an audited query (null otherwise)"),
    ),
)
BENCHMARK_RESULTS = Relation(
    "benchmark_results",
    "(run, row, query, metric)",
    (
        C("run_id", "VARCHAR", "run"),
        C(
            "row_name",
            "VARCHAR",
            "core, +graph, +graph+boosts, +graph+boosts honest (a reference row is "
            "absent when graph or boosts had nothing to learn from)",
        ),
        C("query_id", "VARCHAR", "query; 'all' for the mean"),
        C(
            "metric",
            "VARCHAR",
            "canonical metric name, e.g. recall@5, or a named measure of `bench run --measure` as ir_measures "
            "writes it, e.g. nDCG@20",
        ),
        C("value", "DOUBLE", "value"),
    ),
)
BENCHMARK_RANKINGS = Relation(
    "benchmark_rankings",
    "(run, query, rank): the deciding row's ranking, what `pool --from-run` pools",
    (
        C("run_id", "VARCHAR", "run"),
        C("query_id", "VARCHAR", "golden query"),
        C("rank", "INTEGER", "1, 2, 3 ... down to the run's depth, ties as the retriever ordered them"),
        C("doc_id", "VARCHAR", "document returned"),
        C("score", "DOUBLE", "the retriever's score"),
    ),
    primary_key=("run_id", "query_id", "rank"),
)

EMBEDDING_CACHE = Relation(
    "embedding_cache",
    "(model, text) embedded",
    (
        C("model", "VARCHAR", "model identity: Hugging Face name of the packaged model, else its path"),
        C("text_sha256", "VARCHAR", "sha256 of the embedded UTF-8 text"),
        C("dim", "INTEGER", "vector length"),
        C("vector", "FLOAT[]", "L2-normalised embedding"),
        C("created_at", "TIMESTAMP", "when it was computed (UTC)"),
    ),
    public=False,
    primary_key=("model", "text_sha256"),
)
SCORE_CACHE = Relation(
    "score_cache",
    "(scorer, version, config, corpus, query, passage, repeat) scored",
    (
        C("scorer", "VARCHAR", "scorer name: dense, bm25, judge, or the plug-in's own name"),
        C("version", "VARCHAR", "the scorer's version; a new version writes new rows, never overwrites"),
        C("config", "VARCHAR", "the scorer's configuration as canonical JSON (sorted keys, no spaces)"),
        C(
            "corpus_fingerprint",
            "VARCHAR",
            "fingerprint of the corpus for scorers that read it (bm25, plug-ins), else ''",
        ),
        C("query_sha256", "VARCHAR", "sha256 of the query's UTF-8 text"),
        C("passage_sha256", "VARCHAR", "sha256 of the passage's UTF-8 text"),
        C("repeat_no", "INTEGER", "0 for a pair's first score, 1 .. N-1 for the others of --repeats N"),
        C("value", "DOUBLE", "the score; null for an invalid judge answer"),
        C("label", "VARCHAR", "a label the scorer gave with the score, if any"),
        C("rationale", "VARCHAR", "the judge's rationale_summary; for an invalid answer, what was wrong with it"),
        C("span", "VARCHAR", "the judge's supporting_span, if any"),
        C(
            "invalid_reason",
            "VARCHAR",
            "why a judge answer was invalid (not_json, bad_score, long_rationale, hallucinated_span), else null",
        ),
        C("created_at", "TIMESTAMP", "when it was scored (UTC)"),
    ),
    public=False,
    primary_key=("scorer", "version", "config", "corpus_fingerprint", "query_sha256", "passage_sha256", "repeat_no"),
)

SCHEMA_MIGRATIONS = Relation(
    "schema_migrations",
    "migration applied to this warehouse",
    (
        C("name", "VARCHAR", "the migration's name in goldenset.migrations, e.g. 0003_build_labels_held_by_runs"),
        C("applied_at", "TIMESTAMP", "when it was applied (UTC)"),
    ),
    public=False,
    primary_key=("name",),
)

RELATIONS: tuple[Relation, ...] = (
    SCHEMA_MIGRATIONS,
    LOG_FILES,
    LOG_SERVES,
    LOG_SERVE_ITEMS,
    LOG_VERDICTS,
    LOG_REJECTS,
    LOG_DIRTY,
    QUERY_STATS,
    CORPUS_SNAPSHOTS,
    CORPUS_LOADS,
    CORPUS_DOCUMENTS,
    GOLDEN_BUILDS,
    FILTER_FUNNEL,
    BUILD_LABELS,
    BUILD_LABELS_CLOSED,
    LABEL_HISTORY,
    LABEL_FILES,
    HUMAN_LABELS,
    LABEL_REJECTS,
    TRACE_REJECTS,
    CURRENT_LABELS,
    LABELLING_QUEUE,
    POOL_RUNS,
    AUDIT_SAMPLES,
    AUDIT_QUERIES,
    AUDIT_PAIRS,
    AUDIT_POPULATION,
    BUILD_HUMAN_LABELS,
    BUILD_AGENT_LABELS,
    BUILD_JUDGES,
    JUDGE_RUNS,
    ACCEPTED_SERVES,
    JUDGMENTS,
    LABEL_ROWS,
    GOLDEN_SET_BY_BUILD,
    GOLDEN_SET,
    OVERRIDDEN_LOG_LABELS,
    GOLDEN_QUERIES,
    QUERY_VARIANTS,
    LABEL_CHANGES,
    RELABEL_QUEUE,
    REJECTED_RECORDS,
    SOURCE_ROOTS,
    FORGOTTEN_FILES,
    RUBRICS,
    BENCHMARK_RUNS,
    BENCHMARK_RESULTS,
    BENCHMARK_RANKINGS,
    BENCHMARK_ESTIMATES,
    EMBEDDING_CACHE,
    SCORE_CACHE,
)
PUBLIC = tuple(r for r in RELATIONS if r.public)


def markdown_reference() -> str:
    """The table reference for the docs site (docs/reference/tables.md), generated from this module."""
    out = []
    for rel in PUBLIC:
        kind = "view" if rel.is_view else "table"
        out.append(f"## `{rel.name}` ({kind}, one row per {rel.grain})\n")
        out.append("| column | type | meaning |\n| --- | --- | --- |")
        for c in rel.columns:
            out.append(f"| {c.name} | {c.type} | {c.doc} |")
        out.append("")
    return "\n".join(out)
