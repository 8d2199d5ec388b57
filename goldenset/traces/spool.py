"""The receiver's spool: acknowledged OTLP requests kept on disk until the merge moves them into LOGS.

Contract 14.8. The folder (GOLDENSET_TRACE_SPOOL, default HOME/trace_spool) holds:

- `open-<n>.jsonl`: the segment the running receiver appends to. Each acknowledged request
  is one line, an ExportTraceServiceRequest in the OTLP JSON encoding (so a segment is an
  `otlp-json` file `traces import` reads as it is), written and fsynced before the 200.
- `segment-<n>.jsonl`: sealed segments waiting for the merge. `<n>` has 12 digits and is
  never given twice (`sequence` holds the next, written before it is used and before a
  merged segment is deleted; without it, one past the largest in the folder), so code-point
  order is arrival order, and a reject row's `source_file` (`traces/spool/segment-<n>.jsonl`)
  names one segment for ever.
- `rejects/segment-<n>.jsonl`: the reject rows of a merge the receiver ran, waiting to be
  stored in the warehouse (`flush_rejects`): a header line naming the segments merged, then
  one row a line.
- `receiver.lock` (flock, the PID inside): held by the one receiver using the folder.
- `merge.lock` (flock): held by whoever merges or flushes, the receiver or the pipeline.

Decisions:

- **Acknowledged means fsynced.** A line is written and fsynced before the receiver
  answers; a segment's name is fsynced in its folder when it is created and
  when it is sealed. A process killed mid-write leaves a last line without its newline:
  never acknowledged, so `recover` cuts it off rather than quarantining it.
- **The merge is the import's.** `merge_segments` runs `convert_files` and `write_lines`
  (contract 14.2-14.5) over the oldest sealed segments, in order, as one batch (at most
  `max_bytes`, at least one segment), then deletes them. A crash before the delete merges
  them again, which writes the same bytes (the merge is by key), and the oldest segments
  are always merged first, so a later copy of a span still wins.
- **Full is a number of bytes.** The spool is full when the segments not yet merged
  (open and sealed), with the new line and its newline, would pass `limit` bytes; a line
  that brings it exactly to the limit is taken.
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import orjson

from goldenset import failpoints
from goldenset.connection import Connection
from goldenset.errors import SpoolBusy, SpoolFull
from goldenset.traces.convert import VersionLookup
from goldenset.traces.importer import (
    RejectRow,
    TraceImport,
    convert_files,
    fsync_folder,
    store_rejects,
    write_lines,
)
from goldenset.traces.mapping import Mapping

OPEN_PREFIX = "open-"
SEALED_PREFIX = "segment-"
SUFFIX = ".jsonl"
REJECTS = "rejects"
SOURCE_PREFIX = "spool/"  # a segment's source_file in trace_rejects (listed as traces/spool/...)
_DIGITS = 12
_POLL_SECONDS = 0.05
CLAIM_SECONDS = 2.0
# The most spool one merge reads: what it holds in memory at once, beside the day files it rewrites.
MERGE_BATCH_BYTES = 16 << 20

KeepRejects = Callable[[list[str], list[RejectRow]], None]


class Spool:
    """One receiver's side of the folder: claim it, recover it, append to it, seal segments."""

    def __init__(self, root: Path, limit: int):
        self.root = Path(root)
        self.limit = limit
        self._lock = threading.Lock()
        self._fd: int | None = None  # the open segment
        self._open_path: Path | None = None
        self._size = 0
        self._claim_fd: int | None = None

    def claim(self) -> None:
        """Become the folder's one receiver (SpoolBusy when another is), then recover what a crash left."""
        (self.root / REJECTS).mkdir(parents=True, exist_ok=True)
        # A probe (receiver_running) holds the lock for an instant: try for a moment.
        deadline = time.monotonic() + CLAIM_SECONDS
        while (fd := claim_folder(self.root)) is None and time.monotonic() < deadline:
            time.sleep(_POLL_SECONDS)
        self._claim_fd = fd
        if self._claim_fd is None:
            raise SpoolBusy(
                f"another `goldenset traces serve` (PID {_holder(self.root)}) uses the spool {self.root}; "
                "stop it, or give this one its own folder (GOLDENSET_TRACE_SPOOL)"
            )
        recover(self.root)
        self.refresh_size()

    def release(self) -> None:
        """Seal the open segment and let the folder go (another receiver, or the pipeline, may take it)."""
        self.seal()
        if self._claim_fd is not None:
            os.close(self._claim_fd)  # closing the descriptor releases the flock
            self._claim_fd = None

    @property
    def size(self) -> int:
        return self._size

    def refresh_size(self) -> None:
        """Count the bytes of every segment on disk again (the pipeline may have merged some)."""
        with self._lock:
            self._size = sum(_size(p) for p in self.root.glob(f"*{SUFFIX}") if _is_segment(p.name))

    def append(self, line: bytes) -> None:
        """Write one request line and fsync it; SpoolFull when it would pass the limit or the disk refuses it."""
        record = line + b"\n"
        with self._lock:
            if self._size + len(record) > self.limit:
                raise SpoolFull(
                    f"the spool holds {self._size} bytes and this request needs {len(record)} more, past its "
                    f"limit of {self.limit} (GOLDENSET_TRACE_SPOOL_LIMIT); retry once the merge has caught up"
                )
            if self._fd is None:
                self._start_segment()
            assert self._fd is not None
            offset = os.lseek(self._fd, 0, os.SEEK_END)
            try:
                half = len(record) // 2
                _write_all(self._fd, record[:half])
                failpoints.hit("traces.mid_append")
                _write_all(self._fd, record[half:])
                os.fsync(self._fd)
            except OSError as exc:
                os.ftruncate(self._fd, offset)
                raise SpoolFull(f"the spool {self.root} cannot be written ({exc.strerror or exc})") from None
            self._size += len(record)

    def seal(self) -> Path | None:
        """Close the open segment and give it its sealed name; the sealed path, or None when nothing was open."""
        with self._lock:
            if self._fd is None or self._open_path is None:
                return None
            os.close(self._fd)
            sealed = self._open_path.with_name(SEALED_PREFIX + self._open_path.name.removeprefix(OPEN_PREFIX))
            os.replace(self._open_path, sealed)
            fsync_folder(self.root)
            self._fd, self._open_path = None, None
            return sealed

    def _start_segment(self) -> None:
        number = next_number(self.root)
        path = self.root / f"{OPEN_PREFIX}{number:0{_DIGITS}d}{SUFFIX}"
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        fsync_folder(self.root)
        self._open_path = path


def claim_folder(root: Path) -> int | None:
    """Hold `receiver.lock` (flock, our PID written in it); the descriptor, or None when another process holds it."""
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / "receiver.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return None
        raise
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    return fd


def receiver_running(root: Path) -> bool:
    """Whether a receiver holds the folder, probed with a shared lock taken and let go at once."""
    try:
        fd = os.open(root / "receiver.lock", os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return True
        raise
    finally:
        os.close(fd)
    return False


def waiting_files(root: Path) -> list[Path]:
    """What the pipeline would merge or store: sealed segments, spooled rejects, and, when no receiver
    runs, the segments one left open."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = [*sealed_segments(root), *pending_rejects(root)]
    if not receiver_running(root):
        found += sorted(p for p in root.glob(f"{OPEN_PREFIX}*{SUFFIX}") if _number(p.name) is not None)
    return found


def _holder(root: Path) -> str:
    try:
        return (root / "receiver.lock").read_text().strip() or "unknown"
    except OSError:
        return "unknown"


def recover(root: Path) -> list[Path]:
    """Seal the segments a stopped receiver left open, cutting a torn last line (it was never acknowledged).

    Only for the folder's holder (`claim_folder`): an open segment of a running receiver is its own.
    """
    sealed = []
    for path in sorted(root.glob(f"{OPEN_PREFIX}*{SUFFIX}")):
        data = path.read_bytes()
        whole = data[: data.rfind(b"\n") + 1]
        if not whole:
            path.unlink()
            continue
        if whole != data:
            with path.open("r+b") as fh:
                fh.truncate(len(whole))
                os.fsync(fh.fileno())
        target = path.with_name(SEALED_PREFIX + path.name.removeprefix(OPEN_PREFIX))
        os.replace(path, target)
        sealed.append(target)
    fsync_folder(root)
    return sealed


def next_number(root: Path) -> int:
    """The next segment number, recorded in `sequence` (fsynced) before it is used."""
    seen = [_number(p.name) for p in [*root.glob(f"*{SUFFIX}"), *(root / REJECTS).glob(f"*{SUFFIX}")]]
    floor = max((n for n in seen if n is not None), default=0) + 1
    try:
        number = max(floor, int((root / "sequence").read_text(encoding="utf-8")))
    except (OSError, ValueError):
        number = floor
    _write_durably(root / "sequence", str(number + 1).encode())
    return number


def reserve_past(root: Path, number: int) -> None:
    """Make `sequence` hold more than `number` (fsynced), before the last file of that number is deleted.

    next_number counts the segments in the folder when `sequence` is missing or behind; a merged
    segment is gone from the folder, so without this a lost `sequence` would give its number again
    (and its rejects in the warehouse, keyed by the segment's name, would be replaced by another's).
    """
    try:
        current = int((root / "sequence").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        current = 0
    if current <= number:
        _write_durably(root / "sequence", str(number + 1).encode())


def _number(name: str) -> int | None:
    digits = name.removesuffix(SUFFIX).rpartition("-")[2]
    return int(digits) if digits.isdigit() else None


def _is_segment(name: str) -> bool:
    return name.startswith((OPEN_PREFIX, SEALED_PREFIX)) and _number(name) is not None


def sealed_segments(root: Path) -> list[Path]:
    """Sealed segments, oldest first."""
    return sorted(p for p in Path(root).glob(f"{SEALED_PREFIX}*{SUFFIX}") if _number(p.name) is not None)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


@contextmanager
def merge_lock(root: Path, wait: float) -> Iterator[None]:
    """Hold `merge.lock` for the block, waiting up to `wait` seconds; SpoolBusy when it stays held."""
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / "merge.lock", os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + wait
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise
                if time.monotonic() >= deadline:
                    raise SpoolBusy(
                        f"another process is merging the spool {root}; try again when it finishes"
                    ) from None
                time.sleep(_POLL_SECONDS)
        yield
    finally:
        os.close(fd)


def merge_segments(
    root: Path,
    mapping: Mapping,
    logs: Path,
    labels: Path | None,
    lookup: VersionLookup,
    keep_rejects: KeepRejects,
    max_bytes: int,
) -> TraceImport | None:
    """Merge the oldest sealed segments into LOGS as `traces import` would, then delete them; None if none wait.

    The caller holds `merge_lock`. `lookup` may raise DatabaseBusy (the warehouse is held):
    nothing is written then, and the segments wait for the next try.
    """
    batch: list[Path] = []
    total = 0
    for path in sealed_segments(root):
        size = _size(path)
        if batch and total + size > max_bytes:
            break
        batch.append(path)
        total += size
    if not batch:
        return None
    files = [(SOURCE_PREFIX + p.name, p) for p in batch]
    # Not strict: each line was checked as strict JSON on receipt and written by orjson from the
    # parsed request, so it holds no duplicate key; a second strict parse would add to each merge
    # what it adds to an import (about a fifth of its CPU, benchmarks/traces_import.py) for nothing.
    converted = convert_files(files, "otlp-json", mapping, lookup, logs, strict=False)
    write_lines(converted, logs, labels)
    keep_rejects([name for name, _ in files], converted.rejects)
    # Once deleted, a segment's number is held by nothing in the folder but `sequence`: make it say so.
    reserve_past(root, max(n for p in batch if (n := _number(p.name)) is not None))
    for path in batch:
        path.unlink()
    fsync_folder(root)
    return converted.result


def spool_rejects(root: Path, now: Callable[[], datetime] | None = None) -> KeepRejects:
    """Keep a merge's rejects in `rejects/` for the warehouse (the receiver never holds the writer for a merge).

    The file is named after the batch's first segment, so merging that batch again after a
    crash replaces it; a batch without rejects removes a stale one.
    """

    def keep(names: list[str], rejects: list[RejectRow]) -> None:
        target = root / REJECTS / names[0].removeprefix(SOURCE_PREFIX)
        if not rejects:
            target.unlink(missing_ok=True)
            return
        at = (now or (lambda: datetime.now(UTC)))().astimezone(UTC).isoformat()
        lines = [orjson.dumps({"sources": names, "rejected_at": at})]
        lines += [
            orjson.dumps(
                {"source_file": r.source_file, "line": r.line, "reason": r.reason, "detail": r.detail, "raw": r.raw}
            )
            for r in rejects
        ]
        target.parent.mkdir(parents=True, exist_ok=True)
        _write_durably(target, b"\n".join(lines) + b"\n")

    return keep


def pending_rejects(root: Path) -> list[Path]:
    return sorted((Path(root) / REJECTS).glob(f"*{SUFFIX}"))


def flush_rejects(root: Path, con: Connection) -> int:
    """Store the spooled reject rows in the warehouse (replacing each segment's rows), then delete them; rows stored.

    The caller holds `merge_lock`, so no merge writes a reject file while it is read.
    """
    files = pending_rejects(root)
    if not files:
        return 0
    names: list[str] = []
    rows: list[RejectRow] = []
    for path in files:
        header, *body = [orjson.loads(x) for x in path.read_bytes().splitlines() if x.strip()]
        at = datetime.fromisoformat(header["rejected_at"])
        names += header["sources"]
        rows += [RejectRow(r["source_file"], r["line"], r["reason"], r["detail"], r["raw"], at) for r in body]
    store_rejects(con, names, rows, datetime.now(UTC))
    for path in files:
        path.unlink()
    fsync_folder(root / REJECTS)
    return len(rows)


@dataclass
class SpoolImport:
    """What `import_spool` did: segments merged, serves written, rejects stored (by its merges, and spooled ones)."""

    segments: int = 0
    serves: int = 0
    rejected: int = 0
    rejects_flushed: int = 0
    files_written: list[str] = field(default_factory=list)

    def add(self, result: TraceImport) -> None:
        self.segments += result.files_read
        self.serves += result.serves
        self.rejected += sum(result.rejected.values())
        self.files_written += [f for f in result.files_written if f not in self.files_written]


def import_spool(
    con: Connection,
    root: Path,
    mapping: Mapping,
    logs: Path,
    labels: Path | None,
    lookup: VersionLookup,
    max_bytes: int,
    wait: float,
) -> SpoolImport:
    """What the pipeline does with the spool: merge what waits (with no receiver running, its open segments too)
    and store the spooled rejects, all with the warehouse it holds."""
    out = SpoolImport()
    if not root.is_dir():
        return out
    claimed = claim_folder(root)
    try:
        if claimed is not None:
            recover(root)  # no receiver runs: what one left open is acknowledged and waits here
        with merge_lock(root, wait):
            keep = _store_now(con)
            while (result := merge_segments(root, mapping, logs, labels, lookup, keep, max_bytes)) is not None:
                out.add(result)
            out.rejects_flushed = flush_rejects(root, con)
    finally:
        if claimed is not None:
            os.close(claimed)
    return out


def _store_now(con: Connection) -> KeepRejects:
    def keep(names: list[str], rejects: list[RejectRow]) -> None:
        store_rejects(con, names, rejects, datetime.now(UTC))

    return keep


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _write_durably(target: Path, data: bytes) -> None:
    tmp = target.with_name(f".{target.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        _write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, target)
    fsync_folder(target.parent)
