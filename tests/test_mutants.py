"""The mutation check (`make mutants`, mutants/run.py): its list stays applicable, and the runner is safe.

`make mutants` is not part of CI (it runs for many minutes), but its `--check` is: every entry
of every mutants/*.toml must still find its text exactly once and name tests that exist, so a
refactor that moves the mutated code fails here, at once, rather than at the next mutation run.
The rest holds the runner's promises on a tiny tree of its own: a stale entry, a duplicate id
or a missing test is named; a file is always restored, also after a killed run; a mutant that
fails a test is killed and one that does not survives.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load_runner():
    spec = importlib.util.spec_from_file_location("mutants_run", ROOT / "mutants" / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["mutants_run"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


run = _load_runner()


def test_every_entry_finds_its_text_once_and_names_tests_that_exist(capsys):
    assert run.main(["--check"]) == 0, capsys.readouterr().err
    assert len(run.load()) >= 60


ENTRY = """
[[mutant]]
id = "{id}"
section = "1"
rule = "a rule"
file = "pkg/code.py"
find = "{find}"
replace = "{replace}"
tests = {tests}
"""
CODE = "def half(x):\n    return x / 2\n"
TESTS = "from pkg.code import half\n\n\ndef test_half():\n    assert half(4) == 2\n\n\ndef test_half_type():\n    assert isinstance(half(4), float)\n"


def tiny_tree(root: Path, *entries: tuple[str, str], **files: str) -> Path:
    """A repository with pkg/code.py, tests/test_code.py and mutants/*.toml (name -> toml text)."""
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "code.py").write_text(CODE)
    (root / "tests").mkdir()
    (root / "tests" / "test_code.py").write_text(TESTS)
    (root / "mutants").mkdir()
    for name, text in files.items():
        (root / "mutants" / name).write_text(text)
    return root


def entry(
    id: str, find: str = "return x / 2", replace: str = "return x // 2", tests=("tests/test_code.py::test_half",)
):
    return ENTRY.format(id=id, find=find, replace=replace, tests=json.dumps(list(tests)))


def test_the_check_names_a_stale_find_and_a_missing_test(tmp_path):
    root = tiny_tree(
        tmp_path,
        **{
            "a.toml": entry("stale", find="return x * 2")
            + entry("gone", replace="return x", tests=["tests/test_code.py::test_third"])
            + entry("nofile", replace="return 2", tests=["tests/test_other.py::test_half"])
        },
    )
    problems = run.check(run.load(root / "mutants"), root)
    assert problems == [
        "stale (a.toml): find occurs 0 times in pkg/code.py, not once (the code moved or changed: update the entry): "
        "'return x * 2'",
        "gone (a.toml): test 'tests/test_code.py::test_third': tests/test_code.py defines no test_third",
        "nofile (a.toml): test 'tests/test_other.py::test_half': no file tests/test_other.py under tests/",
    ]


def test_a_find_twice_in_its_file_is_stale_too(tmp_path):
    root = tiny_tree(tmp_path, **{"a.toml": entry("twice", find="x")})
    (problem,) = run.check(run.load(root / "mutants"), root)
    assert problem.startswith("twice (a.toml): find occurs 2 times in pkg/code.py, not once")


def test_ids_are_unique_across_files_and_entries_have_exactly_the_seven_keys(tmp_path):
    root = tiny_tree(tmp_path, **{"a.toml": entry("same"), "b.toml": entry("same", replace="return x")})
    with pytest.raises(run.ListError, match="duplicate id 'same': in a.toml and in b.toml"):
        run.load(root / "mutants")
    (root / "mutants" / "b.toml").write_text(entry("other").replace('rule = "a rule"\n', ""))
    with pytest.raises(run.ListError, match=r"b.toml entry 'other': missing key\(s\) \['rule'\]"):
        run.load(root / "mutants")


def test_a_mutant_is_written_in_place_and_the_file_always_restored(tmp_path):
    root = tiny_tree(tmp_path, **{"a.toml": entry("floor")})
    (m,) = run.load(root / "mutants")
    code = root / "pkg" / "code.py"
    os.utime(code, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    seen = []

    def tests_that_crash():
        seen.append((code.read_text(), code.stat().st_mtime_ns))
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run.apply_and_run(m, tests_that_crash, root, tmp_path / "backup")
    assert seen[0][0] == "def half(x):\n    return x // 2\n"
    assert seen[0][1] >= 1_700_000_002_000_000_000  # never the original's second: no stale .pyc
    assert code.read_text() == CODE and code.stat().st_mtime_ns == 1_700_000_000_000_000_000
    assert list((tmp_path / "backup").iterdir()) == []


def test_a_file_a_killed_run_left_mutated_is_restored_at_the_next_start(tmp_path):
    root = tiny_tree(tmp_path, **{"a.toml": entry("floor")})
    (m,) = run.load(root / "mutants")
    code, backup = root / "pkg" / "code.py", tmp_path / "backup"

    def killed():  # what SIGKILL leaves: the mutant in place and its backup record
        (backup / "left.json").write_text((backup / "floor.json").read_text())
        (backup / "left.orig").write_bytes((backup / "floor.orig").read_bytes())
        return code.read_text()

    assert run.apply_and_run(m, killed, root, backup) == "def half(x):\n    return x // 2\n"
    code.write_text("def half(x):\n    return x // 2\n")  # as the killed run left it
    assert run.recover(root, backup) == ["pkg/code.py"]
    assert code.read_text() == CODE and list(backup.iterdir()) == []

    run.apply_and_run(m, killed, root, backup)
    code.write_text("def half(x):\n    return x * 0.5\n")  # edited since: neither original nor mutant
    with pytest.raises(run.ListError, match="pkg/code.py holds neither its original nor mutant floor's text"):
        run.recover(root, backup)


@pytest.mark.parametrize(
    ("returncode", "counts", "outcome"),
    [
        (1, {"tests": 2, "failed": 1, "errors": 0, "skipped": 0}, "killed"),
        (0, {"tests": 2, "failed": 0, "errors": 0, "skipped": 1}, "survived"),
        (0, {"tests": 2, "failed": 0, "errors": 0, "skipped": 2}, "error"),
        (1, {"tests": 1, "failed": 0, "errors": 1, "skipped": 0}, "error"),
        (2, {"tests": 0, "failed": 0, "errors": 0, "skipped": 0}, "error"),
        (None, {"tests": 0, "failed": 0, "errors": 0, "skipped": 0}, "error"),
    ],
    ids=["failed", "passed", "all-skipped", "setup-error", "collection-error", "timeout"],
)
def test_only_a_failing_test_kills_a_mutant(returncode, counts, outcome):
    assert run.classify(returncode, counts)[0] == outcome


@pytest.mark.slow  # two pytest processes: about a second, more on a busy machine
def test_a_run_reports_the_killed_and_the_survivor_and_exits_1(tmp_path, capsys):
    root = tiny_tree(
        tmp_path,
        **{
            "a.toml": entry("floor-division", tests=["tests/test_code.py::test_half_type"])
            + entry("same-value", replace="return x * 0.5")
        },
    )
    # Without the plugins of the project's environment, pytest starts in 0.4 s instead of 3.5.
    quick = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    outcomes = [run.run_mutant(m, 120, root, tmp_path / "backup", extra_env=quick) for m in run.load(root / "mutants")]
    assert [(o.mutant.id, o.outcome) for o in outcomes] == [("floor-division", "killed"), ("same-value", "survived")]
    # A run that did not pass names the tests that failed (the baseline's message says which).
    assert [o.detail for o in outcomes] == ["1 failed: tests/test_code.py::test_half_type", "1 passed"]
    assert (root / "pkg" / "code.py").read_text() == CODE
    assert run.report(outcomes, 1.0) == 1
    out = capsys.readouterr().out
    assert "2 mutants in 1 s: 1 killed, 1 survived, 0 error(s)" in out
    assert "SURVIVED:\n- same-value (a.toml, section 1): a rule\n" in out


def test_the_list_reads_every_toml_file_of_the_folder():
    origins = {m.origin for m in run.load()}
    assert {"sections-1-8.toml", "sections-9-14.toml"} <= origins
    assert origins == {p.name for p in (ROOT / "mutants").glob("*.toml")}
