"""constraints.txt pins every dependency the Quick start installs, each within pyproject's range.

The Quick start and CI install with `-c constraints.txt` so pip does not backtrack for
minutes; a dependency added to pyproject.toml without regenerating the file (`make
constraints`) would be resolved freely again, and a pin outside a new range would make the
install fail. Either fails here first.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]


def _pins() -> dict[str, Version]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            pins[canonicalize_name(name)] = Version(version)
    return pins


def _requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return [Requirement(r) for r in [*project["dependencies"], *project["optional-dependencies"]["test"]]]


def test_every_dependency_of_the_quick_start_is_pinned_within_its_range():
    pins = _pins()
    missing = [str(r) for r in _requirements() if canonicalize_name(r.name) not in pins]
    assert missing == [], "run `make constraints`: not pinned"
    outside = [
        f"{r} (pinned {pins[canonicalize_name(r.name)]})"
        for r in _requirements()
        if not r.specifier.contains(pins[canonicalize_name(r.name)], prereleases=True)
    ]
    assert outside == [], "run `make constraints`: pinned outside pyproject's range"


def test_the_quick_start_and_ci_install_with_the_constraints():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "uv pip install --compile-bytecode -e '.[test]' -c constraints.txt" in readme
    assert "uv pip install --compile-bytecode -e '.[test]' -c constraints.txt" in ci
