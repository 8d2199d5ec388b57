"""Agreement (contract 7.5): exact kappa against scikit-learn, rounding, pairing, the conformance figures."""

from __future__ import annotations

import json
import math
import random
import warnings
from datetime import UTC, datetime, timedelta, timezone
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.metrics import cohen_kappa_score

from goldenset.labelling.agreement import (
    HUMAN_LABEL,
    AgentLabel,
    Count,
    HumanLabel,
    LabelLine,
    LineOrder,
    PairDisagreements,
    PairRef,
    agent_agreement,
    agreement_report,
    annotator_agreement,
    cohen_kappa,
    current_labels,
    disagreement_breakdown,
    disagreements,
    round_half_away,
)
from goldenset.labelling.agreement_notes import agreement_notes
from goldenset.labelling.rubric import load_rubric

DATA = Path(__file__).resolve().parents[1] / "data" / "conformance"
EXPECTED = json.loads((DATA / "labels-expected.json").read_text(encoding="utf-8"))
GOLDEN_QUERY = "07c6b23f1023f387"
S3_QUERY = "c4ef64c2aa72bc19"
PROJECTS = {GOLDEN_QUERY: "billing", S3_QUERY: "search"}
LABELS = ["relevant", "partial", "irrelevant", "other"]
T0 = datetime(2026, 11, 3, 10, 0, tzinfo=UTC)


def _read_label_lines(root: Path) -> list[LabelLine]:
    """A tiny reader for the conformance label files: the lines build 2 accepts.

    Not the real ingest: it skips blank lines and the lines labels-expected.json lists as
    rejected, and reads the rest as they stand.
    """
    rejected = {(r["source_file"], r["line"]) for r in EXPECTED["rejected_records"]}
    out = []
    for path in sorted(root.glob("dt=*/*.jsonl")):
        rel = f"labels/{path.relative_to(root).as_posix()}"
        for number, raw in enumerate(path.read_text(encoding="utf-8").split("\n"), start=1):
            if not raw.strip() or (rel, number) in rejected:
                continue
            rec = json.loads(raw)
            out.append(
                LabelLine(
                    annotator=rec["annotator"],
                    kind=rec.get("kind", "human"),
                    query_id=rec["query_id"],
                    doc_id=rec["doc_id"],
                    doc_version=rec["doc_version"],
                    label=rec["label"],
                    decided_by=rec["decided_by"],
                    ts=datetime.fromisoformat(rec["ts"]),
                    order=LineOrder(path.parent.name, path.name, number),
                    project=PROJECTS.get(rec["query_id"]),
                )
            )
    return out


# The agent's judgments that survive filters 1-3 in the conformance build (its README): s2's d1
# and d4 and s1's d2 for the golden query; s3's d5 and d6 (last verdict `wrong`) for s3's query.
# rule-1 falls to always_served, d3 to retired, s1's d1 to repeats.
AGENT = [
    AgentLabel(GOLDEN_QUERY, "d1", "v1", "helped"),
    AgentLabel(GOLDEN_QUERY, "d2", "v1", "helped"),
    AgentLabel(GOLDEN_QUERY, "d4", "v1", "helped"),
    AgentLabel(S3_QUERY, "d5", "v1", "noise"),
    AgentLabel(S3_QUERY, "d6", "v1", "wrong"),
]


@pytest.fixture
def conformance_lines() -> list[LabelLine]:
    """The accepted label lines of the conformance example's build 2."""
    return _read_label_lines(DATA / "labels")


@pytest.fixture
def conformance_human_labels() -> list[HumanLabel]:
    """The human labels of build 2's golden set (labels-expected.json)."""
    return [
        HumanLabel(r["query_id"], r["doc_id"], r["doc_version"], r["label"])
        for r in EXPECTED["golden_set"]
        if r["source"] == "human"
    ]


@pytest.fixture
def rubric():
    return load_rubric(DATA / "rubric.yaml")


def _line(
    annotator,
    doc_id,
    label,
    *,
    version="v1",
    query="q",
    minutes=0,
    line=1,
    kind="human",
    decided_by="answerability",
    project=None,
    tz=UTC,
):
    ts = (T0 + timedelta(minutes=minutes)).astimezone(tz)
    return LabelLine(
        annotator,
        kind,
        query,
        doc_id,
        version,
        label,
        decided_by,
        ts,
        LineOrder("2026-11-03", "part-0001.jsonl", line),
        project,
    )


# --------------------------------------------------------------------------- conformance


def test_conformance_agreement_matches_labels_expected(conformance_lines, conformance_human_labels, rubric):
    report = agreement_report(conformance_lines, AGENT, conformance_human_labels, rubric)
    assert report["annotators"] == EXPECTED["agreement"]["annotators"]
    assert report["agent"] == EXPECTED["agreement"]["agent"]


def test_conformance_report_has_the_contract_keys(conformance_lines, conformance_human_labels, rubric):
    report = agreement_report(conformance_lines, AGENT, conformance_human_labels, rubric)
    assert list(report) == ["annotators", "agent", "disagreements"]
    assert [list(e) for e in report["annotators"]] == [["a", "b", "n", "po", "pe", "kappa"]] * 3
    assert list(report["agent"][0]) == ["annotator", "n", "po", "pe", "kappa"]


def test_conformance_disagreements_are_d1_and_d5(conformance_lines, conformance_human_labels, rubric):
    report = agreement_report(conformance_lines, AGENT, conformance_human_labels, rubric)
    assert report["disagreements"] == [
        {"query_id": GOLDEN_QUERY, "doc_id": "d1", "labels": {"ana": "relevant", "ben": "partial", "cy": "relevant"}},
        {"query_id": GOLDEN_QUERY, "doc_id": "d5", "labels": {"ana": "relevant", "ben": "irrelevant"}},
    ]


def test_conformance_ana_against_agent_is_exact(conformance_lines, conformance_human_labels, rubric):
    ana = agent_agreement(conformance_lines, AGENT, conformance_human_labels, rubric)[0]
    assert ana.annotator == "ana"
    assert (ana.agreement.n, ana.agreement.po, ana.agreement.pe) == (3, Fraction(1, 3), Fraction(5, 9))
    assert ana.agreement.kappa == Fraction(-1, 2)


def test_conformance_ana_and_cy_share_one_pair_so_kappa_is_null(conformance_lines):
    pairs = {(x.a, x.b): x.agreement for x in annotator_agreement(conformance_lines)}
    assert pairs[("ana", "cy")].n == 1 and pairs[("ana", "cy")].pe == 1 and pairs[("ana", "cy")].kappa is None
    assert (pairs[("ana", "ben")].n, pairs[("ana", "ben")].kappa) == (2, 0)


def test_conformance_tied_lines_keep_the_later_one(conformance_lines):
    ben_d6 = [
        x
        for x in current_labels(conformance_lines)
        if (x.annotator, x.query_id, x.doc_id) == ("ben", GOLDEN_QUERY, "d6")
    ]
    assert [(x.label, x.order.line) for x in ben_d6] == [("irrelevant", 10)]


def test_conformance_breakdown_by_decided_by_project_and_pair(conformance_lines):
    breakdown = disagreement_breakdown(conformance_lines)
    assert breakdown.total == 2
    # d1: answerability (ana), coverage (ben), entity (cy); d5: answerability (ana), recency (ben).
    # Each disagreeing pair counts once, under its dimensions together: the counts add up to 2.
    assert breakdown.by_decided_by == (
        Count("answerability / coverage / entity", 1),
        Count("answerability / recency", 1),
    )
    assert sum(c.n for c in breakdown.by_decided_by) == breakdown.total
    assert breakdown.by_project == (Count("billing", 2),)
    assert breakdown.annotator_pairs == (
        PairDisagreements("ana", "ben", 2, (PairRef(GOLDEN_QUERY, "d1"), PairRef(GOLDEN_QUERY, "d5"))),
        PairDisagreements("ben", "cy", 1, (PairRef(GOLDEN_QUERY, "d1"),)),
    )


# --------------------------------------------------------------------------- kappa against scikit-learn


def _sklearn_kappa(a, b) -> float:
    with warnings.catch_warnings():
        # pe = 1: scikit-learn warns and returns nan, where the contract says null.
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return float(cohen_kappa_score(a, b, labels=LABELS))


label_pairs = st.integers(min_value=1, max_value=40).flatmap(
    lambda n: st.tuples(
        st.lists(st.sampled_from(LABELS), min_size=n, max_size=n),
        st.lists(st.sampled_from(LABELS), min_size=n, max_size=n),
    )
)


@given(label_pairs)
@example((["relevant"], ["relevant"]))  # one pair: pe = 1
@example((["partial"] * 5, ["partial"] * 5))  # one label only, both raters: pe = 1
@example((["relevant", "partial", "irrelevant"], ["relevant", "partial", "irrelevant"]))  # perfect agreement
@example((["relevant"] * 4, ["partial"] * 4))  # one label each, never agreeing: pe = 0
@example((["relevant", "partial"], ["partial", "relevant"]))  # total disagreement
def test_kappa_matches_scikit_learn(pair):
    a, b = pair
    got = cohen_kappa(a, b)
    reference = _sklearn_kappa(a, b)
    if got.kappa is None:
        assert math.isnan(reference)
    else:
        assert float(got.kappa) == pytest.approx(reference, abs=1e-12)
    # po and pe counted independently of the implementation.
    n = len(a)
    assert got.n == n
    assert got.po == Fraction(sum(x == y for x, y in zip(a, b, strict=True)), n)
    assert got.pe == sum(Fraction(a.count(c), n) * Fraction(b.count(c), n) for c in LABELS)


@given(label_pairs)
def test_annotator_agreement_pairs_labels_by_query_and_doc(pair):
    a, b = pair
    # ben's lines arrive shuffled: pairing must follow (query_id, doc_id), not input order.
    ana = [_line("ana", f"d{i}", x, line=i) for i, x in enumerate(a)]
    ben = [_line("ben", f"d{i}", y, line=i) for i, y in enumerate(b)]
    random.Random(0).shuffle(ben)
    (entry,) = annotator_agreement(ana + ben)
    reference = _sklearn_kappa(a, b)
    assert (entry.a, entry.b, entry.agreement.n) == ("ana", "ben", len(a))
    if entry.agreement.kappa is None:
        assert math.isnan(reference)
    else:
        assert float(entry.agreement.kappa) == pytest.approx(reference, abs=1e-12)


def test_kappa_is_null_when_chance_agreement_is_one():
    got = cohen_kappa(["partial"] * 3, ["partial"] * 3)
    assert (got.po, got.pe, got.kappa) == (1, 1, None)
    assert got.to_json() == {"n": 3, "po": 1.0, "pe": 1.0, "kappa": None}


def test_kappa_refuses_unpaired_or_empty_labels():
    with pytest.raises(ValueError, match="paired"):
        cohen_kappa(["a"], ["a", "b"])
    with pytest.raises(ValueError, match="at least one"):
        cohen_kappa([], [])


# --------------------------------------------------------------------------- exact figures and rounding


def test_kappa_minus_one_thirty_second_rounds_away_from_zero():
    # 11 pairs: 1 both yes, 1 only a yes, 5 only b yes, 4 both no.
    # po = 5/11; p_a(yes) = 2/11, p_b(yes) = 6/11; pe = (2*6 + 9*5)/121 = 57/121;
    # kappa = (55 - 57)/(121 - 57) = -2/64 = -1/32 = -0.03125 exactly -> -0.0313 (float round gives -0.0312).
    a = [1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    b = [1, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0]
    got = cohen_kappa(a, b)
    assert (got.po, got.pe, got.kappa) == (Fraction(5, 11), Fraction(57, 121), Fraction(-1, 32))
    assert got.to_json() == {"n": 11, "po": 0.4545, "pe": 0.4711, "kappa": -0.0313}


def test_kappa_thirteen_thirty_seconds_rounds_half_up():
    # 19 pairs: 2 both yes, 4 only b yes, 13 both no. po = 15/19; pe = (2*6 + 17*13)/361 = 233/361;
    # kappa = (285 - 233)/(361 - 233) = 52/128 = 13/32 = 0.40625 -> 0.4063.
    a = [1] * 2 + [0] * 17
    b = [1] * 6 + [0] * 13
    got = cohen_kappa(a, b)
    assert got.kappa == Fraction(13, 32)
    assert got.to_json()["kappa"] == 0.4063


def test_po_of_one_in_thirty_two_rounds_half_up():
    # 1/32 = 0.03125 exactly; Python's round() gives 0.0312 (half to even on an exact binary value).
    got = cohen_kappa(["x"] + ["y"] * 31, ["x"] + ["z"] * 31)
    assert got.po == Fraction(1, 32)
    assert got.to_json()["po"] == 0.0313


@pytest.mark.parametrize(
    ("value", "rounded"),
    [
        (Fraction(15, 100000), 0.0002),
        (Fraction(-15, 100000), -0.0002),
        (Fraction(25, 100000), 0.0003),  # half to even would give 0.0002
        (Fraction(-25, 100000), -0.0003),
        (Fraction(-1, 2), -0.5),
        (Fraction(1, 3), 0.3333),
        (Fraction(2, 3), 0.6667),
        (Fraction(0), 0.0),
        # Just below a half: dividing to 28 digits first would round up to 0.0001; the exact value rounds down.
        (Fraction(5, 10**5) - Fraction(1, 10**40), 0.0),
    ],
)
def test_round_half_away_decides_on_the_exact_value(value, rounded):
    assert round_half_away(value) == rounded


# --------------------------------------------------------------------------- current labels and pairing


def test_current_label_is_the_latest_instant_whatever_the_offset():
    later = _line("ana", "d1", "partial", minutes=5, line=1, tz=timezone(timedelta(hours=-3)))
    earlier = _line("ana", "d1", "relevant", minutes=0, line=2, tz=timezone(timedelta(hours=2)))
    assert [x.label for x in current_labels([later, earlier])] == ["partial"]


def test_same_instant_in_two_offsets_is_a_tie_won_by_the_later_line():
    first = _line("ana", "d1", "partial", line=1, tz=timezone(timedelta(hours=1)))
    second = _line("ana", "d1", "relevant", line=2)
    assert [x.label for x in current_labels([second, first])] == ["relevant"]


def test_tie_on_ts_compares_dt_then_file_then_line():
    base = _line("ana", "d1", "relevant")
    lines = [
        LabelLine(**{**base.__dict__, "label": "a", "order": LineOrder("2026-11-04", "a.jsonl", 9)}),
        LabelLine(**{**base.__dict__, "label": "b", "order": LineOrder("2026-11-03", "z.jsonl", 99)}),
        LabelLine(**{**base.__dict__, "label": "c", "order": LineOrder("2026-11-04", "a.jsonl", 10)}),
    ]
    assert [x.label for x in current_labels(lines)] == ["c"]


@given(st.permutations(list(range(6))))
def test_current_labels_do_not_depend_on_input_order(perm):
    lines = [_line("ana", f"d{i % 2}", f"l{i}", minutes=i // 3, line=i) for i in range(6)]
    assert current_labels([lines[i] for i in perm]) == current_labels(lines)


def test_current_labels_are_per_annotator_query_and_doc():
    lines = [_line("ben", "d1", "partial"), _line("ana", "d1", "relevant"), _line("ana", "d1", "irrelevant", query="r")]
    assert [(x.annotator, x.query_id, x.label) for x in current_labels(lines)] == [
        ("ana", "q", "relevant"),
        ("ana", "r", "irrelevant"),
        ("ben", "q", "partial"),
    ]


def test_labels_at_different_versions_are_not_shared():
    lines = [_line("ana", "d1", "relevant", version="v1"), _line("ben", "d1", "partial", version="v2")]
    assert annotator_agreement(lines) == []
    assert disagreements(lines) == []


def test_an_older_line_at_the_shared_version_does_not_stand_in_for_the_current_one():
    lines = [
        _line("ana", "d1", "relevant", version="v1"),
        _line("ben", "d1", "relevant", version="v1", minutes=0),
        _line("ben", "d1", "partial", version="v2", minutes=5),
    ]
    assert annotator_agreement(lines) == []


def test_judge_lines_take_no_part_in_agreement():
    lines = [_line("ana", "d1", "relevant"), _line("bot", "d1", "partial", kind="judge")]
    assert annotator_agreement(lines) == []
    assert disagreements(lines) == []


def test_a_later_judge_line_of_the_same_name_shadows_its_human_line_as_the_merge_reads_it(rubric):
    # ana labels d1 and d2 as a person; then a judge run under her name labels d1, later. Her current label on d1
    # is the judge line (7.2, read as the merge and the gate read it, 8.3): on d1 she is a judge, and her older
    # human line is compared with nobody, as it does not vote in the human label of 7.3 either.
    lines = [
        _line("ana", "d1", "relevant", minutes=0),
        _line("ana", "d2", "irrelevant", minutes=0),
        _line("ben", "d1", "partial", minutes=1),
        _line("ben", "d2", "irrelevant", minutes=1),
        _line("ana", "d1", "irrelevant", minutes=5, kind="judge"),
    ]
    (entry,) = annotator_agreement(lines)
    assert (entry.a, entry.b, entry.agreement.n, entry.agreement.po) == ("ana", "ben", 1, 1)
    assert disagreements(lines) == []  # on d1 only ben holds a human current label
    agent = [AgentLabel("q", "d1", "v1", "helped"), AgentLabel("q", "d2", "v1", "noise")]
    assert [(e.annotator, e.agreement.n) for e in agent_agreement(lines, agent, [], rubric)] == [("ana", 1), ("ben", 2)]


def test_a_later_human_line_of_a_judges_name_makes_it_a_human_annotator_on_that_pair():
    lines = [
        _line("qwen", "d1", "irrelevant", minutes=0, kind="judge"),
        _line("ben", "d1", "relevant", minutes=1),
        _line("qwen", "d1", "relevant", minutes=5),
    ]
    (entry,) = annotator_agreement(lines)
    assert (entry.a, entry.b, entry.agreement.n, entry.agreement.po) == ("ben", "qwen", 1, 1)


def test_annotator_pairs_are_ordered_by_code_point():
    lines = [_line(name, "d1", "relevant") for name in ("ana", "Zoe", "ben")]
    assert [(x.a, x.b) for x in annotator_agreement(lines)] == [("Zoe", "ana"), ("Zoe", "ben"), ("ana", "ben")]


# --------------------------------------------------------------------------- disagreements


def test_disagreement_lists_only_the_version_group_that_disagrees():
    lines = [
        _line("ana", "d1", "relevant", version="v1"),
        _line("ben", "d1", "relevant", version="v1"),
        _line("cy", "d1", "partial", version="v2"),
        _line("dan", "d1", "relevant", version="v2"),
        _line("eve", "d1", "irrelevant", version="v3"),
    ]
    assert [d.to_json() for d in disagreements(lines)] == [
        {"query_id": "q", "doc_id": "d1", "labels": {"cy": "partial", "dan": "relevant"}}
    ]


def test_disagreements_are_sorted_by_query_then_doc():
    lines = [
        _line(name, doc, label, query=query)
        for query, doc in (("q2", "a"), ("q1", "b"), ("q1", "a"))
        for name, label in (("ana", "relevant"), ("ben", "partial"))
    ]
    assert [(d.query_id, d.doc_id) for d in disagreements(lines)] == [("q1", "a"), ("q1", "b"), ("q2", "a")]


def test_unanimous_pairs_are_not_disagreements():
    lines = [_line("ana", "d1", "relevant"), _line("ben", "d1", "relevant")]
    assert disagreements(lines) == []


def test_breakdown_counts_unknown_project_apart():
    lines = [
        _line("ana", "d1", "relevant"),
        _line("ben", "d1", "partial", decided_by="coverage"),
        _line("ana", "d2", "relevant", project="billing"),
        _line("ben", "d2", "partial", project="billing"),
    ]
    breakdown = disagreement_breakdown(lines)
    assert breakdown.by_project == (Count("(no project)", 1), Count("billing", 1))
    # d1 split between answerability and coverage, d2 decided by answerability on both sides.
    assert breakdown.by_decided_by == (Count("answerability", 1), Count("answerability / coverage", 1))
    assert sum(c.n for c in breakdown.by_decided_by) == breakdown.total == 2


# --------------------------------------------------------------------------- agent


def test_agent_is_compared_only_at_the_same_version(rubric):
    lines = [_line("ana", "d1", "relevant", version="v2"), _line("ana", "d2", "irrelevant")]
    agent = [AgentLabel("q", "d1", "v1", "helped"), AgentLabel("q", "d2", "v1", "noise")]
    (entry,) = agent_agreement(lines, agent, [], rubric)
    assert (entry.annotator, entry.agreement.n, entry.agreement.po) == ("ana", 1, 1)


def test_agent_compares_helped_with_grade_at_least_one(rubric):
    # partial has grade 1: it agrees with helped; wrong and noise agree with irrelevant.
    lines = [_line("ana", "d1", "partial"), _line("ana", "d2", "irrelevant"), _line("ana", "d3", "irrelevant")]
    agent = [
        AgentLabel("q", "d1", "v1", "helped"),
        AgentLabel("q", "d2", "v1", "wrong"),
        AgentLabel("q", "d3", "v1", "noise"),
    ]
    (entry,) = agent_agreement(lines, agent, [], rubric)
    assert entry.agreement.po == 1 and entry.agreement.kappa == 1


def test_human_label_comes_last_whatever_the_names(rubric):
    # "(" sorts before letters and digits, so a plain sort would put it first.
    lines = [_line(name, "d1", "relevant") for name in ("zed", "Ann", "0x")]
    agent = [AgentLabel("q", "d1", "v1", "helped")]
    entries = agent_agreement(lines, agent, [HumanLabel("q", "d1", "v1", "relevant")], rubric)
    assert [e.annotator for e in entries] == ["0x", "Ann", "zed", HUMAN_LABEL]


def test_human_label_at_another_version_is_left_out(rubric):
    agent = [AgentLabel("q", "d1", "v1", "helped")]
    assert agent_agreement([], agent, [HumanLabel("q", "d1", "v2", "relevant")], rubric) == []


def test_two_agent_labels_for_one_pair_are_refused(rubric):
    agent = [AgentLabel("q", "d1", "v1", "helped"), AgentLabel("q", "d1", "v1", "noise")]
    with pytest.raises(ValueError, match="two agent labels"):
        agent_agreement([], agent, [], rubric)


def test_label_line_needs_an_aware_timestamp():
    with pytest.raises(ValueError, match="timezone-aware"):
        LabelLine(
            "ana",
            "human",
            "q",
            "d1",
            "v1",
            "relevant",
            "answerability",
            datetime(2026, 11, 3),
            LineOrder("2026-11-03", "p.jsonl", 1),
        )


# --------------------------------------------------------------------------- why a table is empty


def test_a_table_with_entries_has_no_note(conformance_lines, conformance_human_labels, rubric):
    report = agreement_report(conformance_lines, AGENT, conformance_human_labels, rubric)
    assert agreement_notes(report, conformance_lines, AGENT, 7) == []


def test_labels_only_at_other_versions_leave_the_agent_table_empty_and_name_the_log_judged_pairs(rubric):
    # ana and ben label d1 at v2 (the version now) where the agent judged v1, and d9 the agent never judged.
    lines = [_line("ana", "d1", "relevant", version="v2"), _line("ben", "d9", "partial", line=2)]
    agent = [AgentLabel("q", "d1", "v1", "helped"), AgentLabel("q", "d2", "v1", "noise")]
    report = agreement_report(lines, agent, [], rubric)
    assert report["annotators"] == [] and report["agent"] == []
    notes = {n.table: n for n in agreement_notes(report, lines, agent, 4)}
    assert notes["agent"].why == (
        "1 annotator label(s) are on pairs the agent judged, but none at the doc_version the agent judged"
    )
    assert notes["agent"].pairs == 4 and "label log-judged pairs: 4 golden row(s)" in notes["agent"].fill
    assert "`goldenset pool --audit N`" in notes["agent"].fill
    # Two annotators, no pair in common: each of their two pairs needs a second label.
    assert notes["annotators"].why == "no pair holds two annotators' current labels at the same doc_version"
    assert notes["annotators"].pairs == 2


@pytest.mark.parametrize(
    ("lines", "why"),
    [
        ([], "no annotator has a label line yet"),
        (
            [_line("ana", "d9", "relevant")],
            "none of the 1 annotator label(s) is on a pair the agent judged (a log verdict that survived "
            "filters 1-3): the labelling queue pools pairs the log never judged at the current version",
        ),
    ],
)
def test_the_agent_notes_first_reason_that_applies(rubric, lines, why):
    agent = [AgentLabel("q", "d1", "v1", "helped")]
    (agent_note,) = [
        n for n in agreement_notes(agreement_report(lines, agent, [], rubric), lines, agent, 1) if n.table == "agent"
    ]
    assert agent_note.why == why


@pytest.mark.slow
def test_labels_agreement_json_notes_why_its_tables_are_empty(tmp_path, pool_worlds, capsys):
    from goldenset.cli.app import main

    # The pool tests' world: ana's three labels, none on a pair the log judged; three log rows at
    # the current version (a on Q1, k and n on Q2; b, c and m went stale).
    world = pool_worlds(tmp_path / "w")
    assert main(["labels", "agreement", "--json", "--db", str(world.db), "--rubric", str(DATA / "rubric.yaml")]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert list(printed) == ["annotators", "agent", "disagreements", "notes"]
    assert [(n["table"], n["pairs"]) for n in printed["notes"]] == [("annotators", 3), ("agent", 3)]
    assert printed["notes"][0]["why"].startswith("only ana has labels")
    assert printed["notes"][1]["why"].startswith("none of the 3 annotator label(s) is on a pair the agent judged")
    assert main(["labels", "agreement", "--db", str(world.db), "--rubric", str(DATA / "rubric.yaml")]) == 0
    text = capsys.readouterr().out
    assert "agent table empty: none of the 3 annotator label(s)" in text and "label log-judged pairs: 3" in text
