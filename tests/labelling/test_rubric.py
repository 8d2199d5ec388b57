"""The rubric (contract 7.1): reading, one-line errors, closure, decided_by, label-line rules."""

from __future__ import annotations

import hashlib
import json
from datetime import date
from pathlib import Path

import pytest

from goldenset.errors import InputError
from goldenset.labelling.rubric import Label, RubricError, load_rubric, parse_rubric

DATA = Path(__file__).resolve().parents[1] / "data" / "conformance"
LABEL_LINES = DATA / "labels" / "dt=2026-11-03" / "part-0001.jsonl"

# A small closed rubric; the line numbers in the expected messages below count from here.
BASE = """\
name: support-policies
task: Answer policy questions.
as_of: 2026-08-01
dimensions:
  answerability: A reader can state the answer.
  coverage: Every clause is addressed.
labels:
  relevant: {grade: 2, pass: [answerability, coverage]}
  partial: {grade: 1, pass: [answerability], fail: [coverage]}
  irrelevant: {grade: 0, fail: [answerability]}
"""
DIMS = "dimensions:\n  answerability: A reader can state the answer.\n  coverage: Every clause is addressed.\n"


def _message(text: str) -> str:
    with pytest.raises(RubricError) as caught:
        parse_rubric(text, "rubric.yaml")
    return str(caught.value)


def _rubric(dimensions: list[str], labels: str) -> str:
    dims = "".join(f"  {d}: test {d}\n" for d in dimensions)
    return f"name: r\ntask: t\ndimensions:\n{dims}labels:\n{labels}"


@pytest.fixture
def conformance_rubric():
    """The conformance example's rubric, read from the tests' copy."""
    return load_rubric(DATA / "rubric.yaml")


def _line(number: int) -> dict:
    return json.loads(LABEL_LINES.read_text(encoding="utf-8").split("\n")[number - 1])


# --------------------------------------------------------------------------- reading


def test_conformance_rubric_keeps_file_order_grades_and_rules(conformance_rubric):
    r = conformance_rubric
    assert (r.name, r.as_of) == ("support-policies", date(2026, 8, 1))
    assert r.dimension_names == ("answerability", "authority", "recency", "coverage", "entity")
    assert r.dimensions[2].test == "Passage is from the version in force on as_of."
    assert r.labels == (
        Label("relevant", 2, pass_=("answerability", "authority", "recency", "coverage", "entity")),
        Label("partial", 1, pass_=("answerability", "authority", "recency", "entity"), fail=("coverage",)),
        Label("irrelevant", 0, any_fail=("answerability", "authority", "recency", "entity")),
    )
    assert r.task == (
        "A support-agent-facing assistant that answers questions about the policies "
        "currently in force, using only the published policy corpus.\n"
    )


def test_content_sha256_is_of_the_file_bytes(conformance_rubric):
    assert conformance_rubric.content_sha256 == hashlib.sha256((DATA / "rubric.yaml").read_bytes()).hexdigest()


def test_parse_rubric_hashes_the_utf8_text():
    assert parse_rubric(BASE).content_sha256 == hashlib.sha256(BASE.encode("utf-8")).hexdigest()


def test_grade_of_reads_the_label_grade(conformance_rubric):
    assert [conformance_rubric.grade_of(x) for x in ("relevant", "partial", "irrelevant")] == [2, 1, 0]


@pytest.mark.parametrize(
    ("written", "as_of"),
    [
        ("as_of: 2026-08-01\n", date(2026, 8, 1)),
        ('as_of: "2026-08-01"\n', date(2026, 8, 1)),
        ("as_of: from_query\n", "from_query"),
        ("", None),
        ("as_of:\n", None),
    ],
)
def test_as_of_is_a_date_from_query_or_absent(written, as_of):
    assert parse_rubric(BASE.replace("as_of: 2026-08-01\n", written)).as_of == as_of


def test_labels_may_share_a_grade():
    text = BASE.replace(
        "{grade: 1, pass: [answerability], fail: [coverage]}", "{grade: 2, pass: [answerability], fail: [coverage]}"
    )
    assert [lab.grade for lab in parse_rubric(text).labels] == [2, 2, 0]


def test_sixteen_dimensions_are_allowed():
    dims = [f"d{i}" for i in range(16)]
    r = parse_rubric(_rubric(dims, "  a: {grade: 1}\n  b: {grade: 0, fail: [d0]}\n"))
    assert len(r.dimensions) == 16


# --------------------------------------------------------------------------- invalid files

INVALID = [
    (
        "missing_key",
        BASE.replace("task: Answer policy questions.\n", ""),
        "rubric.yaml: missing key 'task' in the rubric; it needs name, task, dimensions and labels",
    ),
    (
        "misspelt_key_is_unknown_not_missing",
        BASE.replace("task:", "taks:"),
        "rubric.yaml: line 2: unknown key 'taks' in the rubric; the keys are name, task, as_of, projects, dimensions, labels",
    ),
    (
        "unknown_key_in_a_label",
        BASE.replace("{grade: 0,", "{grade: 0, note: x,"),
        "rubric.yaml: line 10: unknown key 'note' in label 'irrelevant'; the keys are grade, pass, fail, any_fail",
    ),
    (
        "missing_grade",
        BASE.replace("{grade: 0, fail: [answerability]}", "{fail: [answerability]}"),
        "rubric.yaml: line 10: missing key 'grade' in label 'irrelevant'; it needs a grade (an integer >= 0)",
    ),
    (
        "repeated_top_level_key",
        BASE + "name: again\n",
        "rubric.yaml: line 11: key 'name' appears twice in one mapping (first at line 1); keep one",
    ),
    (
        "repeated_dimension",
        BASE.replace("  coverage:", "  answerability: again\n  coverage:"),
        "rubric.yaml: line 6: key 'answerability' appears twice in one mapping (first at line 5); keep one",
    ),
    (
        "repeated_label",
        BASE + "  partial: {grade: 1}\n",
        "rubric.yaml: line 11: key 'partial' appears twice in one mapping (first at line 9); keep one",
    ),
    (
        "repeated_key_inside_a_rule",
        BASE.replace("{grade: 0,", "{grade: 0, grade: 1,"),
        "rubric.yaml: line 10: key 'grade' appears twice in one mapping (first at line 10); keep one",
    ),
    (
        "rule_names_unknown_dimension",
        BASE.replace("fail: [coverage]", "fail: [coverge]"),
        "rubric.yaml: line 9: label 'partial' names unknown dimension 'coverge' in fail; "
        "the dimensions are answerability, coverage",
    ),
    (
        "no_dimension",
        BASE.replace(DIMS, "dimensions: {}\n"),
        "rubric.yaml: line 4: no dimension; a rubric needs 1 to 16",
    ),
    (
        "seventeen_dimensions",
        BASE.replace(DIMS, "dimensions:\n" + "".join(f"  d{i}: t\n" for i in range(17))),
        "rubric.yaml: line 4: 17 dimensions; a rubric holds at most 16",
    ),
    (
        "one_label",
        BASE.split("labels:")[0] + "labels:\n  relevant: {grade: 2}\n",
        "rubric.yaml: line 7: only 1 label; a rubric needs at least 2",
    ),
    ("no_label", BASE.split("labels:")[0] + "labels: {}\n", "rubric.yaml: line 7: no label; a rubric needs at least 2"),
    (
        "float_grade",
        BASE.replace("grade: 2,", "grade: 2.0,"),
        "rubric.yaml: line 8: grade of label 'relevant' must be a YAML integer >= 0 (like 2), got 2.0",
    ),
    (
        "boolean_grade",
        BASE.replace("grade: 2,", "grade: true,"),
        "rubric.yaml: line 8: grade of label 'relevant' must be a YAML integer >= 0 (like 2), got true",
    ),
    (
        "quoted_grade",
        BASE.replace("grade: 2,", 'grade: "2",'),
        "rubric.yaml: line 8: grade of label 'relevant' must be a YAML integer >= 0 (like 2), got '2'",
    ),
    (
        "negative_grade",
        BASE.replace("grade: 2,", "grade: -1,"),
        "rubric.yaml: line 8: grade of label 'relevant' must be a YAML integer >= 0 (like 2), got -1",
    ),
    (
        "rubric_name_with_upper_case",
        BASE.replace("name: support-policies", "name: Support"),
        "rubric.yaml: line 1: name 'Support' must match [a-z][a-z0-9_-]*",
    ),
    (
        "rubric_name_not_text",
        BASE.replace("name: support-policies", "name: 12"),
        "rubric.yaml: line 1: name must be text matching [a-z][a-z0-9_-]*, got 12",
    ),
    (
        "dimension_name_with_upper_case",
        BASE.replace("  coverage:", "  Coverage:"),
        "rubric.yaml: line 6: dimension name 'Coverage' must match [a-z][a-z0-9_]*",
    ),
    (
        "dimension_name_yaml_reads_as_boolean",
        BASE.replace("  coverage:", "  yes:"),
        "rubric.yaml: line 4: dimension name true must be text matching [a-z][a-z0-9_]* "
        "(YAML reads yes/no/on/off/true/false and numbers as other types; quote it)",
    ),
    (
        "label_name_with_hyphen",
        BASE.replace("  partial:", "  part-ial:"),
        "rubric.yaml: line 9: label name 'part-ial' must match [a-z][a-z0-9_]*",
    ),
    (
        "impossible_date",
        BASE.replace("2026-08-01", "2026-02-30"),
        "rubric.yaml: line 3: as_of must be a date YYYY-MM-DD or from_query, got '2026-02-30'",
    ),
    (
        "timestamp_not_date",
        BASE.replace("2026-08-01", "2026-08-01T10:00:00Z"),
        "rubric.yaml: line 3: as_of must be a date YYYY-MM-DD or from_query, got '2026-08-01T10:00:00Z'",
    ),
    (
        "as_of_word",
        BASE.replace("2026-08-01", "yesterday"),
        "rubric.yaml: line 3: as_of must be a date YYYY-MM-DD or from_query, got 'yesterday'",
    ),
    (
        "as_of_number",
        BASE.replace("2026-08-01", "20260801"),
        "rubric.yaml: line 3: as_of must be a date YYYY-MM-DD or from_query, got 20260801",
    ),
    (
        "empty_clause",
        BASE.replace("fail: [answerability]", "fail: []"),
        "rubric.yaml: line 10: fail of label 'irrelevant' is empty; list at least one dimension or leave the clause out",
    ),
    (
        "null_clause",
        BASE.replace("fail: [answerability]", "fail: null"),
        "rubric.yaml: line 10: fail of label 'irrelevant' is null; list at least one dimension or leave the clause out",
    ),
    (
        "dimension_twice_across_clauses",
        BASE.replace("pass: [answerability], fail: [coverage]", "pass: [answerability, coverage], fail: [coverage]"),
        "rubric.yaml: line 9: label 'partial' names dimension 'coverage' twice (pass and fail); name it once per rule",
    ),
    (
        "dimension_twice_in_one_clause",
        BASE.replace("pass: [answerability, coverage]", "pass: [coverage, coverage]"),
        "rubric.yaml: line 8: label 'relevant' names dimension 'coverage' twice (pass); name it once per rule",
    ),
    (
        "clause_not_a_list",
        BASE.replace("fail: [answerability]", "fail: answerability"),
        "rubric.yaml: line 10: fail of label 'irrelevant' must be a list of dimension names like [coverage], "
        "got 'answerability'",
    ),
    (
        "clause_item_not_text",
        BASE.replace("fail: [answerability]", "fail: [answerability, 3]"),
        "rubric.yaml: line 10: fail of label 'irrelevant' must list dimension names, got 3 (item 2)",
    ),
    (
        "dimensions_not_a_mapping",
        BASE.replace(DIMS, "dimensions: [answerability, coverage]\n"),
        "rubric.yaml: line 4: dimensions must be a mapping of dimension name to the test an annotator applies, got a list",
    ),
    (
        "dimension_test_not_text",
        BASE.replace("Every clause is addressed.", "3"),
        "rubric.yaml: line 6: dimension 'coverage' must have its test as text, got 3",
    ),
    (
        "dimension_test_blank",
        BASE.replace("Every clause is addressed.", "''"),
        "rubric.yaml: line 6: dimension 'coverage' has an empty test; write the test an annotator applies",
    ),
    (
        "task_blank",
        BASE.replace("Answer policy questions.", "'  '"),
        "rubric.yaml: line 2: task is empty; state the task in one sentence",
    ),
    (
        "label_not_a_mapping",
        BASE.replace("{grade: 0, fail: [answerability]}", ""),
        "rubric.yaml: line 10: label 'irrelevant' must be a mapping like {grade: 1, pass: [...]}, got null",
    ),
    (
        "yaml_syntax_error",
        BASE.replace("fail: [answerability]}", "fail: [answerability}"),
        "rubric.yaml: line 10: YAML syntax error: expected ',' or ']', but got '}' (while parsing a flow sequence)",
    ),
    (
        "tab_indentation",
        BASE.replace("  coverage:", "\tcoverage:"),
        "rubric.yaml: line 6: YAML syntax error: found character '\\t' that cannot start any token "
        "(while scanning for the next token)",
    ),
    (
        "two_documents",
        BASE + "---\nname: other\n",
        "rubric.yaml: line 11: YAML syntax error: expected a single document in the stream, but found another document",
    ),
    (
        "control_character",
        BASE + "\x07",
        "rubric.yaml: line 11: YAML syntax error: unacceptable character #x0007 (control characters are not allowed); "
        "remove it",
    ),
    ("empty_file", "", "rubric.yaml: the file is empty; a rubric needs name, task, dimensions and labels"),
    (
        "top_level_list",
        "- name\n",
        "rubric.yaml: expected a mapping (name, task, dimensions, labels) at the top level, got a list",
    ),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
def test_invalid_rubric_names_the_file_line_and_first_problem(text, expected):
    message = _message(text)
    assert message == expected
    assert "\n" not in message


def test_rubric_error_exits_1_as_an_input_error():
    assert issubclass(RubricError, InputError) and RubricError.exit_code == 1


def test_unknown_key_is_reported_before_a_wrong_type():
    text = BASE.replace("grade: 2,", "grade: 2.0,") + "owner: ana\n"
    assert _message(text) == (
        "rubric.yaml: line 11: unknown key 'owner' in the rubric; the keys are name, task, as_of, projects, dimensions, labels"
    )


def test_missing_file_is_unreadable(tmp_path):
    path = tmp_path / "nope.yaml"
    with pytest.raises(RubricError) as caught:
        load_rubric(path)
    assert str(caught.value) == f"{path}: cannot read the rubric file (No such file or directory); check the path"


def test_directory_is_unreadable(tmp_path):
    with pytest.raises(RubricError) as caught:
        load_rubric(tmp_path)
    assert str(caught.value) == f"{tmp_path}: cannot read the rubric file (Is a directory); check the path"


def test_file_that_is_not_utf8_is_refused(tmp_path):
    path = tmp_path / "latin1.yaml"
    # "name: support-policies\n" is 23 bytes, "task: R" 7 more: the é is byte 30.
    path.write_bytes(BASE.replace("Answer", "R\xe9ponse").encode("latin-1"))
    with pytest.raises(RubricError) as caught:
        load_rubric(path)
    assert str(caught.value) == f"{path}: not UTF-8 (byte 0xe9 at offset 30); save the rubric as UTF-8"


def test_load_rubric_names_the_file_in_yaml_errors(tmp_path):
    path = tmp_path / "rubric.yaml"
    path.write_text(BASE + "name: again\n", encoding="utf-8")
    with pytest.raises(RubricError, match=r"^.*rubric\.yaml: line 11: key 'name' appears twice"):
        load_rubric(path)


# --------------------------------------------------------------------------- closure


def test_conformance_rubric_is_closed(conformance_rubric):
    report = conformance_rubric.closure()
    assert report.closed and report.exit_code == 0
    assert report.lines() == ["closed: 32 assignments, 3 labels"]


@pytest.mark.parametrize(
    ("failing", "labels"),
    [
        (set(), ["relevant"]),
        ({"coverage"}, ["partial"]),
        ({"entity"}, ["irrelevant"]),
        ({"coverage", "entity"}, ["irrelevant"]),
        ({"answerability", "authority", "recency", "coverage", "entity"}, ["irrelevant"]),
    ],
)
def test_labels_for_applies_the_conjunction_of_clauses(conformance_rubric, failing, labels):
    assert conformance_rubric.labels_for(failing) == labels


def test_labels_for_refuses_an_unknown_dimension(conformance_rubric):
    with pytest.raises(ValueError, match="no dimension 'tone'"):
        conformance_rubric.labels_for({"tone"})


def test_rule_without_clauses_matches_every_assignment():
    r = parse_rubric(_rubric(["a"], "  anything: {grade: 0}\n  good: {grade: 1, pass: [a]}\n"))
    assert r.labels_for(set()) == ["anything", "good"]
    assert r.labels_for({"a"}) == ["anything"]
    assert r.closure().lines() == ["fail: [] -> anything, good"]


def test_open_rubric_prints_the_contract_example_lines_in_binary_order():
    # The conformance rubric with partial's fail clause dropped and irrelevant narrowed: every
    # assignment passing answerability and authority is then open, except "coverage fails".
    text = (DATA / "rubric.yaml").read_text(encoding="utf-8")
    text = text.replace(", fail: [coverage]}", "}")
    text = text.replace("any_fail: [answerability, authority, recency, entity]", "any_fail: [answerability, authority]")
    report = parse_rubric(text).closure()
    assert report.exit_code == 1
    assert report.lines() == [
        "fail: [] -> relevant, partial",
        "fail: [entity] -> no label",
        "fail: [coverage, entity] -> no label",
        "fail: [recency] -> no label",
        "fail: [recency, entity] -> no label",
        "fail: [recency, coverage] -> no label",
        "fail: [recency, coverage, entity] -> no label",
    ]


def test_demo_open_rubric_interleaves_collisions_and_fall_throughs():
    report = load_rubric(Path(__file__).resolve().parents[2] / "goldenset" / "data" / "open-rubric.yaml").closure()
    assert report.lines() == [
        "fail: [recency, coverage] -> partial, outdated",
        "fail: [authority] -> no label",
        "fail: [authority, coverage] -> no label",
    ]


def test_closure_shows_at_most_20_of_each_kind_then_counts_the_rest():
    # a passes, not all pass: no label (numbers 1-31); a fails: both x and y (numbers 32-63).
    r = parse_rubric(
        _rubric(
            list("abcdef"),
            "  clean: {grade: 1, pass: [a, b, c, d, e, f]}\n  x: {grade: 0, fail: [a]}\n  y: {grade: 0, fail: [a]}\n",
        )
    )
    no_label = [
        "f",
        "e",
        "e, f",
        "d",
        "d, f",
        "d, e",
        "d, e, f",
        "c",
        "c, f",
        "c, e",
        "c, e, f",
        "c, d",
        "c, d, f",
        "c, d, e",
        "c, d, e, f",
        "b",
        "b, f",
        "b, e",
        "b, e, f",
        "b, d",
    ]
    several = [
        "a",
        "a, f",
        "a, e",
        "a, e, f",
        "a, d",
        "a, d, f",
        "a, d, e",
        "a, d, e, f",
        "a, c",
        "a, c, f",
        "a, c, e",
        "a, c, e, f",
        "a, c, d",
        "a, c, d, f",
        "a, c, d, e",
        "a, c, d, e, f",
        "a, b",
        "a, b, f",
        "a, b, e",
        "a, b, e, f",
    ]
    assert r.closure().lines() == (
        [f"fail: [{x}] -> no label" for x in no_label]
        + [f"fail: [{x}] -> x, y" for x in several]
        + ["... and 11 more assignments with no label", "... and 12 more assignments with several labels"]
    )


def test_closure_count_line_is_singular_for_one_more():
    # a passes and is not clean (31), minus meh (b, c fail: 8) and meh2 (d, e fail, b, c pass: 2): 21 no label.
    r = parse_rubric(
        _rubric(
            list("abcdef"),
            "  clean: {grade: 1, pass: [a, b, c, d, e, f]}\n"
            "  bad: {grade: 0, fail: [a]}\n"
            "  meh: {grade: 0, pass: [a], fail: [b, c]}\n"
            "  meh2: {grade: 0, pass: [a, b, c], fail: [d, e]}\n",
        )
    )
    lines = r.closure().lines()
    assert len(lines) == 21
    assert lines[-2:] == ["fail: [b, d, e] -> no label", "... and 1 more assignment with no label"]


def test_require_closed_refuses_an_open_rubric_naming_the_file():
    r = parse_rubric(_rubric(["a", "b"], "  x: {grade: 1, pass: [a]}\n  y: {grade: 0, pass: [a]}\n"), "open.yaml")
    with pytest.raises(RubricError) as caught:
        r.require_closed()
    assert str(caught.value) == (
        "open.yaml: rubric 'r' is open: 2 assignments match no label and 2 match several; "
        "run `goldenset rubric check open.yaml` to list them"
    )


def test_require_closed_returns_a_closed_rubric(conformance_rubric):
    assert conformance_rubric.require_closed() is conformance_rubric


# --------------------------------------------------------------------------- decided_by


@pytest.mark.parametrize(
    ("label", "admissible"),
    [
        ("irrelevant", ("answerability", "authority", "recency", "entity")),
        ("partial", ("coverage",)),
        ("relevant", ("answerability", "authority", "recency", "coverage", "entity")),
    ],
)
def test_admissible_decided_by_follows_the_rule(conformance_rubric, label, admissible):
    assert conformance_rubric.admissible_decided_by(label) == admissible


def test_admissible_decided_by_unites_fail_and_any_fail_in_dimension_order():
    r = parse_rubric(
        _rubric(list("abcd"), "  x: {grade: 0, any_fail: [d, b], fail: [c], pass: [a]}\n  y: {grade: 1}\n")
    )
    assert r.admissible_decided_by("x") == ("b", "c", "d")
    assert r.admissible_decided_by("y") == ("a", "b", "c", "d")


# --------------------------------------------------------------------------- label lines


def _reason(rubric, line: dict):
    return rubric.label_line_reason(
        rubric=line.get("rubric"),
        label=line.get("label"),
        decided_by=line.get("decided_by"),
        dimensions=line.get("dimensions"),
    )


def test_conformance_line_16_irrelevant_decided_by_coverage_contradicts(conformance_rubric):
    assert _reason(conformance_rubric, _line(16)) == "label_contradicts_rubric"


def test_conformance_line_17_partial_with_every_dimension_passing_contradicts(conformance_rubric):
    assert _reason(conformance_rubric, _line(17)) == "label_contradicts_rubric"


@pytest.mark.parametrize("number", [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
def test_conformance_accepted_lines_pass_the_rubric_rules(conformance_rubric, number):
    assert _reason(conformance_rubric, _line(number)) is None


def test_conformance_line_19_unknown_label_is_invalid_field(conformance_rubric):
    assert _reason(conformance_rubric, _line(19)) == "invalid_field"


ALL_PASS = {"answerability": "pass", "authority": "pass", "recency": "pass", "coverage": "pass", "entity": "pass"}


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"rubric": "other-rubric"}, "invalid_field"),
        ({"rubric": 1}, "invalid_field"),
        ({"label": "maybe"}, "invalid_field"),
        ({"decided_by": "tone"}, "invalid_field"),
        ({"decided_by": ["entity"]}, "invalid_field"),
        ({"dimensions": "all pass"}, "invalid_field"),
        ({"dimensions": {k: v for k, v in ALL_PASS.items() if k != "entity"}}, "invalid_field"),
        ({"dimensions": {**ALL_PASS, "tone": "pass"}}, "invalid_field"),
        ({"dimensions": {**ALL_PASS, "entity": "PASS"}}, "invalid_field"),
        ({"dimensions": {**ALL_PASS, "entity": True}}, "invalid_field"),
        # invalid_field comes before label_contradicts_rubric: partial needs coverage to decide it.
        ({"label": "partial", "decided_by": "entity", "dimensions": {**ALL_PASS, "entity": "fial"}}, "invalid_field"),
        ({"label": "partial", "decided_by": "entity"}, "label_contradicts_rubric"),
        ({"label": "irrelevant", "decided_by": "coverage"}, "label_contradicts_rubric"),
        # The assignment (authority fails) is irrelevant, but the line says partial.
        (
            {"label": "partial", "decided_by": "coverage", "dimensions": {**ALL_PASS, "authority": "fail"}},
            "label_contradicts_rubric",
        ),
        # Irrelevant, and answerability is admissible, but it passes while authority fails.
        (
            {"label": "irrelevant", "decided_by": "answerability", "dimensions": {**ALL_PASS, "authority": "fail"}},
            "label_contradicts_rubric",
        ),
        ({"label": "irrelevant", "decided_by": "authority", "dimensions": {**ALL_PASS, "authority": "fail"}}, None),
        ({"label": "relevant", "decided_by": "coverage", "dimensions": ALL_PASS}, None),
        ({"dimensions": None}, None),
    ],
)
def test_label_line_reason_checks_fields_then_the_rule(conformance_rubric, change, reason):
    line = {"rubric": "support-policies", "label": "relevant", "decided_by": "answerability", **change}
    assert _reason(conformance_rubric, line) == reason


def test_label_line_on_a_collision_contradicts_every_label():
    r = parse_rubric(_rubric(["a"], "  x: {grade: 1}\n  y: {grade: 0}\n"))
    assert (
        r.label_line_reason(rubric="r", label="x", decided_by="a", dimensions={"a": "pass"})
        == "label_contradicts_rubric"
    )
