"""Finding and reading serve-log files: partitions, line splitting, gzip faults."""

from __future__ import annotations

import hashlib
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

_DT_FOLDER = re.compile(r"dt=([0-9]{4}-[0-9]{2}-[0-9]{2})")
_CHUNK = 1 << 20


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
        p.name for p in folder.iterdir()
        if p.is_file() and (p.name.endswith(".jsonl") or p.name.endswith(".jsonl.gz"))
    )
    return [LogFile(folder / n, dt, n) for n in names]


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
    """Decompress every gzip member; on a fault return all that came out before it.

    A fault inside a chunk is located by replaying that chunk a byte at a time from
    the state before it, so the output kept does not depend on the chunk size: a
    checksum error at the very end keeps every line, as reading line by line would.
    """
    if not raw:
        return b"", None  # an empty file holds no lines, as gzip.open reads it
    out = bytearray()
    d = zlib.decompressobj(wbits=31)
    pos, step, slow_until, in_member = 0, _CHUNK, 0, False
    while pos < len(raw):
        chunk = raw[pos:pos + step]
        saved = d.copy()
        try:
            data = d.decompress(chunk)
        except zlib.error as exc:
            if step > 1:
                d, step, slow_until = saved, 1, pos + len(chunk)
                continue
            return bytes(out), f"gzip stream is corrupt: {exc}"
        out += data
        in_member = True
        pos += len(chunk)
        if step == 1 and pos >= slow_until:
            step = _CHUNK
        if d.eof:
            # Concatenated gzip members are one stream by the gzip format.
            pos -= len(d.unused_data)
            d = zlib.decompressobj(wbits=31)
            in_member = False
    if in_member:
        return bytes(out), "truncated gzip stream"
    return bytes(out), None
