"""The corpus snapshot: read all-or-nothing, fingerprint, drift (contract section 2)."""

from __future__ import annotations

import gzip
import hashlib
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from goldenset.errors import CorpusError
from goldenset.jsonstrict import StrictJSONError, loads
from goldenset.logfiles import RACY_SECONDS
from goldenset.settings import named

if TYPE_CHECKING:
    import polars as pl

STATUSES = ("active", "retired")
_MAX_NAMED = 3  # bad rows named in the one-line error; the rest are counted


@dataclass(frozen=True)
class Document:
    doc_id: str
    version: str
    status: str
    text: str
    title: str | None = None
    updated_at: str | None = None
    superseded_by: str | None = None

    @property
    def text_sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CorpusSnapshot:
    """A validated snapshot: what the index holds now."""

    documents: tuple[Document, ...]
    source: str
    fingerprint: str = field(init=False)
    content_sha256: str = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "fingerprint", fingerprint(self.documents))
        object.__setattr__(self, "content_sha256", _content_sha256(self.documents))

    @property
    def active(self) -> dict[str, Document]:
        return {d.doc_id: d for d in self.documents if d.status == "active"}

    @property
    def active_docs(self) -> int:
        return sum(1 for d in self.documents if d.status == "active")

    @property
    def retired_docs(self) -> int:
        return sum(1 for d in self.documents if d.status == "retired")

    def to_polars(self) -> pl.DataFrame:
        import polars as pl  # only here: importing polars is a tenth of a second of every command's start

        return pl.DataFrame(
            {
                "doc_id": [d.doc_id for d in self.documents],
                "version": [d.version for d in self.documents],
                "status": [d.status for d in self.documents],
                "title": [d.title for d in self.documents],
                "text": [d.text for d in self.documents],
                "text_sha256": [d.text_sha256 for d in self.documents],
                "superseded_by": [d.superseded_by for d in self.documents],
                "updated_at": [d.updated_at for d in self.documents],
            },
            schema={
                "doc_id": pl.String,
                "version": pl.String,
                "status": pl.String,
                "title": pl.String,
                "text": pl.String,
                "text_sha256": pl.String,
                "superseded_by": pl.String,
                "updated_at": pl.String,
            },
        )


def fingerprint(documents) -> str:
    """sha256 over `doc_id \\x1f version \\x1f sha256(text) \\n` of active documents by doc_id."""
    h = hashlib.sha256()
    for d in sorted((d for d in documents if d.status == "active"), key=lambda d: d.doc_id):
        h.update(f"{d.doc_id}\x1f{d.version}\x1f{d.text_sha256}\n".encode())
    return h.hexdigest()


def _content_sha256(documents) -> str:
    # Identity of everything a build reads from the snapshot (retired rows, titles and
    # superseded_by included), which the fingerprint deliberately ignores.
    h = hashlib.sha256()
    for d in sorted(documents, key=lambda d: d.doc_id):
        for v in (d.doc_id, d.version, d.status, d.text_sha256, d.title, d.updated_at, d.superseded_by):
            h.update(b"\x00" if v is None else b"\x01" + v.encode("utf-8"))
            h.update(b"\x1f")
        h.update(b"\n")
    return h.hexdigest()


def drift(older: dict[str, tuple[str, str]], newer: dict[str, tuple[str, str]]) -> float:
    """Share of the older snapshot's active documents added, removed or changed in the newer.

    Both arguments map each active doc_id to (version, text_sha256). 0 when both are
    empty, 1 when only the older is.
    """
    if not older:
        return 0.0 if not newer else 1.0
    added = sum(1 for d in newer if d not in older)
    removed = sum(1 for d in older if d not in newer)
    changed = sum(1 for d, v in older.items() if d in newer and newer[d] != v)
    return (added + removed + changed) / len(older)


def active_signature(snapshot: CorpusSnapshot) -> dict[str, tuple[str, str]]:
    return {d.doc_id: (d.version, d.text_sha256) for d in snapshot.documents if d.status == "active"}


def _check_row(row) -> tuple[Document | None, str | None]:
    if not isinstance(row, dict):
        return None, "not an object"
    doc_id, version, status = row.get("doc_id"), row.get("version"), row.get("status")
    if not isinstance(doc_id, str) or not doc_id:
        return None, f"doc_id must be a non-empty string, got {doc_id!r}"
    if not isinstance(version, str) or not version:
        return None, f"{doc_id}: version must be a non-empty string, got {version!r}"
    if status not in STATUSES:
        return None, f"{doc_id}: status must be 'active' or 'retired', got {status!r}"
    text = row.get("text")
    if text is None and status == "retired":
        text = ""
    if not isinstance(text, str):
        return None, f"{doc_id}: text must be a string, got {type(text).__name__}"
    for name in ("title", "updated_at"):
        if row.get(name) is not None and not isinstance(row[name], str):
            return None, f"{doc_id}: {name} must be a string or null, got {row[name]!r}"
    sup = row.get("superseded_by")
    if sup is not None and (not isinstance(sup, str) or not sup):
        return None, f"{doc_id}: superseded_by must be null or a non-empty doc_id, got {sup!r}"
    return Document(doc_id, version, status, text, row.get("title"), row.get("updated_at"), sup), None


def _rows_from_jsonl(path: Path):
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as fh:
        data = fh.read()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    for n, line in enumerate(data.split(b"\n"), start=1):
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line.strip():
            continue
        try:
            yield n, loads(line)
        except StrictJSONError as exc:
            yield n, exc


def _rows_from_parquet(path: Path):
    import pyarrow.parquet as pq

    yield from enumerate(pq.read_table(path).to_pylist(), start=1)


# Inside `remembering_reads()`, the last corpus file read in full and found valid, by what
# identifies its content without reading it (see `_file_key`). `goldenset build` checks the
# corpus before it ingests anything, so that a bad one changes nothing, and its snapshot
# step then reads the same file (twice, 100,000 documents cost 1 s more of each full or
# reindex build). Only for the span of one command: a long-lived process (the sensor's
# code server) keeps no corpus in memory.
_remembered: list[tuple[tuple, CorpusSnapshot]] | None = None


@contextmanager
def remembering_reads() -> Iterator[None]:
    """Within the block, a corpus file read in full and unchanged since is not read again."""
    global _remembered
    outer = _remembered
    _remembered = [] if outer is None else outer
    try:
        yield
    finally:
        _remembered = outer


def _file_key(path: Path) -> tuple | None:
    """The file's identity, size and mtime, if its mtime is out of the racy tick (else None)."""
    try:
        real = path.resolve()
        st = real.stat()
    except OSError:
        return None
    if st.st_mtime >= time.time() - RACY_SECONDS:
        return None
    return (str(real), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def read_corpus(path: str | Path) -> CorpusSnapshot:
    """Read and validate a corpus snapshot file, all or nothing.

    Raises CorpusError with a one-line reason naming the first bad rows. Inside
    `remembering_reads()`, a file already read, unchanged since (same file, size and
    mtime, written before the racy tick), is not read again.
    """
    remembered = _remembered
    key = _file_key(Path(path)) if remembered is not None else None
    if remembered and key is not None and remembered[0][0] == key:
        return remembered[0][1]
    snapshot = _read_corpus(Path(path))
    if remembered is not None and key is not None and _file_key(Path(path)) == key:
        remembered[:] = [(key, snapshot)]
    return snapshot


def _read_corpus(path: Path) -> CorpusSnapshot:
    name = path.name
    if not (name.endswith(".jsonl") or name.endswith(".jsonl.gz") or name.endswith(".parquet")):
        raise CorpusError(f"corpus {path}: expected a .jsonl, .jsonl.gz or .parquet file")
    if path.is_dir():
        where = named("corpus", path)
        raise CorpusError(f"the corpus file {where} is a directory, not a file; point {where.fix} at the corpus file")
    if not path.is_file():
        where = named("corpus", path)
        raise CorpusError(f"the corpus file {where} does not exist; point {where.fix} at the corpus file")
    rows = _rows_from_parquet if name.endswith(".parquet") else _rows_from_jsonl
    documents: list[Document] = []
    bad: list[str] = []
    n_bad = 0
    seen: set[str] = set()
    try:
        for n, row in rows(path):
            doc: Document | None
            why: str | None
            if isinstance(row, Exception):
                doc, why = None, f"invalid JSON ({row})"
            else:
                doc, why = _check_row(row)
            if doc is not None and doc.doc_id in seen:
                why = f"doc_id {doc.doc_id!r} appears twice"
                doc = None
            if doc is None:
                n_bad += 1
                if len(bad) < _MAX_NAMED:
                    bad.append(f"row {n}: {why}")
                continue
            seen.add(doc.doc_id)
            documents.append(doc)
    except (OSError, EOFError, ValueError) as exc:
        raise CorpusError(f"corpus {path} is unreadable: {exc}") from exc
    if n_bad:
        more = f" (and {n_bad - len(bad)} more)" if n_bad > len(bad) else ""
        raise CorpusError(f"corpus {path} rejected, nothing changed: " + "; ".join(bad) + more)
    return CorpusSnapshot(tuple(documents), str(path))


def stat_signature(path: str | Path) -> tuple[int, float] | None:
    """(size, mtime) of the corpus file, the cheap change test the sensor runs first."""
    try:
        st = Path(path).stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime
