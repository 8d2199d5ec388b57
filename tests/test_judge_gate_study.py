"""The judge's gate study (benchmarks/judge_gate_simulation.py) runs on the mini collection, in process.

On the four-query mini collection an audit draws 3 queries, whose pooled pairs are fewer than
the window of 200: the window rule then reads every pair of the audit and must decide as the
audit's point kappa does, which holds the two code paths to each other.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "benchmarks") not in sys.path:
    sys.path.insert(0, str(ROOT / "benchmarks"))


@pytest.mark.slow
def test_the_gate_study_runs_on_the_mini_collection(tmp_path):
    import judge_gate_simulation as sim

    args = sim.parse_args(["--samples", "20", "--resamples", "200", "--deltas=-0.1,0.1"])
    out = sim.run(args)
    assert (out["queries"], out["audit_size"], out["min_pairs"]) == (4, 3, 50)
    assert list(out["judges"]) == ["dense cosine >= calibrated cut", "bm25 score >= calibrated cut"]
    for judge in out["judges"].values():
        assert judge["mean_pairs"]["window"] == judge["mean_pairs"]["audit"] < 200
        for row in judge["rows"]:
            admitted, error = row["admitted"], row["error"]
            assert admitted["window rule"] == admitted["audit point kappa"]
            assert row["min_kappa"] == round(judge["true_kappa"] + row["delta"], 4)
            for rule in sim.RULES:
                assert 0.0 <= admitted[rule] <= 1.0
                assert error[rule] == (admitted[rule] if row["judge_is"] == "below" else 1 - admitted[rule])
    # The active audits (contract 13.2's weights): both judges, their own draws, the figures each way.
    assert list(out["active"]) == list(out["judges"])
    for judge in out["active"].values():
        assert 0 < judge["pi_min"] <= judge["pi_max"] <= 1
        for rule in sim.ACTIVE_RULES:
            assert 0.0 <= judge["coverage"][rule] <= 1.0
            assert judge["mean_error_kappa"][rule] == pytest.approx(judge["mean_kappa"][rule] - judge["true_kappa"])
    text = sim.markdown(out)
    assert "| judge | true kappa | min kappa | judge is | audit gate: error |" in text
    assert "| judge | true kappa | min kappa | judge is | weighted gate: error | unweighted gate: error |" in text
    assert "below the minimum" in text and "above the minimum" in text
