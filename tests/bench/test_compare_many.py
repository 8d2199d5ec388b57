"""`bench compare` of many runs through the command line: the family, the verdicts, the marks, the gate.

Runs are stored by hand with seeded per-query values, so every expected figure comes from
scipy (`ttest_rel`) and statsmodels (`multipletests`) on those values, never from goldenset.
"""

from __future__ import annotations

import json
from datetime import datetime
from unittest import mock

import numpy as np
import pytest
from scipy.stats import ttest_rel
from statsmodels.stats.multitest import multipletests

from goldenset import warehouse
from goldenset.bench.compare_many import compare_many, pairs_of
from goldenset.bench.runs import BenchmarkRun, store_run
from goldenset.cli.app import main
from tests.helpers import hand_made_run

QUERIES = [f"q{i:02d}" for i in range(40)]
METRICS = ["recall@5", "ndcg@10", "noise@5", "hole@5", "judged@5"]
# run id -> (shift of recall and ndcg, noise level, judged@5 of every query)
RUNS = {"r1": (0.0, 0.2, 1.0), "r2": (0.09, 0.2, 1.0), "r3": (0.3, 0.1, 0.6), "r4": (0.31, 0.2, 0.95)}


def make_run(run_id: str, shift: float, noise: float, judged: float, seed: int, measures=()) -> BenchmarkRun:
    rng = np.random.default_rng(seed)
    other = np.random.default_rng(seed + 100)  # the named measures' noise, apart from the metrics' draws
    base = np.random.default_rng(0).random(len(QUERIES)) * 0.5  # shared by every run: paired differences
    values = {}
    for i, q in enumerate(QUERIES):
        recall = float(np.clip(base[i] + shift + rng.normal(0, 0.15), 0, 1))
        values[q] = {
            "recall@5": recall,
            "ndcg@10": float(np.clip(recall + rng.normal(0, 0.1), 0, 1)),
            "noise@5": float(np.clip(noise + rng.normal(0, 0.1), 0, 1)),
            "hole@5": 0.2,
            "judged@5": judged,
            **{m: float(np.clip(0.9 * recall + 0.05 + other.normal(0, 0.05), 0, 1)) for m in measures},
        }
    return hand_made_run(
        run_id,
        datetime(2026, 1, 1, 12, 0, 0),
        {"core": values},
        retriever="bench_plugins:keywords",
        retriever_config={"options": {"shift": shift}},
        metric_names=list(METRICS),
        labels_build_id=1,
        measures=list(measures),
    )


def stored_runs() -> dict[str, BenchmarkRun]:
    return {r: make_run(r, *RUNS[r], seed=n, measures=("nDCG@20",)) for n, r in enumerate(RUNS, start=1)}


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "w.duckdb"
    con = warehouse.connect(path)
    try:
        for run in stored_runs().values():
            store_run(con, run)
    finally:
        con.close()
    return path


def compare_json(capsys, db, *args) -> dict:
    assert main(["bench", "compare", *args, "--db", str(db), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def per_query(run: BenchmarkRun, metric: str) -> np.ndarray:
    return np.array([run.values["core"][q][metric] for q in QUERIES])


def holm(p):
    with mock.patch("gc.collect", lambda *args: 0):  # statsmodels collects garbage each call
        return multipletests(p, alpha=0.05, method="holm")[1]


def test_the_family_is_every_pair_times_every_decision_metric_and_its_p_values_are_scipys(capsys, db):
    out = compare_json(capsys, db, "r1", "r2", "r3", "r4")
    runs = stored_runs()
    assert out["metrics"] == ["recall@5", "ndcg@10", "noise@5"]  # hole@5 and judged@5 never decide
    assert out["family_size"] == 6 * 3 and out["test"] == "t" and out["correction"] == "holm"
    family = [c for c in out["comparisons"] if c["kind"] == "deciding"]
    assert [(c["metric"], c["a"], c["b"]) for c in family] == [
        (m, a, b)
        for m in out["metrics"]
        for a, b in [("r1", "r2"), ("r1", "r3"), ("r1", "r4"), ("r2", "r3"), ("r2", "r4"), ("r3", "r4")]
    ]
    expected = [
        ttest_rel(per_query(runs[c["b"]], c["metric"]), per_query(runs[c["a"]], c["metric"])).pvalue for c in family
    ]
    assert [c["p"] for c in family] == pytest.approx(expected, rel=1e-12)
    assert [c["p_corrected"] for c in family] == pytest.approx(list(holm(expected)), rel=1e-12)
    for c in family:
        assert c["significant"] == (c["p_corrected"] < 0.05)
        d = c["diff"]
        direction = -1 if c["metric"] == "noise@5" else 1
        want = "indistinguishable" if not c["significant"] else ("better" if (d > 0) == (direction > 0) else "worse")
        assert c["verdict"] == want


def test_holm_keeps_a_verdict_that_the_uncorrected_test_would_call(capsys, db):
    corrected = compare_json(capsys, db, "r1", "r2", "r3", "r4", "--metric", "recall@5")
    raw = compare_json(capsys, db, "r1", "r2", "r3", "r4", "--metric", "recall@5", "--correction", "none")
    pick = [
        (c["a"], c["b"])
        for c in raw["comparisons"]
        if c["significant"]
        and not next(x for x in corrected["comparisons"] if (x["a"], x["b"]) == (c["a"], c["b"]))["significant"]
    ]
    assert pick, "the sample must hold a comparison that only the correction keeps"
    kept = next(c for c in corrected["comparisons"] if (c["a"], c["b"]) == pick[0])
    assert kept["verdict_text"] == "indistinguishable (after correction)" and kept["interval_agrees"] is False
    # Without correction, the t test's verdict always says what its 95% interval says.
    assert all(c["interval_agrees"] for c in raw["comparisons"])


def test_the_summary_marks_the_runs_each_mean_is_significantly_better_than(capsys, db):
    out = compare_json(capsys, db, "r1", "r2", "r3", "r4")
    letters = {r["run_id"]: r["letter"] for r in out["runs"]}
    for row in out["summary"]:
        for metric, beaten in row["better_than"].items():
            expected = []
            for c in out["comparisons"]:
                if c["metric"] != metric or not c["significant"]:
                    continue
                if (c["b"], c["verdict"]) == (row["run_id"], "better") or (c["a"], c["verdict"]) == (
                    row["run_id"],
                    "worse",
                ):
                    expected.append(letters[c["a"] if c["b"] == row["run_id"] else c["b"]])
            assert beaten == sorted(expected), (row["run_id"], metric)
    # noise@5: r3's is lower (better), so r3 is marked better than the others there.
    r3 = next(r for r in out["summary"] if r["run_id"] == "r3")
    assert r3["better_than"]["noise@5"] == ["a", "b", "d"]


def test_the_table_prints_superscripts_and_each_comparison(capsys, db):
    assert main(["bench", "compare", "r1", "r2", "r3", "r4", "--db", str(db), "--metric", "noise@5"]) == 0
    out = capsys.readouterr().out
    assert "4 runs · row core · 40 queries · Student's paired t test, two-sided, Holm over 6 comparisons" in out
    assert "│ c │ r3  │ 0.1" in out and "ᵃᵇᵈ" in out
    assert "Family: 6 pair(s) x 1 deciding metric(s) = 6 comparisons; Holm holds the chance" in out


def test_a_baseline_is_compared_with_every_other_run_only(capsys, db):
    out = compare_json(capsys, db, "r1", "r3", "r4", "--baseline", "r2", "--metric", "recall@5")
    assert [r["run_id"] for r in out["runs"]] == ["r2", "r1", "r3", "r4"]  # a baseline not named goes first
    assert [(c["a"], c["b"]) for c in out["comparisons"]] == [("r2", "r1"), ("r2", "r3"), ("r2", "r4")]
    assert out["family_size"] == 3 and out["baseline"] == "r2"


def test_pairs_of_a_baseline_in_the_middle_keep_the_table_order():
    assert pairs_of(["a", "b", "c"], "b") == [(1, 0), (1, 2)]
    assert pairs_of(["a", "b", "c"], None) == [(0, 1), (0, 2), (1, 2)]


def test_reference_metrics_and_named_measures_are_compared_beside_the_family(capsys, db):
    out = compare_json(
        capsys, db, "r1", "r2", "r3", "--metric", "recall@5", "--metric", "hole@5", "--metric", "nDCG@20"
    )
    assert out["metrics"] == ["recall@5"] and out["others"] == ["hole@5", "nDCG@20"]
    assert out["family_size"] == 3
    others = [c for c in out["comparisons"] if c["kind"] != "deciding"]
    assert {c["kind"] for c in others} == {"reference", "measure"}
    assert all(c["p_corrected"] is None and c["verdict"] is None for c in others)
    runs = stored_runs()
    m = next(c for c in others if c["metric"] == "nDCG@20" and (c["a"], c["b"]) == ("r1", "r3"))
    assert m["p"] == pytest.approx(ttest_rel(per_query(runs["r3"], "nDCG@20"), per_query(runs["r1"], "nDCG@20")).pvalue)
    assert m["verdict_text"] == "(named measure)"


def test_the_two_run_form_compares_a_named_measure_without_direction(capsys, db):
    assert main(["bench", "compare", "r1", "r3", "--db", str(db), "--metric", "nDCG@20", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [m["metric"] for m in out["metrics"]] == ["nDCG@20"]
    assert out["metrics"][0]["verdict"] == "higher"  # never better: a named measure has no direction
    assert out["metrics"][0]["incomplete_judgments"] is False


def test_biased_is_printed_once_per_run_and_marks_only_its_pairs(capsys, db):
    assert main(["bench", "compare", "r1", "r2", "r3", "r4", "--db", str(db), "--metric", "recall@5"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == [
        "BIASED: run r3's top 5 is 60% judged against 100% for run r1; its unjudged documents count as misses.",
        # r3 must reach 0.90 (r1's 1.00 less the 0.10 gap): (0.90 - 0.60) x 40 queries x 5 = 60 labels.
        "To close it: `goldenset pool --from-run r3 --depth 5 --budget 60` (it queues at most 60 pooled pairs: "
        "the fewest labels that can close the gap), label the queue, `goldenset build`, "
        "then run the benchmark again.",
    ]
    out = compare_json(capsys, db, "r1", "r2", "r3", "r4", "--metric", "recall@5")
    marked = {(c["a"], c["b"]) for c in out["comparisons"] if c["incomplete_judgments"]}
    assert marked == {("r1", "r3"), ("r2", "r3"), ("r3", "r4")}
    assert out["biased"] and out["coverage"]["r3"] == {"judged@5": pytest.approx(0.6)}


def test_fail_on_bias_exits_5_when_any_pair_is_biased(capsys, db):
    assert main(["bench", "compare", "r1", "r2", "r3", "--db", str(db), "--fail-on-bias"]) == 5
    assert (
        "Error: 2 comparison(s) of 3 runs are BIASED by unjudged documents (--fail-on-bias)" in capsys.readouterr().err
    )
    assert main(["bench", "compare", "r1", "r2", "r4", "--db", str(db), "--fail-on-bias"]) == 0


def test_a_run_below_the_floor_against_equally_judged_runs_says_so():
    low = [make_run(r, 0.0, 0.2, 0.7, seed=n) for n, r in enumerate(("x", "y"))]
    comp = compare_many(low, metrics=["recall@5"])
    assert comp.coverage.lines == [
        "BIASED: run x's top 5 is 70% judged, below the floor of 80%; its unjudged documents count as misses.",
        "BIASED: run y's top 5 is 70% judged against 70% for run x; its unjudged documents count as misses.",
    ]
    # Each must reach the 0.80 floor: (0.80 - 0.70) x 40 x 5 = 20 labels each, 40 in all.
    assert comp.coverage.commands == [
        "To close it: `goldenset pool --from-run x --from-run y --depth 5 --budget 40` (it queues at most 40 "
        "pooled pairs: the fewest labels that can close the gap), label the queue, `goldenset build`, "
        "then run the benchmark again."
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["r1"], "bench compare needs two runs or more"),
        (["r1", "r2", "r1"], "run 'r1' is named twice"),
        (["r1", "r2", "r3", "--bootstrap", "100"], "--bootstrap compares two runs"),
        (["r1", "r2", "r3", "--estimate", "ppi"], "--estimate ppi compares two runs"),
        (["r1", "r2", "--test", "t", "--permutations", "100"], "--permutations 100 is for --test randomization"),
        (["r1", "r2", "--test", "sign"], "--test 'sign' is not one of t, randomization"),
        (["r1", "r2", "--correction", "fdr"], "--correction 'fdr' is not one of holm, bonferroni, none"),
        (["r1", "r2", "r3", "--metric", "R@100"], "run r1 did not measure 'R@100'"),
        (["r1", "r2", "r3", "--row", "+graph"], "run r1 has no row '+graph'"),
    ],
)
def test_wrong_usage_is_one_line_exit_2(capsys, db, args, message):
    assert main(["bench", "compare", *args, "--db", str(db)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"Error: {message}") and "\n" not in err


def test_the_randomization_test_reports_its_monte_carlo_error(capsys, db):
    out = compare_json(
        capsys,
        db,
        "r1",
        "r3",
        "--test",
        "randomization",
        "--permutations",
        "2000",
        "--seed",
        "4",
        "--metric",
        "recall@5",
    )
    (c,) = out["comparisons"]
    assert (out["permutations"], out["seed"]) == (2000, 4)
    assert c["p"] == 1 / 2001  # r3 is far better: no sign flip reaches it
    assert c["mc_error"] == pytest.approx((c["p"] * (1 - c["p"]) / 2000) ** 0.5)
    assert c["verdict"] == "better"


@pytest.mark.slow
def test_the_report_has_the_tables_and_the_plot_inline(capsys, db, tmp_path):
    out = tmp_path / "report"
    assert main(["bench", "compare", "r1", "r2", "r3", "--db", str(db), "--baseline", "r1", "--report", str(out)]) == 0
    md = (out / "report.md").read_text(encoding="utf-8")
    assert (
        "| # | run | recall@5 | ndcg@10 | noise@5 |" in md and "![means with their 95% intervals](comparison.png)" in md
    )
    assert (out / "comparison.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert 'src="data:image/png;base64,' in (out / "report.html").read_text(encoding="utf-8")


@pytest.mark.slow
def test_the_plot_is_a_library_function_returning_png_or_svg_with_the_baseline_marked():
    from goldenset.bench.plot_runs import RunMeans, runs_figure

    runs = [RunMeans("a r1", {"ndcg@10": (0.25, 0.2, 0.3)}), RunMeans("b r2", {"ndcg@10": (0.5, 0.4, 0.6)})]
    svg = runs_figure(runs, ["ndcg@10"], baseline="a r1", fmt="svg").decode("utf-8")
    assert svg.lstrip().startswith("<?xml") and "a r1 (baseline)" in svg and "b r2 (baseline)" not in svg
    assert runs_figure(runs, ["ndcg@10"], fmt="svg") == runs_figure(runs, ["ndcg@10"], fmt="svg")  # reproducible
    assert runs_figure(runs, ["ndcg@10"])[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="format 'pdf'"):
        runs_figure(runs, ["ndcg@10"], fmt="pdf")


def test_queries_some_run_lacks_are_left_out_and_counted(capsys, tmp_path):
    runs = [make_run(r, *RUNS[r], seed=n) for n, r in enumerate(("r1", "r2", "r3"), start=1)]
    del runs[1].values["core"]["q00"], runs[2].values["core"]["q01"]
    comp = compare_many(runs, metrics=["recall@5"])
    assert (comp.n, comp.left_out) == (38, 2) and "q00" not in comp.queries and "q01" not in comp.queries
    a = np.array([runs[0].values["core"][q]["recall@5"] for q in comp.queries])
    assert comp.means["r1"]["recall@5"][0] == pytest.approx(a.mean())


@pytest.mark.parametrize(
    ("ca", "cb", "biased"),
    [
        (1.0, 0.75, False),  # a gap equal to max_gap passes
        (1.0, float(np.nextafter(0.75, 0.0)), True),
        (float(np.nextafter(0.75, 0.0)), 0.5, False),
        (0.5, 0.5, False),  # a coverage equal to the floor passes
        (0.5, float(np.nextafter(0.5, 0.0)), True),
    ],
)
def test_each_pair_is_biased_by_10_3s_rule_at_its_boundaries(ca, cb, biased):
    from goldenset.bench.coverage import Thresholds, is_biased

    assert is_biased(ca, cb, Thresholds(max_gap=0.25, floor=0.5)) is biased


def test_the_better_judged_run_of_a_pair_is_flagged_only_below_the_floor():
    from goldenset.bench.coverage import Thresholds

    at_floor = [make_run("x", 0.0, 0.2, 0.75, seed=1), make_run("y", 0.0, 0.2, 0.25, seed=2)]
    comp = compare_many(at_floor, metrics=["recall@5"], thresholds=Thresholds(max_gap=0.25, floor=0.75))
    assert [line.split("'s")[0] for line in comp.coverage.lines] == ["BIASED: run y"]
    below = [make_run("x", 0.0, 0.2, 0.5, seed=1), make_run("y", 0.0, 0.2, 0.25, seed=2)]
    comp = compare_many(below, metrics=["recall@5"], thresholds=Thresholds(max_gap=0.25, floor=0.75))
    assert [line.split("'s")[0] for line in comp.coverage.lines] == ["BIASED: run x", "BIASED: run y"]


def test_a_randomization_verdict_that_its_interval_contradicts_says_why():
    # Five positive differences: Student's interval excludes 0, but no sign-flip p can go below
    # 2/32 = 0.0625: the verdict is indistinguishable and says the randomization test decided.
    runs = [make_run(r, 0.0, 0.2, 1.0, seed=1) for r in ("x", "y")]
    for i, q in enumerate(QUERIES):
        runs[0].values["core"][q]["recall@5"] = 0.25
        runs[1].values["core"][q]["recall@5"] = 0.5 + (0.25 if i % 2 else 0.0)
    for r in runs:
        r.values["core"] = {q: r.values["core"][q] for q in QUERIES[:5]}
    (t,) = compare_many(runs, metrics=["recall@5"], test="randomization", correction="none", permutations=2000).tests
    assert t.lo > 0 and t.p >= 0.05 and t.verdict == "indistinguishable"
    assert t.verdict_text() == "indistinguishable (randomization test)"
