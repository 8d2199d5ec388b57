"""Label files into the warehouse, read like the serve log (contract 7.2).

`LABELS/dt=YYYY-MM-DD/*.jsonl[.gz]`, section 1's rules for lines, JSON validity,
`ts`, unreadable files, file order, changed and deleted files. A file is read
again when its bytes change or when the rubric's content changed (every line is
then validated again); its rows are replaced as a whole in one transaction. Rows
of a file that has since been deleted stay. Lines that pass go to `human_labels`
(judge lines too, with kind `judge`); the others to `label_rejects`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC
from pathlib import Path

import pyarrow as pa

from goldenset import forgotten
from goldenset.clock import utcnow
from goldenset.connection import Connection
from goldenset.labelling.lines import parse_label_line
from goldenset.labelling.rubric import Rubric
from goldenset.labelling.rubric_set import Rubrics, RubricSet, projects_to_check
from goldenset.logfiles import (
    RACY_SECONDS,
    FileContent,
    LogFile,
    PartitionCounts,
    list_files,
    list_partitions,
    read_file,
)
from goldenset.records import Rejected
from goldenset.warehouse import transaction

DELETE_LABEL_FILES = (
    "DELETE FROM human_labels WHERE list_contains(?, source_file)",
    "DELETE FROM label_rejects WHERE list_contains(?, source_file)",
    "DELETE FROM label_files WHERE list_contains(?, source_file)",
)
_LABEL_COLUMNS = (
    "source_file",
    "dt",
    "file_name",
    "line",
    "query_id",
    "doc_id",
    "doc_version",
    "label",
    "grade",
    "decided_by",
    "annotator",
    "kind",
    "rubric",
    "ts",
    "dimensions",
    "note",
    "raw",
)
_REJECT_COLUMNS = ("source_file", "dt", "file_name", "line", "reason", "detail", "raw", "rejected_at")


@dataclass
class LabelPartitionReport(PartitionCounts):
    """What one label partition's ingestion did."""

    labels: int = 0


def _known(con: Connection, source_file: str):
    return con.execute(
        "SELECT content_sha256, rubric_sha256, size_bytes, mtime, coalesce(verified_at, ingested_at) "
        "FROM label_files WHERE source_file = ?",
        [source_file],
    ).fetchone()


def _unchanged_by_stat(f: LogFile, known) -> bool:
    try:
        st = f.path.stat()
    except OSError:
        return False
    _, _, size, mtime, verified_at = known
    if (st.st_size, st.st_mtime) != (size, mtime):
        return False
    # A file written in the mtime tick it was read in may have changed unseen.

    return st.st_mtime < verified_at.replace(tzinfo=UTC).timestamp() - RACY_SECONDS


def _rubric_changed(con: Connection, rubric_sha256: str) -> bool:
    """A label file was validated under another rubric: every file is validated again."""
    return (
        con.execute(
            "SELECT count(*) FROM label_files WHERE rubric_sha256 IS DISTINCT FROM ?", [rubric_sha256]
        ).fetchall()[0][0]
        > 0
    )


def days_to_read(con: Connection, root: Path, rubric_sha256: str, dts: list[str]) -> list[str]:
    """The label days of `dts` ingestion would read (every one when the rubric changed)."""
    root = Path(root)
    if _rubric_changed(con, rubric_sha256):
        return list(dts)
    left_out = forgotten.forgotten(con, "labels")
    out = []
    for dt in dts:
        for f in list_files(root, dt):
            if f.source_file in left_out:
                continue
            known = _known(con, f.source_file)
            if known is None or known[0] is None or not _unchanged_by_stat(f, known):
                out.append(dt)
                break
    return out


def ingest_labels(
    con: Connection,
    root: Path,
    rubric: Rubric | RubricSet,
    partitions: list[str] | None = None,
    *,
    rehash: bool = False,
) -> list[LabelPartitionReport]:
    """Ingest the label files of the given partitions (default: every dt= folder present).

    A change of the rubric's content re-validates every label file present, whatever
    `partitions` says. A forgotten file is left out, and one whose bytes changed since it
    was forgotten refuses (InputMoved) before any file is read (contract 9.6).
    """
    root = Path(root)
    present = list_partitions(root)
    dts = present if (partitions is None or _rubric_changed(con, rubric.content_sha256)) else partitions
    reports: list[LabelPartitionReport] = []
    todo: list[tuple[LogFile, FileContent, LabelPartitionReport]] = []
    left_out, changed = forgotten.forgotten(con, "labels"), []
    for dt in dts:
        report = LabelPartitionReport(dt)
        reports.append(report)
        for f in list_files(root, dt):
            report.files_seen += 1
            if f.source_file in left_out:
                if forgotten.changed_since(f.path, left_out[f.source_file]):
                    changed.append(f.source_file)
                report.files_forgotten += 1
                continue
            known = _known(con, f.source_file)
            same_rubric = known is not None and known[1] == rubric.content_sha256
            if (
                known is not None
                and known[0] is not None
                and same_rubric
                and not rehash
                and _unchanged_by_stat(f, known)
            ):
                report.files_unchanged += 1
                continue
            content = read_file(f)
            if content.content_sha256 is None and known is not None and known[0] is not None:
                report.files_unchanged += 1  # readable before, unreadable now: keep what was committed
                continue
            if known is not None and same_rubric and content.content_sha256 == known[0]:
                con.execute(
                    "UPDATE label_files SET size_bytes = ?, mtime = ?, verified_at = ? WHERE source_file = ?",
                    [content.size_bytes, content.mtime, utcnow(), f.source_file],
                )
                report.files_unchanged += 1
                continue
            todo.append((f, content, report))
    if changed:
        raise forgotten.refusal("labels", sorted(changed))
    if todo:
        _replace(con, todo, rubric)
    return reports


def _replace(con: Connection, todo: list[tuple[LogFile, FileContent, LabelPartitionReport]], rubric: Rubrics) -> None:
    """Replace the rows of the given files with what they hold now, in one transaction."""
    now = utcnow()
    project_of = projects_to_check(con, rubric)
    labels: dict[str, list] = {c: [] for c in _LABEL_COLUMNS}
    rejects: dict[str, list] = {c: [] for c in _REJECT_COLUMNS}
    files = []
    for f, content, report in todo:
        n_rejected = 0
        for n, raw in content.lines:
            data = raw.encode("utf-8") if isinstance(raw, str) else raw
            text = raw if isinstance(raw, str) else raw.decode("utf-8", errors="replace")
            try:
                rec = parse_label_line(data, rubric, project_of)
            except Rejected as exc:
                for c, v in zip(
                    _REJECT_COLUMNS,
                    (f.source_file, f.dt, f.file_name, n, exc.reason, exc.detail, text, now),
                    strict=True,
                ):
                    rejects[c].append(v)
                n_rejected += 1
                report.reasons[exc.reason] = report.reasons.get(exc.reason, 0) + 1
                continue
            values = (
                f.source_file,
                f.dt,
                f.file_name,
                n,
                rec.query_id,
                rec.doc_id,
                rec.doc_version,
                rec.label,
                rec.grade,
                rec.decided_by,
                rec.annotator,
                rec.kind,
                rec.rubric,
                rec.ts,
                rec.dimensions,
                rec.note,
                text,
            )
            for c, v in zip(_LABEL_COLUMNS, values, strict=True):
                labels[c].append(v)
            report.labels += 1
        if content.fault is not None:
            line = content.fault_line if content.lines_total else None
            for c, v in zip(
                _REJECT_COLUMNS,
                (f.source_file, f.dt, f.file_name, line, "unreadable_file", content.fault, None, now),
                strict=True,
            ):
                rejects[c].append(v)
            n_rejected += 1
            report.reasons["unreadable_file"] = report.reasons.get("unreadable_file", 0) + 1
        report.files_ingested += 1
        report.lines_read += content.lines_read
        report.rejected += n_rejected
        files.append(
            [
                f.source_file,
                f.dt,
                f.file_name,
                content.content_sha256,
                rubric.content_sha256,
                content.size_bytes,
                content.mtime,
                content.lines_total,
                content.lines_read,
                n_rejected,
                now,
                now,
            ]
        )
    types = {"line": pa.int32(), "grade": pa.int32(), "ts": pa.timestamp("us"), "rejected_at": pa.timestamp("us")}
    label_table = pa.table({c: pa.array(v, types.get(c, pa.string())) for c, v in labels.items()})
    reject_table = pa.table({c: pa.array(v, types.get(c, pa.string())) for c, v in rejects.items()})
    names = [f.source_file for f, _, _ in todo]
    with transaction(con):
        for stmt in DELETE_LABEL_FILES:
            con.execute(stmt, [names])
        for view, table, sql in (
            ("_label_rows", label_table, "INSERT INTO human_labels BY NAME SELECT * FROM _label_rows"),
            ("_label_rejects", reject_table, "INSERT INTO label_rejects BY NAME SELECT * FROM _label_rejects"),
        ):
            if table.num_rows:
                con.register(view, table)
                try:
                    con.execute(sql)
                finally:
                    con.unregister(view)
        con.executemany(
            "INSERT INTO label_files BY NAME SELECT ? AS source_file, ? AS dt, ? AS file_name, ? AS content_sha256, "
            "? AS rubric_sha256, ? AS size_bytes, ? AS mtime, ? AS lines_total, ? AS lines_read, "
            "? AS lines_rejected, ? AS ingested_at, ? AS verified_at",
            files,
        )


def labels_signature(con: Connection) -> str:
    """What the merge depends on from the label side: every label file's content and its rubric."""
    return con.execute(
        "SELECT coalesce(md5(string_agg(source_file || chr(31) || coalesce(content_sha256, 'unreadable') || chr(31) "
        "|| coalesce(rubric_sha256, ''), chr(30) ORDER BY source_file)), '') FROM label_files"
    ).fetchall()[0][0]
