"""Judge health over time (contract 13) with the stub judge, whose quality drops between two runs.

The world and ana's five labels are test_judge_gate.py's. Run 1: the judge agrees with ana on
her five pairs and gives a verbatim span on every relevant answer (kappa 1, no hallucinated
span). Run 2 (later lines): it calls ana's five pairs irrelevant (valid answers) and cites a
span that is not in the passage on the other seven (invalid, nothing written), so its
current labels on ana's pairs are all irrelevant:

    ana    rel rel part irr irr      judge (run 2)   irr irr irr irr irr
    po = 2/5; pe = (2/5)(5/5) = 2/5 (only irr is shared); kappa = (2/5 - 2/5) / (3/5) = 0

No audit was drawn: the gate reads the five shared pairs (not a random sample). Run 1's interval
is [1, 1] (Q2 alone has one label for both, no kappa: left out; Q1 alone and both have kappa 1);
run 2's is [0, 0] (Q1 alone: po 0, pe 0). Run 2's AC1: the labels used are rel, part, irr; pi =
2/10, 1/10, 7/10; pe1 = (0.16 + 0.09 + 0.21) / 2 = 0.23; AC1 = (0.4 - 0.23) / 0.77 = 17/77.

Its hallucinated-span rate goes from 0/12 to 7/12.
"""

from __future__ import annotations

import contextlib
import io
import json
from datetime import datetime
from pathlib import Path

import pytest
from judge_stub import JudgeStub, good, passage_of
from world import (
    ANA,
    DOC_OF,
    GRADE,
    JUDGE,
    TEXT,
    append_labels,
    copy_world,
    judge_label,
    label_line,
    rebuild,
    status_json,
)

from goldenset.labelling.judge_gate import JudgeGate
from goldenset.scoring.judge_health import judge_health, record_run
from goldenset.scoring.judge_label import JudgeLabelReport
from goldenset.warehouse import connect
from goldenset_dagster.cli import main
from tests.helpers import db_rows, isolated_settings

ANA_DOCS = {d for _, d in ANA}


def honest(body):
    doc = DOC_OF[passage_of(body)]
    grade = GRADE[{d: lab for (_, d), lab in JUDGE.items()}[doc]]
    if doc in ANA_DOCS:
        grade = GRADE[{d: lab for (_, d), lab in ANA.items()}[doc]]
    return good(grade, "As the rubric says.", TEXT[doc][:16] if grade else "")


def degraded(body):
    doc = DOC_OF[passage_of(body)]
    if doc in ANA_DOCS:
        return good(0, "Not about it.", "")
    return good(2, "It says so.", "a sentence the passage never had")


@pytest.fixture(scope="module")
def two_runs_template(tmp_path_factory, worlds):
    """A pool of 12 pairs, ana's five lines, run 1 (honest) and a build, run 2 (degraded) and a build.

    Made once per module (its own judge stub, the settings a test gets); `two_runs` copies it.
    """
    base = tmp_path_factory.mktemp("two-runs")
    world = worlds(base / "w", pooled=True)
    append_labels(world.labels, [label_line(q, d, lab, "2026-11-30T09:00:00Z") for (q, d), lab in ANA.items()])
    stub = JudgeStub().start()
    try:
        with isolated_settings(base / "home"), contextlib.redirect_stdout(io.StringIO()):
            stub.answer_by(honest)
            assert judge_label(world, stub.url, "--json") == 0
            rebuild(world, judge_gate=JudgeGate(min_pairs=5))
            first = gate_row(world)
            stub.answer_by(degraded)
            assert judge_label(world, stub.url, "--json", "--max-unusable", "0.9") == 0
            rebuild(world, judge_gate=JudgeGate(min_pairs=5))
    finally:
        stub.stop()
    return world, first


@pytest.fixture
def two_runs(tmp_path, two_runs_template):
    """This test's own copy of two_runs_template's world, and its gate row after run 1."""
    world, first = two_runs_template
    return copy_world(world, tmp_path / "w"), first


def gate_row(world):
    con = connect(world.db, read_only=True)
    try:
        return con.execute(
            "SELECT annotator, n, kappa, passed, kappa_lo, sample FROM build_judges "
            "WHERE build_id = (SELECT labels_build_id FROM golden_builds ORDER BY build_id DESC LIMIT 1)"
        ).fetchone()
    finally:
        con.close()


@pytest.mark.slow
def test_every_run_records_its_figures(two_runs):
    world, _ = two_runs
    rows = db_rows(
        world.db,
        "SELECT run_id, annotator, scorer_version, scored, answers, labels_written, invalid, errors, "
        "hallucinated_span_rate, unusable_share, incomplete, started_at <= finished_at FROM judge_runs ORDER BY run_id",
    )
    none = {"not_json": 0, "bad_score": 0, "long_rationale": 0, "hallucinated_span": 0, "no_label_for_grade": 0}
    assert [r[:6] for r in rows] == [
        (1, "qwen", "stub-model/prompt-1", 12, 12, 12),
        (2, "qwen", "stub-model/prompt-1", 12, 12, 5),
    ]
    assert json.loads(rows[0][6]) == none and json.loads(rows[1][6]) == {**none, "hallucinated_span": 7}
    assert rows[1][7:] == (0, pytest.approx(7 / 12), pytest.approx(7 / 12), False, True)
    assert rows[0][8:11] == (0.0, 0.0, False)


def test_a_judge_whose_kappa_falls_below_the_gate_is_held_back_at_the_next_build(two_runs):
    world, first = two_runs
    assert first == ("qwen", 5, 1.0, True, 1.0, "shared")
    assert gate_row(world) == ("qwen", 5, 0.0, False, 0.0, "shared")


def test_status_says_why_and_warns_of_kappa_rate_and_change(two_runs, capsys):
    world, _ = two_runs
    st = status_json(world, capsys)
    assert st["judges_held_back"][0]["annotator"] == "qwen"
    (health,) = st["judge_health"]
    assert health["runs"] == 2 and health["kappa"] == 0.0 and health["held_back"] is True
    assert (health["sample"], health["kappa_lo"], health["kappa_hi"], health["ac1"]) == ("shared", 0.0, 0.0, 0.2208)
    assert health["hallucinated_span_rate"] == 0.5833 and health["rate_change"] == 0.5833
    assert health["warnings"] == [
        "judge qwen: no audit drawn yet, so the gate read the 5 pairs it shares with humans (2 queries), not a "
        "random sample; draw one (goldenset pool --audit 40) and label its pairs",
        "judge qwen: kappa 0.0000 (95% interval 0.0000 to 0.0000) on 5 shared pairs of 2 queries, not a random "
        "sample (agreement 40.0% at chance 40.0%, relevant share 60.0%, AC1 0.2208): its lower bound is below "
        "the gate's 0.6; its labels are held back from the golden set",
        "judge qwen: 58.3% hallucinated spans in run 2 (above 5%)",
        "judge qwen: hallucinated-span rate moved +58.3% since its previous run (0.0% to 58.3%; more than 5%)",
    ]
    assert main(["status", "--db", str(world.db)]) == 0
    text = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert "judge health WARN judge qwen: 58.3% hallucinated spans in run 2 (above 5%)" in text


def test_without_an_audit_the_gate_reads_every_shared_pair_not_the_latest_ones(two_runs, monkeypatch):
    world, _ = two_runs
    monkeypatch.setenv("GOLDENSET_JUDGE_WINDOW", "3")  # the old rule's window: read no more
    rebuild(world, judge_gate=JudgeGate.from_environment(min_pairs=1))
    assert gate_row(world)[1] == 5


def test_a_healthy_judge_without_an_audit_is_warned_only_of_its_sample(tmp_path, judge_stub, capsys, worlds):
    world = worlds(tmp_path / "w", pooled=True)
    append_labels(world.labels, [label_line(q, d, lab, "2026-11-30T09:00:00Z") for (q, d), lab in ANA.items()])
    judge_stub.answer_by(honest)
    assert judge_label(world, judge_stub.url, "--json") == 0
    rebuild(world, judge_gate=JudgeGate(min_pairs=5))
    con = connect(world.db, read_only=True)
    try:
        (h,) = judge_health(con)
    finally:
        con.close()
    # Admitted, and its runs are clean, but it was measured on shared pairs: that is the one warning
    # (test_gate_audit.py has a judge measured on the audit, with none).
    assert h.held_back is False and h.gate is not None and h.gate.kappa == 1.0
    assert h.warnings == [
        "judge qwen: no audit drawn yet, so the gate read the 5 pairs it shares with humans (2 queries), not a "
        "random sample; draw one (goldenset pool --audit 40) and label its pairs"
    ]


def test_a_run_whose_answers_are_mostly_unusable_exits_6_after_writing_and_recording(
    tmp_path, judge_stub, capsys, worlds
):
    world = worlds(tmp_path / "w", pooled=True)
    judge_stub.answer_by(degraded)  # 7 of 12 hallucinated: 58% unusable
    capsys.readouterr()
    assert judge_label(world, judge_stub.url, "--json") == 6
    err = capsys.readouterr().err
    assert "judge run 1 of qwen is incomplete: 7 of 12 answers unusable (58.3% > 50%" in err
    files = sorted(world.labels.glob("dt=*/judge-qwen.jsonl"))
    assert sum(len(f.read_text().splitlines()) for f in files) == 5
    con = connect(world.db, read_only=True)
    try:
        assert con.execute("SELECT incomplete FROM judge_runs").fetchall() == [(True,)]
    finally:
        con.close()


def test_exactly_the_share_allowed_is_complete(tmp_path, judge_stub, capsys, worlds):
    world = worlds(tmp_path / "w", pooled=True)
    judge_stub.answer_by(degraded)
    assert judge_label(world, judge_stub.url, "--json", "--max-unusable", str(7 / 12)) == 0


def test_a_share_outside_0_and_1_is_wrong_usage(tmp_path, judge_stub, capsys, worlds):
    world = worlds(tmp_path / "w")
    assert judge_label(world, judge_stub.url, "--json", "--max-unusable", "1.5") == 2
    assert "--max-unusable must be a share between 0 and 1, got 1.5" in capsys.readouterr().err


def _health_after_runs(db: Path, *runs: tuple[int, int]) -> list[str]:
    """The warnings of judge `jj` after runs of (hallucinated spans, answers), oldest first."""
    con = connect(db)
    try:
        for i, (hallucinated, answers) in enumerate(runs):
            report = JudgeLabelReport(
                "jj", Path("judge-jj.jsonl"), scored=answers, labels_written=answers - hallucinated
            )
            report.invalid["hallucinated_span"] = hallucinated
            at = datetime(2026, 12, 1, 10, i)
            record_run(con, report, started_at=at, finished_at=at, scorer_version="stub-model/prompt-1")
        (h,) = judge_health(con)
    finally:
        con.close()
    return h.warnings


# At 5% exactly (1 of 20: the double 1/20 is the double 0.05) and one step either side.
@pytest.mark.parametrize(
    ("hallucinated", "answers", "warns"),
    [(1, 24, False), (1, 20, False), (1, 12, True)],
    ids=["1of24", "1of20", "1of12"],
)
def test_the_hallucinated_span_rate_warns_only_above_five_percent(tmp_path, hallucinated, answers, warns):
    warnings = _health_after_runs(tmp_path / "g.duckdb", (0, 20), (hallucinated, answers))
    rate = f"judge jj: {hallucinated / answers:.1%} hallucinated spans in run 2 (above 5%)"
    moved = f"judge jj: hallucinated-span rate moved +{hallucinated / answers:.1%} since its previous run"
    assert (rate in warnings) is warns
    assert any(w.startswith(moved) for w in warnings) is warns
    assert len(warnings) == 2 * warns


def test_a_rate_that_falls_by_more_than_five_percent_warns_too(tmp_path):
    # From 1 of 12 to 0 of 20: a change of -8.3%, whose absolute value is above 5%.
    assert _health_after_runs(tmp_path / "g.duckdb", (1, 12), (0, 20)) == [
        "judge jj: hallucinated-span rate moved -8.3% since its previous run (8.3% to 0.0%; more than 5%)"
    ]


# Four rows asked, --max-unusable 0.5: invalid answers and transport errors are both unusable, and
# 2 of 4 (exactly the share allowed) is complete; 1 of 4 and 3 of 4 are one step either side.
@pytest.mark.parametrize(
    ("invalid", "errors", "incomplete"), [(1, 0, False), (2, 0, False), (1, 1, False), (3, 0, True), (2, 1, True)]
)
def test_a_run_is_incomplete_only_above_the_unusable_share(tmp_path, invalid, errors, incomplete):
    report = JudgeLabelReport(
        "jj", Path("judge-jj.jsonl"), scored=4, labels_written=4 - invalid - errors, errors=errors
    )
    report.invalid["bad_score"] = invalid
    con = connect(tmp_path / "g.duckdb")
    try:
        at = datetime(2026, 12, 1, 10)
        run = record_run(con, report, started_at=at, finished_at=at, scorer_version="m/prompt-1", max_unusable=0.5)
        stored = con.execute("SELECT unusable_share, incomplete FROM judge_runs").fetchall()
    finally:
        con.close()
    assert stored == [((invalid + errors) / 4, incomplete)]
    assert run.incomplete is incomplete


def test_the_hallucinated_span_rate_is_over_the_answers_not_the_rows_asked(tmp_path):
    # Four rows asked, two transport errors: two answers, one with a hallucinated span, a rate of 1/2.
    report = JudgeLabelReport("jj", Path("judge-jj.jsonl"), scored=4, labels_written=1, errors=2)
    report.invalid["hallucinated_span"] = 1
    con = connect(tmp_path / "g.duckdb")
    try:
        at = datetime(2026, 12, 1, 10)
        record_run(con, report, started_at=at, finished_at=at, scorer_version="m/prompt-1")
        assert con.execute("SELECT answers, hallucinated_span_rate FROM judge_runs").fetchall() == [(2, 0.5)]
    finally:
        con.close()
