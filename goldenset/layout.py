"""What a LOGS (or LABELS) directory holds: the files the contract reads, or what it found instead.

The contract reads `DIR/dt=YYYY-MM-DD/*.jsonl[.gz]` and ignores everything else.
A directory where nothing matches is almost always a mistake (files at the top
level, a `date=` folder, `.json` files), so it is refused with a description of
what is there, instead of publishing an empty golden set.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from goldenset.errors import InputError
from goldenset.logfiles import list_files, list_partitions
from goldenset.settings import Named

_DT = re.compile(r"dt=[0-9]{4}-[0-9]{2}-[0-9]{2}")
_MAX_NAMED = 3


def _is_log_file(name: str) -> bool:
    return name.endswith(".jsonl") or name.endswith(".jsonl.gz")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def describe(root: Path) -> str:
    """A short description of what `root` holds, for an error message."""
    files: Counter[str] = Counter()
    folders: list[str] = []
    dt_folders = 0
    for p in sorted(root.iterdir()):
        if p.is_dir():
            if _DT.fullmatch(p.name):
                dt_folders += 1
                inside = Counter(_suffix(c.name) for c in p.iterdir() if c.is_file())
                if inside:
                    folders.append(f"{p.name} with " + ", ".join(_plural(n, f"{s} file") for s, n in inside.items()))
                else:
                    folders.append(f"an empty folder {p.name}")
            else:
                folders.append(f"a folder {p.name}")
        elif p.is_file():
            files[_suffix(p.name)] += 1
    parts = [_plural(n, f"{s} file") + " at the top level" for s, n in files.most_common()]
    named = folders[:_MAX_NAMED]
    if len(folders) > _MAX_NAMED:
        named.append(f"{len(folders) - _MAX_NAMED} more folders")
    parts += named
    if not parts:
        return "nothing at all"
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _suffix(name: str) -> str:
    if name.endswith(".jsonl.gz"):
        return ".jsonl.gz"
    suffix = "".join(Path(name).suffixes[-2:]) or name
    return suffix


def require_files(root: Path, what: str, where: Named) -> None:
    """Refuse a directory in which no `dt=YYYY-MM-DD/*.jsonl[.gz]` file exists, saying what it holds.

    `where` names the setting as the user gave it (goldenset.settings.named).
    """
    root = Path(root)
    if not root.exists():
        raise InputError(f"the {what} directory {where} does not exist; point {where.fix} at it")
    if not root.is_dir():
        raise InputError(
            f"the {what} directory {where} is a file, not a directory of dt=YYYY-MM-DD folders; point {where.fix} at it"
        )
    for p in root.iterdir():
        if p.is_dir() and _DT.fullmatch(p.name) and any(c.is_file() and _is_log_file(c.name) for c in p.iterdir()):
            return
    raise InputError(f"no files match {root}/dt=YYYY-MM-DD/*.jsonl[.gz]; found {describe(root)}")


@dataclass(frozen=True)
class FolderSummary:
    """What a LOGS or LABELS folder holds of what the contract reads: its days, files and bytes.

    `signature` changes whenever a file read is added, removed, resized or touched (its
    path relative to the folder, size and mtime): the Dagster UI shows it as the folder's
    data version, so what read an older folder shows as out of date.
    """

    days: int
    files: int
    size_bytes: int
    oldest_day: str | None
    newest_day: str | None
    signature: str


def summarize(root: Path) -> FolderSummary:
    """The days, files and bytes of `root/dt=YYYY-MM-DD/*.jsonl[.gz]` (all zero for a missing folder)."""
    digest = hashlib.sha256()
    days = list_partitions(Path(root))
    files = size = 0
    for day in days:
        for f in list_files(Path(root), day):
            try:
                st = f.path.stat()
            except OSError:  # removed between listing and stat: not there
                continue
            files += 1
            size += st.st_size
            digest.update(f"{f.source_file}\x1f{st.st_size}\x1f{st.st_mtime_ns}\n".encode())
    return FolderSummary(
        len(days), files, size, days[0] if days else None, days[-1] if days else None, digest.hexdigest()
    )
