"""The summary table's marks held to ranx's `compare` on the same runs, ranx run live from its own venv.

ranx pulls numba (and its own numpy constraints), so it is not a test dependency: it lives in
a virtual environment of its own, GOLDENSET_RANX_VENV, else the checkout's var/ranx-venv
(`.ci/run` creates it in the background and runs the oracle once, so numba's compiled metrics
are cached; by hand: `python -m venv var/ranx-venv && var/ranx-venv/bin/pip install
ranx==0.3.21`). The tests marked `ranx` run `ranx_oracle.py` there: five seeded runs through
`ranx.compare(qrels, runs, metrics, stat_test="student", max_p=0.05)` in a subprocess
(`python -I`: nothing of this checkout on its path), and compare
its superscripts and p-values with goldenset's on the same runs; without the venv they skip and
say why, and under CI they fail. The values recorded from it below keep the parity checked on
a machine without the venv.

Differences of definition, and how the comparison handles them:
- ranx corrects nothing: goldenset's marks are compared with `correction="none"`; with Holm
  they can only be fewer (a subset), which is checked too.
- ranx marks p <= max_p, goldenset p < 0.05: they differ only at p exactly 0.05 (none here).
- ranx marks a run better when its mean is higher; goldenset reads the metric's direction
  (lower noise is better). ranx has no noise metric, so the five metrics here are all
  higher-is-better.
- Where every difference is 0, scipy's p (and ranx's) is nan, goldenset's 1: no mark either way.
- ranx's randomization test draws its own permutations (numba's generator) and reports #/B,
  goldenset (1 + #)/(1 + B): not compared mark for mark.
"""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path

import pytest
from ranx_oracle import case

from goldenset.bench import metrics as M
from goldenset.bench.compare_many import compare_many
from goldenset.bench.runs import BenchmarkRun
from tests.helpers import hand_made_run, live_oracle

ROOT = Path(__file__).resolve().parents[2]
ENV_VENV = "GOLDENSET_RANX_VENV"
RANX_VERSION = "0.3.21"
ORACLE = Path(__file__).with_name("ranx_oracle.py")
# ranx's name -> goldenset's (lists are 30 long, so ranx's @100 reads the whole list, as map and mrr do).
METRICS = {
    "ndcg@10": "ndcg@10",
    "precision@5": "precision@5",
    "recall@10": "recall@10",
    "map@100": "map",
    "mrr@100": "mrr",
}
SUPERSCRIPTS = "ᵃᵇᶜᵈᵉ"


def goldenset_runs(data: dict) -> list[BenchmarkRun]:
    metrics = [M.get_metric(m) for m in METRICS.values()]
    out = []
    for name, scored in data["runs"].items():
        lists = {q: sorted(docs, key=lambda d: -docs[d]) for q, docs in scored.items()}
        values = M.evaluate(lists, data["qrels"], metrics, policy=M.QueryPolicy.SKIP_NO_RELEVANT)
        shape = {"retriever": "x:y", "k_values": (5, 10), "depth": 30, "metric_names": [m.name for m in metrics]}
        out.append(hand_made_run(name, datetime(2026, 1, 1), {"core": values}, **shape))
    return out


def goldenset_marks(correction: str) -> dict[str, dict[str, str]]:
    comp = compare_many(goldenset_runs(case()), metrics=list(METRICS.values()), correction=correction)
    return {
        r.run_id: {
            ranx: "".join(SUPERSCRIPTS["abcde".index(x)] for x in comp.better_than(r.run_id, ours))
            for ranx, ours in METRICS.items()
        }
        for r in comp.runs
    }


# ranx 0.3.21's superscripts on case(), recorded so that the parity holds without its venv;
# test_the_recorded_marks_are_what_ranx_prints checks them against the live package.
RANX_MARKS = {
    run: dict.fromkeys(METRICS, mark)
    for run, mark in {"run_a": "", "run_b": "ᵃ", "run_c": "ᵃᵇ", "run_d": "ᵃᵇᶜ", "run_e": "ᵃᵇᶜ"}.items()
}


def test_marks_without_correction_equal_ranx_compare():
    assert goldenset_marks("none") == RANX_MARKS


def test_holm_marks_are_a_subset_of_the_uncorrected_ones():
    holm, none = goldenset_marks("holm"), goldenset_marks("none")
    assert all(set(holm[r][m]) <= set(none[r][m]) for r in holm for m in holm[r])
    assert holm != none  # on these runs the correction takes some marks away


@pytest.fixture(scope="module")
def ranx(tmp_path_factory) -> dict:
    """ranx's marks and p-values on case(), computed live in its venv."""
    return live_oracle(
        f"ranx=={RANX_VERSION}", ENV_VENV, "ranx-venv", ["-W", "ignore", str(ORACLE)], tmp_path_factory, timeout=600
    )


@pytest.mark.slow
@pytest.mark.ranx
def test_the_recorded_marks_are_what_ranx_prints(ranx):
    assert ranx["version"] == RANX_VERSION
    assert ranx["marks"] == RANX_MARKS


@pytest.mark.slow
@pytest.mark.ranx
def test_the_p_values_equal_ranx_student_test(ranx):
    comp = compare_many(goldenset_runs(case()), metrics=list(METRICS.values()), correction="none")
    ours = {(t.a, t.b, t.metric): t.p for t in comp.tests}
    for pair, by_metric in ranx["p"].items():
        a, b = pair.split()
        for name, p in by_metric.items():
            expected = 1.0 if math.isnan(p) else p  # every difference 0: nan for scipy, 1 here
            assert ours[a, b, METRICS[name]] == pytest.approx(expected, rel=1e-9), (pair, name)
