"""`goldenset calibrate` end to end: real builds with human labels (world.py), every figure worked out by hand.

Most tests score with `score_plugins:table`, whose scores are fixed per passage
(world.SCORES), so each expected value below is counted from the table in world.py.
The SEVEN pairs, as the build orders them (query_id, doc_id; Q2 = 30ee..., Q1 = 3c83...):

    pair      d5   d6   d7   d1   d2   d3   d4
    project   auth auth auth bill bill bill bill
    score     0.5  0.6  0.7  0.1  0.2  0.3  0.4
    label     rel  irr  rel  irr  rel  irr  part   (acceptable: rel, part)
"""

from __future__ import annotations

import json
import math
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import numpy as np
import pytest
from judge_stub import Reply, good, passage_of
from world import (
    CONTRACT_KEYS,
    Q1,
    Q2,
    RUBRIC,
    SEVEN,
    TEXT,
    append_labels,
    label_line,
    rebuild,
    scorer_config,
    seven_lines,
)

from goldenset_dagster.cli import main
from tests.helpers import db_rows

TABLE = "score_plugins:table"


def row(cutoff, fp, ff, fpr, ffr):
    return {"cutoff": cutoff, "false_passes": fp, "false_fails": ff, "false_pass_rate": fpr, "false_fail_rate": ffr}


# SEVEN by hand. A pair passes at c when score >= c; 3 unacceptable (0.1, 0.3, 0.6), 4 acceptable.
SEVEN_CUTOFFS = [
    row(0.1, 3, 0, 1.0, 0.0),
    row(0.2, 2, 0, 0.6667, 0.0),  # 0.3 and 0.6 pass
    row(0.3, 2, 1, 0.6667, 0.25),  # 0.2 fails
    row(0.4, 1, 1, 0.3333, 0.25),  # 0.6 passes, 0.2 fails
    row(0.5, 1, 2, 0.3333, 0.5),  # 0.2, 0.4 fail
    row(0.6, 1, 3, 0.3333, 0.75),
    row(0.7, 0, 3, 0.0, 0.75),
    row(None, 0, 4, 0.0, 1.0),
]


@pytest.fixture
def seven(tmp_path, worlds):
    """A build whose human labels are ana's on the SEVEN pairs."""
    return worlds(tmp_path / "w", seven_lines())


def run(capsys, world, *args, scorer=TABLE, config=None):
    extra = ["--scorer-config", config or scorer_config()] if scorer == TABLE else []
    code = main(["calibrate", "--scorer", scorer, *extra, *world.args(), *args])
    got = capsys.readouterr()
    return code, got.out, got.err


def run_json(capsys, world, *args, **kw):
    code, out, err = run(capsys, world, "--json", *args, **kw)
    assert code == 0, err
    return json.loads(out)


# --------------------------------------------------------------------------- the contract's object
@pytest.mark.slow
def test_json_is_the_contracts_object_with_hand_counted_cutoffs_single_and_band(capsys, seven):
    out = run_json(capsys, seven)
    # Costs (R = 1): 3, 2, 3, 2, 3, 4, 3, 4: 0.2 and 0.4 tie at 2, the higher wins.
    # Band: high = first false-pass rate <= 0.05: 0.7; low = last false-fail rate <= 0.05: 0.2;
    # review: 0.2 <= s < 0.7 holds 0.2, 0.3, 0.4, 0.5, 0.6 = 5 of 7.
    assert out == {
        "scorer": "table",
        "version": "1",
        "against": "human",
        "pairs": 7,
        "acceptable": 4,
        "unacceptable": 3,
        "errors": 0,
        "error_pairs": [],
        "cutoffs": SEVEN_CUTOFFS,
        "single": {**row(0.4, 1, 1, 0.3333, 0.25), "cost": 2},
        "band": {"low": 0.2, "high": 0.7, "review_share": 0.7143},
        "band_note": None,
    }
    assert list(out) == CONTRACT_KEYS


@pytest.mark.slow
def test_the_cost_ratio_moves_the_single_cutoff(capsys, seven):
    # R = 2: 6, 4, 5, 3, 4, 5, 3, 4: 0.4 and 0.7 tie at 3, the higher wins.
    assert run_json(capsys, seven, "--cost-ratio", "2")["single"] == {**row(0.7, 0, 3, 0.0, 0.75), "cost": 3}
    # R = 0.5: 1.5, 1, 2, 1.5, 2.5, 3.5, 3, 4: 0.2 alone, at exactly 1.
    assert run_json(capsys, seven, "--cost-ratio", "0.5")["single"] == {**row(0.2, 2, 0, 0.6667, 0.0), "cost": 1}


def test_the_rate_limits_move_the_band_or_make_it_unneeded(capsys, seven):
    # A = 0.34: high = 0.4 (1/3 <= 0.34); B = 0: low = 0.2. Review: 0.2, 0.3 = 2 of 7.
    out = run_json(capsys, seven, "--max-false-pass", "0.34", "--max-false-fail", "0")
    assert (out["band"], out["band_note"]) == ({"low": 0.2, "high": 0.4, "review_share": 0.2857}, None)
    # B = 0.25: low = 0.4 (1/4 <= 0.25), which reaches high 0.4: no band needed.
    out = run_json(capsys, seven, "--max-false-pass", "0.34", "--max-false-fail", "0.25")
    assert (out["band"], out["band_note"]) == (None, "no band needed")


def test_against_the_log_uses_log_labels_acceptable_when_helped(capsys, seven):
    # Log rows: r1 helped 0.9, r2 noise 0.15, a1 helped 0.45, a2 wrong 0.65, r3 helped 0.55.
    out = run_json(capsys, seven, "--against", "log")
    assert (out["against"], out["pairs"], out["acceptable"], out["unacceptable"]) == ("log", 5, 3, 2)
    assert out["cutoffs"] == [
        row(0.15, 2, 0, 1.0, 0.0),
        row(0.45, 1, 0, 0.5, 0.0),
        row(0.55, 1, 1, 0.5, 0.3333),
        row(0.65, 1, 2, 0.5, 0.6667),
        row(0.9, 0, 2, 0.0, 0.6667),
        row(None, 0, 3, 0.0, 1.0),
    ]
    # Costs 2, 1, 2, 3, 2, 3. Band: high 0.9, low 0.45: 0.45, 0.55, 0.65 = 3 of 5.
    assert out["single"] == {**row(0.45, 1, 0, 0.5, 0.0), "cost": 1}
    assert out["band"] == {"low": 0.45, "high": 0.9, "review_share": 0.6}


# --------------------------------------------------------------------------- bootstrap
def half_up(x) -> float:
    """4 decimals, half away from zero, on the decimal the float prints as (the contract's rounding)."""
    return float(Decimal(repr(float(x))).quantize(Decimal("0.0001"), rounding=ROUND_HALF_UP))


def _single_by_hand(scores, acc):
    best, best_cost = None, None
    for c in sorted(set(scores)) + [None]:
        fp = sum(1 for s, a in zip(scores, acc, strict=True) if not a and c is not None and s >= c)
        ff = sum(1 for s, a in zip(scores, acc, strict=True) if a and (c is None or s < c))
        if best_cost is None or fp + ff <= best_cost:
            best, best_cost = c, fp + ff
    return best


def test_bootstrap_draws_with_default_rng_over_the_pairs_in_build_order(capsys, seven):
    n_resamples, seed = 40, 5
    ordered = sorted(SEVEN, key=lambda p: (p[0], p[1]))
    scores = [s for _, _, _, s in ordered]
    acc = [lab != "irrelevant" for _, _, lab, _ in ordered]
    idx = np.random.default_rng(seed).integers(0, 7, size=(n_resamples, 7))
    fprs, ffrs, own = [], [], []
    for draw in idx:
        s, a = [scores[i] for i in draw], [acc[i] for i in draw]
        n_u, n_a = a.count(False), a.count(True)
        fprs.append(sum(1 for x, y in zip(s, a, strict=True) if not y and x >= 0.4) / n_u if n_u else 0.0)
        ffrs.append(sum(1 for x, y in zip(s, a, strict=True) if y and x < 0.4) / n_a if n_a else 0.0)
        own.append(_single_by_hand(s, a))
    q = [2.5, 25, 50, 75, 97.5]
    by_size = sorted(own, key=lambda c: math.inf if c is None else c)

    out = run_json(capsys, seven, "--bootstrap", str(n_resamples), "--seed", str(seed))
    assert out["bootstrap"] == {
        "n": n_resamples,
        "seed": seed,
        "single": {
            "false_pass_rate": [half_up(x) for x in np.percentile(fprs, q)],
            "false_fail_rate": [half_up(x) for x in np.percentile(ffrs, q)],
            "other_cutoff_share": half_up(sum(1 for c in own if c != 0.4) / n_resamples),
            "cutoff_interval": [by_size[math.floor(0.025 * 39)], by_size[math.ceil(0.975 * 39)]],
        },
    }
    assert list(out) == [*CONTRACT_KEYS, "bootstrap"]


# --------------------------------------------------------------------------- slices
def test_slices_are_chosen_per_project_and_summarised_at_the_global_cutoff(capsys, seven):
    out = run_json(capsys, seven, "--by", "project")
    # billing 0.1 irr, 0.2 rel, 0.3 irr, 0.4 part: costs 2, 1, 2, 1, 2 -> 0.4; band [0.2, 0.4): 2 of 4.
    # auth 0.5 rel, 0.6 irr, 0.7 rel: costs 1, 2, 1, 2 -> 0.7; band [0.5, 0.7): 2 of 3.
    assert out["slices"] == {
        "auth": {
            "pairs": 3,
            "acceptable": 2,
            "unacceptable": 1,
            "single": {**row(0.7, 0, 1, 0.0, 0.5), "cost": 1},
            "band": {"low": 0.5, "high": 0.7, "review_share": 0.6667},
            "band_note": None,
        },
        "billing": {
            "pairs": 4,
            "acceptable": 2,
            "unacceptable": 2,
            "single": {**row(0.4, 0, 1, 0.0, 0.5), "cost": 1},
            "band": {"low": 0.2, "high": 0.4, "review_share": 0.5},
            "band_note": None,
        },
    }
    # At the global 0.4: billing fp 0/2, ff 1/2 (0.2); auth fp 1/1 (0.6), ff 0/2.
    # Traffic: accepted serves billing 2 (s1, s3), auth 1 (s2).
    assert out["slice_summary"] == {
        "cutoff": 0.4,
        "weights": "traffic",
        "macro": {"false_pass_rate": 0.5, "false_fail_rate": 0.25},
        "traffic_weighted": {"false_pass_rate": 0.3333, "false_fail_rate": 0.3333},
        "by_slice": {
            "auth": {"false_pass_rate": 1.0, "false_fail_rate": 0.0},
            "billing": {"false_pass_rate": 0.0, "false_fail_rate": 0.5},
        },
    }
    assert out["warnings"] == []


@pytest.mark.slow
def test_a_slice_whose_own_cutoff_is_outside_the_global_interval_is_warned_about(tmp_path, capsys, worlds):
    # billing: 8 irrelevant at 0.10 .. 0.17, 8 relevant at 0.60 .. 0.67 -> its own cutoff 0.6.
    # auth: irrelevant 0.85, relevant 0.95 and 0.96 -> its own cutoff 0.95. Globally 0.6 costs 1
    # (the 0.85 passes) and 0.95 costs 8: a resample chooses 0.95 only when it draws the 0.85 more
    # often than billing's relevant pairs, far rarer than 2.5% of resamples.
    billing = [(Q1, d, 0.10 + i / 100) for i, d in enumerate(("d1", "d2", "d3", "d4", "b1", "b2", "b3", "b4"))]
    relevant = [(Q1, d, 0.60 + i / 100) for i, d in enumerate(("p1", "p2", "p3", "d9", "b5", "b6", "b7", "b8"))]
    auth = [(Q2, "d5", 0.85), (Q2, "d6", 0.95), (Q2, "d7", 0.96)]
    lines = [label_line(q, d, "irrelevant", "2026-11-29T09:00:00Z") for q, d, _ in billing + auth[:1]]
    lines += [label_line(q, d, "relevant", "2026-11-29T09:00:00Z") for q, d, _ in relevant + auth[1:]]
    world = worlds(tmp_path / "w", lines)
    config = scorer_config({d: s for _, d, s in billing + relevant + auth})
    code, out, err = run(capsys, world, "--by", "project", "--bootstrap", "400", "--seed", "1", config=config)
    assert code == 0, err
    warnings = [line for line in err.splitlines() if line.startswith("WARNING:")]
    assert len(warnings) == 1
    assert warnings[0].startswith(
        "WARNING: slice 'auth': its own single cutoff 0.95 lies outside the global cutoff's bootstrap interval [0.6"
    )


# --------------------------------------------------------------------------- holdout and repeats
@pytest.mark.slow
def test_holdout_chooses_on_earlier_labels_and_measures_the_later_ones(tmp_path, capsys, worlds):
    # billing labelled on 2026-11-10, auth on 2026-11-20; split at 2026-11-15.
    world = worlds(tmp_path / "w", seven_lines(lambda i: "2026-11-10T09:00:00Z" if i < 4 else "2026-11-20T09:00:00Z"))
    out = run_json(capsys, world, "--holdout-after", "2026-11-15")
    # Chosen on billing alone (see the slices test): 0.4, band [0.2, 0.4).
    assert (out["pairs"], out["single"]["cutoff"], out["band"]) == (
        4,
        0.4,
        {"low": 0.2, "high": 0.4, "review_share": 0.5},
    )
    # On auth at 0.4: the irrelevant 0.6 passes (1 of 1), both relevant pass; none is in [0.2, 0.4).
    assert out["holdout"] == {
        "after": "2026-11-15",
        "chosen_on": 4,
        "undated": 0,
        "pairs": 3,
        "acceptable": 2,
        "unacceptable": 1,
        "single": {**row(0.4, 1, 0, 1.0, 0.0), "cost": 1},
        "band": {"low": 0.2, "high": 0.4, "review_share": 0.0},
    }


def test_repeats_calibrate_on_the_mean_and_send_crossing_pairs_to_review(capsys, seven):
    # d5 scores 0.25, 0.75, 0.5 (mean 0.5: SEVEN again); every other pair scores the same each time.
    table = {d: s for _, d, _, s in SEVEN} | {"d5": [0.25, 0.75, 0.5]}
    out = run_json(capsys, seven, "--repeats", "3", config=scorer_config(table))
    assert out["cutoffs"] == SEVEN_CUTOFFS
    rep = out["repeats"]
    assert (rep["n"], rep["unstable"]) == (3, 1)
    by_doc = {r["doc_id"]: r for r in rep["pairs"]}
    # single 0.4: 0.75 and 0.5 pass; low 0.2: all three; high 0.7: only 0.75.
    assert by_doc["d5"] == {
        "query_id": Q2,
        "doc_id": "d5",
        "mean": 0.5,
        "min": 0.25,
        "max": 0.75,
        "passes": {"single": 2, "low": 3, "high": 1},
        "of": 3,
        "unstable": True,
    }
    assert [d for d, r in by_doc.items() if r["unstable"]] == ["d5"]
    assert len(by_doc) == 7


# --------------------------------------------------------------------------- errors
@pytest.mark.slow
def test_a_pair_the_scorer_fails_on_is_an_error_pair_never_a_score(tmp_path, capsys, worlds):
    # d8 is labelled relevant, but the table has no score for it: the plug-in raises KeyError.
    world = worlds(tmp_path / "w", seven_lines() + [label_line(Q2, "d8", "relevant", "2026-11-29T09:01:00Z")])
    out = run_json(capsys, world)
    assert (out["pairs"], out["acceptable"], out["errors"]) == (7, 4, 1)
    assert [(e["query_id"], e["doc_id"]) for e in out["error_pairs"]] == [(Q2, "d8")]
    assert out["error_pairs"][0]["reason"].startswith("raised KeyError: ")
    assert out["cutoffs"] == SEVEN_CUTOFFS


def test_nothing_to_calibrate_without_a_human_label(tmp_path, capsys, worlds):
    world = worlds(tmp_path / "w")
    code, out, err = run(capsys, world, "--json")
    assert (code, out) == (1, "")
    assert err == (
        "Error: nothing to calibrate: the latest build (1) has no golden_set row with source human; "
        "label pairs (goldenset pool, then goldenset label serve) and build again\n"
    )


def test_nothing_to_calibrate_when_no_pair_gets_a_score(tmp_path, capsys, worlds):
    world = worlds(tmp_path / "w", [label_line(Q2, "d8", "relevant", "2026-11-29T09:01:00Z")])
    code, out, err = run(capsys, world, "--json")
    assert (code, out) == (1, "")
    assert err.startswith(
        "Error: nothing to calibrate: none of the 1 human pair got a score (the first error: raised KeyError"
    )
    assert err.count("\n") == 1


# --------------------------------------------------------------------------- refusals
def test_an_unknown_scorer_is_wrong_usage(capsys, seven):
    code, out, err = run(capsys, seven, scorer="cosine")
    assert code == 2
    assert err == "Error: --scorer 'cosine' is not known; use dense, bm25, judge or module:factory\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--by", "team"], "--by 'team' is not known; use --by project"),
        (["--holdout-after", "2026-13-01"], "--holdout-after '2026-13-01' is not a date; use YYYY-MM-DD"),
        (["--scorer-config", "[1]"], "--scorer-config '[1]' is not a JSON object"),
        (["--max-false-pass", "1.5"], "--max-false-pass 1.5 is not a rate"),
        (["--repeats", "0"], "--repeats 0 is not a number of repeats"),
        (["--judge-url", "http://127.0.0.1:9"], "--judge-url and --judge-model are for --scorer judge"),
    ],
)
def test_bad_options_are_wrong_usage(capsys, seven, args, message):
    code = main(["calibrate", "--scorer", TABLE, *seven.args(), *args])
    assert code == 2
    assert capsys.readouterr().err.startswith(f"Error: {message}")


def test_calibrate_without_a_scorer_or_a_policy_says_which_to_pass(capsys, seven):
    assert main(["calibrate", *seven.args()]) == 2
    assert capsys.readouterr().err == (
        "Error: pass --scorer S (dense, bm25, judge or module:factory) to calibrate, "
        "or --check POLICY to re-measure a stored policy\n"
    )


def test_calibrate_before_any_build_says_to_build(capsys, tmp_path):
    assert main(["calibrate", "--scorer", "dense", "--db", str(tmp_path / "none.duckdb")]) == 1
    assert capsys.readouterr().err == (
        f"Error: no warehouse at --db {tmp_path / 'none.duckdb'}: run `goldenset build` first\n"
    )
    assert not (tmp_path / "none.duckdb").exists()


def test_a_dense_model_that_cannot_load_is_one_line_and_exit_1(capsys, seven, monkeypatch, tmp_path):
    monkeypatch.setenv("GOLDENSET_DENSE_MODEL", str(tmp_path / "no-model"))
    code, out, err = run(capsys, seven, scorer="dense")
    assert code == 1
    assert err == (
        f"Error: dense model '{tmp_path / 'no-model'}' does not exist; set GOLDENSET_DENSE_MODEL to a "
        "sentence-transformers model directory or unset it to use the packaged model\n"
    )


def test_a_judge_nobody_listens_for_is_one_line_and_exit_1(capsys, seven, closed_port_url):
    code, out, err = run(
        capsys, seven, "--judge-url", closed_port_url, "--judge-model", "m", "--rubric", str(RUBRIC), scorer="judge"
    )
    assert code == 1
    assert err.startswith(f"Error: judge at {closed_port_url} is unreachable (ConnectError")
    assert err.count("\n") == 1


def test_a_judge_without_url_or_model_is_wrong_usage(capsys, seven):
    code, out, err = run(capsys, seven, scorer="judge")
    assert code == 2
    assert err.startswith("Error: --scorer judge needs --judge-url and --judge-model")


# --------------------------------------------------------------------------- the judge against the stub
@pytest.mark.slow
def test_calibrating_the_judge_keeps_invalid_answers_and_failures_apart(capsys, seven, judge_stub):
    text_of = {TEXT[d]: d for d in TEXT}
    span = {d: TEXT[d][:20] for d in TEXT}
    replies = {
        "d1": good(0),
        "d2": good(2, span=span["d2"]),
        "d3": good(1, span=span["d3"]),
        "d4": good(1, span=span["d4"]),
        "d5": good(2, span=span["d5"]),
        "d6": good(2, span="refunds within 99 days"),
        "d7": Reply(500, body='{"error": "overloaded"}'),
    }
    judge_stub.answer_by(lambda body: replies[text_of[passage_of(body)]])
    out = run_json(
        capsys,
        seven,
        "--judge-url",
        judge_stub.url,
        "--judge-model",
        "stub-model",
        "--rubric",
        str(RUBRIC),
        scorer="judge",
    )
    # Scored: d1 0 irr, d2 2 rel, d3 1 irr, d4 1 part, d5 2 rel. Cutoffs 0, 1, 2, null:
    # fp 2, 1, 0, 0; ff 0, 0, 1, 3; costs 2, 1, 1, 3: 1 and 2 tie, 2 wins.
    assert (out["scorer"], out["pairs"], out["acceptable"], out["unacceptable"]) == ("judge", 5, 3, 2)
    assert out["version"] == "judge-prompt-v1"
    assert out["cutoffs"] == [
        row(0.0, 2, 0, 1.0, 0.0),
        row(1.0, 1, 0, 0.5, 0.0),
        row(2.0, 0, 1, 0.0, 0.3333),
        row(None, 0, 3, 0.0, 1.0),
    ]
    assert out["single"] == {**row(2.0, 0, 1, 0.0, 0.3333), "cost": 1}
    assert out["band"] == {"low": 1.0, "high": 2.0, "review_share": 0.4}  # d3, d4 of 5
    reasons = {e["doc_id"]: e["reason"] for e in out["error_pairs"]}
    assert reasons["d6"] == "invalid answer: hallucinated_span"
    assert (
        reasons["d7"].startswith("raised ScorerError: judge at ")
        and "failed after 3 attempt(s): HTTP 500" in reasons["d7"]
    )
    assert out["errors"] == 2
    user = judge_stub.requests[0].body["messages"][1]["content"]
    assert user.startswith("The system being tested: A support-agent-facing assistant")
    assert "Judge as of 2026-08-01" in user


def test_a_judge_policy_is_rechecked_with_the_judge_it_stored(capsys, seven, judge_stub, tmp_path):
    text_of = {TEXT[d]: d for d in TEXT}
    grade = {"d1": 0, "d2": 2, "d3": 0, "d4": 1, "d5": 2, "d6": 0, "d7": 2}  # agrees with ana everywhere
    judge_stub.answer_by(
        lambda body: good(
            g := grade[text_of[passage_of(body)]], "Says so.", TEXT[text_of[passage_of(body)]][:12] if g else ""
        )
    )
    path = tmp_path / "judge-policy.json"
    code, out, err = run(
        capsys,
        seven,
        "--judge-url",
        judge_stub.url,
        "--judge-model",
        "stub-model",
        "--rubric",
        str(RUBRIC),
        "--policy",
        str(path),
        scorer="judge",
    )
    assert code == 0, err
    policy = json.loads(path.read_text())
    assert policy["config"] == {
        "url": judge_stub.url,
        "model": "stub-model",
        "as_of": "2026-08-01",
        "task": policy["config"]["task"],
    }
    assert policy["config"]["task"].startswith("A support-agent-facing assistant")
    asked = len(judge_stub.requests)
    assert main(["calibrate", "--check", str(path), *seven.args(), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["holds"] is True
    assert len(judge_stub.requests) == asked  # the same judge, so every answer came from the cache


def test_bm25_scores_over_the_builds_snapshot_and_a_passage_without_a_query_token_scores_0(capsys, seven):
    # Q1's words (long, refund, window) are in no passage ("refunds" is another token: no stemming),
    # so d1 .. d4 score 0; every Q2 passage holds "tokens" and "expire" once and is as long as
    # the others, so d5, d6, d7 share one score s > 0.
    out = run_json(capsys, seven, scorer="bm25")
    (zero, s, none) = [c["cutoff"] for c in out["cutoffs"]]
    assert (zero, none) == (0.0, None) and s > 0
    assert [(c["false_passes"], c["false_fails"]) for c in out["cutoffs"]] == [(3, 0), (1, 2), (0, 4)]
    fingerprints = db_rows(
        seven.db,
        "SELECT DISTINCT s.corpus_fingerprint = b.corpus_fingerprint FROM score_cache s, "
        "golden_builds b WHERE s.scorer = 'bm25' AND b.build_id = 2",
    )
    assert fingerprints == [(True,)]


# --------------------------------------------------------------------------- readable output and the plot
def test_the_table_shows_the_chosen_cutoffs_band_bootstrap_slices_and_errors(tmp_path, capsys, worlds):
    world = worlds(tmp_path / "w", seven_lines() + [label_line(Q2, "d8", "relevant", "2026-11-29T09:01:00Z")])
    code, out, err = run(capsys, world, "--bootstrap", "20", "--by", "project")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == (
        "table 1 against human labels of build 2: 7 pairs scored (4 acceptable, 3 unacceptable), 1 error"
    )
    cells = {tuple(c.strip() for c in line.strip("│┃").split("│")) for line in lines if line.startswith("│")}
    assert ("0.2", "2", "0", "0.6667", "0.0000", "2", "low") in cells
    assert ("0.4", "1", "1", "0.3333", "0.2500", "2", "single") in cells
    assert ("0.7", "0", "3", "0.0000", "0.7500", "3", "high") in cells
    assert ("none passes", "0", "4", "0.0000", "1.0000", "4", "") in cells
    assert (
        "single cutoff 0.4: cost 2 (R 1 x 1 false pass + 1 false fail); false-pass rate 33.3% (1 of 3), "
        "false-fail rate 25.0% (1 of 4)"
    ) in lines
    assert (
        "review band [0.2, 0.7): 5 of 7 pairs (71.4%) go to review; pass at >= 0.7, fail below 0.2 (A 0.05, B 0.05)"
    ) in lines
    assert any(line.startswith("bootstrap, 20 resamples (seed 0)") for line in lines)
    assert any(c[0] == "false-pass" and len(c) == 6 for c in cells)
    assert any(c[:5] == ("billing", "4", "2", "2", "0.4") for c in cells)
    assert any(c[:2] == (Q2, "d8") and c[2].startswith("raised KeyError") for c in cells)
    assert any(line.startswith("at the global single cutoff 0.4: macro false-pass 50.0%") for line in lines)


def test_the_table_reports_the_holdout_and_the_unstable_pairs(tmp_path, capsys, worlds):
    world = worlds(tmp_path / "w", seven_lines(lambda i: "2026-11-10T09:00:00Z" if i < 4 else "2026-11-20T09:00:00Z"))
    table = {d: s for _, d, _, s in SEVEN} | {"d2": [0.1, 0.3, 0.2]}  # mean 0.2, on both sides of 0.2
    code, out, err = run(capsys, world, "--holdout-after", "2026-11-15", "--repeats", "3", config=scorer_config(table))
    assert code == 0, err
    lines = out.splitlines()
    assert (
        "holdout: chosen on 4 pairs labelled before 2026-11-15 (0 undated left out); on the 3 labelled from "
        "then on, the single cutoff 0.4 has false-pass rate 100.0% (1 of 1), false-fail rate 0.0% (0 of 2), "
        "and 0 of them (0.0%) fall in the band"
    ) in lines
    assert (
        "repeats: 3 scores per pair, calibrated on the mean; 1 unstable pair (repeats on both sides of a "
        "chosen cutoff) goes to review"
    ) in lines
    cells = [tuple(c.strip() for c in line.strip("│").split("│")) for line in lines if line.startswith("│")]
    # d2 at 0.1, 0.3, 0.2: the single cutoff 0.4 passes none, the low 0.2 two, the high 0.4 none.
    assert (Q1, "d2", "0.2", "0.1-0.3", "0", "2", "0", "yes") in cells
    assert (Q1, "d4", "0.4", "0.4-0.4", "3", "3", "3", "") in cells


def test_the_plot_goes_under_reports_by_default_and_its_path_is_printed(capsys, seven, isolated_home):
    code, out, err = run(capsys, seven)
    assert code == 0, err
    (line,) = [x for x in out.splitlines() if x.startswith("plot: ")]
    path = Path(line.removeprefix("plot: "))
    assert path.parent == isolated_home / "reports" / "calibration"
    assert path.name.startswith("table-human-build2-") and path.suffix == ".png"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_with_json_the_plot_path_goes_to_stderr_and_stdout_is_the_object(capsys, seven, tmp_path):
    code, out, err = run(capsys, seven, "--json", "--plot", str(tmp_path / "p" / "rates.png"))
    assert code == 0
    assert json.loads(out)["pairs"] == 7
    assert err == f"plot: {tmp_path / 'p' / 'rates.png'}\nreport: {tmp_path / 'p' / 'rates.html'}\n"
    assert (tmp_path / "p" / "rates.png").read_bytes()[:4] == b"\x89PNG"


def test_the_report_is_written_beside_the_plot_as_markdown_and_one_html_page_with_the_plot_inline(
    tmp_path, capsys, worlds
):
    import base64
    import re

    world = worlds(tmp_path / "w", seven_lines() + [label_line(Q2, "d8", "relevant", "2026-11-29T09:01:00Z")])
    code, out, err = run(capsys, world, "--bootstrap", "20", "--by", "project", "--plot", str(tmp_path / "r" / "c.png"))
    assert code == 0, err
    assert f"report: {tmp_path / 'r' / 'c.html'}" in out.splitlines()
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == ["c.html", "c.md", "c.png"]
    md = (tmp_path / "r" / "c.md").read_text()
    # SEVEN by hand (the module's docstring): the chosen rows and the figures the terminal prints.
    assert "| 0.2 | 2 | 0 | 0.6667 | 0.0000 | 2 | low |" in md
    assert "| 0.4 | 1 | 1 | 0.3333 | 0.2500 | 2 | single |" in md
    assert "| 0.7 | 0 | 3 | 0.0000 | 0.7500 | 3 | high |" in md
    assert "| none passes | 0 | 4 | 0.0000 | 1.0000 | 4 |  |" in md
    assert "**Review band [0.2, 0.7)**: 5 of 7 pairs (71.4%) go to review (A 0.05, B 0.05)." in md
    assert "![false-pass and false-fail rates against the cutoff](c.png)" in md
    page = (tmp_path / "r" / "c.html").read_text()
    cells = [
        tuple(re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td>(.*?)</td>", row, re.S))
        for row in re.findall(r"<tr>(.*?)</tr>", page, re.S)
        if "<td>" in row
    ]
    assert ("0.4", "1", "1", "0.3333", "0.2500", "2", "single") in cells
    assert any(c[:5] == ("billing", "4", "2", "2", "0.4") for c in cells)  # the slices table
    assert any(c[0] == "false-pass" and len(c) == 6 for c in cells)  # the bootstrap table
    assert any(c[:2] == (Q2, "d8") and c[2].startswith("raised KeyError") for c in cells)  # the error pairs
    # The plot is inline, byte for byte the PNG beside it; nothing refers to another file.
    (src,) = re.findall(r'<img src="([^"]*)"', page)
    assert src == "data:image/png;base64," + base64.b64encode((tmp_path / "r" / "c.png").read_bytes()).decode()
    assert not re.search(r'(?:src|href)="(?!data:)', page)


# --------------------------------------------------------------------------- policy and --check
def _policy(capsys, world, path: Path, *args):
    code, out, err = run(capsys, world, "--policy", str(path), *args)
    assert code == 0, err
    assert f"policy: {path}" in out.splitlines()
    return json.loads(path.read_text())


def test_the_policy_manifest_records_the_scorer_cutoffs_costs_and_build(capsys, seven, tmp_path):
    policy = _policy(capsys, seven, tmp_path / "policy.json")
    assert (policy["policy_version"], policy["scorer"], policy["version"], policy["against"]) == (
        1,
        "table",
        "1",
        "human",
    )
    assert policy["config"] == {"factory": TABLE, "options": json.loads(scorer_config())}
    assert policy["cutoffs"] == {"single": 0.4, "band": {"low": 0.2, "high": 0.7}, "high": 0.7, "low": 0.2}
    assert policy["costs"] == {"cost_ratio": 1.0, "max_false_pass": 0.05, "max_false_fail": 0.05}
    assert policy["chosen_on"] == {
        "build_id": 2,
        "pairs": 7,
        "acceptable": 4,
        "unacceptable": 3,
        "errors": 0,
        "holdout_after": None,
    }
    assert policy["rates"] == {
        "single": {"false_pass_rate": 0.3333, "false_fail_rate": 0.25},
        "high": {"false_pass_rate": 0.0},
        "low": {"false_fail_rate": 0.0},
    }


def test_check_holds_on_the_labels_the_policy_was_chosen_on(capsys, seven, tmp_path):
    path = tmp_path / "policy.json"
    _policy(capsys, seven, path)
    code = main(["calibrate", "--check", str(path), *seven.args(), "--json"])
    got = capsys.readouterr()
    assert code == 0, got.err
    out = json.loads(got.out)
    assert (out["holds"], out["scorer"], out["version"], out["scorer_version"], out["build_id"]) == (
        True,
        "table",
        "1",
        "1",
        2,
    )
    assert [(c["name"], c["measured"], c["limit"], c["holds"]) for c in out["checks"][:2]] == [
        ("false_pass_rate_at_high", 0.0, 0.05, True),
        ("false_fail_rate_at_low", 0.0, 0.05, True),
    ]
    assert [c["name"] for c in out["checks"][2:]] == ["scorer_version", "scorer_config"]
    code = main(["calibrate", "--check", str(path), *seven.args()])
    assert code == 0
    assert capsys.readouterr().out.splitlines()[0] == (f"policy {path} (table 1, chosen on build 2) on build 2: holds")


def test_check_fails_once_todays_labels_pass_an_unacceptable_pair_above_high(capsys, seven, tmp_path):
    path = tmp_path / "policy.json"
    _policy(capsys, seven, path)
    # d9 (score 0.8) is labelled irrelevant: at the stored high 0.7, 1 of 4 unacceptable pairs passes.
    append_labels(seven.labels, [label_line(Q1, "d9", "irrelevant", "2026-11-30T09:00:00Z")], name="page-ben.jsonl")
    rebuild(seven)
    code = main(["calibrate", "--check", str(path), *seven.args(), "--json"])
    got = capsys.readouterr()
    assert code == 1
    out = json.loads(got.out)
    assert (out["holds"], out["build_id"], out["pairs"], out["unacceptable"]) == (False, 3, 8, 4)
    assert out["high"] == row(0.7, 1, 3, 0.25, 0.75)
    assert [(c["name"], c["measured"], c["holds"]) for c in out["checks"] if not c["holds"]] == [
        ("false_pass_rate_at_high", 0.25, False)
    ]
    assert got.err == (
        f"Error: policy {path} does not hold on build 3: false_pass_rate_at_high 0.2500 (limit "
        "0.0500); calibrate again and review the new cutoffs\n"
    )


def test_check_reports_a_scorer_version_other_than_the_policys(capsys, seven, tmp_path):
    path = tmp_path / "policy.json"
    policy = _policy(capsys, seven, path)
    path.write_text(json.dumps({**policy, "version": "0"}))
    code = main(["calibrate", "--check", str(path), *seven.args(), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1
    assert [(c["name"], c["measured"], c["limit"]) for c in out["checks"] if not c["holds"]] == [
        ("scorer_version", "1", "0")
    ]


def test_check_refuses_options_that_choose_a_new_policy(capsys, seven, tmp_path):
    code = main(
        ["calibrate", "--check", str(tmp_path / "p.json"), "--scorer", "dense", "--bootstrap", "5", *seven.args()]
    )
    assert code == 2
    assert capsys.readouterr().err == (
        "Error: --check re-measures the stored policy with its own scorer, cutoffs "
        "and costs; drop --scorer, --bootstrap\n"
    )


def test_check_of_a_missing_policy_file_says_which_file(capsys, seven, tmp_path):
    code = main(["calibrate", "--check", str(tmp_path / "p.json"), *seven.args()])
    assert code == 1
    assert capsys.readouterr().err == (
        f"Error: policy {tmp_path / 'p.json'} does not exist; pass the file `calibrate --policy` wrote\n"
    )


# --------------------------------------------------------------------------- dense, on the real model
@pytest.fixture(scope="module")
def model():
    """The packaged MiniLM, loaded once for the module; the CLI's dense scorer shares it."""
    from goldenset.scoring.scorers import shared_embedder

    embedder = shared_embedder()
    embedder.load()
    return embedder


@pytest.mark.slow
def test_dense_calibrates_the_cosines_of_the_packaged_model(capsys, seven, model):
    from world import Q1_TASK, Q2_TASK

    task = {Q1: Q1_TASK, Q2: Q2_TASK}
    vectors = model.embed([task[q] for q, *_ in SEVEN] + [TEXT[d] for _, d, *_ in SEVEN])
    cosines = sorted(
        {float(np.dot(vectors[i].astype(np.float64), vectors[i + 7].astype(np.float64))) for i in range(7)}
    )
    out = run_json(capsys, seven, scorer="dense")
    assert (out["scorer"], out["version"], out["pairs"], out["acceptable"]) == ("dense", "cosine-1", 7, 4)
    got = [c["cutoff"] for c in out["cutoffs"]]
    assert got[-1] is None
    assert got[:-1] == pytest.approx(cosines, abs=1e-5)
    # A second run reads every score back from the cache: the same object.
    assert run_json(capsys, seven, scorer="dense") == out
