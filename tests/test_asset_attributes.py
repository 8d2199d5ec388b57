"""What every asset carries for the UI: owners from the settings, a code version of the code it runs."""

from __future__ import annotations

import dagster as dg
import pytest

from goldenset.errors import UsageError
from goldenset.settings import Settings
from goldenset_dagster.definitions import build_definitions, owners
from goldenset_dagster.versions import code_version, module_closure


def _names(module: str) -> set[str]:
    return {"/".join(p.parts[-2:]) for p in module_closure(module)}


def test_an_assets_code_version_covers_the_library_it_imports_and_not_the_wiring():
    corpus = _names("goldenset_dagster.assets.corpus")
    # Its module, and the library modules it imports, transitively: snapshots imports corpus.
    assert {"assets/corpus.py", "goldenset/snapshots.py", "goldenset/corpus.py"} <= corpus
    # Not the wiring (definitions, the program, the resources' base), nor what it never reaches.
    assert not any(name.startswith(("pipelines/", "resources/")) for name in corpus)
    assert not any(name.startswith("bench/") for name in corpus)
    # Different code, different versions; the same code, the same version.
    assert code_version("goldenset_dagster.assets.corpus") != code_version("goldenset_dagster.assets.benchmark")
    assert len(code_version("goldenset_dagster.assets.corpus")) == 12


def test_every_asset_the_pipeline_makes_has_its_code_version_and_every_asset_the_owners():
    graph = build_definitions(
        Settings.resolve({"GOLDENSET_OWNERS": "team:search, ana@example.com"})
    ).resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        assert node.owners == ["team:search", "ana@example.com"], key
        assert (node.code_version is None) == node.is_external, key
    assert graph.get(dg.AssetKey("golden_set")).code_version == code_version("goldenset_dagster.assets.golden_set")


@pytest.mark.parametrize("bad", ["search", "team:", "ana@", "a b@c"])
def test_an_owner_that_is_neither_an_email_nor_a_team_is_a_usage_error_naming_it(bad):
    with pytest.raises(UsageError, match=f"GOLDENSET_OWNERS: '{bad}' is neither an email nor team:NAME"):
        owners(f"team:search,{bad}")
