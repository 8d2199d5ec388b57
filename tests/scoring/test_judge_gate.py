"""The judge's labels and the gate (contract 8.3), end to end: pool, human lines, `judge label`, `build`.

The queue holds 12 pairs (test_judge_label.py). ana labels five of them; the judge
(the stub) labels all twelve, agreeing with ana on four:

    pair     d1   d2   d3    d5   d6   | d4   d7    d8   d9   p1   p2    p3
    ana      rel  rel  part  irr  irr  |
    judge    rel  rel  part  irr  rel  | rel  part  irr  rel  irr  part  rel

Kappa on the five shared pairs, by hand: po = 4/5; ana's shares rel 2/5, part 1/5,
irr 2/5; the judge's rel 3/5, part 1/5, irr 1/5; pe = (2x3 + 1x1 + 2x1)/25 = 9/25;
kappa = (20/25 - 9/25) / (16/25) = 11/16 = 0.6875.

No audit was drawn, so the gate reads these five shared pairs (contract 13.2), flagged as not a
random sample. Its interval, bootstrapped over the two queries: Q1 alone (d1 d2 d3) has kappa
1, Q2 alone (d5 d6: ana irr irr, the judge irr rel; po 1/2, pe 1/2) kappa 0, so the 95%
interval is [0, 1] (test_judge_agreement.py) and only a gate of 0 admits the judge. Relevant
share 3/5; AC1 49/69 = 0.7101 (test_judge_agreement.py works it out).
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from judge_stub import JudgeStub, good, passage_of
from world import (
    ANA,
    DOC_OF,
    GRADE,
    JUDGE,
    JUDGE_ONLY,
    Q1,
    RUBRIC,
    TEXT,
    append_labels,
    copy_world,
    judge_label,
    label_line,
    rebuild,
    status_json,
)

from goldenset.cli.app import main as app_main
from goldenset.labelling.judge_gate import JudgeGate
from goldenset.warehouse import connect
from goldenset_dagster.cli import main
from tests.helpers import isolated_settings

HELD_BACK_WHY = (
    "kappa 0.6875 (95% interval 0.0000 to 1.0000) on 5 shared pairs of 2 queries, not a random sample "
    "(agreement 80.0% at chance 36.0%, relevant share 60.0%, AC1 0.7101); needs a lower bound >= {k:g} "
    "on >= {n} pairs; 12 labels held back"
)


@pytest.fixture(scope="module")
def judged_template(tmp_path_factory, worlds):
    """A build, a pool of 12 pairs, ana's lines on five of them and the judge's label file on all twelve.

    Made once per module (its own judge stub, the settings a test gets); `judged` copies it.
    """
    base = tmp_path_factory.mktemp("judged")
    world = worlds(base / "w", pooled=True)
    append_labels(world.labels, [label_line(q, d, lab, "2026-11-30T09:00:00Z") for (q, d), lab in ANA.items()])
    by_doc = {d: lab for (_, d), lab in JUDGE.items()}

    def reply(body):
        doc = DOC_OF[passage_of(body)]
        grade = GRADE[by_doc[doc]]
        return good(grade, "As the rubric says.", TEXT[doc][:16] if grade else "")

    stub = JudgeStub().start()
    try:
        stub.answer_by(reply)
        with isolated_settings(base / "home"), contextlib.redirect_stdout(io.StringIO()):
            code = judge_label(world, stub.url, "--json")
    finally:
        stub.stop()
    assert code == 0
    return world


@pytest.fixture
def judged(tmp_path, judged_template):
    """This test's own copy of judged_template."""
    return copy_world(judged_template, tmp_path / "w")


def cli_build(world) -> int:
    return main(
        [
            "build",
            "--logs",
            str(world.logs),
            "--corpus",
            str(world.corpus),
            "--db",
            str(world.db),
            "--labels",
            str(world.labels),
            "--rubric",
            str(RUBRIC),
        ]
    )


def latest(world):
    con = connect(world.db, read_only=True)
    try:
        build = con.execute(
            "SELECT n_human_labels, n_judge_labels, judge_labels_held_back FROM golden_builds "
            "ORDER BY build_id DESC LIMIT 1"
        ).fetchone()
        rows = con.execute(
            "SELECT query_id, doc_id, source, label, grade FROM golden_set WHERE source <> 'log' "
            "ORDER BY query_id, doc_id"
        ).fetchall()
        judges = con.execute(
            "SELECT annotator, n, kappa, passed, labels, min_pairs, min_kappa FROM build_judges "
            "WHERE build_id = (SELECT labels_build_id FROM golden_builds ORDER BY build_id DESC "
            "LIMIT 1)"
        ).fetchall()
    finally:
        con.close()
    return build, {(q, d): (src, lab, g) for q, d, src, lab, g in rows}, judges


@pytest.mark.slow
def test_below_the_minimum_pairs_the_judges_labels_are_held_back_and_status_names_it(judged, capsys):
    assert cli_build(judged) == 0
    build, rows, judges = latest(judged)
    assert build == (5, 0, 12)  # five human rows; the judge's twelve current labels held back
    assert rows == {pair: ("human", lab, GRADE[lab]) for pair, lab in ANA.items()}
    assert judges == [("qwen", 5, 0.6875, False, 12, 50, 0.6)]
    assert status_json(judged, capsys)["judges_held_back"] == [
        {
            "annotator": "qwen",
            "sample": "shared",
            "audits": 0,
            "n": 5,
            "queries": 2,
            "kappa": 0.6875,
            "kappa_lo": 0.0,
            "kappa_hi": 1.0,
            "po": 0.8,
            "pe": 0.36,
            "prevalence": 0.6,
            "ac1": 0.7101,
            "min_kappa": 0.6,
            "min_pairs": 50,
            "labels": 12,
            "why": HELD_BACK_WHY.format(k=0.6, n=50),
        }
    ]
    assert main(["status", "--db", str(judged.db)]) == 0
    text = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert f"judge qwen held back: {HELD_BACK_WHY.format(k=0.6, n=50)}" in text


@pytest.mark.slow
def test_above_the_gate_judge_labels_join_only_where_no_human_label_is(judged, capsys, monkeypatch):
    # The build's asset config reads its default gate from the environment; the lower bound is 0.
    monkeypatch.setenv("GOLDENSET_JUDGE_MIN_PAIRS", "5")
    monkeypatch.setenv("GOLDENSET_JUDGE_MIN_KAPPA", "0")
    assert cli_build(judged) == 0
    build, rows, judges = latest(judged)
    assert build == (5, 7, 0)
    assert judges == [("qwen", 5, 0.6875, True, 12, 5, 0.0)]
    # ana's five pairs keep her labels, d6 included (the judge says relevant, and its line is later).
    assert rows == {
        **{pair: ("human", lab, GRADE[lab]) for pair, lab in ANA.items()},
        **{pair: ("judge", lab, GRADE[lab]) for pair, lab in JUDGE_ONLY.items()},
    }
    assert status_json(judged, capsys)["judges_held_back"] == []


@pytest.mark.slow
def test_the_build_flags_set_the_gate_and_win_over_the_environment(judged, monkeypatch):
    monkeypatch.setenv("GOLDENSET_JUDGE_MIN_PAIRS", "500")
    monkeypatch.setenv("GOLDENSET_JUDGE_MIN_KAPPA", "0.9")
    monkeypatch.setenv("GOLDENSET_JUDGE_AUDITS", "3")
    assert (
        main(
            [
                "build",
                "--logs",
                str(judged.logs),
                "--corpus",
                str(judged.corpus),
                "--db",
                str(judged.db),
                "--labels",
                str(judged.labels),
                "--rubric",
                str(RUBRIC),
                "--judge-min-pairs",
                "5",
                "--judge-min-kappa",
                "0",
                "--judge-audits",
                "2",
            ]
        )
        == 0
    )
    build, _, judges = latest(judged)
    assert build == (5, 7, 0)
    assert judges == [("qwen", 5, 0.6875, True, 12, 5, 0.0)]
    con = connect(judged.db, read_only=True)
    try:
        assert con.execute("SELECT DISTINCT audit_window FROM build_judges ORDER BY 1").fetchall()[-1] == (2,)
    finally:
        con.close()


@pytest.mark.slow
def test_a_judge_whose_kappa_is_below_the_minimum_is_held_back_by_the_librarys_gate(judged, capsys):
    rebuild(judged, judge_gate=JudgeGate(min_pairs=5, min_kappa=0.7))
    build, rows, judges = latest(judged)
    assert build == (5, 0, 12)
    assert judges == [("qwen", 5, 0.6875, False, 12, 5, 0.7)]
    assert status_json(judged, capsys)["judges_held_back"][0]["why"] == HELD_BACK_WHY.format(k=0.7, n=5)


def test_the_point_kappa_no_longer_decides_the_lower_bound_does(judged):
    # kappa 11/16 is exactly 0.6875, but its interval's lower bound is 0: a gate of 0.6875 holds it back.
    rebuild(judged, judge_gate=JudgeGate(min_pairs=5, min_kappa=0.6875))
    build, rows, judges = latest(judged)
    assert build == (5, 0, 12)
    assert judges[0][2:4] == (0.6875, False)


@pytest.mark.slow  # its own world, built once, about 1.5 CPU s
def test_a_name_with_lines_of_both_kinds_is_read_alike_by_the_build_and_by_agreement(tmp_path, worlds, capsys):
    # ana labels d1 and d2 of Q1 as a person, ben too; then a judge run under ana's name labels d1, later. Her
    # current label on d1 is the judge line (7.2, 8.3): the build's human label of d1 is ben's alone, and
    # `labels agreement` compares ana and ben on d2 only (on d1 her human line is shadowed, as in the build).
    lines = [
        label_line(Q1, "d1", "relevant", "2026-11-30T09:00:00Z"),
        label_line(Q1, "d2", "irrelevant", "2026-11-30T09:00:00Z"),
        label_line(Q1, "d1", "partial", "2026-11-30T09:01:00Z", annotator="ben"),
        label_line(Q1, "d2", "irrelevant", "2026-11-30T09:01:00Z", annotator="ben"),
        label_line(Q1, "d1", "irrelevant", "2026-11-30T10:00:00Z", kind="judge"),
    ]
    world = worlds(tmp_path / "w", lines)
    con = connect(world.db, read_only=True)
    try:
        d1 = con.execute(
            "SELECT source, label, annotators FROM golden_set WHERE query_id = ? AND doc_id = 'd1'", [Q1]
        ).fetchall()
    finally:
        con.close()
    assert d1 == [("human", "partial", 1)]
    capsys.readouterr()
    assert app_main(["labels", "agreement", "--json", "--db", str(world.db), "--rubric", str(RUBRIC)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["annotators"] == [{"a": "ana", "b": "ben", "n": 1, "po": 1.0, "pe": 1.0, "kappa": None}]
    assert printed["disagreements"] == []
