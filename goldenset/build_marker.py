"""A build in progress, as a small file beside the warehouse that other commands can read.

A build opens and closes the warehouse step by step, so between steps a reader can open
it and see no published build. Before the first build is published that read used to say
"no golden set has been built yet: run `goldenset build` first" to someone whose build was
running. The marker `<db>.build-running` holds the building process's PID and start time;
it is removed when the build ends, whatever the outcome. A marker whose PID is no longer
alive (the process was killed) is ignored, so a crash never leaves a false "running".
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from goldenset.clock import utcnow


@dataclass(frozen=True)
class RunningBuild:
    """The process that is building, and since when (UTC)."""

    pid: int
    since: datetime

    def describe(self) -> str:
        return f"PID {self.pid}, since {self.since.strftime('%Y-%m-%d %H:%M:%S')} UTC"


def marker_path(db: str | Path) -> Path:
    path = Path(db)
    return path.with_name(path.name + ".build-running")


@contextmanager
def marking(db: str | Path) -> Iterator[None]:
    """Mark a build of `db` as running for the length of the block (best effort: never fails the build)."""
    path = marker_path(db)
    written = False
    try:
        if path.parent.is_dir():
            path.write_text(json.dumps({"pid": os.getpid(), "since": utcnow().isoformat()}), encoding="utf-8")
            written = True
    except OSError:
        written = False
    try:
        yield
    finally:
        if written:
            try:
                if running(db, alive=lambda pid: pid == os.getpid()) is not None:
                    path.unlink()
            except OSError:
                pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else
        return True
    return True


def running(db: str | Path, alive=_alive) -> RunningBuild | None:
    """The build running on `db` now, if any (a marker left by a dead process is not one)."""
    try:
        data = json.loads(marker_path(db).read_text(encoding="utf-8"))
        found = RunningBuild(int(data["pid"]), datetime.fromisoformat(data["since"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return found if alive(found.pid) else None
