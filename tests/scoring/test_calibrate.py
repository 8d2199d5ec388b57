"""Calibration (contract 8.2) on small hand-made sets whose answers are worked out in each test."""

from __future__ import annotations

import json
import math
from datetime import date, datetime

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from world import CONTRACT_KEYS

from goldenset.errors import GoldensetError, InputError, UsageError
from goldenset.scoring.calibrate import (
    NO_BAND_NEEDED,
    NO_LOW,
    Costs,
    CutoffRow,
    ErrorPair,
    ScoredPair,
    calibrate,
    choose_band,
    round4,
)
from goldenset.scoring.plot import plot_rates, rates_figure
from goldenset.scoring.policy import check_policy, check_to_json, policy_manifest, read_policy, write_policy
from goldenset.scoring.report import to_json


def pair(score, acceptable, project="a", qid=None, labelled_at=None, doc="d"):
    return ScoredPair(qid or f"q{score}-{acceptable}", doc, project, score, acceptable, labelled_at)


def numbered(specs, project="a"):
    """Pairs from (score, acceptable) with distinct query ids."""
    return [ScoredPair(f"{project}{i:03d}", "d", project, s, a) for i, (s, a) in enumerate(specs)]


# Five pairs: 3 acceptable (0.2, 0.5, 0.9), 2 unacceptable (0.2, 0.9).
FIVE = numbered([(0.2, True), (0.2, False), (0.5, True), (0.9, False), (0.9, True)])


def run(pairs, **kw):
    return to_json(calibrate(pairs, scorer="s", version="v1", **kw))


# --------------------------------------------------------------------------- cutoffs and rates
def test_cutoffs_are_the_distinct_scores_ascending_then_null_with_hand_counted_rates():
    out = run(FIVE)
    # c=0.2: everything passes -> fp 2 of 2, ff 0 of 3.
    # c=0.5: 0.5, 0.9, 0.9 pass -> fp 1 (the 0.9 unacceptable), ff 1 (the 0.2 acceptable).
    # c=0.9: the two 0.9 pass -> fp 1, ff 2.  null: nothing passes -> fp 0, ff 3.
    assert out["cutoffs"] == [
        {"cutoff": 0.2, "false_passes": 2, "false_fails": 0, "false_pass_rate": 1.0, "false_fail_rate": 0.0},
        {"cutoff": 0.5, "false_passes": 1, "false_fails": 1, "false_pass_rate": 0.5, "false_fail_rate": 0.3333},
        {"cutoff": 0.9, "false_passes": 1, "false_fails": 2, "false_pass_rate": 0.5, "false_fail_rate": 0.6667},
        {"cutoff": None, "false_passes": 0, "false_fails": 3, "false_pass_rate": 0.0, "false_fail_rate": 1.0},
    ]
    assert (out["pairs"], out["acceptable"], out["unacceptable"]) == (5, 3, 2)


def test_rates_are_zero_when_there_is_no_pair_of_that_kind():
    out = run(numbered([(0.1, True), (0.4, True)]))
    assert [r["false_pass_rate"] for r in out["cutoffs"]] == [0.0, 0.0, 0.0]
    assert [r["false_fail_rate"] for r in out["cutoffs"]] == [0.0, 0.5, 1.0]
    out = run(numbered([(0.1, False), (0.4, False)]))
    assert [r["false_fail_rate"] for r in out["cutoffs"]] == [0.0, 0.0, 0.0]


# --------------------------------------------------------------------------- single
def test_single_takes_the_higher_cutoff_on_a_cost_tie():
    # R = 1: costs 0.2 -> 2+0, 0.5 -> 1+1, 0.9 -> 1+2, null -> 0+3; 0.2 and 0.5 tie at 2.
    single = run(FIVE)["single"]
    assert single == {
        "cutoff": 0.5,
        "false_passes": 1,
        "false_fails": 1,
        "false_pass_rate": 0.5,
        "false_fail_rate": 0.3333,
        "cost": 2,
    }


def test_single_is_null_when_nothing_passing_ties_as_cheapest():
    # R = 2: 0.2 -> 4, 0.5 -> 2+1 = 3, 0.9 -> 2+2 = 4, null -> 3; 0.5 and null tie, null is higher.
    single = run(FIVE, costs=Costs(cost_ratio=2))["single"]
    assert single["cutoff"] is None
    assert (single["false_passes"], single["false_fails"], single["cost"]) == (0, 3, 3)


def test_single_cost_is_exact_for_a_fractional_cost_ratio():
    # R = 0.1: 0.2 -> 0.2, 0.5 -> 1.1, 0.9 -> 2.1, null -> 3.
    single = run(FIVE, costs=Costs(cost_ratio=0.1))["single"]
    assert single["cutoff"] == 0.2
    assert single["cost"] == 0.2


def test_single_ties_are_exact_where_binary_floats_are_not():
    # R = 0.3. Cutoff 0.2: 12 false passes, 0 false fails -> 3.6; cutoff 0.9: 2 false passes
    # (the unacceptable 0.9s), 3 false fails (the acceptable 0.2s) -> 0.6 + 3 = 3.6; null -> 5.
    # In binary floats 0.3 * 12 = 3.5999999999999996 < 0.3 * 2 + 3: a float tie-break would pick 0.2.
    pairs = numbered([(0.2, False)] * 10 + [(0.9, False)] * 2 + [(0.2, True)] * 3 + [(0.9, True)] * 2)
    assert 0.3 * 12 < 0.3 * 2 + 3
    single = run(pairs, costs=Costs(cost_ratio=0.3))["single"]
    assert (single["cutoff"], single["false_passes"], single["false_fails"], single["cost"]) == (0.9, 2, 3, 3.6)


# --------------------------------------------------------------------------- band
SEVEN = numbered([(0.1, False), (0.2, True), (0.3, False), (0.4, True), (0.5, True), (0.6, False), (0.7, True)])


def test_band_runs_from_the_last_low_to_the_first_high_and_counts_its_share():
    # A = B = 0.05. False-pass rate <= 0.05 first at 0.7 (no unacceptable >= 0.7): high = 0.7.
    # False-fail rate <= 0.05 last at 0.2 (nothing acceptable below 0.2; at 0.3 the 0.2 fails):
    # low = 0.2. Review: 0.2 <= s < 0.7 holds 0.2, 0.3, 0.4, 0.5, 0.6 -> 5 of 7 = 0.714285...
    out = run(SEVEN)
    assert out["band"] == {"low": 0.2, "high": 0.7, "review_share": 0.7143}
    assert out["band_note"] is None


def test_band_with_a_null_high_reaches_above_every_score():
    # The top score is unacceptable, so only null has false-pass rate <= 0: high = null.
    # low = 0.1 (the only score cutoff with false-fail rate 0). Both pairs are >= 0.1.
    out = run(numbered([(0.1, True), (0.5, False)]), costs=Costs(max_false_pass=0, max_false_fail=0))
    assert out["band"] == {"low": 0.1, "high": None, "review_share": 1.0}


def test_no_band_is_needed_when_low_reaches_high():
    # Separable: high = 0.9 (fp rate 0), low = 0.9 (ff rate 0): low >= high.
    out = run(numbered([(0.1, False), (0.9, True)]))
    assert out["band"] is None
    assert out["band_note"] == NO_BAND_NEEDED == "no band needed"


def test_no_cutoff_meets_max_false_fail_when_every_score_cutoff_fails_too_many():
    # From pairs the lowest score always has false-fail rate 0, so this note needs a table
    # whose every score row fails too many: here 1 of 2 acceptable at 0.3.
    rows = [CutoffRow(0.3, 1, 1, 2, 2), CutoffRow(None, 0, 2, 2, 2)]
    high, low, band, note = choose_band(rows, [0.3, 0.3, 0.3, 0.3], 0.05, 0.05)
    assert (high.cutoff, low, band, note) == (None, None, None, NO_LOW)
    assert NO_LOW == "no cutoff meets max-false-fail"


def test_a_rate_equal_to_its_limit_meets_it():
    # 10 unacceptable at 0.0 .. 0.9, one acceptable at 1.0. At 0.7 three unacceptable pass:
    # 3/10 = 0.3 exactly, which meets A = 0.3; at 0.6 it is 0.4. So high = 0.7.
    pairs = numbered([(i / 10, False) for i in range(10)] + [(1.0, True)])
    m = calibrate(pairs, scorer="s", version="v", costs=Costs(max_false_pass=0.3)).measurement
    assert m.high.cutoff == 0.7


# --------------------------------------------------------------------------- rounding
def test_rounding_is_half_away_from_zero_on_the_printed_decimal():
    assert round4(0.12345) == 0.1235  # the float is 0.12344999..., round() gives 0.1234
    assert round4(-0.12345) == -0.1235
    assert round4(0.00015) == 0.0002
    assert round4(1 / 32) == 0.0313  # 0.03125 exactly; round() gives the even 0.0312
    assert round(1 / 32, 4) == 0.0312
    assert round4(2 / 3) == 0.6667


def test_a_rate_of_one_in_thirty_two_prints_as_0_0313():
    # 31 unacceptable at 0.1, one at 0.9, five acceptable at 0.9. Costs: 0.1 -> 32, 0.9 -> 1,
    # null -> 5: single = 0.9 with false-pass rate 1/32 = 0.03125.
    pairs = numbered([(0.1, False)] * 31 + [(0.9, False)] + [(0.9, True)] * 5)
    assert run(pairs)["single"]["false_pass_rate"] == 0.0313


# --------------------------------------------------------------------------- bootstrap
def _single_by_hand(scores, acc, r):
    """Brute force: every distinct score then None; cost r*fp + ff; ties to the later."""
    best, best_cost = None, None
    for c in sorted(set(scores)) + [None]:
        fp = sum(1 for s, a in zip(scores, acc, strict=True) if not a and c is not None and s >= c)
        ff = sum(1 for s, a in zip(scores, acc, strict=True) if a and (c is None or s < c))
        cost = r * fp + ff
        if best_cost is None or cost <= best_cost:
            best, best_cost = c, cost
    return best


NOISY = SEVEN + numbered([(0.35, True), (0.45, False), (0.55, True), (0.65, False)], project="b")


@pytest.mark.parametrize(("N", "seed"), [(7, 2), (300, 11)])
def test_bootstrap_matches_an_independent_numpy_computation(N, seed):
    # N = 7 makes every percentile an interpolation between two resamples (positions 0.15, 1.5,
    # 3, 4.5, 5.85) and the interval's ends floor(0.15) = 0 and ceil(5.85) = 6: a different draw
    # or percentile method shows. N = 300 checks a realistic size.
    pairs = NOISY
    scores = [p.score for p in pairs]
    acc = [p.acceptable for p in pairs]
    n = len(pairs)
    full = _single_by_hand(scores, acc, 1)
    idx = np.random.default_rng(seed).integers(0, n, size=(N, n))
    fprs, ffrs, own = [], [], []
    for row in idx:
        s = [scores[i] for i in row]
        a = [acc[i] for i in row]
        n_u = sum(1 for x in a if not x)
        n_a = len(a) - n_u
        fp = sum(1 for x, y in zip(s, a, strict=True) if not y and full is not None and x >= full)
        ff = sum(1 for x, y in zip(s, a, strict=True) if y and (full is None or x < full))
        fprs.append(fp / n_u if n_u else 0.0)
        ffrs.append(ff / n_a if n_a else 0.0)
        own.append(_single_by_hand(s, a, 1))
    q = [2.5, 25, 50, 75, 97.5]
    expected_fp = [round4(x) for x in np.percentile(fprs, q)]
    expected_ff = [round4(x) for x in np.percentile(ffrs, q)]
    other = round4(sum(1 for c in own if c != full) / N)
    ordered = sorted(own, key=lambda c: math.inf if c is None else c)
    interval = [ordered[math.floor(0.025 * (N - 1))], ordered[math.ceil(0.975 * (N - 1))]]

    out = run(pairs, bootstrap_n=N, seed=seed)
    assert out["single"]["cutoff"] == full
    assert out["bootstrap"] == {
        "n": N,
        "seed": seed,
        "single": {
            "false_pass_rate": expected_fp,
            "false_fail_rate": expected_ff,
            "other_cutoff_share": other,
            "cutoff_interval": interval,
        },
    }
    assert 0 < other < 1  # the set is noisy: a test that could not see a wrong share would be weak
    assert len(set(fprs)) > 2 and len(set(ffrs)) > 2


def test_bootstrap_repeats_for_a_seed_and_moves_with_another():
    a = run(SEVEN, bootstrap_n=200, seed=3)["bootstrap"]
    assert a == run(SEVEN, bootstrap_n=200, seed=3)["bootstrap"]
    assert a != run(SEVEN, bootstrap_n=200, seed=4)["bootstrap"]


# --------------------------------------------------------------------------- slices
def _two_projects():
    # a: 20 unacceptable at 0.10 .. 0.29, 20 acceptable at 0.60 .. 0.79 -> own single 0.60.
    # b: unacceptable 0.85, 0.86; acceptable 0.95, 0.96 -> own single 0.95.
    a = numbered([(0.10 + i / 100, False) for i in range(20)] + [(0.60 + i / 100, True) for i in range(20)], "a")
    b = numbered([(0.85, False), (0.86, False), (0.95, True), (0.96, True)], "b")
    return a + b


def test_slices_are_computed_on_their_own_pairs():
    out = run(_two_projects(), by_project=True)
    assert list(out["slices"]) == ["a", "b"]
    sa, sb = out["slices"]["a"], out["slices"]["b"]
    assert (sa["pairs"], sa["acceptable"], sa["unacceptable"]) == (40, 20, 20)
    assert sa["single"] == {
        "cutoff": 0.6,
        "false_passes": 0,
        "false_fails": 0,
        "false_pass_rate": 0.0,
        "false_fail_rate": 0.0,
        "cost": 0,
    }
    assert (sa["band"], sa["band_note"]) == (None, "no band needed")
    assert sb["single"]["cutoff"] == 0.95
    # Global: at 0.60 only b's two unacceptable pass (cost 2); at 0.95 all 20 of a's acceptable fail.
    assert out["single"]["cutoff"] == 0.6 and out["single"]["cost"] == 2


def test_slice_summaries_are_macro_and_traffic_weighted_at_the_global_cutoff():
    pairs = _two_projects()
    out = run(pairs, by_project=True, traffic={"a": 1, "b": 3})
    # At the global 0.60: a has rates (0, 0); b has fp 2/2 = 1.0, ff 0/2 = 0.
    s = out["slice_summary"]
    assert s["cutoff"] == 0.6 and s["weights"] == "traffic"
    assert s["by_slice"] == {
        "a": {"false_pass_rate": 0.0, "false_fail_rate": 0.0},
        "b": {"false_pass_rate": 1.0, "false_fail_rate": 0.0},
    }
    assert s["macro"] == {"false_pass_rate": 0.5, "false_fail_rate": 0.0}
    assert s["traffic_weighted"] == {"false_pass_rate": 0.75, "false_fail_rate": 0.0}  # (1*0 + 3*1) / 4
    by_pairs = run(pairs, by_project=True)["slice_summary"]
    assert by_pairs["weights"] == "pairs"
    assert by_pairs["traffic_weighted"]["false_pass_rate"] == round4(4 / 44)  # (40*0 + 4*1) / 44


def test_a_slice_whose_cutoff_is_outside_the_global_interval_gets_a_warning():
    out = run(_two_projects(), by_project=True, bootstrap_n=400, seed=0)
    lo, hi = out["bootstrap"]["single"]["cutoff_interval"]
    assert lo <= 0.6 <= hi < 0.95
    assert len(out["warnings"]) == 1
    assert out["warnings"][0].startswith("slice 'b': its own single cutoff 0.95 lies outside")


def test_slices_without_a_bootstrap_give_no_warning():
    assert run(_two_projects(), by_project=True)["warnings"] == []


# --------------------------------------------------------------------------- holdout
def test_holdout_chooses_before_the_date_and_measures_after_it():
    before = datetime(2026, 10, 31, 23, 59)
    after = datetime(2026, 11, 1, 0, 0)
    pairs = [
        pair(0.2, False, qid="q1", labelled_at=before),
        pair(0.8, True, qid="q2", labelled_at=before),
        # after: an unacceptable 0.9 passes 0.8, an acceptable 0.5 fails it.
        pair(0.9, False, qid="q3", labelled_at=after),
        pair(0.5, True, qid="q4", labelled_at=after),
        pair(0.95, True, qid="q5", labelled_at=after),
        pair(0.7, True, qid="q6", labelled_at=None),
    ]
    out = run(pairs, holdout_after=date(2026, 11, 1))
    # Chosen on q1, q2 only: separable, single = 0.8 (cost 0, highest of the zero-cost cutoffs).
    assert (out["pairs"], out["single"]["cutoff"], out["single"]["cost"]) == (2, 0.8, 0)
    h = out["holdout"]
    assert (h["after"], h["chosen_on"], h["undated"], h["pairs"], h["acceptable"], h["unacceptable"]) == (
        "2026-11-01",
        2,
        1,
        3,
        2,
        1,
    )
    assert h["single"] == {
        "cutoff": 0.8,
        "false_passes": 1,
        "false_fails": 1,
        "false_pass_rate": 1.0,
        "false_fail_rate": 0.5,
        "cost": 2,
    }
    assert h["band"] is None


def test_holdout_with_nothing_before_the_date_is_an_error():
    pairs = [pair(0.2, False, labelled_at=datetime(2026, 12, 1))]
    with pytest.raises(GoldensetError, match="no scored pair labelled before 2026-11-01"):
        calibrate(pairs, scorer="s", version="v", holdout_after=date(2026, 11, 1))


# --------------------------------------------------------------------------- repeats
def test_a_pair_whose_repeats_straddle_a_cutoff_is_unstable():
    pairs = [
        ScoredPair.from_repeats("q1", "d", "a", [0.1, 0.1, 0.1], False),
        ScoredPair.from_repeats("q2", "d", "a", [0.3, 0.5, 0.7], True),  # mean 0.5
        ScoredPair.from_repeats("q3", "d", "a", [0.8, 0.9, 1.0], True),  # mean 0.9
    ]
    out = run(pairs)
    # Means 0.1 (no), 0.5 (yes), 0.9 (yes): single = 0.5 (cost 0, the highest such cutoff).
    assert out["single"]["cutoff"] == 0.5
    rep = out["repeats"]
    assert rep["n"] == 3 and rep["unstable"] == 1
    by_q = {r["query_id"]: r for r in rep["pairs"]}
    assert by_q["q2"] == {
        "query_id": "q2",
        "doc_id": "d",
        "mean": 0.5,
        "min": 0.3,
        "max": 0.7,
        "passes": {"single": 2},
        "of": 3,
        "unstable": True,
    }
    assert by_q["q3"]["passes"] == {"single": 3} and by_q["q3"]["unstable"] is False
    assert rep["pairs"][0]["query_id"] == "q2"  # nearest to the cutoff first


def test_equal_repeats_average_to_that_very_score():
    # np.mean([0.1, 0.1, 0.1]) is 0.10000000000000002: a cutoff no pair scored.
    assert ScoredPair.from_repeats("q", "d", "a", [0.1, 0.1, 0.1], True).score == 0.1
    assert ScoredPair.from_repeats("q", "d", "a", [0.25, 0.75, 0.5], True).score == 0.5


# --------------------------------------------------------------------------- JSON shape
def test_json_keys_follow_the_contract_order():
    out = run(SEVEN, errors=[ErrorPair("q9", "d9", "timed out after 30 s")], bootstrap_n=20, by_project=True)
    assert list(out) == [*CONTRACT_KEYS, "bootstrap", "slices", "slice_summary", "warnings"]
    assert out["errors"] == 1
    assert out["error_pairs"] == [{"query_id": "q9", "doc_id": "d9", "reason": "timed out after 30 s"}]
    assert list(out["cutoffs"][0]) == ["cutoff", "false_passes", "false_fails", "false_pass_rate", "false_fail_rate"]
    assert list(out["single"]) == [
        "cutoff",
        "false_passes",
        "false_fails",
        "false_pass_rate",
        "false_fail_rate",
        "cost",
    ]
    assert list(out["band"]) == ["low", "high", "review_share"]
    assert list(out["bootstrap"]) == ["n", "seed", "single"]
    assert list(out["bootstrap"]["single"]) == [
        "false_pass_rate",
        "false_fail_rate",
        "other_cutoff_share",
        "cutoff_interval",
    ]
    assert list(out["slices"]["a"]) == ["pairs", "acceptable", "unacceptable", "single", "band", "band_note"]
    json.dumps(out, allow_nan=False)


def test_json_without_options_has_exactly_the_contract_keys():
    assert list(run(SEVEN)) == CONTRACT_KEYS


# --------------------------------------------------------------------------- refusals
def test_no_scored_pair_is_nothing_to_calibrate():
    with pytest.raises(GoldensetError, match="nothing to calibrate") as exc:
        calibrate([], scorer="s", version="v", errors=[ErrorPair("q", "d", "timed out")])
    assert exc.value.exit_code == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"costs": None, "against": "agents"}, "--against 'agents' is not known"),
        ({"bootstrap_n": 0}, "--bootstrap 0 is not a number of resamples"),
        ({"seed": -1}, "--seed -1 is not a seed"),
    ],
)
def test_bad_options_are_usage_errors(kwargs, message):
    with pytest.raises(UsageError, match=message):
        calibrate(SEVEN, scorer="s", version="v", **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_false_pass": 1.5}, "--max-false-pass 1.5 is not a rate"),
        ({"max_false_fail": -0.1}, "--max-false-fail -0.1 is not a rate"),
        ({"cost_ratio": -1.0}, "--cost-ratio -1.0 is not a cost ratio"),
    ],
)
def test_bad_costs_are_usage_errors(kwargs, message):
    with pytest.raises(UsageError, match=message):
        Costs(**kwargs)


def test_a_non_finite_score_is_refused_as_input():
    with pytest.raises(InputError, match="has score nan"):
        calibrate([pair(float("nan"), True)], scorer="s", version="v")


# --------------------------------------------------------------------------- plot
def test_plot_marks_the_rates_the_single_cutoff_and_the_band(tmp_path):
    cal = calibrate(SEVEN, scorer="dense", version="v1")
    path = plot_rates(cal, tmp_path / "out" / "rates.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    fig = rates_figure(cal)
    ax = fig.axes[0]
    assert "cutoff" in ax.get_xlabel() and ax.get_ylabel() == "rate"
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels[0].startswith("false-pass rate") and labels[1].startswith("false-fail rate")
    assert labels[2] == "single cutoff 0.4 (cost 2)"
    assert labels[3].startswith("review band [0.2, 0.7)")


# --------------------------------------------------------------------------- policy
def _policy(pairs=SEVEN, **kw):
    cal = calibrate(pairs, scorer="dense", version="v1", **kw)
    return policy_manifest(cal, config={"model": "m"}, build_id=7, created_at=datetime(2026, 12, 1, 10, 0))


def test_policy_manifest_records_what_was_chosen_and_on_what(tmp_path):
    m = _policy(bootstrap_n=50)
    assert list(m) == [
        "policy_version",
        "scorer",
        "version",
        "config",
        "against",
        "cutoffs",
        "costs",
        "chosen_on",
        "rates",
        "bootstrap",
        "created_at",
    ]
    assert m["policy_version"] == 1
    assert (m["scorer"], m["version"], m["config"]) == ("dense", "v1", {"model": "m"})
    assert m["cutoffs"] == {"single": 0.4, "band": {"low": 0.2, "high": 0.7}, "high": 0.7, "low": 0.2}
    assert m["costs"] == {"cost_ratio": 1.0, "max_false_pass": 0.05, "max_false_fail": 0.05}
    assert m["chosen_on"] == {
        "build_id": 7,
        "pairs": 7,
        "acceptable": 4,
        "unacceptable": 3,
        "errors": 0,
        "holdout_after": None,
    }
    assert m["created_at"] == "2026-12-01T10:00:00Z"
    assert read_policy(write_policy(m, tmp_path / "p.json")) == m


def test_a_policy_holds_on_the_pairs_it_was_chosen_on():
    check = check_policy(_policy(bootstrap_n=50), SEVEN, scorer_version="v1")
    assert check.holds
    assert [i.name for i in check.checks] == [
        "false_pass_rate_at_high",
        "false_fail_rate_at_low",
        "false_pass_rate_at_single",
        "false_fail_rate_at_single",
        "scorer_version",
    ]
    assert check_to_json(check)["holds"] is True


def test_a_policy_stops_holding_when_todays_pairs_pass_unacceptable_ones_above_high():
    # Stored high = 0.7. Today one of two unacceptable pairs scores 0.8: false-pass rate 0.5 > 0.05.
    today = numbered([(0.8, False), (0.1, False), (0.75, True), (0.3, True)])
    check = check_policy(_policy(), today)
    assert not check.holds
    failed = [(i.name, i.measured, i.limit) for i in check.checks if not i.holds]
    assert failed == [("false_pass_rate_at_high", 0.5, 0.05)]


def test_a_policy_holds_when_a_rate_equals_its_limit():
    # A = 0.5 stored; today one of two unacceptable pairs passes the stored high 0.7: exactly 0.5.
    pairs = numbered([(0.1, False), (0.9, True), (0.7, True)])
    policy = _policy(pairs, costs=Costs(max_false_pass=0.5, max_false_fail=0.5))
    today = numbered([(0.8, False), (0.1, False), (0.75, True)])
    check = check_policy(policy, today)
    assert (check.checks[0].name, check.checks[0].measured, check.checks[0].holds) == (
        "false_pass_rate_at_high",
        0.5,
        True,
    )


def test_a_policy_does_not_hold_for_another_scorer_version():
    check = check_policy(_policy(), SEVEN, scorer_version="v2")
    assert not check.holds
    assert [i.name for i in check.checks if not i.holds] == ["scorer_version"]


def test_a_policy_of_another_version_is_refused(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({**_policy(), "policy_version": 99}))
    with pytest.raises(InputError, match="policy_version is 99, this goldenset reads 1"):
        read_policy(path)
    with pytest.raises(InputError, match="does not exist"):
        read_policy(tmp_path / "missing.json")


# --------------------------------------------------------------------------- properties
pairs_strategy = st.lists(
    st.tuples(st.integers(0, 20).map(lambda i: i / 20), st.booleans()),
    min_size=1,
    max_size=40,
).map(numbered)


@given(pairs_strategy)
def test_rates_are_monotone_in_the_cutoff(pairs):
    rows = calibrate(pairs, scorer="s", version="v").measurement.cutoffs
    fprs = [r.false_pass_rate for r in rows]
    ffrs = [r.false_fail_rate for r in rows]
    assert fprs == sorted(fprs, reverse=True)
    assert ffrs == sorted(ffrs)
    assert len(rows) == len({p.score for p in pairs}) + 1
    assert rows[-1].cutoff is None and rows[0].false_fail_rate == 0.0


@given(pairs_strategy, st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.7]))
def test_single_costs_no_more_than_any_cutoff_and_is_the_highest_such(pairs, r):
    m = calibrate(pairs, scorer="s", version="v", costs=Costs(cost_ratio=r)).measurement
    costs = [round(r * x.false_passes + x.false_fails, 9) for x in m.cutoffs]
    best = round(r * m.single.row.false_passes + m.single.row.false_fails, 9)
    assert best == min(costs)
    assert m.cutoffs.index(m.single.row) == max(i for i, c in enumerate(costs) if c == best)


@given(pairs_strategy, st.sampled_from([0.0, 0.1, 0.3]), st.sampled_from([0.0, 0.1, 0.3]))
def test_band_share_counts_the_pairs_between_low_and_high(pairs, a, b):
    m = calibrate(pairs, scorer="s", version="v", costs=Costs(max_false_pass=a, max_false_fail=b)).measurement
    assert m.high.false_pass_rate <= a
    assert m.low is not None and m.low.false_fail_rate <= b
    if m.band is None:
        assert m.band_note == NO_BAND_NEEDED
        assert m.high.cutoff is not None and m.low.cutoff >= m.high.cutoff
    else:
        inside = [p for p in pairs if p.score >= m.band.low and (m.band.high is None or p.score < m.band.high)]
        assert m.band.review == len(inside) and m.band.review_share == len(inside) / len(pairs)
