"""The rubric (contract 7.1): read and validate the file, check its closure, check label lines.

A rubric names 1 to 16 pass/fail *dimensions* (the tests an annotator applies) and 2 or more
*labels*, each with a grade and a rule. A rule is the conjunction of its clauses: `pass`
(every listed dimension passes), `fail` (every listed dimension fails), `any_fail` (at least
one listed dimension fails); a rule without clauses matches everything. An *assignment* gives
each dimension pass or fail; the rubric is *closed* when every one of the 2^n assignments
matches exactly one label. Every command that uses a rubric refuses an open or invalid one.

An invalid file raises `RubricError` (an `InputError`, exit 1) with one line naming the file,
the YAML line when known, and the first problem.

Decisions
---------
Where the contract is silent (or contradicts itself), this module decides:

- **Rubric name.** `[a-z][a-z0-9_-]*`: the contract writes `[a-z][a-z0-9_]*` for every name,
  but its own example and the conformance rubric are named `support-policies`, so the rubric's
  name also admits `-`. Dimension and label names match `[a-z][a-z0-9_]*` exactly.
- **Which problem is "first".** Checks run in this order and the first failure is reported:
  the file is readable and UTF-8; YAML syntax and repeated keys, as the parser meets them; the
  top level is a mapping; keys and value types (unknown keys before missing keys before wrong
  types, so a misspelt key is reported as unknown, with the allowed keys); then the values, in
  the order name, task, as_of, projects, dimensions, labels, and labels in file order.
- **Line numbers.** A message carries the YAML line of the offending key or list item, else
  of the nearest enclosing key (a missing key: the line of its mapping; a missing top-level
  key: no line).
- **Repeated keys** are refused at every level, a label's own keys included
  (`{grade: 1, grade: 2}`). YAML merge keys (`<<`) keep YAML's meaning.
- **as_of** may be quoted or not; it is a real calendar date `YYYY-MM-DD` (`2026-02-30` is
  refused) or `from_query`. `as_of: null` (or empty) is the same as leaving it out. A
  timestamp with a time of day is refused.
- **projects** (contract 9.5) is a non-empty list of non-empty, distinct project names;
  `projects: null` is the same as leaving it out (the rubric covers every project no other
  rubric claims). Which rubric judges which project is goldenset.labelling.rubric_set's.
- **task and the dimension tests** are text with at least one non-white-space character
  (annotators read them). They are kept verbatim: a folded `>` block keeps its final newline.
- **Empty or null clauses** (`pass: []`, `any_fail: []`, `fail:`) are refused: `any_fail: []`
  could never match and an empty `pass` or `fail` reads as if absent; both are likelier slips
  than intent. Leave the clause out instead.
- **A dimension named twice in one rule**, in one clause or across two, is refused: across
  `pass` and `fail` the rule could never match, and anywhere else the repeat is redundant.
- **Clause values** are YAML lists of dimension names; a bare `pass: coverage` is refused, not
  read as a one-item list.
- **Closure output.** One list in binary order of the assignments, holding the first 20 (in
  that order) of each kind, so fall-throughs and collisions stay interleaved as they occur;
  then, for each kind that had more than 20, one count line, "no label" first:
  `... and 12 more assignments with no label`, `... and 3 more assignments with several
  labels` (`assignment` when the count is 1). A collision lists its labels in file order.
- **label_line_reason** on a rubric with collisions treats an assignment that matches several
  labels as contradicting every label (the rubric names no single label for it); callers
  refuse open rubrics first (`Rubric.require_closed`), so this only matters to direct callers.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import date
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from goldenset.errors import InputError

NAME_PATTERN = "[a-z][a-z0-9_]*"
RUBRIC_NAME_PATTERN = "[a-z][a-z0-9_-]*"
# [a-z0-9], not \w: \w admits upper case and other scripts' letters and digits.
_NAME = re.compile(NAME_PATTERN)
_RUBRIC_NAME = re.compile(RUBRIC_NAME_PATTERN)
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
MAX_DIMENSIONS = 16
MIN_LABELS = 2
CLOSURE_LIMIT = 20
FROM_QUERY: Literal["from_query"] = "from_query"
CLAUSES = ("pass", "fail", "any_fail")
_TOP_KEYS = ("name", "task", "as_of", "projects", "dimensions", "labels")
_LABEL_KEYS = ("grade", *CLAUSES)

LabelLineReason = Literal["invalid_field", "label_contradicts_rubric"]


class RubricError(InputError):
    """The rubric file cannot be used (unreadable, invalid or open); exit code 1."""


# --------------------------------------------------------------------------- the rubric


@dataclass(frozen=True)
class Dimension:
    """One pass/fail test of the rubric: its name and the test text annotators apply."""

    name: str
    test: str


@dataclass(frozen=True)
class Label:
    """One label of the rubric: its grade and its rule (dimension names per clause)."""

    name: str
    grade: int
    pass_: tuple[str, ...] = ()
    fail: tuple[str, ...] = ()
    any_fail: tuple[str, ...] = ()

    @property
    def failing_dimensions(self) -> tuple[str, ...]:
        """Dimensions named in the rule's `fail` and `any_fail` clauses, in that order."""
        return self.fail + self.any_fail

    def to_json(self) -> dict[str, Any]:
        """The label as the page and the queue's rubric file show it: name, grade and the rule's clauses."""
        clauses = {"pass": self.pass_, "fail": self.fail, "any_fail": self.any_fail}
        return {"name": self.name, "grade": self.grade} | {k: list(v) for k, v in clauses.items()}


@dataclass(frozen=True)
class Assignment:
    """One pass/fail assignment that does not match exactly one label."""

    number: int  # first dimension most significant, fail = 1
    failing: tuple[str, ...]  # failing dimensions, in dimension order
    labels: tuple[str, ...]  # labels whose rule matches, in file order

    def line(self) -> str:
        """The contract's closure line: `fail: [recency, entity] -> no label`."""
        matched = ", ".join(self.labels) if self.labels else "no label"
        return f"fail: [{', '.join(self.failing)}] -> {matched}"


@dataclass(frozen=True)
class ClosureReport:
    """Every assignment that matches no label or several; closed when there are none."""

    n_assignments: int
    n_labels: int
    no_label: tuple[Assignment, ...]
    several: tuple[Assignment, ...]

    @property
    def closed(self) -> bool:
        """True when every assignment matches exactly one label."""
        return not self.no_label and not self.several

    @property
    def exit_code(self) -> int:
        """0 for a closed rubric, 1 for an open one (contract 7.6)."""
        return 0 if self.closed else 1

    def lines(self, limit: int = CLOSURE_LIMIT) -> list[str]:
        """The lines `goldenset rubric check` prints, at most `limit` assignments of each kind."""
        if self.closed:
            return [f"closed: {self.n_assignments} assignments, {self.n_labels} labels"]
        shown = sorted(self.no_label[:limit] + self.several[:limit], key=lambda a: a.number)
        out = [a.line() for a in shown]
        for rest, kind in ((len(self.no_label) - limit, "no label"), (len(self.several) - limit, "several labels")):
            if rest > 0:
                out.append(f"... and {rest} more assignment{'s' if rest != 1 else ''} with {kind}")
        return out


@dataclass(frozen=True)
class Rubric:
    """A valid rubric: dimensions and labels in file order, and the sha256 of the file's bytes."""

    name: str
    task: str
    as_of: date | Literal["from_query"] | None
    dimensions: tuple[Dimension, ...]
    labels: tuple[Label, ...]
    content_sha256: str
    source: str  # the file name used in messages
    # The projects whose pairs it judges (contract 9.5); None: every project no other rubric claims.
    projects: tuple[str, ...] | None = None

    def covers(self, project: str | None) -> bool:
        """True when `projects` names `project`, or the rubric names no projects (it covers every one)."""
        return self.projects is None or project in self.projects

    @property
    def dimension_names(self) -> tuple[str, ...]:
        """Dimension names in file order."""
        return tuple(d.name for d in self.dimensions)

    @property
    def label_names(self) -> tuple[str, ...]:
        """Label names in file order."""
        return tuple(lab.name for lab in self.labels)

    def label(self, name: str) -> Label:
        """The label called `name`; ValueError when the rubric has none."""
        for lab in self.labels:
            if lab.name == name:
                return lab
        raise ValueError(f"rubric {self.name!r} has no label {name!r}; its labels are {', '.join(self.label_names)}")

    def grade_of(self, label: str) -> int:
        """The grade of `label` (a grade >= 1 counts as relevant in binary metrics)."""
        return self.label(label).grade

    @cached_property
    def _bits(self) -> dict[str, int]:
        # The first dimension is the most significant bit, so assignment numbers sort as the contract orders them.
        n = len(self.dimensions)
        return {d.name: 1 << (n - 1 - i) for i, d in enumerate(self.dimensions)}

    @cached_property
    def _masks(self) -> tuple[tuple[str, int, int, int], ...]:
        def mask(names: tuple[str, ...]) -> int:
            return sum(self._bits[d] for d in names)

        return tuple((lab.name, mask(lab.pass_), mask(lab.fail), mask(lab.any_fail)) for lab in self.labels)

    def _matching(self, number: int) -> tuple[str, ...]:
        return tuple(
            name for name, p, f, a in self._masks if number & p == 0 and number & f == f and (a == 0 or number & a != 0)
        )

    def labels_for(self, failing: Collection[str]) -> list[str]:
        """Labels (file order) whose rule matches the assignment where exactly `failing` fail."""
        unknown = [d for d in failing if d not in self._bits]
        if unknown:
            raise ValueError(f"rubric {self.name!r} has no dimension {unknown[0]!r}")
        return list(self._matching(sum(self._bits[d] for d in set(failing))))

    def closure(self) -> ClosureReport:
        """Every assignment, in binary order, that matches no label or more than one."""
        names = self.dimension_names
        no_label: list[Assignment] = []
        several: list[Assignment] = []
        for number in range(1 << len(names)):
            matched = self._matching(number)
            if len(matched) == 1:
                continue
            failing = tuple(d for d in names if number & self._bits[d])
            (several if matched else no_label).append(Assignment(number, failing, matched))
        return ClosureReport(1 << len(names), len(self.labels), tuple(no_label), tuple(several))

    def require_closed(self) -> Rubric:
        """Return the rubric when closed; raise RubricError naming the file when open."""
        report = self.closure()
        if not report.closed:
            raise RubricError(
                f"{self.source}: rubric {self.name!r} is open: {len(report.no_label)} assignments match no label "
                f"and {len(report.several)} match several; run `goldenset rubric check {self.source}` to list them"
            )
        return self

    def admissible_decided_by(self, label: str) -> tuple[str, ...]:
        """Dimensions (dimension order) that may decide `label`.

        A label whose rule has a `fail` or `any_fail` clause is decided by one of the
        dimensions those clauses name (one that failed); a label with only `pass` clauses,
        or none, by any dimension (the one that came closest to failing).
        """
        named = set(self.label(label).failing_dimensions)
        return tuple(d for d in self.dimension_names if not named or d in named)

    def label_line_reason(
        self,
        *,
        rubric: object,
        label: object,
        decided_by: object,
        dimensions: object = None,
    ) -> LabelLineReason | None:
        """The contract 7.2 reason a label line breaks a rubric-dependent rule, or None.

        Takes the line's raw JSON values (`dimensions` None when absent or null). Call it
        after the rubric-independent checks (missing_field, and invalid_field for the other
        fields) and before unknown_document_version. `invalid_field`: the rubric name is not
        this rubric's, the label or decided_by is not one of its labels or dimensions, or
        `dimensions` is not an object holding every dimension as "pass" or "fail" and nothing
        else. Then `label_contradicts_rubric`: decided_by is not admissible for the label; or
        `dimensions` is given and the rubric's label for that assignment is not `label`, or
        decided_by passes in it while a dimension named in the label's fail/any_fail fails.
        """
        if not isinstance(rubric, str) or rubric != self.name:
            return "invalid_field"
        if not isinstance(label, str) or label not in self.label_names:
            return "invalid_field"
        if not isinstance(decided_by, str) or decided_by not in self._bits:
            return "invalid_field"
        failing: set[str] | None = None
        if dimensions is not None:
            if not isinstance(dimensions, Mapping) or set(dimensions) != set(self._bits):
                return "invalid_field"
            if any(not isinstance(v, str) or v not in ("pass", "fail") for v in dimensions.values()):
                return "invalid_field"
            failing = {d for d, v in dimensions.items() if v == "fail"}
        if decided_by not in self.admissible_decided_by(label):
            return "label_contradicts_rubric"
        if failing is not None:
            if self.labels_for(failing) != [label]:
                return "label_contradicts_rubric"
            named = self.label(label).failing_dimensions
            if decided_by not in failing and any(d in failing for d in named):
                return "label_contradicts_rubric"
        return None


# --------------------------------------------------------------------------- reading


def load_rubric(path: str | os.PathLike[str]) -> Rubric:
    """Read and validate the rubric file at `path`; RubricError naming the file and the first problem."""
    source = os.fspath(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise RubricError(f"{source}: cannot read the rubric file ({exc.strerror or exc}); check the path") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RubricError(
            f"{source}: not UTF-8 (byte {raw[exc.start]:#04x} at offset {exc.start}); save the rubric as UTF-8"
        ) from None
    return _parse(text, source, hashlib.sha256(raw).hexdigest())


def parse_rubric(text: str, source: str = "<rubric>") -> Rubric:
    """Validate rubric YAML `text`; `source` names it in messages. content_sha256 is of its UTF-8 bytes."""
    return _parse(text, source, hashlib.sha256(text.encode("utf-8")).hexdigest())


class _RepeatedKey(yaml.constructor.ConstructorError):
    def __init__(self, key: object, first_line: int, mark: yaml.Mark):
        super().__init__(problem=f"key {key!r} repeated", problem_mark=mark)
        self.key = key
        self.first_line = first_line


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses repeated keys and keeps dates as text (validated later)."""

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[Any, Any]:
        # PyYAML silently keeps the last of two equal keys; a rubric with two `grade`s is a mistake.
        if isinstance(node, yaml.MappingNode):
            seen: dict[object, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=deep)
                try:
                    first = seen.get(key)
                except TypeError:
                    continue  # unhashable: the base constructor reports it
                if first is not None:
                    raise _RepeatedKey(key, first, key_node.start_mark)
                seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)  # type: ignore[arg-type]


# A date stays the text it was written as, so `as_of` is checked by one rule whether quoted or
# not, and an impossible date (2026-02-30) is a message rather than a ValueError from PyYAML.
def _timestamp_as_text(loader: _StrictLoader, node: yaml.Node) -> str:
    return str(loader.construct_scalar(node))  # type: ignore[arg-type]


_StrictLoader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_as_text)


class _LabelFile(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    grade: int = Field(ge=0)
    pass_: list[str] | None = Field(default=None, alias="pass")
    fail: list[str] | None = None
    any_fail: list[str] | None = None


class _RubricFile(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    name: str
    task: str
    as_of: str | None = None
    projects: list[str] | None = None
    dimensions: dict[str, str]
    labels: dict[str, _LabelFile]


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _show(value: object) -> str:
    """A value as the rubric's author wrote it, short enough for a one-line message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _line_map(node: yaml.Node | None) -> dict[tuple[str, ...], int]:
    """1-based YAML line of every key and list item, by its path of keys (as text) and indexes."""
    lines: dict[tuple[str, ...], int] = {}

    def walk(n: yaml.Node, path: tuple[str, ...]) -> None:
        if isinstance(n, yaml.MappingNode):
            for key_node, value_node in n.value:
                sub = (*path, str(key_node.value))
                lines.setdefault(sub, key_node.start_mark.line + 1)
                walk(value_node, sub)
        elif isinstance(n, yaml.SequenceNode):
            for i, item in enumerate(n.value):
                sub = (*path, str(i))
                lines.setdefault(sub, item.start_mark.line + 1)
                walk(item, sub)

    if node is not None:
        walk(node, ())
    return lines


class _Problems:
    """Formats the first problem as `FILE: line N: ...`, with the line of the nearest known key."""

    def __init__(self, source: str, lines: dict[tuple[str, ...], int]):
        self.source = source
        self.lines = lines

    def error(self, loc: tuple[object, ...], message: str) -> RubricError:
        path = tuple(str(p) for p in loc if p != "[key]")
        while path and path not in self.lines:
            path = path[:-1]
        where = f" line {self.lines[path]}:" if path else ""
        return RubricError(f"{self.source}:{where} {_one_line(message)}")


def _parse(text: str, source: str, sha256: str) -> Rubric:
    loader: _StrictLoader | None = None
    try:
        loader = _StrictLoader(text)
        node = loader.get_single_node()
        data = None if node is None else loader.construct_document(node)
    except _RepeatedKey as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else 0
        raise RubricError(
            f"{source}: line {line}: key {_show(exc.key)} appears twice in one mapping "
            f"(first at line {exc.first_line}); keep one"
        ) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" line {mark.line + 1}:" if mark else ""
        detail = exc.problem or exc.context or "unreadable YAML"
        if exc.problem and exc.context:
            # PyYAML splits some messages as context "expected X" + problem "but found Y".
            joined = exc.problem.startswith("but ")
            detail = f"{exc.context}, {exc.problem}" if joined else f"{exc.problem} ({exc.context})"
        raise RubricError(f"{source}:{where} YAML syntax error: {_one_line(detail)}") from None
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        raise RubricError(
            f"{source}: line {line}: YAML syntax error: unacceptable character #x{exc.character:04x} "
            "(control characters are not allowed); remove it"
        ) from None
    except yaml.YAMLError as exc:  # pragma: no cover - every PyYAML error is one of the above
        raise RubricError(f"{source}: YAML error: {_one_line(str(exc))}") from None
    finally:
        if loader is not None:
            loader.dispose()

    problems = _Problems(source, _line_map(node))
    if data is None:
        raise problems.error((), "the file is empty; a rubric needs name, task, dimensions and labels")
    if not isinstance(data, dict):
        raise problems.error(
            (), f"expected a mapping (name, task, dimensions, labels) at the top level, got {_show(data)}"
        )
    try:
        model = _RubricFile.model_validate(data)
    except ValidationError as exc:
        # Unknown keys first: a misspelt key is then reported as unknown, with the allowed keys,
        # rather than as the required key it was meant to be.
        rank = {"extra_forbidden": 0, "invalid_key": 0, "missing": 1}
        first = sorted(exc.errors(), key=lambda e: rank.get(e["type"], 2))[0]
        raise problems.error(tuple(first["loc"]), _shape_problem(first)) from None
    return _build(model, source, sha256, problems)


def _shape_problem(err: Any) -> str:
    """One sentence for pydantic's first error: what is wrong, with the value, and what to write."""
    loc: tuple[Any, ...] = tuple(err["loc"])
    kind: str = err["type"]
    value = err.get("input")
    owner = f"label {loc[1]!r}" if len(loc) >= 3 and loc[0] == "labels" else "the rubric"
    allowed = _LABEL_KEYS if owner != "the rubric" else _TOP_KEYS
    if kind in ("extra_forbidden", "invalid_key"):
        key = loc[-1] if kind == "extra_forbidden" else value
        return f"unknown key {_show(key)} in {owner}; the keys are {', '.join(allowed)}"
    if kind == "missing":
        need = "a grade (an integer >= 0)" if owner != "the rubric" else "name, task, dimensions and labels"
        return f"missing key {loc[-1]!r} in {owner}; it needs {need}"
    if loc[-1] == "[key]":
        what = "dimension" if loc[0] == "dimensions" else "label"
        return (
            f"{what} name {_show(value)} must be text matching {NAME_PATTERN} "
            "(YAML reads yes/no/on/off/true/false and numbers as other types; quote it)"
        )
    if loc == ("name",):
        return f"name must be text matching {RUBRIC_NAME_PATTERN}, got {_show(value)}"
    if loc == ("task",):
        return f"task must be text (the task in one sentence), got {_show(value)}"
    if loc == ("as_of",):
        return f"as_of must be a date YYYY-MM-DD or {FROM_QUERY}, got {_show(value)}"
    if loc == ("projects",) or (len(loc) == 2 and loc[0] == "projects"):
        return f"projects must be a list of project names like [support], got {_show(value)}"
    if loc == ("dimensions",):
        return f"dimensions must be a mapping of dimension name to the test an annotator applies, got {_show(value)}"
    if len(loc) == 2 and loc[0] == "dimensions":
        return f"dimension {loc[1]!r} must have its test as text, got {_show(value)}"
    if loc == ("labels",):
        return f"labels must be a mapping of label name to {{grade, pass, fail, any_fail}}, got {_show(value)}"
    if len(loc) == 2 and loc[0] == "labels":
        return f"label {loc[1]!r} must be a mapping like {{grade: 1, pass: [...]}}, got {_show(value)}"
    if len(loc) == 3 and loc[2] == "grade":
        return f"grade of label {loc[1]!r} must be a YAML integer >= 0 (like 2), got {_show(value)}"
    if len(loc) == 3 and loc[2] in CLAUSES:
        return f"{loc[2]} of label {loc[1]!r} must be a list of dimension names like [coverage], got {_show(value)}"
    if len(loc) == 4 and loc[2] in CLAUSES:
        return f"{loc[2]} of label {loc[1]!r} must list dimension names, got {_show(value)} (item {loc[3] + 1})"
    return f"{'.'.join(str(p) for p in loc)}: {err['msg']}"  # pragma: no cover - every field is handled above


def _build(model: _RubricFile, source: str, sha256: str, problems: _Problems) -> Rubric:
    """Check the values (names, counts, clauses) in file order and make the Rubric."""
    if not _RUBRIC_NAME.fullmatch(model.name):
        raise problems.error(("name",), f"name {model.name!r} must match {RUBRIC_NAME_PATTERN}")
    if not model.task.strip():
        raise problems.error(("task",), "task is empty; state the task in one sentence")

    as_of: date | Literal["from_query"] | None = None
    if model.as_of == FROM_QUERY:
        as_of = FROM_QUERY
    elif model.as_of is not None:
        try:
            if not _DATE.fullmatch(model.as_of):
                raise ValueError
            as_of = date.fromisoformat(model.as_of)
        except ValueError:
            raise problems.error(
                ("as_of",), f"as_of must be a date YYYY-MM-DD or {FROM_QUERY}, got {model.as_of!r}"
            ) from None

    projects: tuple[str, ...] | None = None
    if model.projects is not None:
        if not model.projects:
            raise problems.error(
                ("projects",), "projects is empty; list the projects the rubric judges, or leave the key out"
            )
        for i, project in enumerate(model.projects):
            if not project.strip():
                raise problems.error(("projects", i), f"project {i + 1} is empty; name a project")
            if project in model.projects[:i]:
                raise problems.error(("projects", i), f"project {project!r} is listed twice; list it once")
        projects = tuple(model.projects)

    if not model.dimensions:
        raise problems.error(("dimensions",), f"no dimension; a rubric needs 1 to {MAX_DIMENSIONS}")
    if len(model.dimensions) > MAX_DIMENSIONS:
        raise problems.error(
            ("dimensions",), f"{len(model.dimensions)} dimensions; a rubric holds at most {MAX_DIMENSIONS}"
        )
    for dim, test in model.dimensions.items():
        if not _NAME.fullmatch(dim):
            raise problems.error(("dimensions", dim), f"dimension name {dim!r} must match {NAME_PATTERN}")
        if not test.strip():
            raise problems.error(
                ("dimensions", dim), f"dimension {dim!r} has an empty test; write the test an annotator applies"
            )

    if len(model.labels) < MIN_LABELS:
        have = "only 1 label" if model.labels else "no label"
        raise problems.error(("labels",), f"{have}; a rubric needs at least {MIN_LABELS}")
    labels: list[Label] = []
    for name, spec in model.labels.items():
        if not _NAME.fullmatch(name):
            raise problems.error(("labels", name), f"label name {name!r} must match {NAME_PATTERN}")
        clauses: dict[str, tuple[str, ...]] = {}
        named: dict[str, str] = {}
        for clause, field in zip(CLAUSES, ("pass_", "fail", "any_fail"), strict=True):
            values: list[str] | None = getattr(spec, field)
            if field not in spec.model_fields_set:
                clauses[clause] = ()
                continue
            loc = ("labels", name, clause)
            if not values:
                raise problems.error(
                    loc,
                    f"{clause} of label {name!r} is {'empty' if values == [] else 'null'}; "
                    "list at least one dimension or leave the clause out",
                )
            for i, dim in enumerate(values):
                if dim not in model.dimensions:
                    raise problems.error(
                        (*loc, i),
                        f"label {name!r} names unknown dimension {dim!r} in {clause}; "
                        f"the dimensions are {', '.join(model.dimensions)}",
                    )
                if dim in named:
                    where = clause if named[dim] == clause else f"{named[dim]} and {clause}"
                    raise problems.error(
                        (*loc, i), f"label {name!r} names dimension {dim!r} twice ({where}); name it once per rule"
                    )
                named[dim] = clause
            clauses[clause] = tuple(values)
        labels.append(Label(name, spec.grade, clauses["pass"], clauses["fail"], clauses["any_fail"]))

    return Rubric(
        name=model.name,
        task=model.task,
        as_of=as_of,
        dimensions=tuple(Dimension(d, t) for d, t in model.dimensions.items()),
        labels=tuple(labels),
        content_sha256=sha256,
        source=source,
        projects=projects,
    )
