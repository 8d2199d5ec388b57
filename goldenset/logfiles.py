"""Finding and reading serve-log files: partitions, line splitting, gzip faults."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# mtime has a coarse tick on some file systems (up to 2 s): a file written in the same
# tick as it was last read may have changed without its size or mtime showing it.
RACY_SECONDS = 2.0

_DT_FOLDER = re.compile(r"dt=([0-9]{4}-[0-9]{2}-[0-9]{2})")


@dataclass(frozen=True)
class LogFile:
    """One log file: where it is and the keys that order its lines."""

    path: Path
    dt: str
    file_name: str

    @property
    def source_file(self) -> str:
        return f"dt={self.dt}/{self.file_name}"


@dataclass
class PartitionCounts:
    """What one partition's ingestion did to its files and lines; the logs' and the labels' reports add their rows."""

    dt: str
    files_seen: int = 0
    files_ingested: int = 0
    files_unchanged: int = 0
    files_forgotten: int = 0  # forgotten files left out, their bytes as forgotten (contract 9.6)
    lines_read: int = 0
    rejected: int = 0  # lines, each counted once under its reason
    reasons: dict[str, int] = field(default_factory=dict)


@dataclass
class FileContent:
    """What could be read of a file: its lines and, if reading stopped, why and where."""

    # (line number from 1, the line without \n or trailing \r): text, or bytes if not UTF-8
    lines: list[tuple[int, str | bytes]]
    lines_read: int  # non-blank lines handed on
    lines_total: int  # every numbered line, blank ones included
    content_sha256: str | None
    size_bytes: int | None
    mtime: float | None
    fault: str | None = None
    fault_line: int | None = None


def list_partitions(root: Path) -> list[str]:
    """The dt values of every dt=YYYY-MM-DD folder under root, in code-point order."""
    if not root.is_dir():
        return []
    return sorted(m.group(1) for p in root.iterdir() if p.is_dir() and (m := _DT_FOLDER.fullmatch(p.name)))


def list_files(root: Path, dt: str) -> list[LogFile]:
    """The .jsonl and .jsonl.gz files of one partition, in code-point order of their names."""
    folder = root / f"dt={dt}"
    if not folder.is_dir():
        return []
    names = sorted(
        p.name for p in folder.iterdir() if p.is_file() and (p.name.endswith(".jsonl") or p.name.endswith(".jsonl.gz"))
    )
    return [LogFile(folder / n, dt, n) for n in names]


class NotPlainText(Exception):
    """The file cannot be streamed as UTF-8 text (unreadable, a gzip fault, not UTF-8): use read_file."""


class _Hashing:
    """A binary file whose bytes are hashed as they are read."""

    def __init__(self, fh, digest):
        self._fh = fh
        self._digest = digest

    def read(self, n: int = -1) -> bytes:
        data = self._fh.read(n)
        self._digest.update(data)
        return data

    def readinto(self, buf) -> int:  # pragma: no cover - gzip reads through read()
        data = self.read(len(buf))
        buf[: len(data)] = data
        return len(data)


# Text handed on at a time: whole lines, about this many bytes. Bounds the memory a
# file takes while it is read, whatever its size.
CHUNK_BYTES = 32 << 20
_BOM = b"\xef\xbb\xbf"


class TextStream:
    """A log file read in chunks of whole lines, hashed while it is read.

    `chunks()` yields (number of the chunk's first line, the chunk's lines joined by
    `\\n`, as bytes: a view valid until the next chunk is asked for); lines are not
    yet stripped of `\\r` or checked for blankness, and the caller checks that the
    bytes are UTF-8 (DuckDB's `decode` rejects exactly what Python's codec does, and
    at several times its speed). Once it is exhausted, `content_sha256`, `size_bytes`,
    `mtime` and `lines_total` are set. It raises NotPlainText, possibly after some
    chunks, when the file cannot be read this way (unreadable, a gzip fault); the
    caller raises it too when a chunk is not UTF-8, and `read_file` then reads the
    file with the exact rules for every fault.
    """

    def __init__(self, f: LogFile, chunk_bytes: int = CHUNK_BYTES):
        self.file = f
        self.chunk_bytes = chunk_bytes
        self.content_sha256: str | None = None
        self.size_bytes: int | None = None
        self.mtime: float | None = None
        self.lines_total = 0
        self.text_bytes = 0

    def chunks(self) -> Iterator[tuple[int, memoryview]]:
        try:
            with open(self.file.path, "rb") as fh:
                yield from self._chunks(fh)
        except (OSError, EOFError, zlib.error) as exc:
            raise NotPlainText(str(exc)) from None

    def _chunks(self, fh) -> Iterator[tuple[int, memoryview]]:
        st = os.fstat(fh.fileno())
        digest = hashlib.sha256()
        source = _Hashing(fh, digest)
        stream: Any = gzip.GzipFile(fileobj=source, mode="rb") if self.file.file_name.endswith(".gz") else source  # type: ignore[call-overload]
        line, carry, first = 1, b"", True
        while block := stream.read(self.chunk_bytes):
            if first:
                first = False
                if block.startswith(_BOM):
                    block = block[3:]
            data = carry + block if carry else block
            cut = data.rfind(b"\n")
            if cut < 0:
                carry = data
                continue
            # The lines are handed on as a view of the block, not a copy of it.
            carry = data[cut + 1 :]
            self.text_bytes += cut
            yield line, memoryview(data)[:cut]
            line += data.count(b"\n", 0, cut) + 1
        while source.read(1 << 20):  # the hash covers every byte of the file
            pass
        if carry:
            self.text_bytes += len(carry)
            yield line, memoryview(carry)
            line += 1
        self.lines_total = line - 1
        self.content_sha256 = digest.hexdigest()
        self.size_bytes, self.mtime = st.st_size, st.st_mtime


def file_sha256(path: Path) -> str | None:
    """sha256 of a file's bytes, read in blocks; None when it cannot be read."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            while block := fh.read(CHUNK_BYTES):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def read_file(f: LogFile) -> FileContent:
    """Read a log file into numbered lines; a fault keeps what was read before it."""
    try:
        st = f.path.stat()
        raw = f.path.read_bytes()
    except OSError as exc:
        return FileContent([], 0, 0, None, None, None, f"cannot read file: {exc.strerror or exc}", None)
    digest = hashlib.sha256(raw).hexdigest()
    fault = None
    if f.file_name.endswith(".gz"):
        data, fault = _gunzip(raw)
    else:
        data = raw
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        # The usual case: the whole file is valid UTF-8 and splits as text.
        text = data.decode("utf-8")
        pieces: list = text.split("\n")
        plain = "\r" not in text
    except UnicodeDecodeError:
        pieces = [_decode(p) for p in data.split(b"\n")]
        plain = False
    if fault is not None:
        # The last piece was cut off by the fault: it was not read.
        pieces = pieces[:-1]
    if plain:
        # No \r and all text: blank means empty or white space only (str.isspace in C).
        lines = [(n, p) for n, p in enumerate(pieces, start=1) if p and not p.isspace()]
    else:
        lines = []
        for n, piece in enumerate(pieces, start=1):
            if piece[-1:] in ("\r", b"\r"):
                piece = piece[:-1]
            if _blank(piece):
                continue
            lines.append((n, piece))
    fault_line = (len(pieces) + 1) if fault is not None and pieces else None
    total = len(pieces) - (1 if fault is None and pieces and not pieces[-1] else 0)
    return FileContent(lines, len(lines), total, digest, st.st_size, st.st_mtime, fault, fault_line)


def _decode(piece: bytes) -> str | bytes:
    """A line as text, or as bytes when it is not valid UTF-8 (it is then invalid JSON)."""
    try:
        return piece.decode("utf-8")
    except UnicodeDecodeError:
        return piece


def _blank(piece: str | bytes) -> bool:
    # White space as Python's str.strip() sees it (U+00A0, U+3000 ... included).
    if isinstance(piece, bytes):
        return not piece.decode("utf-8", errors="replace").strip()
    return not piece.strip()


def _gunzip(raw: bytes) -> tuple[bytes, str | None]:
    """Decompress every gzip member; on a fault return the lines that came out before it.

    The whole file is inflated at once; only when that fails is it read again line by
    line with the gzip module, so that what counts as "read before the fault" is what a
    line-by-line reader gets (for a bad checksum: every line; for corrupt data: the lines
    before the block that failed).
    """
    try:
        return gzip.decompress(raw), None
    except (OSError, EOFError, zlib.error):
        pass
    out = bytearray()
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as fh:
            for line in fh:
                out += line
    except EOFError as exc:
        return bytes(out), f"truncated gzip stream ({exc})"
    except (OSError, zlib.error) as exc:
        return bytes(out), f"gzip stream is corrupt: {exc}"
    return bytes(out), None  # pragma: no cover - the whole read failed, so the loop must too
