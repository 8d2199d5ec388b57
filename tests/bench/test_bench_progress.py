"""`bench run` under cron or a pipe prints plain progress lines; `--quiet` silences them (issue 22)."""

from __future__ import annotations

import itertools

import pytest

from goldenset import progress
from goldenset.cli.app import main  # the benchmark, not its Dagster run (tests/bench/test_asset.py)

pytestmark = pytest.mark.slow


@pytest.fixture
def ticking(monkeypatch):
    """Every look at the clock is 11 s after the last: each advance of a long step earns a line."""
    counter = itertools.count()
    monkeypatch.setattr(progress.time, "monotonic", lambda: 11.0 * next(counter))


def test_bench_run_off_a_terminal_prints_plain_progress_and_quiet_silences_it(golden, ticking, capsys):
    args = [
        "bench",
        "run",
        "--db",
        str(golden.db),
        "--corpus",
        str(golden.corpus),
        "--index-dir",
        str(golden.index_dir),
        "--retriever",
        "bench_plugins:keywords",
        "--report",
        str(golden.root / "report"),
    ]
    capsys.readouterr()
    assert main(args) == 0
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("benchmark queries: ")]
    # Six golden queries, one line per query (each advance is 11 s after the last), then the closing line.
    assert [x.split(",")[0] for x in lines[:6]] == [f"benchmark queries: {n}/6 ({n / 6:.0%})" for n in range(1, 7)]
    assert lines[6].startswith("benchmark queries: 6 done in ") and len(lines) == 7
    assert main(["--quiet", *args]) == 0
    assert "benchmark queries" not in capsys.readouterr().err
