"""The comparisons study (benchmarks/cranfield_comparisons.py) runs on the mini collection, in process.

On the mini collection's four queries the BM25 settings rank alike, so every difference is 0:
no comparison may be significant, under the null or not, which holds the study's own tests to
the library's decision; resample 0 is checked against `compare_many` by the study itself.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.helpers import METRICS_5_24

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "benchmarks") not in sys.path:
    sys.path.insert(0, str(ROOT / "benchmarks"))

BM25_ONLY = "bm25:1.2:0.75,bm25:0.9:0.4,bm25:1.5:0.75,bm25:2.0:1.0,bm25:0.5:0.3"


@pytest.mark.slow
def test_the_comparisons_study_runs_on_the_mini_collection():
    import cranfield_comparisons as study

    args = study.parse_args(["--rankers", BM25_ONLY, "--resamples", "5", "--permutations", "100"])
    out = study.run(args)
    assert (out["queries"], out["documents"]) == (4, 12)
    assert out["metrics"] == list(METRICS_5_24[:9])  # the study's nine: recall to noise
    assert out["five_runs"]["holm"]["family_size"] == 90 and out["five_runs"]["holm"]["significant"] == 0
    sizes = {family: f["m"] for family, f in out["null"].items()}
    assert sizes == {
        "all pairs, ndcg@10": 10,
        "all pairs, 9 metrics": 90,
        "baseline, ndcg@10": 4,
        "10 disjoint pairs, ndcg@10": 10,
    }
    for f in out["null"].values():
        assert f["independent"] == pytest.approx(1 - 0.95 ** f["m"])
        for rates in f["tests"].values():
            assert {c: r["rate"] for c, r in rates.items()} == {"none": 0.0, "bonferroni": 0.0, "holm": 0.0}
    text = study.markdown(out)
    assert "| family | m | 1 - 0.95^m | test | none | bonferroni | holm |" in text
    assert "| all pairs, ndcg@10 | 10 | 40.1% | t | 0.0% ± 0.0% |" in text


def test_five_rankers_are_required():
    import cranfield_comparisons as study

    with pytest.raises(SystemExit):
        study.parse_args(["--rankers", "bm25:1.2:0.75,dense"])
