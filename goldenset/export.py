"""Writing a build as a folder any IR tool reads (BEIR layout plus TREC qrels)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from goldenset import failpoints
from goldenset.build_record import BuildRecord, load_build
from goldenset.connection import Connection
from goldenset.errors import InputError


@dataclass(frozen=True)
class ExportCounts:
    """What an export folder holds: queries, labels (qrels lines) and documents (the manifest's `exported`)."""

    queries: int
    labels: int
    documents: int


@dataclass(frozen=True)
class ExportResult:
    out: Path
    build_id: int
    n_queries: int
    n_labels: int
    n_documents: int


def _iso(ts) -> str | None:
    return None if ts is None else ts.isoformat(timespec="microseconds").replace(".000000", "") + "Z"


def build_manifest(con: Connection, build: BuildRecord) -> dict:
    """The manifest of a build: its identity, counts and funnel."""
    funnel = con.execute(
        "SELECT step, judgments_dropped, judgments_left, units_left, coalesce(judgments_kept_by_human, 0), "
        "coalesce(units_kept_by_human, 0) FROM filter_funnel WHERE build_id = ? ORDER BY step_order",
        [build.build_id],
    ).fetchall()
    by_source = dict(
        con.execute(
            "SELECT source, count(*) FROM golden_set_by_build WHERE build_id = ? GROUP BY source ORDER BY source",
            [build.build_id],
        ).fetchall()
    )
    return {
        "build_id": build.build_id,
        "labels_build_id": build.labels_build_id,
        "built_at": _iso(build.built_at),
        "trigger": build.trigger,
        "computation": build.computation,
        "corpus_fingerprint": build.corpus_fingerprint,
        "corpus_active_docs": build.corpus_active_docs,
        "counts": build.counts(),
        "labels_by_source": {src: by_source.get(src, 0) for src in ("log", "human", "judge")},
        "funnel": [
            {
                "step": s,
                "judgments_dropped": d,
                "judgments_left": n,
                "units_left": u,
                # contract v5: what passed no_positive only through a human positive (0 elsewhere)
                "judgments_kept_by_human": jh,
                "units_kept_by_human": uh,
            }
            for s, d, n, u, jh, uh in funnel
        ],
    }


def _prepare(out: Path) -> None:
    """Make the export folder, with a one-line error for a path that cannot be one."""
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} is a file; give a folder (it is created if missing)")
    for parent in out.parents:
        if parent.exists() and not parent.is_dir():
            raise InputError(f"--out {out}: {parent} is a file, not a folder")
    try:
        (out / "qrels").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot write the export folder {out}: {exc.strerror or exc}") from None
    _remove_stale(out)


def export_build(con: Connection, out: str | Path, build_id: int | None = None) -> ExportResult:
    """Write build `build_id` (default: the latest) to `out` as in contract section 5."""
    build = load_build(con, build_id)
    build_id = build.build_id
    out = Path(out)
    _prepare(out)
    manifest = build_manifest(con, build)
    held = _exported_labels(out)
    if held is not None and held[0] == build.labels_build_id:
        # The folder already holds these labels over this snapshot (a repeat build shares
        # both): only the manifest, which names the build, is written again.
        counts = held[1]
        _write_all(out, {"manifest.json": [_manifest_text(manifest, counts)]})
        return ExportResult(out, build_id, counts.queries, counts.labels, counts.documents)
    # The build's labels are read once, sorted, into a temp table: the queries, the count
    # and both qrels files come from it. The qrels are written by DuckDB itself (millions
    # of lines; values as they are, unquoted, as an f-string would write them); insertion
    # order is kept while they are written, so the copies read the rows in the order they
    # were sorted in. The grade, so human labels keep their scale; a log-only set exports
    # 1 and 0.
    (order,) = con.execute("SELECT current_setting('preserve_insertion_order')").fetchall()[0]
    con.execute("SET preserve_insertion_order = true")
    try:
        if build.labels_build_id == load_build(con).labels_build_id:
            con.execute(_LATEST_LABELS_SORTED)  # the latest labels: the open label rows
        else:
            con.execute(_LABELS_SORTED, [build_id])
        corpus, queries = _Copy(con, _CORPUS, [build_id]), _Copy(con, _QUERIES, [])
        qrels = _Copy(con, _QRELS_BEIR, [])

        def manifest_text():
            # Consumed after the copies are written (files are written in order): the
            # counts are the rows they wrote.
            yield _manifest_text(manifest, ExportCounts(queries.rows, qrels.rows, corpus.rows))

        # Every file is written beside its target and moved into place only when all are
        # written (the manifest last): a reader, or a kill, never finds a half-written file,
        # and an export that dies before the end leaves the previous one whole.
        _write_all(
            out,
            {
                "corpus.jsonl": corpus,
                "queries.jsonl": queries,
                "qrels/test.tsv": qrels,
                "qrels.trec": _Copy(con, _QRELS_TREC, []),
                "manifest.json": manifest_text(),
            },
        )
    finally:
        con.execute("DROP TABLE IF EXISTS _export_labels")
        con.execute("SET preserve_insertion_order = ?", [bool(order)])
    return ExportResult(out, build_id, queries.rows, qrels.rows, corpus.rows)


_LABELS_SORTED = (
    "CREATE OR REPLACE TEMP TABLE _export_labels AS SELECT query_id, doc_id, grade, task, project "
    "FROM golden_set_by_build WHERE build_id = ? ORDER BY query_id, doc_id"
)
_LATEST_LABELS_SORTED = (
    "CREATE OR REPLACE TEMP TABLE _export_labels AS SELECT query_id, doc_id, grade, task, project "
    "FROM golden_set ORDER BY query_id, doc_id"
)
# The JSON Lines files are written by DuckDB too: one object a line, keys in this order,
# UTF-8 as is, newlines and other control characters escaped.
_QUERIES = (
    "COPY (SELECT query_id AS _id, task AS text, {'project': project} AS metadata FROM ("
    "SELECT DISTINCT query_id, task, project FROM _export_labels) ORDER BY query_id, task, project) TO ? (FORMAT json)"
)
_ACTIVE_DOCUMENTS = (
    "FROM corpus_documents d JOIN golden_builds b ON d.content_sha256 = b.corpus_content_sha256 "
    "WHERE b.build_id = ? AND d.status = 'active'"
)
_CORPUS = (
    "COPY (SELECT d.doc_id AS _id, coalesce(d.title, '') AS title, d.text "
    + _ACTIVE_DOCUMENTS
    + " ORDER BY d.doc_id) TO ? (FORMAT json)"
)
_QRELS_BEIR = (
    'COPY (SELECT query_id AS "query-id", doc_id AS "corpus-id", grade AS score FROM _export_labels) '
    "TO ? (FORMAT csv, HEADER true, DELIMITER '\t', QUOTE '', ESCAPE '')"
)
_QRELS_TREC = (
    "COPY (SELECT query_id, 0, doc_id, grade FROM _export_labels) "
    "TO ? (FORMAT csv, HEADER false, DELIMITER ' ', QUOTE '', ESCAPE '')"
)


@dataclass
class _Copy:
    """A file DuckDB writes itself: `sql` with `params`, then the file's path; `rows` once written."""

    con: Connection
    sql: str
    params: list
    rows: int = 0

    def write(self, path: Path) -> None:
        self.rows = int(self.con.execute(self.sql, [*self.params, str(path)]).fetchall()[0][0])


def _manifest_text(manifest: dict, counts: ExportCounts) -> str:
    exported = {"queries": counts.queries, "labels": counts.labels, "documents": counts.documents}
    return json.dumps({**manifest, "exported": exported}, indent=1, ensure_ascii=False) + "\n"


_DATA_FILES = ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "qrels.trec")


def _exported_labels(out: Path) -> tuple[int, ExportCounts] | None:
    """The labels build of the export in `out` and what it holds, if it is whole."""
    try:
        old = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
        exported = old["exported"]
        held = (
            int(old["labels_build_id"]),
            ExportCounts(int(exported["queries"]), int(exported["labels"]), int(exported["documents"])),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not all((out / name).is_file() for name in _DATA_FILES):
        return None
    return held


def _staged(target: Path) -> Path:
    return target.with_name(f".{target.name}.{os.getpid()}.tmp")


def _write_all(out: Path, files: dict[str, Iterable[str] | _Copy]) -> None:
    """Write each file to a temporary name beside it, then rename them all into place, in order."""
    staged: list[tuple[Path, Path]] = []
    try:
        for name, chunks in files.items():
            target = out / name
            tmp = _staged(target)
            staged.append((tmp, target))
            if isinstance(chunks, _Copy):
                chunks.write(tmp)
            else:
                with open(tmp, "w", encoding="utf-8", newline="") as fh:
                    fh.writelines(chunks)
        failpoints.hit("export.before_publish")
        for tmp, target in staged:
            os.replace(tmp, target)
    except BaseException:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        raise


_STAGED = re.compile(r"\.(corpus\.jsonl|queries\.jsonl|test\.tsv|qrels\.trec|manifest\.json)\.([0-9]+)\.tmp")


def _remove_stale(out: Path) -> None:
    """Temporary files of an export whose process died before it finished (a live one keeps its own)."""
    for folder in (out, out / "qrels"):
        for tmp in folder.glob(".*.tmp"):
            m = _STAGED.fullmatch(tmp.name)
            if m and not _alive(int(m.group(2))):
                tmp.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists, owned by someone else
    return True
