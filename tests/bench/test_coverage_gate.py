"""The fifth gate through the command line: BIASED first, verdicts marked, --json, exit 5 with --fail-on-bias.

Two runs are stored by hand with known per-query judged@5 (A fully judged, B 3/5 on
average), so the expected coverages are plain arithmetic written out here.
"""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from typer.testing import CliRunner

from goldenset import warehouse
from goldenset.bench import coverage
from goldenset.bench.runs import BenchmarkRun, store_run
from goldenset.cli.app import main
from goldenset.cli.bench import app as bench_app
from tests.helpers import hand_made_run

QUERIES = [f"q{i}" for i in range(1, 6)]
# B's judged@5 per query: 0.6, 0.6, 0.6, 0.4, 0.8 -> mean 3.0 / 5 = 0.60.
B_JUDGED = [0.6, 0.6, 0.6, 0.4, 0.8]
A_RECALL = [1.0, 1.0, 0.5, 1.0, 0.5]
B_RECALL = [0.0, 0.5, 0.0, 0.5, 0.0]


def _run(run_id: str, judged: list[float], recall: list[float]) -> BenchmarkRun:
    values = {"core": {q: {"recall@5": r, "judged@5": j} for q, r, j in zip(QUERIES, recall, judged, strict=True)}}
    return hand_made_run(
        run_id, datetime(2026, 1, 1, 12, 0, 0), values, metric_names=["recall@5", "judged@5"], labels_build_id=1
    )


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "w.duckdb"
    con = warehouse.connect(path)
    try:
        store_run(con, _run("runA", [1.0] * 5, A_RECALL))
        store_run(con, _run("runB", B_JUDGED, B_RECALL))
        store_run(con, _run("runC", [0.9] * 5, A_RECALL))
    finally:
        con.close()
    return path


LINE = "BIASED: run B's top 5 is 60% judged against 100% for run A; its unjudged documents count as misses."
# B must reach 0.90 (A's 1.00 less the 0.10 gap, above the 0.80 floor): (0.90 - 0.60) x 5 queries x 5
# = 7.5 labels, so 8 (15 of B's 25 top-5 places are judged; 23 of 25 is 0.92, 22 of 25 only 0.88).
CLOSE = (
    "To close it: `goldenset pool --from-run runB --depth 5 --budget 8` (it queues at most 8 pooled pairs: "
    "the fewest labels that can close the gap), label the queue, `goldenset build`, then run the benchmark again."
)


def test_compare_says_biased_first_with_the_command_that_closes_it(db):
    result = CliRunner().invoke(bench_app, ["compare", "runA", "runB", "--db", str(db)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == LINE
    assert lines[1] == CLOSE
    recall_row = next(x for x in lines if x.startswith("│ recall@5"))
    assert "worse (incomplete judgments)" in recall_row
    judged_row = next(x for x in lines if x.startswith("│ judged@5"))
    assert "(reference)" in judged_row and "incomplete" not in judged_row


def test_compare_json_carries_coverage_and_the_warning(db):
    result = CliRunner().invoke(bench_app, ["compare", "runA", "runB", "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["coverage"]["a"] == {"judged@5": pytest.approx(1.0)}
    assert out["coverage"]["b"] == {"judged@5": pytest.approx(0.6)}
    assert out["coverage_warning"] == LINE + "\n" + CLOSE
    assert out["biased"] is True
    by_metric = {m["metric"]: m for m in out["metrics"]}
    assert by_metric["recall@5"]["incomplete_judgments"] is True
    assert by_metric["judged@5"]["incomplete_judgments"] is False


def test_fail_on_bias_exits_5_after_printing(db):
    code = main(["bench", "compare", "runA", "runB", "--db", str(db), "--fail-on-bias"])
    assert code == 5


def test_within_the_thresholds_there_is_no_warning_and_fail_on_bias_exits_0(db):
    # A 1.00 against C 0.90: a gap of exactly 0.10 is not more than 0.10, and 0.90 is above the floor.
    result = CliRunner().invoke(bench_app, ["compare", "runA", "runC", "--db", str(db), "--json", "--fail-on-bias"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["coverage_warning"] is None and out["biased"] is False
    assert not any(m["incomplete_judgments"] for m in out["metrics"])
    assert main(["bench", "compare", "runA", "runC", "--db", str(db), "--fail-on-bias"]) == 0


def test_thresholds_are_options_and_settings(db, monkeypatch):
    # A floor of 0.95 flags C (0.90, side B) although the gap is within 0.10.
    result = CliRunner().invoke(bench_app, ["compare", "runA", "runC", "--db", str(db), "--coverage-floor", "0.95"])
    assert result.output.splitlines()[0] == (
        "BIASED: run B's top 5 is 90% judged against 100% for run A; its unjudged documents count as misses."
    )
    monkeypatch.setenv("GOLDENSET_COVERAGE_MAX_GAP", "0.5")
    monkeypatch.setenv("GOLDENSET_COVERAGE_FLOOR", "0.5")
    result = CliRunner().invoke(bench_app, ["compare", "runA", "runB", "--db", str(db), "--json"])
    assert json.loads(result.output)["coverage_warning"] is None
    monkeypatch.setenv("GOLDENSET_COVERAGE_FLOOR", "lots")
    assert main(["bench", "compare", "runA", "runB", "--db", str(db)]) == 2


def test_a_threshold_outside_zero_to_one_is_a_usage_error(db):
    assert main(["bench", "compare", "runA", "runB", "--db", str(db), "--coverage-floor", "1.5"]) == 2


def test_the_less_judged_run_is_named_first_whichever_side_it_is(db):
    result = CliRunner().invoke(bench_app, ["compare", "runB", "runA", "--db", str(db)])
    assert result.output.splitlines()[0] == (
        "BIASED: run A's top 5 is 60% judged against 100% for run B; its unjudged documents count as misses."
    )


def test_a_single_run_below_the_floor_warns():
    run = _run("runB", B_JUDGED, B_RECALL)
    check = coverage.check_run(run, "core", 0.8)
    assert check.lines == [
        "BIASED: run runB's top 5 is 60% judged, below the floor of 80%; its unjudged documents count as misses."
    ]
    # (0.80 - 0.60) x 5 x 5 = 5 labels lift 15 of 25 judged places to 20 of 25, the floor exactly.
    assert check.commands[0].startswith("To close it: `goldenset pool --from-run runB --depth 5 --budget 5` (")
    assert coverage.check_run(run, "core", 0.6).lines == []  # 0.60 is not below 0.60


def test_two_runs_below_the_floor_are_pooled_by_one_command():
    a, b = _run("runA", [0.7] * 5, A_RECALL), _run("runB", B_JUDGED, B_RECALL)
    check = coverage.check_comparison(a, b, "core")
    assert check.lines == [
        "BIASED: run B's top 5 is 60% judged against 70% for run A; its unjudged documents count as misses."
    ]
    # Both below the 0.80 floor: B needs (0.80 - 0.60) x 25 = 5 labels, A (0.80 - 0.70) x 25 = 2.5, so 3.
    assert check.commands == [
        "To close it: `goldenset pool --from-run runA --from-run runB --depth 5 --budget 8` (it queues at most "
        "8 pooled pairs: the fewest labels that can close the gap), label the queue, `goldenset build`, then run "
        "the benchmark again."
    ]


def test_the_reports_put_biased_first_and_the_asset_metadata_carries_coverage():
    from goldenset.bench.compare import compare_runs
    from goldenset.bench.report import comparison_markdown, run_markdown
    from goldenset_dagster.assets.benchmark import materialization_metadata

    a, b = _run("runA", [1.0] * 5, A_RECALL), _run("runB", B_JUDGED, B_RECALL)
    md = comparison_markdown(compare_runs(a, b), None)
    assert md.splitlines()[2] == f"> - {LINE}"
    assert "worse (incomplete judgments)" in md
    b.coverage_warnings = coverage.check_run(b, "core").lines
    assert run_markdown(b, [], None).splitlines()[2].startswith("> - BIASED: run runB's top 5 is 60% judged")
    meta = materialization_metadata(b, "", None)
    assert meta["coverage"].value == {"core": {"judged@5": 0.6}}
    assert meta["coverage_warning"].value.startswith("BIASED: run runB's top 5 is 60% judged")
    assert meta["core/judged@5"].value == pytest.approx(0.6)


@pytest.mark.parametrize(
    ("coverage_", "target", "queries", "k", "labels"),
    [
        (0.6, 0.9, 5, 5, 8),  # 7.500000000000001, up
        (0.7, 0.9, 5, 5, 5),  # 5.000000000000002 in floats: exactly 5
        (0.75, 0.8, 4, 5, 1),  # 1.0000000000000009 in floats: one label
        (0.8, 0.8, 5, 5, 0),  # there already
        (0.25, 0.5, 8, 24, 48),  # 0.25 x 8 x 24
    ],
)
def test_the_labels_that_close_a_gap_are_the_gap_times_queries_times_k_rounded_up(
    coverage_, target, queries, k, labels
):
    assert coverage.labels_to_close(coverage_, target, queries, k) == labels


def test_the_budget_takes_each_runs_largest_count_over_its_flagged_cut_offs():
    # judged@5 0.20 needs (0.80 - 0.20) x 5 x 5 = 15 labels, judged@24 0.75 only (0.80 - 0.75) x 5 x 24 = 6:
    # the command pools to depth 24 with the 15 the top 5 needs.
    values = {"core": {q: {"recall@5": 0.0, "judged@5": 0.2, "judged@24": 0.75} for q in QUERIES}}
    run = hand_made_run("runD", datetime(2026, 1, 1, 12, 0, 0), values, k_values=(5, 24))
    check = coverage.check_run(run, "core", 0.8)
    assert len(check.lines) == 2
    assert check.commands[0].startswith("To close it: `goldenset pool --from-run runD --depth 24 --budget 15` (")


# Boundaries at the boundary and one step either side, with values floats hold exactly: a mean
# of five equal judged@5 values is that value, and 1.0 - 0.75 is exactly 0.25.
@pytest.mark.parametrize(("b_judged", "biased"), [(0.625, True), (0.75, False), (0.875, False)])
def test_the_gap_is_biased_only_above_max_gap(b_judged, biased):
    a, b = _run("runA", [1.0] * 5, A_RECALL), _run("runB", [b_judged] * 5, B_RECALL)
    check = coverage.check_comparison(a, b, "core", coverage.Thresholds(max_gap=0.25, floor=0.5))
    assert check.coverage == {"a": {"judged@5": 1.0}, "b": {"judged@5": b_judged}}
    assert check.biased is biased


@pytest.mark.parametrize(("judged", "biased"), [(0.625, True), (0.75, False), (0.875, False)])
def test_a_coverage_is_biased_only_below_the_floor(judged, biased):
    # Both runs equally judged (no gap): only the floor of 0.75 can flag them.
    a, b = _run("runA", [judged] * 5, A_RECALL), _run("runB", [judged] * 5, B_RECALL)
    assert coverage.check_comparison(a, b, "core", coverage.Thresholds(max_gap=0.25, floor=0.75)).biased is biased
    assert bool(coverage.check_run(b, "core", 0.75).lines) is biased
