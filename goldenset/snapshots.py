"""Storing corpus snapshots in the warehouse and finding the current one."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from goldenset import failpoints
from goldenset.clock import utcnow
from goldenset.connection import Connection
from goldenset.corpus import CorpusSnapshot, drift, read_corpus, stat_signature
from goldenset.errors import NoBuild
from goldenset.logfiles import RACY_SECONDS
from goldenset.warehouse import transaction


@dataclass(frozen=True)
class StoredSnapshot:
    """The result of recording one read of the corpus."""

    load_id: int
    fingerprint: str
    content_sha256: str
    active_docs: int
    retired_docs: int
    new_fingerprint: bool
    drift_from_previous: float | None
    previous_fingerprint: str | None


def unchanged_load(con: Connection, path: str | Path) -> tuple[int, str, str] | None:
    """(load_id, fingerprint, content_sha256) of the last good read, if `path` is still that file.

    Still that file: the same path, size and mtime, and not written in the mtime tick it
    was read in (a same-size rewrite in one tick would otherwise go unseen).
    """
    stat = stat_signature(path)
    last = con.execute(
        "SELECT load_id, fingerprint, content_sha256, source, size_bytes, mtime, loaded_at "
        "FROM corpus_loads ORDER BY load_id DESC LIMIT 1"
    ).fetchall()
    if stat is None or not last:
        return None
    load_id, fp, sha, source, size, mtime, loaded_at = last[0]
    fresh = stat[1] < loaded_at.replace(tzinfo=UTC).timestamp() - RACY_SECONDS
    if Path(source).resolve() == Path(path).resolve() and (size, mtime) == stat and fresh:
        return load_id, fp, sha
    return None


def snapshot_corpus(con: Connection, path: str | Path, now: datetime | None = None) -> StoredSnapshot:
    """Make the corpus file the current snapshot, reading it only if it may have changed.

    A file unchanged since the last good read (see `unchanged_load`) is that snapshot
    still; anything else is read and validated in full.
    """
    same = unchanged_load(con, path)
    if same is not None:
        load_id, fp, sha = same
        active, retired = con.execute(
            "SELECT count(*) FILTER (WHERE status = 'active'), count(*) FILTER (WHERE status = 'retired') "
            "FROM corpus_documents WHERE content_sha256 = ?",
            [sha],
        ).fetchall()[0]
        return StoredSnapshot(load_id, fp, sha, active, retired, False, 0.0, fp)
    return store_snapshot(con, read_corpus(path), now=now, stat=stat_signature(path))


def store_snapshot(
    con: Connection, snapshot: CorpusSnapshot, now: datetime | None = None, stat: tuple[int, float] | None = None
) -> StoredSnapshot:
    """Record a validated snapshot as the current one (one transaction)."""
    now = now or utcnow()
    prev = current_load(con)
    with transaction(con):
        load_id = con.execute("SELECT coalesce(max(load_id), 0) + 1 FROM corpus_loads").fetchall()[0][0]
        known_content = con.execute(
            "SELECT count(*) FROM corpus_documents WHERE content_sha256 = ?", [snapshot.content_sha256]
        ).fetchall()[0][0]
        if not known_content and snapshot.documents:
            df = snapshot.to_polars().to_arrow()
            con.register("_docs", df)
            con.execute(
                "INSERT INTO corpus_documents BY NAME SELECT ? AS content_sha256, * FROM _docs",
                [snapshot.content_sha256],
            )
            con.unregister("_docs")
        failpoints.hit("snapshot.mid_transaction")
        new_fp = con.execute(
            "SELECT count(*) = 0 FROM corpus_snapshots WHERE fingerprint = ?", [snapshot.fingerprint]
        ).fetchall()[0][0]
        if new_fp:
            con.execute(
                "INSERT INTO corpus_snapshots VALUES (?, ?, ?, ?, ?)",
                [snapshot.fingerprint, now, snapshot.active_docs, snapshot.retired_docs, snapshot.source],
            )
        con.execute(
            "INSERT INTO corpus_loads VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                load_id,
                now,
                snapshot.fingerprint,
                snapshot.content_sha256,
                snapshot.source,
                stat[0] if stat else None,
                stat[1] if stat else None,
            ],
        )
    d = None
    if prev is not None and prev[1] == snapshot.content_sha256:
        d = 0.0
    elif prev is not None:
        d = drift(active_signature_of(con, prev[1]), active_signature_of(con, snapshot.content_sha256))
    return StoredSnapshot(
        load_id,
        snapshot.fingerprint,
        snapshot.content_sha256,
        snapshot.active_docs,
        snapshot.retired_docs,
        bool(new_fp),
        d,
        prev[0] if prev else None,
    )


def current_load(con: Connection) -> tuple[str, str] | None:
    """(fingerprint, content_sha256) of the latest good snapshot, or None."""
    rows = con.execute("SELECT fingerprint, content_sha256 FROM corpus_loads ORDER BY load_id DESC LIMIT 1").fetchall()
    return rows[0] if rows else None


def require_current(con: Connection) -> tuple[str, str]:
    cur = current_load(con)
    if cur is None:
        raise NoBuild("no corpus snapshot has been taken yet: run `goldenset build` with --corpus")
    return cur


def active_signature_of(con: Connection, content_sha256: str) -> dict[str, tuple[str, str]]:
    """{doc_id: (version, text_sha256)} of the active documents of a stored snapshot."""
    rows = con.execute(
        "SELECT doc_id, version, text_sha256 FROM corpus_documents WHERE content_sha256 = ? AND status = 'active'",
        [content_sha256],
    ).fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}
