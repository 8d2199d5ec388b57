"""Appending one label line durably: the labelling page's writer and the judge's share it.

The line goes in under an exclusive flock (two writers of one file never interleave), after a
newline when the file's last byte is not one (a torn earlier write loses only itself), then is
flushed and fsynced; a folder or file the call creates has its parent folder fsynced, so the new
entry survives a crash too.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any


def append_line(path: Path, line: dict[str, Any]) -> None:
    """Append `line` as one compact JSON line to `path` (made with its folders when missing), fsynced."""
    data = (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    make_dirs(path.parent)
    created = not path.exists()
    with open(path, "ab") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            end = fh.seek(0, os.SEEK_END)
            if end and _last_byte(path, end) != b"\n":
                data = b"\n" + data  # a torn earlier write: start a fresh line so only that line is lost
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    if created:
        fsync_dir(path.parent)


def _last_byte(path: Path, size: int) -> bytes:
    with open(path, "rb") as fh:
        fh.seek(size - 1)
        return fh.read(1)


def make_dirs(folder: Path) -> None:
    """Create `folder` and missing parents, fsyncing each parent so the new entries survive a crash."""
    missing: list[Path] = []
    p = folder
    while not p.exists():
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        try:
            d.mkdir()
        except FileExistsError:
            continue
        fsync_dir(d.parent)


def fsync_dir(folder: Path) -> None:
    """fsync a folder, so the entries made in it are on disk."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
