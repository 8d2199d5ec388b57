"""Settings: resolved once (flag, else variable, else the home), passed on, never read at import."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from goldenset import settings
from goldenset.errors import UsageError
from goldenset.settings import VARIABLES, Settings

ROOT = Path(__file__).resolve().parent.parent


def test_a_flag_beats_its_variable_which_beats_the_place_under_the_home(tmp_path):
    environ = {"GOLDENSET_HOME": str(tmp_path / "h"), "GOLDENSET_DB": "env.duckdb", "GOLDENSET_LOCK_TIMEOUT": "5"}
    s = Settings.resolve(environ, db="flag.duckdb", logs=None, lock_timeout=None)
    assert s.home == tmp_path / "h"
    assert s.db == Path("flag.duckdb")
    assert s.logs == tmp_path / "h" / "logs"
    assert s.lock_timeout == 5.0
    assert s.from_environment == {"home", "lock_timeout"}
    s = Settings.resolve(environ)
    assert s.db == Path("env.duckdb") and "db" in s.from_environment
    assert Settings.resolve(environ, lock_timeout=0).lock_timeout == 0.0


def test_every_variable_defaults_to_its_row_of_the_table(tmp_path):
    s = Settings.resolve({"GOLDENSET_HOME": str(tmp_path)})
    expected = {
        "logs": tmp_path / "logs",
        "corpus": tmp_path / "corpus.jsonl",
        "db": tmp_path / "goldenset.duckdb",
        "labels": tmp_path / "labels",
        "rubric": tmp_path / "rubric.yaml",
        "dagster_home": tmp_path / "dagster",
        "exports": tmp_path / "export",
        "reports": tmp_path / "reports",
        "bench_index": tmp_path / "bench-index",
        "staging": tmp_path / "staging",
        "trace_export": tmp_path / "trace_export",
        "trace_mapping": tmp_path / "trace-mapping.yaml",
        "trace_spool": tmp_path / "trace_spool",
        "trace_max_body": 16 * 1024 * 1024,
        "trace_spool_limit": 256 * 1024 * 1024,
        "trace_token_file": "",
        "lock_timeout": 30.0,
        "ingest_workers": 0,
        "nightly_cron": "0 2 * * *",
        "staged_cron": "0 1 * * *",
        "schedule_tz": "UTC",
        "owners": "team:goldenset",
        "dense_model": "",
    }
    assert {v.name: getattr(s, v.name) for v in VARIABLES if v.name != "home"} == expected
    # The table names every field but the bookkeeping one, and each variable once.
    assert [v.name for v in VARIABLES] == [f for f in Settings.model_fields if f != "from_environment"]
    assert len({v.env for v in VARIABLES}) == len(VARIABLES)


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"GOLDENSET_LOCK_TIMEOUT": "soon"}, "GOLDENSET_LOCK_TIMEOUT must be a number of seconds, got 'soon'"),
        ({"GOLDENSET_INGEST_WORKERS": "-2"}, "GOLDENSET_INGEST_WORKERS (or --workers) must be a whole number >= 0"),
    ],
)
def test_an_unreadable_variable_is_one_usage_error_naming_it(environ, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Settings.resolve(environ)


def test_a_scoped_environment_is_what_the_readers_see_and_the_process_keeps_its_own(tmp_path, monkeypatch):
    monkeypatch.setenv("GOLDENSET_DB", "/elsewhere.duckdb")
    with settings.scoped_environment({"GOLDENSET_HOME": str(tmp_path)}):
        assert settings.resolve("db") == tmp_path / "goldenset.duckdb"
        assert Settings.resolve().db == tmp_path / "goldenset.duckdb"
    assert settings.resolve("db") == Path("/elsewhere.duckdb")


def test_settings_survive_the_json_the_staging_workers_rebuild_them_from(tmp_path):
    s = Settings.resolve({"GOLDENSET_HOME": str(tmp_path), "GOLDENSET_DB": "x.duckdb"}, ingest_workers=3)
    assert Settings.model_validate_json(s.model_dump_json()) == s


def test_the_definitions_take_paths_and_the_nightly_cron_from_the_settings_they_are_given(tmp_path):
    from goldenset_dagster.definitions import build_definitions

    s = Settings.resolve(
        {
            "GOLDENSET_HOME": str(tmp_path),
            "GOLDENSET_NIGHTLY_CRON": "30 3 * * 1",
            "GOLDENSET_STAGED_CRON": "30 2 * * 1",
            "GOLDENSET_SCHEDULE_TZ": "Europe/Paris",
        },
        db=str(tmp_path / "flag.duckdb"),
    )
    defs = build_definitions(s)
    for name, cron in (("nightly_golden_set", "30 3 * * 1"), ("nightly_staged_golden_set", "30 2 * * 1")):
        schedule = defs.resolve_schedule_def(name)
        assert (schedule.cron_schedule, schedule.execution_timezone) == (cron, "Europe/Paris")
    warehouse = defs.resources["warehouse"]
    assert warehouse.db_path == str(tmp_path / "flag.duckdb")  # type: ignore[attr-defined]


def test_the_settings_reference_has_a_row_per_variable():
    table = settings.markdown_reference().splitlines()
    assert table[0] == "| Variable | Default | Meaning |"
    assert [row.split("|")[1].strip(" `") for row in table[2:]] == [v.env for v in VARIABLES]
    assert "| `GOLDENSET_DB` | `HOME/goldenset.duckdb` |" in settings.markdown_reference()


def _environment_reads_outside_functions(source: str) -> list[int]:
    """Lines that touch os.environ / os.getenv in module or class scope (so, at import)."""
    tree = ast.parse(source)
    inside = {
        id(n)
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        for n in ast.walk(f)
    }
    return sorted(
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute)
        and isinstance(n.value, ast.Name)
        and n.value.id == "os"
        and n.attr in ("environ", "getenv")
        and id(n) not in inside
    )


def _environment_writes(source: str) -> list[int]:
    """Lines that assign to, delete from or update os.environ."""
    tree = ast.parse(source)

    def is_environ(node: ast.AST) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "environ"

    lines = []
    for n in ast.walk(tree):
        targets = n.targets if isinstance(n, ast.Assign | ast.Delete) else []
        if any(isinstance(t, ast.Subscript) and is_environ(t.value) for t in targets):
            lines.append(n.lineno)
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and is_environ(n.func.value)
            and n.func.attr in ("pop", "setdefault", "update", "clear", "__setitem__")
        ):
            lines.append(n.lineno)
    return sorted(lines)


def test_the_checks_find_an_import_time_read_and_a_write():
    source = "import os\nX = os.environ.get('A')\ndef f():\n    os.environ['B'] = '1'\n    return os.getenv('C')\n"
    assert _environment_reads_outside_functions(source) == [2]
    assert _environment_writes(source) == [4]


def _sources() -> dict[str, str]:
    folders = ("goldenset", "pipelines", "assets", "resources")
    return {
        str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
        for d in folders
        for p in sorted((ROOT / d).rglob("*.py"))
    }


@pytest.mark.slow
def test_nothing_reads_the_environment_at_import_and_nothing_writes_it():
    sources = _sources()
    assert len(sources) > 50
    reads = {path: lines for path, src in sources.items() if (lines := _environment_reads_outside_functions(src))}
    writes = {path: lines for path, src in sources.items() if (lines := _environment_writes(src))}
    assert reads == {}
    # The one write: Hugging Face's offline switches, which its libraries read only from the environment.
    assert set(writes) == {"goldenset/embeddings.py"}


@pytest.mark.parametrize(
    ("flag", "variable", "said"),
    [
        ("other", None, "--logs {other}"),
        (None, "other", "GOLDENSET_LOGS={other}"),
        (None, None, "{home}/logs (the default)"),
    ],
    ids=["flag", "variable", "default"],
)
def test_the_changed_source_refusal_names_the_flag_the_variable_or_the_default(
    tmp_path, monkeypatch, isolated_home, flag, variable, said
):
    from goldenset import sources
    from goldenset.errors import InputMoved
    from goldenset.ingest import ingest_all
    from goldenset.warehouse import connect
    from tests.helpers import ranked, serve, write_log

    first = write_log(
        tmp_path / "first",
        "2026-11-01",
        "part-0001.jsonl",
        [serve("s1", "2026-11-01T09:00:00Z", "t", [ranked("d1", 1)])],
    )
    other = tmp_path / "other"
    other.mkdir()
    con = connect(tmp_path / "g.duckdb")
    try:
        ingest_all(con, first.parent.parent)
        sources.record_roots(con, {"logs": first.parent.parent})
        monkeypatch.chdir(tmp_path)
        if variable:
            monkeypatch.setenv("GOLDENSET_LOGS", str(other))
        logs = settings.resolve("logs", str(other) if flag else None)
        with pytest.raises(InputMoved) as refused:
            sources.check_roots(con, {"logs": logs})
    finally:
        con.close()
    expected = said.format(other=other.resolve(), home=isolated_home.resolve())
    assert str(refused.value).startswith(f"{expected} is not the logs folder this warehouse was built from ("), str(
        refused.value
    )


def test_a_path_the_command_did_not_resolve_is_named_alone_with_both_ways_to_set_it(tmp_path):
    settings.resolve("db", str(tmp_path / "a.duckdb"))
    assert str(settings.named("db", tmp_path / "a.duckdb")) == f"--db {tmp_path / 'a.duckdb'}"
    elsewhere = settings.named("db", tmp_path / "b.duckdb")
    assert str(elsewhere) == str(tmp_path / "b.duckdb")
    assert elsewhere.fix == "--db or GOLDENSET_DB"
