"""The one module of shared test helpers: writers for hand-made logs and corpora, and the few
facts about the run that tests ask (under CI or not, how many Hypothesis examples). Test
modules import helpers from here, never from each other."""

from __future__ import annotations

import contextlib
import fcntl
import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest
from hypothesis import settings
from hypothesis import strategies as st

from goldenset.checks import BuildChecks
from goldenset.ingest import ingest_all
from goldenset.logfiles import list_partitions
from goldenset.staging import STAGED_TABLES, load_staged, stage_partition
from goldenset.warehouse import connect


@dataclass
class World:
    """One deployment under test, in one folder: its files at fixed names under `root`.

    Every test world is this class or a subclass of it: the reliability harness's CliWorld
    (commands run as processes, a GOLDENSET_HOME), MergeWorld and HistoryWorld (an open
    connection a test builds through), and the worlds built once per session and copied per
    test (tests/bench/bench_world.py, tests/labelling/pool_rankers.py, tests/scoring/world.py).
    """

    root: Path

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def corpus(self) -> Path:
        return self.root / "corpus.jsonl"

    @property
    def labels(self) -> Path:
        return self.root / "labels"

    @property
    def db(self) -> Path:
        return self.root / "goldenset.duckdb"

    @property
    def index_dir(self) -> Path:
        return self.root / "index"

    def args(self) -> list[str]:
        return ["--db", str(self.db)]


# The benchmark's metrics at k = 5 and 24, in their report order (contract section 10), written out by hand.
METRICS_5_24 = (
    "recall@5",
    "recall@24",
    "precision@5",
    "precision@24",
    "ndcg@10",
    "mrr",
    "map",
    "noise@5",
    "noise@24",
    "hole@5",
    "hole@24",
    "judged@5",
    "judged@24",
    "precision'@5",
    "precision'@24",
    "ndcg'@10",
    "bpref",
)


def serve(serve_id, ts, task, items, project="billing", **extra) -> dict:
    return {"event": "serve", "serve_id": serve_id, "ts": ts, "project": project, "task": task, "items": items, **extra}


def ranked(doc_id, rank, version="v1") -> dict:
    return {"doc_id": doc_id, "doc_version": version, "channel": "ranked", "rank": rank}


def always(doc_id, version="v1") -> dict:
    return {"doc_id": doc_id, "doc_version": version, "channel": "always"}


def verdict(serve_id, doc_id, v, ts) -> dict:
    return {"event": "verdict", "serve_id": serve_id, "doc_id": doc_id, "verdict": v, "ts": ts}


def write_log(root: Path, dt: str, name: str, records) -> Path:
    """Write records (dicts, or raw strings written as they are) as one log file."""
    folder = Path(root) / f"dt={dt}"
    folder.mkdir(parents=True, exist_ok=True)
    text = "".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in records)
    path = folder / name
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode("utf-8")))
    else:
        path.write_text(text, encoding="utf-8")
    return path


def write_one_serve(logs: Path, doc_id: str, task: str, helped_at: str, *more) -> Path:
    """The smallest log: on 2026-11-01 at 09:00 serve s1 of `task` ranks `doc_id` first, the agent says at
    `helped_at` that it helped, and `more` lines follow (records or raw text) in part-0001.jsonl."""
    records = [
        serve("s1", "2026-11-01T09:00:00Z", task, [ranked(doc_id, 1)]),
        verdict("s1", doc_id, "helped", helped_at),
    ]
    return write_log(logs, "2026-11-01", "part-0001.jsonl", [*records, *more])


def doc(doc_id, version="v1", status="active", text=None, superseded_by=None, title=None) -> dict:
    return {
        "doc_id": doc_id,
        "version": version,
        "status": status,
        "text": f"text of {doc_id} {version}" if text is None else text,
        "title": title or doc_id,
        "superseded_by": superseded_by,
    }


def write_corpus(path: Path, docs) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    return path


def split_whitespace() -> str:
    """Every character `str.split()` splits on, computed over all code points (the contract's
    task normalisation is defined by `str.split()`, so tests draw white space from this, never
    from a hand-made list)."""
    return "".join(c for c in map(chr, range(sys.maxunicode + 1)) if f"a{c}b".split() == ["a", "b"])


def running_under_ci() -> bool:
    """True under CI (the CI variable set to 1, true or yes): the one way tests ask."""
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def wait_for_venv(venv: Path, timeout: float = 900.0, poll: float = 1.0) -> None:
    """Return once no install of `venv` is under way: at once, unless `<venv>.installing` exists.

    `.ci/run` installs the reference venvs (Phoenix, ppi-python) in the background while the
    tests already run: it creates that marker before the install starts and removes it when the
    install ends, whatever the outcome. The files that need a venv run after the longest ones
    (RUN_FIRST in tests/conftest.py), so by then the install has usually ended. A venv made by
    hand has no marker and is used as it is.
    """
    marker = venv.with_name(venv.name + ".installing")
    deadline = time.monotonic() + timeout
    while marker.exists():
        if time.monotonic() > deadline:
            pytest.fail(f"{venv} was still being installed after {timeout:g} s ({marker} is there)", pytrace=False)
        time.sleep(poll)


def live_oracle(
    pin: str, env_var: str, folder: str, args: list[str], tmp, stdin: str | None = None, timeout=300
) -> dict:
    """The JSON an independent implementation (`pin`: NAME==VERSION) prints, run live in its own venv
    (`python -I ARGS` in a fresh folder of `tmp`, the tmp_path_factory, the `PYTHON*` variables left out): the
    venv `env_var` names, else var/FOLDER of the repository; skipped when it is missing, a failure under CI."""
    name = pin.partition("==")[0]
    venv = Path(os.environ.get(env_var) or Path(__file__).resolve().parents[1] / "var" / folder)
    wait_for_venv(venv)
    python = venv / "bin" / "python"
    if not python.exists():
        why = (
            f"no {name} venv at {venv}: create it with `python -m venv {venv} && "
            f"{venv}/bin/pip install {pin}` or set {env_var}"
        )
        if running_under_ci():
            pytest.fail(f"CI must run the {name} tests: " + why, pytrace=False)
        pytest.skip(why)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    proc = subprocess.run(
        [str(python), "-I", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=tmp.mktemp(name),
        env=env,
    )
    if proc.returncode != 0:
        pytest.fail(f"{name} exited with {proc.returncode}: {proc.stderr[-2000:]}", pytrace=False)
    return json.loads(proc.stdout)


_EMPTY_WAREHOUSE: list[Path] = []  # the template new_warehouse copies, made by the first call in this process


def new_warehouse(db: Path):
    """connect(db) for a `db` that does not exist yet: a copy of an empty warehouse (schema created,
    nothing ingested) made once per process, opened for writing.

    Creating the schema and running every migration costs about 0.10 s; a copy opened (its
    migrations checked, none to run) half that. The copy differs from a new file only in when
    schema_migrations says its migrations ran.
    """
    import atexit
    import tempfile

    if not _EMPTY_WAREHOUSE:
        folder = Path(tempfile.mkdtemp(prefix="goldenset-empty-warehouse-"))
        atexit.register(shutil.rmtree, folder, True)
        connect(folder / "g.duckdb").close()
        _EMPTY_WAREHOUSE.append(folder / "g.duckdb")
    assert not Path(db).exists(), f"new_warehouse: {db} exists already"
    shutil.copyfile(_EMPTY_WAREHOUSE[0], db)
    return connect(db)


def run_study(script: Path, argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """A benchmark study (benchmarks/NAME.py, whose main(argv) returns the exit code) run in this
    process as `python SCRIPT ARGV` from `cwd` runs it: its exit code, stdout and stderr.

    For tests of what a study prints and writes, not of how it is started: a process of its own
    costs Python's, Dagster's and torch's imports again (about 6 s, `python -c "import ..."`),
    which a test process has paid once. The script's folder goes on sys.path, as for
    `python SCRIPT` (the study imports its siblings and names retrievers of that folder).
    """
    import importlib
    import io
    from contextlib import redirect_stderr, redirect_stdout

    if str(script.parent) not in sys.path:
        sys.path.insert(0, str(script.parent))
    module = importlib.import_module(script.stem)
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp, redirect_stdout(out), redirect_stderr(err):
        mp.chdir(cwd)
        code = module.main([str(a) for a in argv])
    return subprocess.CompletedProcess([str(script), *map(str, argv)], code, out.getvalue(), err.getvalue())


def made_once_per_run(tmp_path_factory, name: str, make: Callable[[Path], None]) -> Path:
    """The folder `make(folder)` fills, made once per test run and shared by the xdist workers.

    Each xdist worker is a process of its own with its own session fixtures, so a session
    fixture that builds a world builds it once per worker: both workers paid for the
    reliability tests' two `goldenset build` processes. Here the first worker to ask makes
    the folder under the run's temporary root (the parent of every worker's basetemp),
    holding a lock; a worker that asks meanwhile waits on the lock, then finds it made.
    Without xdist it is made in the session's own temporary folder. A make that failed
    leaves no `.made` marker, so the next worker to ask starts it again and fails the same way.
    Callers treat the folder as read-only and copy it.
    """
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        folder = tmp_path_factory.mktemp(name)
        make(folder)
        return folder
    root = tmp_path_factory.getbasetemp().parent
    folder, made = root / name, root / f"{name}.made"
    with (root / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not made.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            made.touch()
    return folder


def examples(n: int) -> int:
    """`n` Hypothesis examples scaled by the loaded profile: n under `ci` and `dev`, 10 n under
    `thorough` (conftest.py). A test that states max_examples states it through this."""
    return max(1, n * settings().max_examples // 100)


def thorough() -> bool:
    """Whether the `thorough` Hypothesis profile is loaded (`make test-thorough`): the runs a
    test leaves out to keep CI short are run too."""
    return settings().max_examples > settings.get_profile("ci").max_examples


@contextlib.contextmanager
def isolated_settings(home: Path):
    """Inside the block, the environment a test gets from conftest's `isolated_home`: no
    GOLDENSET_* setting of the developer's, GOLDENSET_HOME = `home`, no lock wait. For
    module and session fixtures that build a template world before any test's own
    isolation applies (function fixtures run after them)."""
    from goldenset.settings import VARIABLES

    with pytest.MonkeyPatch.context() as mp:
        for name in (
            {n for n in os.environ if n.startswith("GOLDENSET_")} | {v.env for v in VARIABLES} | {"DAGSTER_HOME"}
        ):
            mp.delenv(name, raising=False)
        mp.setenv("GOLDENSET_HOME", str(home))
        mp.setenv("GOLDENSET_LOCK_TIMEOUT", "0")
        yield home


# --------------------------------------------------------------------------- builds

# Most tests quarantine lines on purpose; the rejected share has tests of its own.
LENIENT = BuildChecks(block_rejected_share=1.0)


def publish(con, tmp_path: Path, docs, checks: BuildChecks = LENIENT):
    """Snapshot `docs` as the corpus and build; the BuildResult of the new build."""
    from goldenset.build import build_golden_set
    from goldenset.corpus import read_corpus
    from goldenset.snapshots import store_snapshot

    store_snapshot(con, read_corpus(write_corpus(Path(tmp_path) / "corpus.jsonl", docs)))
    return build_golden_set(con, checks=checks)


def copy_build(template: Path, db: Path, home: Path) -> Path:
    """Start a test from the conftest's conformance_build: its warehouse copied to `db`, its
    Dagster instance to `home`/dagster (home: the test's GOLDENSET_HOME). The copy is what the
    test's own first `goldenset build --db db` of the conformance data would have left."""
    shutil.copyfile(Path(template) / "g.duckdb", db)
    shutil.copytree(Path(template) / "goldenset-home" / "dagster", Path(home) / "dagster")
    return db


def copy_built_folder(template: Path, copy: Path, db: Path, template_corpus: Path, corpus: Path) -> None:
    """Copy a built world's folder `template` to `copy` (file times kept: copytree uses copy2)
    and point the copied warehouse `db` at its own corpus file.

    The warehouse names the corpus file it snapshotted by its absolute path
    (corpus_loads.source, corpus_snapshots.source: a build given that same path skips
    re-reading it); those are set to `corpus`, so the copy behaves as if built where it is.
    """
    shutil.copytree(template, copy, symlinks=True)
    con = duckdb.connect(str(db))  # plain DuckDB: no schema check needed for one UPDATE
    try:
        for table in ("corpus_loads", "corpus_snapshots"):
            con.execute(f"UPDATE {table} SET source = ? WHERE source = ?", [str(corpus), str(template_corpus)])
    finally:
        con.close()


# --------------------------------------------------------------------------- the demo's home

DEMO_OUTPUT = "demo-output.json"


def demo_world(tmp_path_factory) -> Path:
    """The folder of one `goldenset demo --dir FOLDER/demo-home` run, made once per test run
    (made_once_per_run) while GOLDENSET_HOME named FOLDER/elsewhere, with FOLDER/demo-output.json:
    its exit code, what it printed and the GOLDENSET_*/DAGSTER_* variables after it. Shared by
    tests/test_demo.py and tests/test_docs_blocks.py (the demo costs about 40 CPU seconds); read
    it, or copy its home with copy_demo_home."""
    return made_once_per_run(tmp_path_factory, "demo", _make_demo)


def _make_demo(base: Path) -> None:
    import io
    from contextlib import redirect_stdout

    from goldenset_dagster.cli import main

    root, elsewhere = base / "demo-home", base / "elsewhere"
    with isolated_settings(elsewhere), pytest.MonkeyPatch.context() as mp:
        mp.chdir(base)
        # Wide enough that no printed line wraps (a test's stdout is no terminal: rich would wrap at 80).
        mp.setenv("COLUMNS", "400")
        buffer = io.StringIO()
        with redirect_stdout(buffer):
            code = main(["demo", "--dir", str(root)])
        env_after = {k: v for k, v in os.environ.items() if k.startswith(("GOLDENSET_", "DAGSTER_"))}
    (base / DEMO_OUTPUT).write_text(json.dumps({"exit_code": code, "out": buffer.getvalue(), "env_after": env_after}))


def copy_demo_home(folder: Path, home: Path) -> Path:
    """A copy of the demo's home (demo_world's FOLDER/demo-home) at `home`, pointing at its own
    corpus and source folders as if the demo had run there; return `home`."""
    template = Path(folder) / "demo-home"
    copy_built_folder(template, home, home / "goldenset.duckdb", template / "corpus.jsonl", home / "corpus.jsonl")
    con = duckdb.connect(str(home / "goldenset.duckdb"))
    try:
        con.execute("UPDATE source_roots SET root = replace(root, ?, ?)", [str(template), str(home)])
    finally:
        con.close()
    return home


def hand_made_run(
    run_id: str,
    started_at,
    values: dict,
    *,
    retriever: str = "goldenset.retrieval.reference:hybrid",
    ranking: dict[str, list[str]] | None = None,
    **fields,
):
    """A benchmark run made by hand: build 1 of a fixed corpus, nothing degraded, stale or drifted,
    k 5, depth 100; `values` its rows (row -> query -> metric -> value), `ranking` the `core` row's
    documents per query, best first (scores 1/rank). `fields` sets any other BenchmarkRun field."""
    from goldenset.bench.runs import BenchmarkRun

    metrics = sorted({m for per_query in values.values() for row in per_query.values() for m in row})
    ranked = {"core": {q: [(d, 1.0 / r) for r, d in enumerate(docs, 1)] for q, docs in (ranking or {}).items()}}
    return BenchmarkRun(
        **{
            "run_id": run_id,
            "started_at": started_at,
            "build_id": 1,
            "corpus_fingerprint": "f" * 64,
            "retriever": retriever,
            "retriever_config": {},
            "degraded": False,
            "warnings": [],
            "k_values": (5,),
            "depth": 100,
            "exclude_stale": False,
            "stale_labels": 0,
            "corpus_drift": 0.0,
            "down_components": [],
            "metric_names": fields.pop("metric_names", metrics),
            "values": values,
            "ranked": ranked if ranking is not None else {},
            **fields,
        }
    )


def rows(con, sql: str, *params) -> list[tuple]:
    """The rows of one query with bound parameters."""
    return con.execute(sql, list(params)).fetchall()


def db_rows(db: Path, sql: str, *params) -> list[tuple]:
    """The rows of one query on the warehouse at `db`, opened read-only for it and closed."""
    con = connect(db, read_only=True)
    try:
        return rows(con, sql, *params)
    finally:
        con.close()


def _iso(v):
    return v.isoformat().replace("+00:00", "") + "Z" if hasattr(v, "isoformat") else v


def json_rows(con, sql: str, params=()) -> list[dict]:
    """The rows of one query as objects, times as the conformance files write them (ISO 8601, `Z`)."""
    cur = con.execute(sql, list(params))
    names = [d[0] for d in cur.description]
    return [{k: _iso(v) for k, v in zip(names, row, strict=True)} for row in cur.fetchall()]


# --------------------------------------------------------------------------- label lines

RUBRIC_PATH = Path(__file__).resolve().parent / "data" / "conformance" / "rubric.yaml"
DIMS = ("answerability", "authority", "recency", "coverage", "entity")


def write_labels(root: Path, dt: str, name: str, lines) -> Path:
    """Write label lines (dicts, or raw strings as they are) as one file of partition dt=...;
    a name ending in .gz is gzip-compressed. The same signature as write_log."""
    folder = Path(root) / f"dt={dt}"
    folder.mkdir(parents=True, exist_ok=True)
    text = "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines)
    path = folder / name
    path.write_bytes(gzip.compress(text.encode("utf-8")) if name.endswith(".gz") else text.encode("utf-8"))
    return path


class FirstDocuments:
    """A retriever plug-in that ranks the active documents by doc_id, whatever the query.

    `tests.helpers:first_documents` as a pool's ranker: its top k is the k smallest active
    doc_ids, so a test works the queue out by hand.
    """

    def __init__(self, ctx):
        self.doc_ids = sorted(ctx.corpus.active)

    def components(self) -> list[str]:
        return ["first"]

    def search_component(self, name: str, query: str, k: int) -> list[tuple[str, float]]:
        return self.search(query, k)

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        return [(d, 1.0 / r) for r, d in enumerate(self.doc_ids[:k], start=1)]


def first_documents(ctx) -> FirstDocuments:
    return FirstDocuments(ctx)


# --------------------------------------------------------------------------- nightly days

# A corpus and tasks for days of logs drawn at random (the incremental and label-row tests).
DAY_DOCS = [
    doc("d1"),
    doc("d2", "v2"),
    doc("d3", status="retired"),
    doc("d4", superseded_by="d1"),
    doc("d5"),
    doc("r1"),
]
DAY_TASKS = ["Fix refunds", "fix  REFUNDS", "Ｆｉｘ refunds", "rotate keys", "Rotate keys", "parse csv"]


def day_queries() -> list[str]:
    """The query ids DAY_TASKS make in the projects the generators draw."""
    from goldenset.records import normalise_task, query_id

    return sorted({query_id(p, normalise_task(t)) for p in ("billing", "ops") for t in DAY_TASKS})


def serve_time(day: int):
    """A serve time from a small set (this day or the one before, hour 0 or 1): ties happen,
    within a day and between a serve the previous build holds and a new one."""
    return st.sampled_from([f"2026-11-0{d + 1}T0{h}:00:00Z" for d in sorted({max(day - 1, 0), day}) for h in (0, 1)])


@st.composite
def log_days(draw):
    """Few queries, most served items judged, helped often: golden queries that labels meet."""
    days, served, n = [], [], 0
    for day in range(draw(st.integers(2, 4))):
        lines = []
        for _ in range(draw(st.integers(1, 3))):
            n += 1
            docs = draw(st.lists(st.sampled_from(["d1", "d2", "d4", "d5"]), min_size=1, max_size=3, unique=True))
            items = [ranked(d, r, version=draw(st.sampled_from(["v1", "v2"]))) for r, d in enumerate(docs, 1)]
            task = draw(st.sampled_from(DAY_TASKS[:5]))
            lines.append(serve(f"s{n}", draw(serve_time(day)), task, items))
            served.append((f"s{n}", docs))
        for _ in range(draw(st.integers(1, 5))):
            sid, docs = draw(st.sampled_from(served))
            v = draw(st.sampled_from(["helped", "helped", "noise", "wrong"]))
            minute = draw(st.integers(10, 59))
            lines.append(verdict(sid, draw(st.sampled_from(docs)), v, f"2026-11-0{day + 1}T09:{minute:02d}:00Z"))
        days.append(lines)
    return days


@st.composite
def events(draw):
    """Per day: serves, verdicts (some for earlier days' serves), now and then a conflict or orphan."""
    n_days = draw(st.integers(2, 4))
    days = []
    serve_no = 0
    served: list[tuple[str, list[str]]] = []
    for day in range(n_days):
        lines = []
        for _ in range(draw(st.integers(1, 4))):
            serve_no += 1
            sid = f"s{serve_no}"
            docs = draw(st.lists(st.sampled_from(["d1", "d2", "d3", "d4", "d5"]), min_size=1, max_size=3, unique=True))
            items = [always("r1")] + [
                ranked(d, r, version=draw(st.sampled_from(["v1", "v2"]))) for r, d in enumerate(docs, 1)
            ]
            lines.append(
                serve(
                    sid,
                    draw(serve_time(day)),
                    draw(st.sampled_from(DAY_TASKS)),
                    items,
                    project=draw(st.sampled_from(["billing", "ops"])),
                )
            )
            served.append((sid, ["r1"] + docs))
        for _ in range(draw(st.integers(0, 6))):
            sid, docs = draw(st.sampled_from(served))
            target = draw(st.sampled_from(docs + ["d9"]))
            minute = draw(st.integers(10, 59))
            lines.append(
                verdict(
                    sid,
                    target,
                    draw(st.sampled_from(["helped", "noise", "wrong"])),
                    f"2026-11-0{day + 1}T09:{minute:02d}:00Z",
                )
            )
        if draw(st.integers(0, 4)) == 0:
            lines.append(verdict("s404", "d1", "helped", f"2026-11-0{day + 1}T10:00:00Z"))
        if served and draw(st.integers(0, 4)) == 0:
            sid, _ = draw(st.sampled_from(served))
            lines.append(serve(sid, "2026-11-01T00:00:00Z", "a conflicting task", [ranked("d5", 1)]))
        days.append(lines)
    return days


# Default decided_by per label, admissible under the conformance rubric (tests/data/conformance).
DECIDED_BY = {"relevant": "answerability", "partial": "coverage", "irrelevant": "recency"}


def label_line(
    qid: str, doc_id: str, label: str, ts: str, *, annotator: str = "ana", version: str = "v1", **extra
) -> dict:
    """A label line of the conformance rubric (contract section 7); `extra` adds or overrides fields."""
    return {
        "event": "label",
        "query_id": qid,
        "doc_id": doc_id,
        "doc_version": version,
        "label": label,
        "decided_by": DECIDED_BY[label],
        "annotator": annotator,
        "rubric": "support-policies",
        "ts": ts,
        **extra,
    }


# --------------------------------------------------------------------------- staged ingestion

# Columns stamped with the time of ingestion differ between two ingestions of the same file.
_WHEN = {
    "log_rejects": "* EXCLUDE (rejected_at)",
    "log_files": "* EXCLUDE (ingested_at, verified_at)",
}
_TABLES = (*STAGED_TABLES, "log_dirty")


def log_table_differences(direct: Path, staged: Path) -> dict[str, tuple[int, int, int]]:
    """Per table: (rows, rows only in direct, rows only in staged), as multisets."""
    con = duckdb.connect(str(direct), read_only=True)
    con.execute("ATTACH ? AS s (READ_ONLY)", [str(staged)])
    out = {}
    for table in _TABLES:
        cols = _WHEN.get(table, "*")
        rows = con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]
        only_d = con.execute(
            f"SELECT count(*) FROM (SELECT {cols} FROM {table} EXCEPT ALL SELECT {cols} FROM s.{table})"
        ).fetchall()[0][0]
        only_s = con.execute(
            f"SELECT count(*) FROM (SELECT {cols} FROM s.{table} EXCEPT ALL SELECT {cols} FROM {table})"
        ).fetchall()[0][0]
        out[table] = (rows, only_d, only_s)
    con.close()
    return out


def assert_same_log_tables(direct: Path, staged: Path) -> None:
    """The two warehouses hold the same rows in every log table (and some serves)."""
    diffs = log_table_differences(direct, staged)
    assert diffs["log_serves"][0] > 0
    assert {t: d[1:] for t, d in diffs.items()} == {t: (0, 0) for t in _TABLES}, diffs


def ingest_direct(db: Path, logs: Path) -> None:
    """Ingest LOGS straight into the warehouse at db (the reference path)."""
    con = connect(db)
    try:
        ingest_all(con, logs)
    finally:
        con.close()


def ingest_staged(db: Path, logs: Path, staging: Path):
    """Stage every day of LOGS as Parquet, then load them; (written per day, load reports)."""
    days = list_partitions(logs)
    written = [stage_partition(logs, dt, staging).written for dt in days]
    con = connect(db)
    try:
        return written, load_staged(con, staging, days)
    finally:
        con.close()


def write_day(root: Path, dt: str, name: str, n: int, tag: str) -> Path:
    """A log file of n serves, each with one verdict, their ids tagged so two files never clash."""
    records = []
    for i in range(n):
        sid = f"{tag}-{dt}-{i}"
        records.append(serve(sid, f"{dt}T10:00:0{i % 10}Z", f"task {tag} {i % 3}", [ranked(f"d{i % 4}", 1)]))
        records.append(verdict(sid, f"d{i % 4}", "helped" if i % 2 else "noise", f"{dt}T11:00:00Z"))
    return write_log(root, dt, name, records)


# --------------------------------------------------------------------------- the labelling page's world

PAGE_Q1, PAGE_Q2, PAGE_Q3 = "0123456789abcdef", "fedcba9876543210", "00000000000000aa"

# (priority, query_id, doc_id, doc_version, reason, project, task)
PAGE_QUEUE = [
    (1, PAGE_Q1, "policies/refunds.md", "2023-03-14", "stale", "billing", "how long do refunds take"),
    (2, PAGE_Q1, "policies/refunds-v2.md", "v1", "successor", "billing", "how long do refunds take"),
    (3, PAGE_Q2, "legal/terms.md", "v3", "pooled", "search", "can I cancel my plan"),
    (4, PAGE_Q2, "policies/shipping.md", "v1", "pooled", "search", "can I cancel my plan"),
    (5, PAGE_Q3, "policies/plans.md", "v2", "pooled", "billing", "which plan has SSO"),
]
# (snapshot content, doc_id, version, title, text); snapshot "new" was loaded after "old"
PAGE_DOCS = [
    ("old", "policies/refunds.md", "2023-03-14", "Refunds (old load)", "Refunds take 30 days."),
    ("new", "policies/refunds.md", "2023-03-14", "Refunds", "Refunds take 14 days."),
    ("new", "policies/refunds.md", "2022-01-01", "Refunds 2022", "Refunds took 60 days."),
    ("new", "policies/refunds-v2.md", "v1", "Refunds, revised", "Refunds take 10 <b>business</b> days."),
    ("new", "legal/terms.md", "v3", "Terms", "You may cancel at any time."),
    ("new", "policies/shipping.md", "v1", "Shipping", "We ship worldwide."),
    ("new", "policies/plans.md", "v2", "Plans", "SSO is on the Enterprise plan."),
]


def page_warehouse(path: Path, queue=PAGE_QUEUE, docs=PAGE_DOCS) -> Path:
    """A warehouse with the schema, two corpus loads, their documents and a labelling queue."""
    con = new_warehouse(path)
    try:
        for load_id, sha in ((1, "old"), (2, "new")):
            con.execute(
                "INSERT INTO corpus_loads (load_id, loaded_at, fingerprint, content_sha256, source) "
                "VALUES (?, TIMESTAMP '2026-11-01 00:00:00' + to_days(?), ?, ?, 'corpus.jsonl')",
                [load_id, load_id, f"fp-{sha}", sha],
            )
        for sha, doc_id, version, title, text in docs:
            con.execute(
                "INSERT INTO corpus_documents (content_sha256, doc_id, version, status, title, text) "
                "VALUES (?, ?, ?, 'active', ?, ?)",
                [sha, doc_id, version, title, text],
            )
        for priority, qid, doc_id, version, reason, project, task in queue:
            con.execute(
                "INSERT INTO labelling_queue (pool_id, query_id, doc_id, doc_version, reason, rankers, "
                "best_rank, priority, pooled_at, project, task) VALUES "
                "(1, ?, ?, ?, ?, ['lexical', 'dense'], ?, ?, TIMESTAMP '2026-11-30 00:00:00', ?, ?)",
                [qid, doc_id, version, reason, priority, priority, project, task],
            )
    finally:
        con.close()
    return path


def dimensions(*fails: str) -> dict[str, str]:
    """The rubric's dimensions, each "pass" unless named in `fails`."""
    return {d: "fail" if d in fails else "pass" for d in DIMS}


def page_label(qid, doc_id, version, label="relevant", decided_by="answerability", annotator="ana", **extra) -> dict:
    """A label line as the page writes it (rubric support-policies), dimensions set to fit `label`."""
    fails = {"relevant": [], "partial": ["coverage"], "irrelevant": ["answerability"]}[label]
    ts = extra.pop("ts", "2026-11-20T09:00:00Z")
    extra = {"dimensions": dimensions(*fails), **extra}
    return label_line(qid, doc_id, label, ts, annotator=annotator, version=version, decided_by=decided_by, **extra)


# --------------------------------------------------------------------------- a real browser

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
WAIT_SECONDS = 60  # an upper bound on each wait, never a measured duration


def require_browser() -> None:
    """Skip without Debian's chromium and chromedriver; under CI, fail instead."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not (p.is_file() and os.access(p, os.X_OK))]
    if not missing:
        return
    why = f"{' and '.join(missing)} missing: `apt-get install chromium chromium-driver` (Debian) installs them"
    if running_under_ci():
        pytest.fail(f"CI must run the browser test: {why}", pytrace=False)
    pytest.skip(why)


def browser_wait(driver, condition, what: str):
    """Wait (at most WAIT_SECONDS) until condition(driver) holds; the failure names `what`."""
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, WAIT_SECONDS).until(lambda d: condition(d), message=f"waited for {what}")


def shown_item(driver) -> str | None:
    """The queue item of the pair the page shows (its data-item), or None."""
    return driver.execute_script("const p = document.getElementById('pair'); return p ? p.dataset.item : null;")


def press_keys(driver, keys: str) -> None:
    """Type `keys` into the page, as a keyboard user does."""
    from selenium.webdriver.common.by import By

    driver.find_element(By.TAG_NAME, "body").send_keys(keys)


def element_text(driver, element_id: str) -> str | None:
    """The text of the element with `element_id`, or None when there is none."""
    return driver.execute_script(f"const e = document.getElementById('{element_id}'); return e ? e.textContent : null;")
