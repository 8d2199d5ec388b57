"""Failpoints: named places where a crash-safety test can kill or pause the process.

`hit(name)` does nothing unless the environment variable GOLDENSET_FAILPOINT names
that point. Then, by what follows the name:

- `name` (or `name:kill`): the process sends itself SIGKILL, as `kill -9` would: no
  exception, no `finally`, no rollback; what is on disk is all that is left.
- `name:pause`: the process writes its PID to the file named by
  GOLDENSET_FAILPOINT_FILE and sleeps, holding whatever it holds (the DuckDB file,
  an open transaction), so a test can look at it from outside and kill it. Deleting
  the file lets it go on. A pause ends in SIGKILL after PAUSE_LIMIT seconds, so a
  paused process never outlives a test that forgot it.

`@N` after the name (`ingest.mid_transaction@2`) acts on the N-th time the point is
reached in this process, not the first.

The points a build passes: `snapshot.mid_transaction` (a new corpus content's
documents stored, its snapshot and load rows not yet), `ingest.mid_transaction`,
`ingest.after_batch`, `build.before_history`, `build.before_commit`,
`build.after_commit` (committed to the WAL, not yet checkpointed); an export passes
`export.before_publish` (every file written, none moved into place yet); staged
ingestion passes `staging.before_switch` (a day's new Parquet generation written, its
links not switched yet) and `staging.mid_load` (inside the load's transaction); the trace
receiver passes `traces.mid_append` (half of a request's spool line written, nothing
acknowledged) and `traces.before_merge` (in its merger thread, before it merges sealed
segments: requests acknowledged, not yet in LOGS).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

ENV = "GOLDENSET_FAILPOINT"
ENV_FILE = "GOLDENSET_FAILPOINT_FILE"
PAUSE_LIMIT = 300.0
_POLL_SECONDS = 0.05

_hits: dict[str, int] = {}


def _parse(spec: str) -> tuple[str, int, str]:
    """`name[@N][:action]` as (name, N, action)."""
    point, _, action = spec.partition(":")
    name, _, nth = point.partition("@")
    return name, int(nth) if nth.isdigit() else 1, action or "kill"


def hit(name: str) -> None:
    """Kill or pause this process here if GOLDENSET_FAILPOINT names this point; else nothing."""
    spec = os.environ.get(ENV)
    if not spec:
        return
    target, nth, action = _parse(spec)
    if target != name:
        return
    _hits[name] = _hits.get(name, 0) + 1
    if _hits[name] != nth:
        return
    if action == "pause":
        _pause()
        return
    os.kill(os.getpid(), signal.SIGKILL)


def _pause() -> None:
    """Announce the PID in the marker file, then wait until the file is deleted (or die at the limit)."""
    deadline = time.monotonic() + PAUSE_LIMIT
    marker = os.environ.get(ENV_FILE)
    path = Path(marker) if marker else None
    if path is not None:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(str(os.getpid()), encoding="utf-8")
        tmp.replace(path)  # the marker appears whole: a reader never sees an empty PID
    while path is None or path.exists():
        if time.monotonic() >= deadline:
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(_POLL_SECONDS)
