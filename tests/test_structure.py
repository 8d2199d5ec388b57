"""The shape of the code the issue promises: library free of Dagster, one build record, one home."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import tomllib
from pathlib import Path

from goldenset import schema
from goldenset.builds import BuildRecord

ROOT = Path(__file__).resolve().parent.parent


def test_build_record_has_exactly_the_golden_builds_columns_in_order():
    assert [f.name for f in dataclasses.fields(BuildRecord)] == [c.name for c in schema.GOLDEN_BUILDS.columns]


def test_importing_every_library_module_loads_no_dagster_and_no_orchestration_code(tmp_path):
    # A fresh interpreter outside the checkout, so nothing imported by the test run counts.
    code = """
import importlib, pkgutil, sys
import goldenset
names = [m.name for m in pkgutil.walk_packages(goldenset.__path__, "goldenset.") if m.name != "goldenset.__main__"]
for name in names:
    importlib.import_module(name)
bad = sorted(m for m in sys.modules if m.split(".")[0] in ("dagster", "goldenset_dagster", "pipelines", "assets", "resources"))
print(len(names), bad)
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    count, bad = out.stdout.strip().split(" ", 1)
    assert int(count) > 30
    assert bad == "[]"


def test_no_generic_top_level_package_is_installed(tmp_path):
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    tops = {p.split(".")[0] for p in config["packages"]}
    assert tops == {"goldenset", "goldenset_dagster"}
    probe = (
        "import importlib.util as u; "
        "print([n for n in ('assets', 'resources', 'pipelines') if u.find_spec(n) is not None])"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_repository_dagster_yaml_is_the_generated_instance_plus_its_storage_line():
    from goldenset_dagster.instance import INSTANCE_YAML

    repo = (ROOT / "dagster.yaml").read_text(encoding="utf-8")
    head, _, rest = repo.partition("# Instance settings for goldenset. Runs, events")
    assert "# Instance settings for goldenset. Runs, events" + rest == INSTANCE_YAML
    assert "storage:\n  sqlite:\n    base_dir: var/dagster\n" in head
    assert "storage" not in INSTANCE_YAML
