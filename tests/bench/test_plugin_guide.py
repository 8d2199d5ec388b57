"""The plug-in guide's example runs as written, imported from the working directory (issue 22)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from goldenset import warehouse
from goldenset.cli.app import main  # the benchmark, not its Dagster run (tests/bench/test_asset.py)

DOCS = Path(__file__).resolve().parents[2] / "docs"
GUIDE = DOCS / "guides" / "plugins.md"
EXAMPLE = DOCS / "examples" / "my_retriever.py"  # what the guide includes as its python block


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.DOTALL)


@pytest.mark.slow
def test_the_guides_retriever_runs_from_the_working_directory_without_pythonpath(golden, tmp_path, monkeypatch, capsys):
    (python,) = _blocks("python")
    assert python.strip() == f'--8<-- "{EXAMPLE.relative_to(DOCS.parent)}"'
    python = EXAMPLE.read_text(encoding="utf-8")
    (command,) = _blocks("sh")
    cwd = tmp_path / "work"
    cwd.mkdir()
    (cwd / "my_retriever.py").write_text(python, encoding="utf-8")
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    argv = shlex.split(command)
    assert argv[0] == "goldenset"
    extra = ["--db", str(golden.db), "--corpus", str(golden.corpus), "--index-dir", str(golden.index_dir)]
    assert main([*argv[1:], *extra, "--report", str(tmp_path / "report")]) == 0
    run_id = re.search(r"^run_id: (\S+)$", capsys.readouterr().out, re.M).group(1)
    con = warehouse.connect(golden.db, read_only=True)
    try:
        stored = con.execute("SELECT retriever, n_queries FROM benchmark_runs WHERE run_id = ?", [run_id]).fetchone()
    finally:
        con.close()
    assert stored == ("my_retriever:make", 6)


def test_a_plugin_that_is_nowhere_names_the_places_looked(tmp_path, monkeypatch):
    from goldenset.errors import UsageError
    from goldenset.retrieval.retriever import load_factory

    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError) as caught:
        load_factory("no_such_plugin_module:make")
    assert str(caught.value).startswith("retriever 'no_such_plugin_module:make': cannot import 'no_such_plugin_module'")
    assert f"looked for in the working directory ({tmp_path})" in str(caught.value)
