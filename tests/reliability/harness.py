"""The reliability tests' world: real `goldenset` processes over real DuckDB files.

Each command is a process of its own, forked from a per-worker server that has already imported
Dagster (tests/forkserver.py: what that saves and what differs from a fresh interpreter);
`pytest --fresh-interpreters` starts each in a fresh interpreter instead.

Every process gets the test's environment (its own GOLDENSET_HOME, hence its own
Dagster instance, and GOLDENSET_LOCK_TIMEOUT=0 unless a test sets a wait), plus
whatever a test adds (a failpoint, a wait). Nothing here sleeps for a fixed time to
let something happen: a test waits for a file, a process or a line to appear, with
a generous bound that only turns a hang into a failure.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from tests.forkserver import ForkedProcess, ForkServer
from tests.helpers import World, always, doc, ranked, serve, verdict, write_corpus, write_log

FRESH_INTERPRETERS = False  # set by `pytest --fresh-interpreters` (tests/conftest.py)

# A hang becomes a failure after this long; a build of these inputs takes a few seconds.
HANG_SECONDS = 180.0

# `python -m goldenset` with some of the program's constants set first (module.NAME: value,
# as JSON in argv[1]); everything else is the program as installed. A test lowers a bound
# that only sets how long something takes or how the work is cut, never what comes out.
_PATCHED = (
    "import importlib, json, runpy, sys\n"
    "for target, value in json.loads(sys.argv.pop(1)).items():\n"
    "    module, _, name = target.rpartition('.')\n"
    "    module = importlib.import_module(module)\n"
    "    if not hasattr(module, name):\n"
    "        sys.exit(f'no constant {target} to set')\n"
    "    setattr(module, name, value)\n"
    "sys.argv[0] = 'goldenset'\n"
    "runpy.run_module('goldenset', run_name='__main__')"
)


BATCH = 1  # an ingest batch bound of one byte: every changed file is a batch (a transaction) of its own

# The wait before Dagster retries a step that found the warehouse busy (15 s in the program).
# A test of what the retries end in needs the retries, not the wait between them.
NO_RETRY_WAIT = {"goldenset_dagster.assets.BUSY_RETRY_SECONDS": 0}


def _patches(batch_lines: int | None, patches: dict | None) -> dict:
    """The constants to set (module.NAME: value); with `batch_lines`, one build ingests each changed
    file in a batch (a transaction) of its own, so that a kill can land between two committed batches."""
    patches = dict(patches or {})
    if batch_lines is not None:
        patches["goldenset.ingest.BATCH_BYTES"] = batch_lines
    return patches


def goldenset_argv(args: list[str], patches: dict) -> list[str]:
    """The command line of `goldenset ARGS` in a fresh interpreter, with `patches` set first."""
    if not patches:
        return [sys.executable, "-m", "goldenset", *args]
    return [sys.executable, "-c", _PATCHED, json.dumps(patches), *args]


# Variables of the outer environment a world never inherits: it has its own paths and home.
_INHERITED_NOT = {
    "GOLDENSET_LOGS",
    "GOLDENSET_CORPUS",
    "GOLDENSET_DB",
    "GOLDENSET_LABELS",
    "GOLDENSET_RUBRIC",
    "GOLDENSET_EXPORT_DIR",
    "GOLDENSET_REPORTS",
    "GOLDENSET_BENCH_INDEX",
    "DAGSTER_HOME",
    "GOLDENSET_FAILPOINT",
    "GOLDENSET_FAILPOINT_FILE",
    "GOLDENSET_DEBUG",
}


@dataclass
class CliWorld(World):
    """A World whose commands run as `goldenset` processes, with its own GOLDENSET_HOME."""

    home: Path
    env_extra: dict[str, str] = field(default_factory=dict)
    _started: int = 0

    @property
    def dagster_home(self) -> Path:
        return self.home / "dagster"

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in _INHERITED_NOT}
        env.update({"GOLDENSET_HOME": str(self.home), "GOLDENSET_LOCK_TIMEOUT": "0"})
        env.update(self.env_extra)
        env.update(extra)
        return env

    def paths(self, corpus: Path | None = None) -> list[str]:
        return ["--logs", str(self.logs), "--corpus", str(corpus or self.corpus), "--db", str(self.db)]

    def run(
        self,
        *args: str,
        batch_lines: int | None = None,
        patches: dict | None = None,
        timeout: float = HANG_SECONDS,
        **env: str,
    ) -> subprocess.CompletedProcess:
        """Run `goldenset ARGS` to the end; a hang past `timeout` fails the test."""
        patched = _patches(batch_lines, patches)
        if not FRESH_INTERPRETERS:
            return ForkServer.get().run(list(args), self.env(**env), self.root, patched, timeout=timeout)
        return subprocess.run(
            goldenset_argv(list(args), patched),
            env=self.env(**env),
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def build(
        self,
        *extra: str,
        corpus: Path | None = None,
        batch_lines: int | None = None,
        patches: dict | None = None,
        **env: str,
    ) -> subprocess.CompletedProcess:
        return self.run("build", *self.paths(corpus), *extra, batch_lines=batch_lines, patches=patches, **env)

    def start(self, *args: str, batch_lines: int | None = None, patches: dict | None = None, **env: str) -> Started:
        """Start `goldenset ARGS` and return at once; its stderr goes to a file a test can watch."""
        self._started += 1
        err = self.root / f"started-{self._started}.stderr"
        patched = _patches(batch_lines, patches)
        with err.open("w") as fh:
            if not FRESH_INTERPRETERS:
                proc = ForkServer.get().spawn(list(args), self.env(**env), self.root, patched, stderr=fh.fileno())
            else:
                proc = subprocess.Popen(
                    goldenset_argv(list(args), patched),
                    env=self.env(**env),
                    cwd=self.root,
                    stdout=subprocess.PIPE,
                    stderr=fh,
                    text=True,
                )
        return Started(proc, err)

    def start_build(
        self, *extra: str, batch_lines: int | None = None, patches: dict | None = None, **env: str
    ) -> Started:
        return self.start("build", *self.paths(), *extra, batch_lines=batch_lines, patches=patches, **env)


def run_here(world: CliWorld, *args: str) -> subprocess.CompletedProcess:
    """`goldenset ARGS` run in this process, in the world's environment, output captured.

    For a reading command whose answer is what a test checks (`status` after a kill), not how
    it meets another process: it saves the start of a Python process and its imports.
    """
    from goldenset.settings import scoped_environment
    from goldenset_dagster.cli import main

    out, err = io.StringIO(), io.StringIO()
    with scoped_environment(world.env()), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return subprocess.CompletedProcess(["goldenset", *args], code, out.getvalue(), err.getvalue())


def make_world(root: Path, home: Path | None = None) -> CliWorld:
    root.mkdir(parents=True, exist_ok=True)
    return CliWorld(root, home or root / "goldenset-home")


def copy_world(template: CliWorld, root: Path) -> CliWorld:
    """A copy of a world (logs, corpus, warehouse, Dagster instance), file times kept."""
    shutil.copytree(template.root, root, symlinks=True)
    return CliWorld(root, root / template.home.relative_to(template.root))


def ok(proc: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    """The process, after checking it exited 0 (its output in the failure message otherwise)."""
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc


def killed(proc) -> bool:
    return proc.returncode == -signal.SIGKILL


def wait_for(predicate, what: str, timeout: float = HANG_SECONDS, proc=None):
    """Poll `predicate` until it returns something truthy; fail with `what` after `timeout`.

    With `proc`, also fail as soon as the process has ended (it will not make the thing happen).
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"process ended (exit {proc.returncode}) before {what}\n{out}\n{err}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@dataclass
class Started:
    """A process started in the background: the process (a Popen or a fork server's child), and the
    file its stderr goes to."""

    proc: subprocess.Popen | ForkedProcess
    stderr_path: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def poll(self) -> int | None:
        return self.proc.poll()

    def stderr(self) -> str:
        return self.stderr_path.read_text()

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        out, _ = self.proc.communicate(timeout=timeout)
        return out, self.stderr()

    def kill(self) -> None:
        self.proc.kill()

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode


def finish(proc, timeout: float = HANG_SECONDS) -> subprocess.CompletedProcess:
    """Wait for a started process (Started or Popen) and return it as a CompletedProcess."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"process hung past {timeout} s\n{out}\n{err}") from None
    return subprocess.CompletedProcess(getattr(proc, "args", None), proc.returncode, out, err)


# What a build publishes, compared across worlds: every column but wall-clock times (and
# the corpus path, which names the world's folder).
PUBLISHED = {
    "golden_set": "SELECT * FROM golden_set ORDER BY ALL",
    "golden_builds": "SELECT * EXCLUDE (built_at) FROM golden_builds ORDER BY build_id",
    "filter_funnel": "SELECT * FROM filter_funnel ORDER BY build_id, step_order",
    "label_history": "SELECT * FROM label_history ORDER BY ALL",
    "label_changes": "SELECT * FROM label_changes ORDER BY ALL",
    "relabel_queue": "SELECT * FROM relabel_queue ORDER BY ALL",
}
QUARANTINE = {"rejected_records": "SELECT * EXCLUDE (rejected_at) FROM rejected_records ORDER BY ALL"}


def read_tables(db: Path, queries: dict[str, str] | None = None) -> dict[str, list[tuple]]:
    """The rows of each query, read through a read-only connection of this process."""
    queries = {**PUBLISHED, **QUARANTINE} if queries is None else queries
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {name: con.execute(sql).fetchall() for name, sql in queries.items()}
    finally:
        con.close()


def assert_same_tables(actual: dict, expected: dict) -> None:
    assert actual.keys() == expected.keys()
    for name in expected:
        extra = sorted(set(actual[name]) - set(expected[name]), key=repr)
        missing = sorted(set(expected[name]) - set(actual[name]), key=repr)
        assert actual[name] == expected[name], f"{name} differs: only here {extra[:5]}, only expected {missing[:5]}"


# A log of a few dozen serves over three days: ranked and always items, repeated tasks,
# every verdict, a retired and a superseded document, a conflict, an orphan and two
# malformed lines (under the 10% that would block a build).
TASKS = [
    "Add retries to the webhook sender",
    "add retries to the  WEBHOOK sender",
    "Rotate the signing keys",
    "Parse the CSV export",
    "Explain the refund policy",
    "Fix the flaky login test",
]
DOC_IDS = [f"d{i}" for i in range(1, 9)]


def log_day(day: int, n_serves: int = 12, first: int = 0) -> list:
    """Records of day `day` (1..9): serves s{day}-{n} and their verdicts, deterministic."""
    records: list = []
    for n in range(first, first + n_serves):
        sid = f"s{day}-{n}"
        docs = [DOC_IDS[(day * 3 + n + k) % len(DOC_IDS)] for k in range(3)]
        version = "v2" if (day + n) % 5 == 0 else "v1"
        items = [always("rule-1")] + [ranked(d, r, version) for r, d in enumerate(docs, 1)]
        records.append(
            serve(
                sid,
                f"2026-11-0{day}T{8 + n % 10:02d}:{n % 60:02d}:00Z",
                TASKS[(day + n) % len(TASKS)],
                items,
                project="billing" if n % 3 else "ops",
            )
        )
        for k, d in enumerate(docs + ["rule-1"]):
            if (n + k) % 4 == 3:
                continue  # unjudged
            v = ("helped", "noise", "wrong")[(day + n + k) % 3]
            records.append(verdict(sid, d, v, f"2026-11-0{day}T{19 + k}:{n % 60:02d}:00+01:00"))
    return records


def write_gz_log(root: Path, dt: str, name: str, records) -> Path:
    """Like write_log, with a fixed gzip header time: equal records, equal bytes, in any world."""
    path = write_log(root, dt, name[: -len(".gz")], records)
    gz = path.with_name(name)
    gz.write_bytes(gzip.compress(path.read_bytes(), mtime=0))
    path.unlink()
    return gz


def write_stage_a(world: World) -> None:
    """Days 1 and 2 and corpus v1."""
    write_log(
        world.logs,
        "2026-11-01",
        "part-0001.jsonl",
        log_day(1) + ["{not json", verdict("s404", "d1", "helped", "2026-11-01T10:00:00Z")],
    )
    write_gz_log(world.logs, "2026-11-02", "part-0001.jsonl.gz", log_day(2))
    write_corpus(world.corpus, corpus_v1())


def write_stage_b(world: World) -> None:
    """Day 1's file grows (a replaced file), day 3 arrives, and the corpus moves to v2."""
    write_log(
        world.logs,
        "2026-11-01",
        "part-0001.jsonl",
        log_day(1)
        + ["{not json", verdict("s404", "d1", "helped", "2026-11-01T10:00:00Z")]
        + log_day(1, n_serves=4, first=12),
    )
    write_log(
        world.logs,
        "2026-11-03",
        "part-0001.jsonl",
        log_day(3)
        + [
            serve("s2-0", "2026-11-03T00:00:00Z", "a conflicting task", [ranked("d1", 1)]),
            '{"event": "serve", "serve_id": 7}',
        ],
    )
    write_corpus(world.corpus, corpus_v2())


def corpus_v1() -> list[dict]:
    return [doc(d) for d in DOC_IDS[:6]] + [doc("d7", status="retired", text=""), doc("d8"), doc("rule-1")]


def corpus_v2() -> list[dict]:
    docs = {d["doc_id"]: d for d in corpus_v1()}
    docs["d2"] = doc("d2", "v2")
    docs["d3"] = doc("d3", superseded_by="d4")
    docs["d5"] = doc("d5", status="retired", text="")
    return list(docs.values())


READER = r'''
"""Poll the warehouse read-only and log what a reader sees, one JSON line a look."""
import json, sys, time
from pathlib import Path
import duckdb

db, out, stop = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
QUERIES = {
    "builds": "SELECT count(*), coalesce(max(build_id), 0) FROM golden_builds",
    "funnel_build": "SELECT coalesce(max(build_id), 0) FROM filter_funnel",
    "labels": "SELECT count(*) FROM golden_set",
    "expected_labels": "SELECT coalesce(sum(n_helped + n_noise + n_wrong + n_human_labels + n_judge_labels), 0) "
                       "FROM golden_builds WHERE build_id = (SELECT max(build_id) FROM golden_builds)",
    "history_open": "SELECT count(*) FROM label_history WHERE valid_to_build IS NULL",
    "history_matches": "SELECT count(*) FROM golden_set g SEMI JOIN label_history h ON h.valid_to_build IS NULL "
                       "AND h.query_id = g.query_id AND h.doc_id = g.doc_id AND h.source = g.source "
                       "AND h.verdict IS NOT DISTINCT FROM g.verdict AND h.doc_version = g.doc_version "
                       "AND h.stale_reason IS NOT DISTINCT FROM g.stale_reason",
}
with out.open("a") as fh:
    while not stop.exists():
        try:
            con = duckdb.connect(db, read_only=True)
        except duckdb.Error as exc:
            fh.write(json.dumps({"locked": "lock" in str(exc).lower(), "error": str(exc).splitlines()[0]}) + "\n")
        else:
            try:
                seen = {k: con.execute(q).fetchall()[0] for k, q in QUERIES.items()}
            finally:
                con.close()
            fh.write(json.dumps({"locked": False, **{k: list(v) for k, v in seen.items()}}) + "\n")
        fh.flush()
        time.sleep(0.05)
'''


@dataclass
class Reader:
    """A separate process reading the warehouse in a loop while a test does something else."""

    proc: subprocess.Popen
    log: Path
    stop_file: Path

    def looks(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.endswith("}")]

    def wait_for_looks(self, n: int, where=lambda look: True) -> None:
        start = len(self.looks())
        wait_for(
            lambda: sum(1 for look in self.looks()[start:] if where(look)) >= n,
            f"{n} more reader looks",
            proc=self.proc,
        )

    def stop(self) -> list[dict]:
        self.stop_file.write_text("stop")
        finish(self.proc)
        return self.looks()


def start_reader(world: CliWorld, name: str = "reader") -> Reader:
    script = world.root / f"{name}.py"
    script.write_text(READER, encoding="utf-8")
    log, stop = world.root / f"{name}.jsonl", world.root / f"{name}.stop"
    proc = subprocess.Popen(
        [sys.executable, str(script), str(world.db), str(log), str(stop)],
        env=world.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return Reader(proc, log, stop)


def paused(world: CliWorld, proc, marker: Path) -> int:
    """Wait until `proc` is paused at its failpoint; return the PID the failpoint wrote."""
    text = wait_for(lambda: marker.exists() and marker.read_text(), f"the failpoint marker {marker}", proc=proc)
    return int(text)


def failpoint_env(point: str, marker: Path | None = None) -> dict[str, str]:
    env = {"GOLDENSET_FAILPOINT": point}
    if marker is not None:
        env["GOLDENSET_FAILPOINT_FILE"] = str(marker)
    return env
