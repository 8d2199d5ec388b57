"""Forgotten files: what `forget` removed stays out of every build while its bytes stay the same (contract 9.6).

`goldenset forget` used to say "the next build shows the effect", and the next build read
the same files again from LOGS: only moving them out worked, which a user of a shared log
bucket cannot do. `forget` now records each file it removes (`forgotten_files`: kind, path
relative to the root, sha256 and size of the bytes it held) in the transaction that
removes its rows, and every ingestion (logs, labels, staged days) leaves such a file out.

Decisions
---------
- **Identity.** A forgotten file is (kind, relative path) with the bytes it held: the sha256
  and size `log_files` / `label_files` recorded when it was ingested.
- **Same bytes: left out.** A forgotten file still under the root with the same bytes is
  not read into new rows, and is counted, not reported as a change.
- **Other bytes: refused.** A forgotten file whose bytes changed since (another size, or the
  same size and another sha256) makes a build refuse before it writes anything (InputMoved,
  exit 1), naming the files. `build --ingest-forgotten` takes back the forget of those files
  (their records go) and ingests their new content. Refusing rather than ingesting and saying
  so: a file is forgotten because its rows were wrong (another team's logs, a test day), and a
  file that grew since is most likely still wrong; ingesting it unasked would bring back what
  the user removed, into a golden set people trust. The Dagster runs refuse the same way (the
  ingestion step fails with the same line), so a nightly cannot slip it in either.
- **Unreadable now, or gone.** A forgotten file that cannot be read now is left out (its
  bytes cannot be told apart); one that is gone changes nothing. Its record stays.
- **Taking it back.** `forget --undo GLOB` deletes the records of either kind whose relative
  path matches GLOB (fnmatch, `*` crosses `/`); the next build ingests those files as new.
- **Cost.** A build stats each forgotten file under its root and hashes those whose size is
  still the forgotten one; forgotten files are few, and a file's bytes are read once.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path

from goldenset.connection import Connection
from goldenset.errors import InputMoved
from goldenset.logfiles import file_sha256

KINDS = ("logs", "labels")
# Constant statements: table names are never spliced into SQL at run time.
_RECORD = {
    "logs": "INSERT OR REPLACE INTO forgotten_files (kind, source_file, content_sha256, size_bytes, forgotten_at) "
    "SELECT 'logs', source_file, content_sha256, size_bytes, ? FROM log_files WHERE list_contains(?, source_file)",
    "labels": "INSERT OR REPLACE INTO forgotten_files (kind, source_file, content_sha256, size_bytes, forgotten_at) "
    "SELECT 'labels', source_file, content_sha256, size_bytes, ? FROM label_files WHERE list_contains(?, source_file)",
}
# How many changed files a refusal names before it counts the rest.
NAMED = 10


def _has_table(con: Connection) -> bool:
    # (A staging worker's scratch database has no such table: it forgets nothing.)
    return bool(
        con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() "
            "AND table_name = 'forgotten_files'"
        ).fetchall()[0][0]
    )


def forgotten(con: Connection, kind: str) -> dict[str, tuple[str | None, int | None]]:
    """The forgotten files of `kind`: relative path -> (sha256, size) of the bytes forgotten."""
    if not _has_table(con):
        return {}
    rows = con.execute(
        "SELECT source_file, content_sha256, size_bytes FROM forgotten_files WHERE kind = ?", [kind]
    ).fetchall()
    return {f: (sha, size) for f, sha, size in rows}


def changed_since(path: Path, known: tuple[str | None, int | None]) -> bool:
    """Whether the file at `path` now holds other bytes than the forgotten ones (False: same, unreadable or gone)."""
    sha, size = known
    try:
        now = path.stat().st_size
    except OSError:
        return False
    if size is not None and now != size:
        return True
    digest = file_sha256(path)
    return digest is not None and sha is not None and digest != sha


def changed(con: Connection, kind: str, root: Path) -> list[str]:
    """The forgotten files of `kind` under `root` whose bytes changed since, in path order."""
    return sorted(f for f, known in forgotten(con, kind).items() if changed_since(Path(root) / f, known))


def refusal(kind: str, files: Sequence[str]) -> InputMoved:
    """The one-line refusal naming forgotten files whose bytes changed (contract 9.6)."""
    named = ", ".join(files[:NAMED]) + (f" and {len(files) - NAMED} more" if len(files) > NAMED else "")
    return InputMoved(
        f"{len(files)} {kind} file(s) forgotten by `goldenset forget` changed since: {named}; nothing was changed. "
        f"Run the build again with --ingest-forgotten to ingest their new content (`goldenset forget --{kind} GLOB` "
        f"forgets it again), or move them out of the {kind} folder"
    )


def check(con: Connection, roots: Mapping[str, Path | None], *, ingest: bool = False) -> dict[str, list[str]]:
    """The changed forgotten files of each kind whose root is given; InputMoved unless `ingest`."""
    found = {kind: changed(con, kind, root) for kind, root in roots.items() if root is not None and kind in KINDS}
    found = {kind: files for kind, files in found.items() if files}
    if found and not ingest:
        kind, files = next(iter(found.items()))
        raise refusal(kind, files)
    return found


def lift(con: Connection, kind: str, files: Sequence[str]) -> None:
    """Take back the forget of `files` (the build ingests them as new files)."""
    if files and _has_table(con):
        con.execute("DELETE FROM forgotten_files WHERE kind = ? AND list_contains(?, source_file)", [kind, list(files)])


def record(con: Connection, kind: str, files: Sequence[str], now: datetime) -> None:
    """Record `files` of `kind` as forgotten, with the bytes their ingested rows came from (inside forget's transaction)."""
    con.execute(_RECORD[kind], [now, list(files)])


def take_back(con: Connection, pattern: str) -> dict[str, list[str]]:
    """Delete the records whose relative path matches `pattern`, both kinds; return them by kind."""
    rows = con.execute("SELECT kind, source_file FROM forgotten_files ORDER BY kind DESC, source_file").fetchall()
    matched: dict[str, list[str]] = {}
    for kind, name in rows:
        if fnmatch.fnmatchcase(name, pattern):
            matched.setdefault(kind, []).append(name)
    for kind, names in matched.items():
        lift(con, kind, names)
    return matched
