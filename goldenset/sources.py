"""Where a warehouse's inputs come from: the recorded LOGS and LABELS roots, and forgetting files (contract 9.1, 9.2).

The contract keeps the rows of a file that disappears (logs rotate), so one build
against the wrong folder would leave that folder's rows in every later build. The
warehouse therefore records the root each kind of file was ingested from
(`source_roots`), and a build whose root differs refuses before it changes anything.

Decisions
---------
- **Identity of a root.** The directory made absolute with symbolic links resolved
  (`Path.resolve()`), compared as text: `./logs` and `/srv/x/logs` are the same root when
  they resolve to the same place.
- **When a root is checked.** LOGS always (a LOGS that does not exist is a root too: a typo
  must not turn into a quiet rebuild from the warehouse). LABELS only when the directory
  exists, since a missing LABELS means "no labels yet" and reads nothing.
- **When a root is recorded.** After a build has ingested from it, for each kind that has at
  least one ingested file. A warehouse made before roots were recorded adopts the root of its
  next build without a word (there is nothing to compare it with).
- **The same source, moved.** A differing root that holds at least one file already ingested
  (same path relative to the root, same size and sha256) is the same source moved or copied
  (a deployment moved to another disk, its newest day changed since): it is recorded with a
  line saying so, without `--new-source`. Files that differ are then changed files, as under
  the old root. A root holding no ingested file unchanged is another source and refuses: the
  wrong folder of the issue shares no file with the warehouse.
- **Moving on (`--new-source`).** The new root is recorded and the old one kept with its
  `replaced_at`. Files are keyed by their path relative to the root, so a file under the new
  root with the same relative path and the same bytes is the file already ingested (its rows
  are kept, not duplicated); with other bytes it replaces them, as a changed file does.
- **Forgetting.** `forget` matches a glob (fnmatch rules: `*` also crosses `/`) against the
  path relative to the root, removes every row of the matching files in one transaction, and
  marks the serves they held dirty so the next build recomputes their queries (its
  `label_history` shows the effect). When no file of a kind is left, its root is closed, so
  the next build records whatever root it is given. The same transaction records the files
  as forgotten, so builds leave them out while they stay as they were (goldenset.forgotten).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from goldenset import forgotten
from goldenset.clock import utcnow
from goldenset.connection import Connection
from goldenset.errors import InputMoved, UsageError
from goldenset.ingest import DELETE_FILES, MARK_DIRTY, tracks_dirty
from goldenset.labelling.ingest import DELETE_LABEL_FILES
from goldenset.logfiles import file_sha256
from goldenset.settings import named
from goldenset.warehouse import transaction

KINDS = ("logs", "labels")
# Constant statements: table names are never spliced into SQL at run time.
_FILE_NAMES = {
    "logs": "SELECT source_file FROM log_files ORDER BY source_file",
    "labels": "SELECT source_file FROM label_files ORDER BY source_file",
}
_FLAG = {"logs": "--logs", "labels": "--labels"}
_KNOWN = {
    "logs": "SELECT source_file, size_bytes, content_sha256 FROM log_files ORDER BY source_file",
    "labels": "SELECT source_file, size_bytes, content_sha256 FROM label_files ORDER BY source_file",
}


def canonical(root: str | Path) -> str:
    """A root as it is recorded and compared: absolute, symbolic links resolved."""
    return str(Path(root).expanduser().resolve())


def recorded_root(con: Connection, kind: str) -> str | None:
    """The current root of `kind`, or None when none is recorded."""
    row = con.execute(
        "SELECT root FROM source_roots WHERE kind = ? AND replaced_at IS NULL ORDER BY recorded_at DESC LIMIT 1",
        [kind],
    ).fetchone()
    return row[0] if row else None


def _ingested_files(con: Connection, kind: str) -> int:
    sql = {"logs": "SELECT count(*) FROM log_files", "labels": "SELECT count(*) FROM label_files"}[kind]
    return int(con.execute(sql).fetchall()[0][0])


def unchanged_ingested_file(con: Connection, kind: str, root: Path) -> str | None:
    """The first ingested file (by relative path) that `root` holds with the ingested size and sha256, if any."""
    for source_file, size, sha in con.execute(_KNOWN[kind]).fetchall():
        path = Path(root) / source_file
        try:
            if sha is not None and path.is_file() and path.stat().st_size == size and file_sha256(path) == sha:
                return source_file
        except OSError:
            continue
    return None


def check_roots(con: Connection, roots: dict[str, Path | None], *, new_source: bool = False) -> list[str]:
    """Refuse (InputMoved) when a given root differs from the recorded one, unless `new_source`.

    `roots` maps a kind to the directory this build would read (None: not read). Returns
    one line per root that moves (with `new_source`, or the same files moved), for the build to print.
    """
    moved = []
    for kind in KINDS:
        given = roots.get(kind)
        if given is None:
            continue
        before = recorded_root(con, kind)
        now = canonical(given)
        if before is None or before == now:
            continue
        if not new_source and (same := unchanged_ingested_file(con, kind, Path(now))):
            moved.append(f"{kind} root moves from {before} to {now}: it holds the ingested {same} unchanged")
            continue
        if not new_source:
            n = _ingested_files(con, kind)
            raise InputMoved(
                f"{named(kind, now)} is not the {kind} folder this warehouse was built from ({before}, "
                f"{n} file(s) ingested from it); nothing was changed. If the move is meant, run the build again "
                f"with --new-source (files with the same path and bytes are recognised, not ingested twice); "
                f"if {before} was the mistake, remove its rows with `goldenset forget {_FLAG[kind]} GLOB` first"
            )
        moved.append(f"{kind} root moves from {before} to {now} (--new-source)")
    return moved


def record_roots(con: Connection, roots: dict[str, Path | None], now: datetime | None = None) -> None:
    """Record each given root as current for its kind, if files of that kind have been ingested."""
    now = now or utcnow()
    with transaction(con):
        for kind in KINDS:
            given = roots.get(kind)
            if given is None or not _ingested_files(con, kind):
                continue
            root = canonical(given)
            before = recorded_root(con, kind)
            if before == root:
                continue
            con.execute("UPDATE source_roots SET replaced_at = ? WHERE kind = ? AND replaced_at IS NULL", [now, kind])
            con.execute(
                "INSERT INTO source_roots (kind, root, recorded_at, replaced_at) VALUES (?, ?, ?, NULL)",
                [kind, root, now],
            )


@dataclass(frozen=True)
class Forgotten:
    """What `forget` removed (or would remove): counts per kind of row."""

    kind: str
    files: list[str]
    lines: int
    serves: int = 0
    verdicts: int = 0
    labels: int = 0
    rejected: int = 0

    def line(self) -> str:
        """One line for the user: what went (or would go)."""
        if self.kind == "logs":
            what = f"{self.serves} serve(s), {self.verdicts} verdict(s), {self.rejected} rejected line(s)"
        else:
            what = f"{self.labels} label(s), {self.rejected} rejected line(s)"
        return f"{len(self.files)} {self.kind} file(s), {self.lines} line(s): {what}"


def _matching(con: Connection, kind: str, pattern: str) -> list[str]:
    names = [r[0] for r in con.execute(_FILE_NAMES[kind]).fetchall()]
    return [n for n in names if fnmatch.fnmatchcase(n, pattern)]


def plan_forget(con: Connection, kind: str, pattern: str) -> Forgotten:
    """What `forget_files` would remove for files of `kind` whose relative path matches `pattern`."""
    if kind not in KINDS:
        raise UsageError(f"forget takes --logs GLOB or --labels GLOB, not {kind!r}")
    if not pattern:
        raise UsageError("forget needs a non-empty GLOB (relative to the root, e.g. 'dt=2026-11-*/*')")
    files = _matching(con, kind, pattern)
    if kind == "logs":
        lines, serves, verdicts, rejected = con.execute(
            "SELECT (SELECT coalesce(sum(lines_total), 0) FROM log_files WHERE list_contains($f, source_file)), "
            "(SELECT count(*) FROM log_serves WHERE list_contains($f, source_file)), "
            "(SELECT count(*) FROM log_verdicts WHERE list_contains($f, source_file)), "
            "(SELECT count(*) FROM log_rejects WHERE list_contains($f, source_file))",
            {"f": files},
        ).fetchall()[0]
        return Forgotten(kind, files, int(lines), serves=int(serves), verdicts=int(verdicts), rejected=int(rejected))
    lines, labels, rejected = con.execute(
        "SELECT (SELECT coalesce(sum(lines_total), 0) FROM label_files WHERE list_contains($f, source_file)), "
        "(SELECT count(*) FROM human_labels WHERE list_contains($f, source_file)), "
        "(SELECT count(*) FROM label_rejects WHERE list_contains($f, source_file))",
        {"f": files},
    ).fetchall()[0]
    return Forgotten(kind, files, int(lines), labels=int(labels), rejected=int(rejected))


def forget_files(con: Connection, kind: str, pattern: str, now: datetime | None = None) -> Forgotten:
    """Remove every row of the ingested files of `kind` matching `pattern`, in one transaction,
    and record them as forgotten (goldenset.forgotten).

    The files themselves are never touched. A later build leaves such a file out while its
    bytes stay the same, and refuses when they changed (contract 9.6).
    """
    plan = plan_forget(con, kind, pattern)
    if not plan.files:
        return plan
    now = now or utcnow()
    with transaction(con):
        forgotten.record(con, kind, plan.files, now)  # before the rows go: it reads their sha256 and size
        if kind == "logs":
            if tracks_dirty(con):
                for mark in MARK_DIRTY:
                    con.execute(mark, [True, plan.files])
            for delete in DELETE_FILES:
                con.execute(delete, [plan.files])
        else:
            for delete in DELETE_LABEL_FILES:
                con.execute(delete, [plan.files])
        if not _ingested_files(con, kind):
            con.execute("UPDATE source_roots SET replaced_at = ? WHERE kind = ? AND replaced_at IS NULL", [now, kind])
    return plan
