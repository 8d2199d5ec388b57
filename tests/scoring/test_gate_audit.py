"""The judge's gate reads the audit (contracts 8.3, 13.2) and every setting it reads is a build input.

The world is world.py's, pooled twice: `pool --audit 1 --seed 11` draws Q3, then
`pool --audit 2 --seed 0` draws Q1 and Q2 (the latest audit); each audit asks its queries'
pooled pairs and their log-labelled pair (r1, a1, r3). ana labels all fifteen pairs, and the
judge (lines of kind judge, written as a judge writes them) labels them too, its lines on Q3
the latest, as a judge answering the queue in order leaves them:

    query  doc   ana         judge       query  doc   ana         judge
    Q1     r1    relevant    relevant    Q2     a1    relevant    relevant
    Q1     d1    relevant    relevant    Q2     d5    relevant    relevant
    Q1     d2    relevant    relevant    Q2     d6    partial     irrelevant
    Q1     d3    irrelevant  irrelevant  Q2     d7    irrelevant  irrelevant
    Q1     d4    irrelevant  irrelevant  Q2     d8    irrelevant  irrelevant
    Q3     r3, d9, p1, p3: relevant, p2: partial      judge: r3 relevant, irrelevant on the other four

By hand, on the latest audit's ten pairs (Q1 and Q2): po = 9/10; ana rel 5, part 1, irr 4;
the judge rel 5, irr 5; pe = (5x5 + 4x5)/100 = 45/100; kappa = (90 - 45)/(100 - 45) = 9/11.
Q1 alone has kappa 1; Q2 alone po 4/5, pe (2x2 + 2x3)/25 = 10/25, kappa 2/3. A resample of
the two queries is Q1Q1 (1), Q1Q2 (9/11) or Q2Q2 (2/3), each end a quarter of the 2000
resamples: the 95% interval is exactly [2/3, 1]. Relevant share 6/10. AC1: the labels used
are rel, part, irr (Q = 3); pi = 10/20, 1/20, 9/20; pe1 = (100 + 19 + 99)/400 / 2 = 109/400;
AC1 = (360 - 109)/(400 - 109) = 251/291.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import re
from fractions import Fraction as F
from pathlib import Path

import numpy as np
import pytest
from world import (
    AUDIT_ANA,
    AUDIT_JUDGE,
    DOCS,
    Q1,
    Q2,
    Q3,
    RUBRIC,
    TEXT,
    append_labels,
    label_line,
    pool_world,
    rebuild,
    status_json,
)

from goldenset.build import build_golden_set, input_signature
from goldenset.corpus import read_corpus
from goldenset.errors import UsageError
from goldenset.labelling import judge_gate
from goldenset.labelling.audit import latest_audit
from goldenset.labelling.judge_gate import (
    ENV_WINDOW,
    GATE_SETTINGS,
    JudgeGate,
    admits,
    deprecated_settings,
)
from goldenset.scoring.judge_health import judge_health
from goldenset.snapshots import store_snapshot
from goldenset.warehouse import connect
from goldenset_dagster.cli import main
from tests.helpers import doc, write_corpus

ANA, JUDGE = AUDIT_ANA, AUDIT_JUDGE
AUDITS = [(1, 11), (2, 0)]  # Q3, then Q1 and Q2
NOT_GOLDEN = "0123456789abcdef"  # a query_id no serve names
LATEST_AUDIT = JudgeGate(min_pairs=10, min_kappa=float(F(2, 3)), audits=1)


def judge_lines(pairs: dict) -> list[dict]:
    """The judge's lines, in queue order: Q3's last (the latest ts)."""
    order = sorted(pairs, key=lambda p: (p[0] == Q3, p))
    return [
        label_line(q, d, pairs[(q, d)], f"2026-11-30T10:{i:02d}:00Z", annotator="qwen", kind="judge")
        for i, (q, d) in enumerate(order)
    ]


@pytest.fixture
def audited(tmp_path, worlds):
    """The world with both audits drawn, ana's lines and the judge's, not built yet."""
    world = worlds(tmp_path / "w", audits=AUDITS)
    append_labels(world.labels, [label_line(q, d, lab, "2026-11-30T09:00:00Z") for (q, d), lab in ANA.items()])
    append_labels(world.labels, judge_lines(JUDGE), name="judge-qwen.jsonl")
    return world


def gate_row(world) -> dict:
    con = connect(world.db, read_only=True)
    try:
        cur = con.execute(
            "SELECT * FROM build_judges WHERE build_id = "
            "(SELECT labels_build_id FROM golden_builds ORDER BY build_id DESC LIMIT 1)"
        )
        names = [d[0] for d in cur.description]
        (row,) = cur.fetchall()
    finally:
        con.close()
    return dict(zip(names, row, strict=True))


def test_the_audits_drawn_are_the_ones_the_tests_work_out(audited):
    con = connect(audited.db, read_only=True)
    try:
        drawn = con.execute("SELECT pool_id, list(query_id) FROM audit_queries GROUP BY ALL ORDER BY 1").fetchall()
        assert [(pool, set(queries)) for pool, queries in drawn] == [(1, {Q3}), (2, {Q1, Q2})]
        assert con.execute("SELECT count(*) FROM audit_pairs").fetchone() == (15,)
    finally:
        con.close()


def test_the_gate_reads_the_latest_audit_not_the_judges_latest_labels(audited):
    rebuild(audited, judge_gate=LATEST_AUDIT)
    row = gate_row(audited)
    assert {k: row[k] for k in ("annotator", "sample", "audits", "n", "queries", "passed", "labels")} == {
        "annotator": "qwen",
        "sample": "audit",
        "audits": 1,
        "n": 10,
        "queries": 2,
        "passed": True,  # the lower bound is exactly 2/3, the minimum: "at least" admits it
        "labels": 15,
    }
    assert (row["kappa"], row["kappa_lo"], row["kappa_hi"]) == (float(F(9, 11)), float(F(2, 3)), 1.0)
    assert (row["po"], row["pe"], row["prevalence"], row["ac1"]) == (0.9, 0.45, 0.6, float(F(251, 291)))
    assert (row["audit_window"], row["bootstrap_resamples"], row["bootstrap_seed"], row["window_pairs"]) == (
        1,
        2000,
        0,
        None,
    )


def test_a_judge_admitted_on_the_audit_has_no_warning(audited):
    rebuild(audited, judge_gate=LATEST_AUDIT)
    con = connect(audited.db, read_only=True)
    try:
        (h,) = judge_health(con)
    finally:
        con.close()
    assert (h.held_back, h.warnings) == (False, [])


@pytest.mark.parametrize(
    "gate",
    [
        dataclasses.replace(LATEST_AUDIT, min_kappa=float(np.nextafter(float(F(2, 3)), 1.0))),
        dataclasses.replace(LATEST_AUDIT, min_pairs=11),
    ],
    ids=["min kappa one float above the lower bound", "min pairs one above n"],
)
def test_one_step_past_the_boundary_holds_the_judge_back(audited, gate):
    rebuild(audited, judge_gate=gate)
    row = gate_row(audited)
    assert (row["n"], row["kappa_lo"], row["passed"]) == (10, float(F(2, 3)), False)


def test_by_default_the_gate_reads_every_audit(audited):
    # Q3 joins: the judge calls four of its pairs irrelevant where ana finds three relevant and one partial.
    rebuild(audited, judge_gate=JudgeGate(min_pairs=10))
    row = gate_row(audited)
    assert (row["sample"], row["audits"], row["n"], row["queries"], row["audit_window"]) == ("audit", 2, 15, 3, 0)
    assert row["prevalence"] == 11 / 15
    assert row["passed"] is False


def test_a_query_still_being_labelled_is_not_read(tmp_path, worlds):
    world = worlds(tmp_path / "w", audits=AUDITS)
    partly = {p: lab for p, lab in ANA.items() if p != (Q2, "d8")}  # Q2 is not audited yet
    append_labels(world.labels, [label_line(q, d, lab, "2026-11-30T09:00:00Z") for (q, d), lab in partly.items()])
    append_labels(world.labels, judge_lines(JUDGE), name="judge-qwen.jsonl")
    rebuild(world, judge_gate=dataclasses.replace(LATEST_AUDIT, min_pairs=1))
    row = gate_row(world)
    # Q1 alone: one query, so no interval, and no interval holds the judge back.
    assert (row["sample"], row["n"], row["queries"], row["kappa"]) == ("audit", 5, 1, 1.0)
    assert (row["kappa_lo"], row["kappa_hi"], row["passed"]) == (None, None, False)


@pytest.mark.slow  # its own world: built and pooled once, about 2 CPU s
def test_a_pair_people_labelled_before_the_draw_is_in_the_sample(tmp_path, worlds):
    # ana labelled (Q1, b1) before `pool --audit 2 --seed 0` drew Q1 and Q2, so the audit did not ask
    # for it; Q1 was drawn at random and every pair of it is read, so it is in the sample.
    before_draw = label_line(Q1, "b1", "irrelevant", "2026-11-29T08:00:00Z")
    world = worlds(tmp_path / "w", [before_draw], audits=[(2, 0)])
    drawn = {p: lab for p, lab in ANA.items() if p[0] in (Q1, Q2)}
    append_labels(world.labels, [label_line(q, d, lab, "2026-11-30T09:00:00Z") for (q, d), lab in drawn.items()])
    judge = {**{p: lab for p, lab in JUDGE.items() if p[0] in (Q1, Q2)}, (Q1, "b1"): "irrelevant"}
    append_labels(world.labels, judge_lines(judge), name="judge-qwen.jsonl")
    rebuild(world, judge_gate=dataclasses.replace(LATEST_AUDIT, min_pairs=11))
    row = gate_row(world)
    con = connect(world.db, read_only=True)
    try:
        asked = con.execute("SELECT count(*) FROM audit_pairs WHERE query_id = ? AND doc_id = 'b1'", [Q1]).fetchone()
    finally:
        con.close()
    assert asked == (0,)
    # By hand: 11 pairs, 10 agree; ana rel 5, part 1, irr 5; the judge rel 5, irr 6: kappa
    # (110 - 55)/(121 - 55) = 5/6. Q1 alone 1, Q2 alone 2/3: the interval is [2/3, 1].
    assert (row["sample"], row["audits"], row["n"], row["queries"], row["passed"]) == ("audit", 1, 11, 2, True)
    assert (row["kappa"], row["kappa_lo"], row["kappa_hi"]) == (float(F(5, 6)), float(F(2, 3)), 1.0)
    assert row["prevalence"] == float(F(6, 11))


@pytest.mark.slow
def test_a_query_is_audited_by_the_audits_own_rule_so_a_human_label_a_log_label_outranks_does_not_count(
    tmp_path, worlds
):
    # One definition (12.1): a drawn query is audited when each asked pair has a golden_set row with
    # source human. ana labels (Q2, a1) at an earlier version, v0; the log's label on it, at the
    # current v1, is fresh and outranks it (7.3 step 3): Q2 is still being labelled.
    world = worlds(tmp_path / "w", audits=[(2, 0)])
    earlier = write_corpus(
        tmp_path / "earlier.jsonl", [doc(d, "v0" if d == "a1" else "v1", text=TEXT[d]) for d in DOCS]
    )
    con = connect(world.db)
    try:
        for corpus in (earlier, world.corpus):  # a build records v0, then v1 is current again
            store_snapshot(con, read_corpus(corpus))
            build_golden_set(con)
    finally:
        con.close()
    drawn = {p: lab for p, lab in ANA.items() if p[0] in (Q1, Q2)}
    lines = [
        label_line(q, d, lab, "2026-11-30T09:00:00Z", version="v0" if d == "a1" else "v1")
        for (q, d), lab in drawn.items()
    ]
    append_labels(world.labels, lines)
    append_labels(
        world.labels, judge_lines({p: lab for p, lab in JUDGE.items() if p[0] in (Q1, Q2)}), name="judge-qwen.jsonl"
    )
    rebuild(world, judge_gate=dataclasses.replace(LATEST_AUDIT, min_pairs=1))
    row = gate_row(world)
    con = connect(world.db, read_only=True)
    try:
        audit = latest_audit(con)
    finally:
        con.close()
    assert (audit.audited, audit.pending) == ((Q1,), (Q2,))
    assert (row["sample"], row["n"], row["queries"], row["kappa"]) == ("audit", 5, 1, 1.0)


def test_without_an_audited_pair_the_gate_reads_the_shared_pairs_and_says_so(tmp_path, worlds, capsys):
    world = worlds(tmp_path / "w", audits=AUDITS)
    append_labels(world.labels, [label_line(q, d, lab, "2026-11-30T09:00:00Z") for (q, d), lab in ANA.items()])
    # A pair of a query that is not golden takes part in nothing, so the shared pairs leave it out too.
    append_labels(world.labels, [label_line(NOT_GOLDEN, "d1", "relevant", "2026-11-30T09:00:00Z")])
    only_q3 = {p: lab for p, lab in JUDGE.items() if p[0] == Q3}
    append_labels(world.labels, judge_lines({**only_q3, (NOT_GOLDEN, "d1"): "relevant"}), name="judge-qwen.jsonl")
    rebuild(world, judge_gate=dataclasses.replace(LATEST_AUDIT, min_pairs=1))
    row = gate_row(world)
    assert (row["sample"], row["audits"], row["n"], row["queries"], row["passed"]) == ("shared", 1, 5, 1, False)
    (health,) = status_json(world, capsys)["judge_health"]
    assert health["sample"] == "shared"
    assert health["warnings"][0] == (
        "judge qwen: none of its labels is on a pair of an audited query yet (at the human label's version), so "
        "the gate read the 5 pairs it shares with humans (1 queries), not a random sample; label the audit's "
        "pairs, and let the judge label them (goldenset judge label)"
    )


def test_status_explains_the_figures_of_a_judge_held_back_and_of_one_admitted(audited, capsys):
    rebuild(audited, judge_gate=dataclasses.replace(LATEST_AUDIT, min_kappa=0.7))
    st = status_json(audited, capsys)
    figures = (
        "kappa 0.8182 (95% interval 0.6667 to 1.0000) on 10 pairs of 2 audited queries (agreement 90.0% at "
        "chance 45.0%, relevant share 60.0%, AC1 0.8625)"
    )
    (held,) = st["judges_held_back"]
    assert held == {
        "annotator": "qwen",
        "sample": "audit",
        "audits": 1,
        "n": 10,
        "queries": 2,
        "kappa": 0.8182,
        "kappa_lo": 0.6667,
        "kappa_hi": 1.0,
        "po": 0.9,
        "pe": 0.45,
        "prevalence": 0.6,
        "ac1": 0.8625,
        "min_kappa": 0.7,
        "min_pairs": 10,
        "labels": 15,
        "why": f"{figures}; needs a lower bound >= 0.7 on >= 10 pairs; 15 labels held back",
    }
    (health,) = st["judge_health"]
    assert health["warnings"] == [
        f"judge qwen: {figures}: its lower bound is below the gate's 0.7; its labels are held back from the golden set"
    ]
    rebuild(audited, judge_gate=LATEST_AUDIT)
    assert main(["status", "--db", str(audited.db)]) == 0
    text = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert f"judge qwen admitted: {figures}; needs a lower bound >= 0.666667 on >= 10 pairs" in text


# --------------------------------------------------------------------------- the decision, exactly


@pytest.mark.parametrize(
    ("n", "lower", "admitted"),
    [
        (50, 0.5, True),  # at the boundary
        (50, float(np.nextafter(0.5, 0.0)), False),  # one float below
        (50, 0.75, True),
        (49, 0.75, False),  # one pair short
        (50, None, False),  # no interval
    ],
)
def test_the_gate_admits_at_a_lower_bound_equal_to_the_minimum(n, lower, admitted):
    assert admits(n, lower, JudgeGate(min_pairs=50, min_kappa=0.5)) is admitted


# --------------------------------------------------------------------------- the settings


def test_every_field_of_the_gate_is_a_declared_setting():
    assert [s.field for s in GATE_SETTINGS] == [f.name for f in dataclasses.fields(JudgeGate)]


def test_every_gate_variable_the_module_names_is_declared_or_deprecated():
    source = Path(judge_gate.__file__).read_text(encoding="utf-8")
    named = set(re.findall(r'"(GOLDENSET_JUDGE_[A-Z_]+)"', source))
    assert named == {s.env for s in GATE_SETTINGS if s.env} | {ENV_WINDOW}


def changed(gate: JudgeGate, field: str) -> JudgeGate:
    value = getattr(gate, field)
    return dataclasses.replace(gate, **{field: value + 0.125 if isinstance(value, float) else value + 1})


@pytest.mark.parametrize("setting", GATE_SETTINGS, ids=lambda s: s.field)
def test_every_gate_setting_is_part_of_the_builds_inputs(audited, setting):
    # The gate's part of the signature counts once labels do (any labels signature will do here).
    con = connect(audited.db, read_only=True)
    try:
        base = JudgeGate()
        before = input_signature(con, "sha", [], "labels", base)
        assert input_signature(con, "sha", [], "labels", JudgeGate()) == before
        assert input_signature(con, "sha", [], "labels", changed(base, setting.field)) != before
    finally:
        con.close()


@pytest.mark.parametrize("setting", [s for s in GATE_SETTINGS if s.env], ids=lambda s: s.env)
def test_every_gate_variable_sets_its_field(setting):
    value = getattr(changed(JudgeGate(), setting.field), setting.field)
    gate = JudgeGate.from_environment(environ={setting.env: str(value)})
    assert getattr(gate, setting.field) == value
    assert dataclasses.replace(gate, **{setting.field: getattr(JudgeGate(), setting.field)}) == JudgeGate()


@pytest.mark.slow
def test_a_new_audit_is_part_of_the_builds_inputs(audited):
    def signature() -> str:
        con = connect(audited.db, read_only=True)
        try:
            return input_signature(con, "sha", [], "labels", JudgeGate())
        finally:
            con.close()

    before = signature()
    pool_world(audited, (1, 3))
    assert signature() != before


def test_a_figure_that_is_a_tie_rounds_away_from_zero_though_its_double_lies_below_the_tie():
    # po = 12001/20000 = 0.60005 exactly; its nearest double is a hair below 0.60005, and rounding that
    # double's binary value would give 0.6. 7.5 rounds the exact figure, 8.2 the decimal the double prints
    # as: both give 0.6001 in the JSON.
    assert F(0.60005) < F(12001, 20000)
    row = judge_gate.GateRow("qwen", 20000, 0.5, True, 1, 50, 0.6, "audit", 1, 4, 0.25, 0.75, 0.60005, 0.2, 0.5, 0.5)
    assert row.to_json()["po"] == 0.6001
    # The line prints the shares as percentages with one decimal (15.9): 60.005% is 60.0%.
    assert "(agreement 60.0% at chance 20.0%, relevant share 50.0%, AC1 0.5000)" in row.measured()


def test_status_lists_its_judges_by_annotator_admitted_or_not(audited, capsys):
    # amy labels two pairs (held back: fewer than the gate's 10); qwen is admitted. By annotator: amy first.
    amy = [label_line(Q1, d, ANA[(Q1, d)], "2026-11-30T11:00:00Z", annotator="amy", kind="judge") for d in ("d1", "d2")]
    append_labels(audited.labels, amy, name="judge-amy.jsonl")
    rebuild(audited, judge_gate=LATEST_AUDIT)
    capsys.readouterr()
    assert main(["status", "--db", str(audited.db)]) == 0
    text = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert 0 <= text.index("judge amy held back:") < text.index("judge qwen admitted:")


def test_the_gates_figures_round_half_away_from_zero_as_agreement_does():
    # 1/32 = 0.03125 is a double exactly, a tie at the fifth decimal: 7.5 rounds it away from zero (0.0313)
    # where Python's round goes to even (0.0312).
    row = judge_gate.GateRow(
        "qwen", 32, 0.03125, False, 32, 50, 0.6, "audit", 1, 4, -0.03125, 0.5, 0.96875, 0.0, 0.5, 0.9
    )
    figures = row.to_json()
    assert (figures["kappa"], figures["kappa_lo"], figures["po"]) == (0.0313, -0.0313, 0.9688)


@pytest.mark.parametrize(
    ("gate", "message"),
    [
        (dict(min_pairs=-1), "--judge-min-pairs (GOLDENSET_JUDGE_MIN_PAIRS) must be a whole number >= 0, got -1"),
        (dict(audits=-2), "--judge-audits (GOLDENSET_JUDGE_AUDITS) must be a whole number >= 0, got -2"),
        (dict(resamples=0), "the judge gate's resamples must be a whole number >= 1, got 0"),
        (dict(min_kappa=float("nan")), "--judge-min-kappa (GOLDENSET_JUDGE_MIN_KAPPA) must be a finite number"),
    ],
)
def test_a_bad_gate_setting_is_refused_by_name(gate, message):
    with pytest.raises(UsageError, match=re.escape(message)):
        JudgeGate(**gate)


def test_a_variable_that_is_not_a_number_is_refused_by_name():
    with pytest.raises(UsageError, match=re.escape("GOLDENSET_JUDGE_AUDITS must be a number, got 'all'")):
        JudgeGate.from_environment(environ={"GOLDENSET_JUDGE_AUDITS": "all"})


def test_the_old_window_variable_is_a_no_op_that_warns():
    assert deprecated_settings({}) == []
    (warning,) = deprecated_settings({ENV_WINDOW: "1000"})
    assert warning.startswith("GOLDENSET_JUDGE_WINDOW=1000 is no longer read: the judge's gate reads its labels")
    assert JudgeGate.from_environment(environ={ENV_WINDOW: "1000"}) == JudgeGate()


# --------------------------------------------------------------------------- a build with a changed setting


def cli_build(world) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(
            [
                "build",
                *world.args(),
                *("--logs", str(world.logs), "--corpus", str(world.corpus)),
                *("--labels", str(world.labels), "--rubric", str(RUBRIC), "--judge-min-pairs", "10"),
            ]
        )
    return code, err.getvalue()


def builds(world) -> list[tuple]:
    con = connect(world.db, read_only=True)
    try:
        return con.execute(
            "SELECT g.build_id, g.computation, j.n, j.audit_window FROM golden_builds g "
            "LEFT JOIN build_judges j ON j.build_id = g.build_id ORDER BY g.build_id"
        ).fetchall()
    finally:
        con.close()


@pytest.mark.slow
def test_a_build_with_a_changed_gate_setting_recomputes_the_gate(audited, monkeypatch, capsys):
    rebuild(audited, judge_gate=JudgeGate(min_pairs=10))  # every audit: 15 pairs
    before = builds(audited)
    monkeypatch.setenv("GOLDENSET_JUDGE_AUDITS", "1")
    monkeypatch.setenv(ENV_WINDOW, "1000")
    code, err = cli_build(audited)
    assert code == 0, err
    assert "WARNING: GOLDENSET_JUDGE_WINDOW=1000 is no longer read" in " ".join(err.split())
    after = builds(audited)
    assert len(after) == len(before) + 1
    assert after[-1][1] != "repeat" and after[-1][2:] == (10, 1)  # a new gate row: the latest audit's 10 pairs
    (health,) = status_json(audited, capsys)["judge_health"]
    assert (health["n"], health["queries"], health["kappa"]) == (10, 2, 0.8182)
    # The same settings again: a repeat, with no new gate row.
    rebuild(audited, judge_gate=JudgeGate(min_pairs=10, audits=1))
    assert builds(audited)[-1][1:] == ("repeat", None, None)


def test_a_warehouse_from_before_v5_opened_read_only_reads_its_gate_rows_as_the_old_rule_wrote_them(tmp_path):
    path = tmp_path / "old.duckdb"
    con = connect(path)
    for column in judge_gate.BUILD_JUDGE_COLUMNS[8:]:
        con.execute(f"ALTER TABLE build_judges DROP COLUMN {column}")
    con.execute("INSERT INTO build_judges VALUES (1, 'qwen', 200, 0.0, false, 12, 50, 0.6, 200)")
    con.close()
    con = connect(path, read_only=True)  # read-only: no migration runs
    try:
        (row,) = judge_gate.gate_rows(con, 1)
    finally:
        con.close()
    assert (row.sample, row.kappa_lo, row.n) == (None, None, 200)
    assert row.why() == "kappa 0.0000 on 200 shared pairs; needs 0.6 on >= 50 pairs; 12 labels held back"


def test_build_refuses_a_negative_audit_window_with_exit_2(tmp_path, capsys):
    assert main(["build", "--db", str(tmp_path / "g.duckdb"), "--judge-audits", "-1"]) == 2
    assert "--judge-audits (GOLDENSET_JUDGE_AUDITS) must be a whole number >= 0, got -1" in capsys.readouterr().err
