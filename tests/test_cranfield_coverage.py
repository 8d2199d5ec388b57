"""benchmarks/cranfield_coverage.py end to end on tests/data/cranfield-mini.

What the mini-collection implies (worked out in tests/test_cranfield_pooling.py's
docstring): the log holds every document the lexical ranker returns, so the lexical
run is 100% judged at every k; the golden queries are 1, 2, 3 with 9 relevant
documents, 7 of them in the log; the 2 missing (docs 3 and 6) only dense and core
find, and core ranks all 12 documents, so pooling core's top 24 labels both. Then the
golden set holds every relevant document of the golden queries: recall@5 is the same
against it as against all of Cranfield, lexical 7/9 on average ((2/3 + 2/3 + 1) / 3)
and core 1 when its top 5 holds them all.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.helpers import run_study

# Every test here reads a world or a study run built once per module: seconds before the first.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "cranfield_coverage.py"
MINI = Path(__file__).resolve().parent / "data" / "cranfield-mini"


@pytest.fixture(scope="module")
def figures(tmp_path_factory):
    work = tmp_path_factory.mktemp("coverage")
    proc = run_study(
        SCRIPT,
        [
            str(MINI),
            "--workdir",
            str(work),
            "--budgets",
            "1,2",
            "--loo-depth",
            "3",
            # The goldenset commands in the script's process (tests/test_cranfield_pooling.py says why).
            "--in-process",
        ],
        cwd=ROOT / "benchmarks",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads((work / "cranfield_coverage.json").read_text()), (work / "cranfield_coverage.md").read_text()


def test_the_log_only_comparison_is_biased_and_names_the_command_that_closes_it(figures):
    f, _ = figures
    before = f["bias"]["before"]
    assert before["biased"] is True
    assert before["coverage"]["a"] == {"judged@5": 1.0, "judged@24": 1.0}
    assert before["coverage"]["b"]["judged@5"] < 0.8
    assert before["coverage_warning"].startswith("BIASED: run B's top 5 is ")
    # The budget (contract 10.3): core must reach 0.90 (lexical's 1.00 less the 0.10 gap) at each flagged k,
    # (0.90 - c) x 3 queries x k labels at least, the largest over the k, rounded up.
    b = before["coverage"]["b"]
    budget = max(math.ceil(round((0.9 - b[f"judged@{k}"]) * 3 * k, 6)) for k in (5, 24) if b[f"judged@{k}"] < 0.9)
    assert f["bias"]["command"] == f"goldenset pool --from-run {f['bias']['runs']['core']} --depth 24 --budget {budget}"
    assert before["recall@5"]["incomplete_judgments"] is True


def test_after_pooling_the_candidates_run_the_flag_is_gone_and_the_verdict_agrees(figures):
    f, md = figures
    after, truth = f["bias"]["after"], f["bias"]["truth"]
    assert f["bias"]["answers"]["relevant"] == 2  # docs 3 and 6
    assert after["biased"] is False and after["coverage_warning"] is None
    assert after["coverage"]["b"] == {"judged@5": 1.0, "judged@24": 1.0}
    assert after["recall@5"]["mean_a"] == pytest.approx(7 / 9)
    assert after["recall@5"]["diff"] == pytest.approx(truth["diff"])
    assert f["bias"]["agrees"] is True
    assert "the verdict agrees with all of Cranfield's judgments" in md


def test_budgets_count_what_each_strategy_found_beyond_the_log(figures):
    f, md = figures
    b = f["budgets"]
    assert (b["queries"], b["cranfield_relevant"], b["log_relevant"]) == (3, 9, 7)
    for budget in ("1", "2"):
        for name in ("depth", "mtf", "bandit", "feedback"):
            assert 0 <= b[budget][name]["found"] <= 2
    assert "| 2 | bandit |" in md
    assert set(f["loo"]) == {"map", "ndcg@10", "recall@24"}
