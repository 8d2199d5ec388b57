"""The Guarantees page of the docs (docs/guarantees.md) and these tests cannot drift apart."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import yaml

HERE = Path(__file__).parent
PAGE = HERE.parents[1] / "docs" / "guarantees.md"
_REF = re.compile(r"`(test_[a-z0-9_]+\.py)::(test_[a-z0-9_]+)`")


def _section() -> str:
    return PAGE.read_text(encoding="utf-8")


def _tests() -> dict[tuple[str, str], bool]:
    """(file, test) -> whether it is marked xfail, for every test function here."""
    found = {}
    for path in sorted(HERE.glob("test_*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                xfail = any("xfail" in ast.unparse(d) for d in node.decorator_list)
                found[(path.name, node.name)] = xfail
    return found


def test_the_guarantees_page_is_in_the_site_navigation():
    nav = yaml.safe_load((HERE.parents[1] / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    assert {"Guarantees": "guarantees.md"} in nav


def test_every_test_the_guarantees_name_exists_and_every_reliability_test_is_named():
    section = _section()
    named = set(_REF.findall(section))
    tests = _tests()
    assert named - set(tests) == set(), "the Guarantees page names tests that do not exist"
    unnamed = {t for t in tests if t[0] != Path(__file__).name} - named
    assert unnamed == set(), "tests/reliability tests the Guarantees page does not name"


def test_xfail_tests_are_listed_as_not_yet_held_and_only_they():
    held, _, not_yet = _section().partition("**Not yet held**")
    tests = _tests()
    assert {t for t in _REF.findall(not_yet)} == {t for t, xfail in tests.items() if xfail}
    assert not {t for t in _REF.findall(held) if tests.get(t)}
