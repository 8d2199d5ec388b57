"""How the golden set stands: age, drift, its counts (goldenset.counts), the funnel, judges and roots."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

from goldenset import build_marker
from goldenset.build_record import BuildRecord, load_build
from goldenset.clock import utcnow
from goldenset.connection import Connection
from goldenset.corpus import active_signature, drift, read_corpus
from goldenset.counts import HELD_BACK_WHERE, Counts, golden_counts, relabel_queue_by_reason
from goldenset.errors import CorpusError, NoBuild
from goldenset.export import build_manifest
from goldenset.labelling.ingest import labels_signature
from goldenset.snapshots import active_signature_of, current_load, unchanged_load


@dataclass(frozen=True)
class CorpusStatus:
    """The corpus the build used, and how far the corpus file has moved since."""

    fingerprint_at_build: str
    fingerprint_now: str | None = None
    drift_since_build: float | None = None
    error: str | None = None


@dataclass(frozen=True)
class Status:
    """Everything `goldenset status` shows."""

    build: BuildRecord
    age_days: float
    corpus: CorpusStatus
    funnel: list[dict]  # the build's filter_funnel rows (contract 3-4)
    counts: Counts  # every count, by the name every screen shows (goldenset.counts)
    judges_held_back: list[dict] = field(default_factory=list)
    # The judges the gate admitted, each as the line `status` prints (`annotator`, `figures`): not in the JSON,
    # where judge_health carries every judge's figures.
    judges_admitted: list[dict] = field(default_factory=list)
    # Judge health (contract 13.3): per judge its latest runs' figures, the gate's figures and warnings.
    judge_health: list[dict] = field(default_factory=list)
    rubric_name: str | None = None  # the rubric the build's labels were checked against (contract 9.3)
    roots: dict[str, str] = field(default_factory=dict)  # the recorded LOGS and LABELS roots (contract 9.1)

    @property
    def rejected_by_reason(self) -> dict[str, int]:
        return self.counts.quarantine.by_reason

    @property
    def rejected_records(self) -> int:
        return self.counts.quarantine.rejected_records

    @property
    def relabel_queue_by_reason(self) -> dict[str, int]:
        return self.counts.relabel_queue_by_reason

    @property
    def relabel_queue(self) -> int:
        return self.counts.relabel_queue

    @property
    def labelling_queue_by_reason(self) -> dict[str, int]:
        return self.counts.labelling_queue_by_reason

    def to_json(self) -> dict:
        """The `status --json` object: `counts` holds every count under its one key (docs/reference/counts.md), the
        queues' sizes and splits by reason included (contract 15.9: one place, not again at the top level)."""
        from goldenset.export import _iso

        return {
            "build_id": self.build.build_id,
            "built_at": _iso(self.build.built_at),
            "trigger": self.build.trigger,
            "computation": self.build.computation,
            "age_days": self.age_days,
            "corpus": asdict(self.corpus),
            "counts": self.counts.to_json(),
            "funnel": self.funnel,
            "full_funnel": [row.to_json() for row in self.counts.funnel],
            "ingested_since_build": self.counts.ingested_since_build,
            "rejected_records": self.rejected_records,
            "rejected_by_reason": self.rejected_by_reason,
            "rejected_by_source": self.counts.quarantine.by_source(),
            "orphan_verdicts": self.build.orphan_verdicts,
            "judges_held_back": self.judges_held_back,
            "judge_health": self.judge_health,
            "rubric": {"name": self.rubric_name, "sha256": self.build.rubric_sha256}
            if self.build.rubric_sha256
            else None,
            "roots": self.roots,
        }


def _has_tables(con: Connection, *names: str) -> bool:
    found = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() AND list_contains(?, table_name)",
        [list(names)],
    ).fetchall()[0][0]
    return found == len(names)


def golden_status(con: Connection, corpus_path: str | Path | None = None, now: datetime | None = None) -> Status:
    """What `goldenset status` shows (raises NoBuild before any build)."""
    now = now or utcnow()
    try:
        build = load_build(con)
    except NoBuild:
        (db,) = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchall()[
            0
        ]
        first = build_marker.running(db) if db else None
        if first is not None:
            raise NoBuild(
                f"the first build is running ({first.describe()}); no golden set is published until it "
                "finishes: run `goldenset status` again then"
            ) from None
        raise
    manifest = build_manifest(con, build)
    corpus = CorpusStatus(build.corpus_fingerprint)
    same = unchanged_load(con, corpus_path) if corpus_path is not None else None
    if same is not None and same[2] == build.corpus_content_sha256:
        # The file is the snapshot the build used, by the same test the build applies: no
        # need to read and fingerprint it again.
        corpus = CorpusStatus(build.corpus_fingerprint, build.corpus_fingerprint, 0.0)
    elif corpus_path is not None:
        try:
            current = read_corpus(corpus_path)
        except CorpusError as exc:
            corpus = CorpusStatus(build.corpus_fingerprint, error=str(exc))
        else:
            corpus = CorpusStatus(
                build.corpus_fingerprint,
                current.fingerprint,
                drift(active_signature_of(con, build.corpus_content_sha256), active_signature(current)),
            )
    from goldenset.labelling.judge_gate import gate_rows

    gates = gate_rows(con, build.labels_build_id)
    judges = [
        {"annotator": g.annotator, **g.to_json(), "labels": g.labels, "why": g.why()} for g in gates if not g.passed
    ]
    admitted = [{"annotator": g.annotator, "figures": g.admitted()} for g in gates if g.passed]
    health = []
    if _has_tables(con, "judge_runs"):  # (a warehouse from before contract 13, opened read-only)
        from goldenset.scoring.judge_health import judge_health

        health = [h.to_json() for h in judge_health(con)]
    rubric, roots = None, {}
    if _has_tables(con, "rubrics", "source_roots"):  # (a warehouse from before contract 9, opened read-only)
        rubric = con.execute("SELECT name FROM rubrics WHERE rubric_sha256 = ?", [build.rubric_sha256]).fetchone()
        roots = dict(
            con.execute("SELECT kind, root FROM source_roots WHERE replaced_at IS NULL ORDER BY kind").fetchall()
        )
    return Status(
        build=build,
        rubric_name=rubric[0] if rubric else None,
        roots=roots,
        judges_held_back=judges,
        judges_admitted=admitted,
        judge_health=health,
        age_days=round((now - build.built_at).total_seconds() / 86400, 3),
        corpus=corpus,
        funnel=manifest["funnel"],
        counts=golden_counts(con, build, labels_now=labels_signature(con)),
    )


def rejected_sample(con: Connection, limit: int = 20) -> list[tuple]:
    """(source_file, line, reason, raw prefix) of the newest lines quarantined at ingest, log and label files.

    Conflicting duplicate serves (found at build time) and label lines of unknown versions
    are left out: `goldenset rejects` lists every row of rejected_records.
    """
    return con.execute(
        "SELECT source_file, line, reason, left(raw, 120) FROM ("
        "SELECT source_file, line, reason, raw, rejected_at FROM log_rejects UNION ALL "
        "SELECT 'labels/' || source_file, line, reason, raw, rejected_at FROM label_rejects) "
        "ORDER BY rejected_at DESC, source_file, line LIMIT ?",
        [limit],
    ).fetchall()


def relabel_summary(con: Connection, limit: int = 20) -> tuple[dict[str, int], list[tuple]]:
    """Queue size by reason, and its oldest-flagged rows (project and task first: what a person relabels)."""
    by_reason = relabel_queue_by_reason(con)
    sample = con.execute(
        "SELECT project, task, doc_id, judged_version, current_version, superseded_by, reason, "
        "first_flagged_build FROM relabel_queue ORDER BY first_flagged_build, query_id, doc_id LIMIT ?",
        [limit],
    ).fetchall()
    return by_reason, sample


def drift_between_builds(con: Connection, older: BuildRecord, newer: BuildRecord) -> float:
    """Corpus drift from one build's snapshot to another's."""
    if older.corpus_content_sha256 == newer.corpus_content_sha256:
        return 0.0  # one snapshot: the same active documents (0.2 s of reads at 100,000 documents)
    return drift(
        active_signature_of(con, older.corpus_content_sha256), active_signature_of(con, newer.corpus_content_sha256)
    )


UNREADABLE = "unreadable_file"


def unreadable_files(rejected_by_reason: Mapping[str, int]) -> int:
    """A day's rows of reason unreadable_file: rejected records that are no line read (contract 15.9)."""
    return rejected_by_reason.get(UNREADABLE, 0)


@dataclass(frozen=True)
class PartitionStats:
    """What the warehouse holds of one log day (whatever run ingested it).

    The counts add up: log_lines_read = serves + verdicts + log_lines_rejected_at_ingest -
    unreadable_files + blank_lines, every line read in exactly one of them (a blank line is
    skipped, not rejected). An `unreadable_file` row is a rejected record but not a line read:
    a file that could not be opened, or whose gzip stream broke after its last complete line
    (those lines are read and counted). Lines of a conflicting duplicate serve are found at
    build, over every day, and counted by goldenset.counts (`conflicting_duplicate_serves`);
    here they are serves.
    """

    dt: str
    files: int
    lines_read: int
    serves: int
    verdicts: int
    rejected_by_reason: dict[str, int]
    blank_lines: int = 0

    @property
    def log_lines_rejected_at_ingest(self) -> int:
        return sum(self.rejected_by_reason.values())

    @property
    def unreadable_files(self) -> int:
        return unreadable_files(self.rejected_by_reason)


def partition_stats(con: Connection, dts: list[str]) -> dict[str, PartitionStats]:
    """Per log day: files, lines, valid serve and verdict lines, lines rejected at ingest by reason, blank lines.

    Read from log_files (counted per file at ingest) and log_rejects: cheap at any size.
    """
    files = {
        d: (n, lines, serves, verdicts, blank)
        for d, n, lines, serves, verdicts, blank in con.execute(
            "SELECT dt, count(*), coalesce(sum(lines_total), 0), coalesce(sum(serves), 0), "
            "coalesce(sum(verdicts), 0), coalesce(sum(lines_total - lines_read), 0) "
            "FROM log_files WHERE list_contains(?, dt) GROUP BY dt",
            [dts],
        ).fetchall()
    }
    reasons: dict[str, dict[str, int]] = {}
    for d, reason, n in con.execute(
        "SELECT dt, reason, count(*) FROM log_rejects WHERE list_contains(?, dt) GROUP BY dt, reason "
        "ORDER BY dt, reason",
        [dts],
    ).fetchall():
        reasons.setdefault(d, {})[reason] = n
    out = {}
    for d in dts:
        n, lines, serves, verdicts, blank = files.get(d, (0, 0, 0, 0, 0))
        out[d] = PartitionStats(d, n, int(lines), int(serves), int(verdicts), reasons.get(d, {}), int(blank))
    return out


_SAMPLE_SQL = """
SELECT dt, PREFIX || source_file, line, reason, left(raw, 120) FROM TABLE WHERE list_contains(?, dt)
QUALIFY row_number() OVER (PARTITION BY dt ORDER BY rejected_at DESC, source_file, line) <= ?
ORDER BY dt, rejected_at DESC, source_file, line
"""
# Two constant statements: table names are never spliced into SQL at run time.
_SAMPLES = {
    False: _SAMPLE_SQL.replace("PREFIX", "''").replace("TABLE", "log_rejects"),
    True: _SAMPLE_SQL.replace("PREFIX", "'labels/'").replace("TABLE", "label_rejects"),
}


SAMPLE_SIZE = 10


def partition_samples(
    con: Connection, dts: list[str], limit: int = SAMPLE_SIZE, *, labels: bool = False
) -> dict[str, list[tuple]]:
    """Up to `limit` lines quarantined at ingest per day, (source_file, line, reason, raw prefix), in one query.

    From log_rejects (or label_rejects), not the rejected_records view: the view finds
    conflicting duplicate serves with a window over every serve, which at millions of
    serves costs seconds per call; those lines are listed by `goldenset rejects`.
    """
    rows = con.execute(_SAMPLES[labels], [dts, limit]).fetchall()
    out: dict[str, list[tuple]] = {}
    for d, *rest in rows:
        out.setdefault(d, []).append(tuple(rest))
    return out


@dataclass(frozen=True)
class LabelPartitionStats:
    """What the warehouse holds of one day of label files.

    The counts add up: label_lines_read = labels + label_lines_rejected - unreadable_files +
    blank_lines, where label_lines_rejected = label_lines_rejected_at_ingest +
    label_lines_held_back: a line held back until a snapshot knows its document version
    (unknown_document_version) is a rejected line (contract 7.2), named apart because it joins
    once one does; it is not a label. An `unreadable_file` row is no line read (PartitionStats).
    """

    dt: str
    files: int
    lines_read: int
    labels: int
    by_annotator: dict[str, int]
    rejected_by_reason: dict[str, int]
    unknown_document_version: int = 0
    blank_lines: int = 0

    @property
    def label_lines_rejected_at_ingest(self) -> int:
        return sum(self.rejected_by_reason.values())

    @property
    def unreadable_files(self) -> int:
        return unreadable_files(self.rejected_by_reason)

    @property
    def label_lines_held_back(self) -> int:
        return self.unknown_document_version

    @property
    def label_lines_rejected(self) -> int:
        return self.label_lines_rejected_at_ingest + self.label_lines_held_back

    def label_lines_rejected_by_reason(self) -> dict[str, int]:
        """Rejected at ingest by reason, with the held-back lines as unknown_document_version."""
        out = dict(self.rejected_by_reason)
        if self.unknown_document_version:
            out["unknown_document_version"] = out.get("unknown_document_version", 0) + self.unknown_document_version
        return dict(sorted(out.items()))


def label_partition_stats(con: Connection, dts: list[str]) -> dict[str, LabelPartitionStats]:
    """Per label day: files, lines, label lines (by annotator), lines held for an unknown version, rejected lines."""
    files = {
        d: (n, lines, blank)
        for d, n, lines, blank in con.execute(
            "SELECT dt, count(*), coalesce(sum(lines_total), 0), coalesce(sum(lines_total - lines_read), 0) "
            "FROM label_files WHERE list_contains(?, dt) GROUP BY dt",
            [dts],
        ).fetchall()
    }
    annotators: dict[str, dict[str, int]] = {}
    for d, who, n in con.execute(
        "SELECT dt, annotator, count(*) FROM human_labels WHERE list_contains(?, dt) GROUP BY ALL ORDER BY ALL", [dts]
    ).fetchall():
        annotators.setdefault(d, {})[who] = n
    # Held back as the next build will see it: no committed build's snapshot, nor the current
    # one (the snapshot the next build reads), holds the version (goldenset.counts' definition).
    current = current_load(con)
    unknown = dict(
        con.execute(
            "SELECT dt, count(*) FROM human_labels h WHERE list_contains(?, dt) AND "
            + HELD_BACK_WHERE
            + " GROUP BY ALL",
            [dts, current[1] if current else ""],
        ).fetchall()
    )
    reasons: dict[str, dict[str, int]] = {}
    # Not the rejected_records view: its duplicate-serve window costs seconds on a big log.
    for d, reason, n in con.execute(
        "SELECT dt, reason, count(*) FROM label_rejects WHERE list_contains(?, dt) GROUP BY ALL ORDER BY ALL", [dts]
    ).fetchall():
        reasons.setdefault(d, {})[reason] = n
    out = {}
    for d in dts:
        n, lines, blank = files.get(d, (0, 0, 0))
        held = int(unknown.get(d, 0))
        out[d] = LabelPartitionStats(
            d,
            n,
            int(lines),
            sum(annotators.get(d, {}).values()) - held,
            annotators.get(d, {}),
            reasons.get(d, {}),
            held,
            int(blank),
        )
    return out
