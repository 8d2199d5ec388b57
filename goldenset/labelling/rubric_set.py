"""The rubrics in use and which project each judges (contract 9.5).

A label judges a (task, query, document) triple and the task is the rubric's, so a pair
is labelled under the rubric of its query's project. The `rubric` setting names one rubric
file (as in contract 7.1) or a folder of them; `load_rubrics` reads either into a
`RubricSet`, which every command that labels, pools, exports, imports or builds uses.

Decisions
---------
- **A folder** holds the files whose name ends in `.yaml`, read in code-point order of
  their names; other files and sub-folders are not read. A folder with no such file is an
  error (exit 1) naming it.
- **Coverage.** A rubric with `projects:` judges exactly those projects; one without
  (the *default* rubric) judges every project no other rubric names. So one file without
  `projects:` judges everything, as contract 7.1 always said. Two rubrics naming one
  project, two default rubrics, or two rubrics with one name are one-line errors (exit 1)
  naming both files.
- **Identity.** A single file's sha256 is its bytes' (unchanged from 9.3). A folder's is
  the sha256 of its *record*: for each file in name order, the line `# file: NAME` then the
  file's text (a newline added when it has none), the files separated by a line `---`, the
  whole headed `# goldenset rubric folder`. That record is what a build stores in
  `rubrics.content`, and its name there is the rubrics' names joined by `, `.
- **A label line** is checked against the rubric it names (`rubric` field): an unknown
  name is `invalid_field` listing the names in use. When the caller knows the query's
  project (the build does, from the ingested serves), a line whose rubric is not the one
  that judges that project is `invalid_field` too, naming the rubric that does (or saying
  no rubric does). A line whose query no ingested serve names is held only to the rubric
  it names.
- **Commands that need one rubric** (`judge label`, `calibrate`'s judge) take a set with
  exactly one rubric; with several they ask for `--rubric FILE` naming one file.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from goldenset.connection import Connection
from goldenset.labelling.rubric import Rubric, RubricError, load_rubric, parse_rubric

FOLDER_HEADER = "# goldenset rubric folder\n"
_FILE_MARK = "# file: "
_SEPARATOR = "---\n"


@dataclass(frozen=True)
class RubricSet:
    """The rubrics in use, in file-name order, and the file or folder they came from."""

    rubrics: tuple[Rubric, ...]
    source: str
    content_sha256: str
    content: str  # what a build records in `rubrics.content`

    def __iter__(self) -> Iterator[Rubric]:
        return iter(self.rubrics)

    def __len__(self) -> int:
        return len(self.rubrics)

    @property
    def name(self) -> str:
        """The rubrics' names joined by `, ` (the name a build records)."""
        return ", ".join(r.name for r in self.rubrics)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.rubrics)

    @property
    def covers_every_project(self) -> bool:
        """True when some rubric names no projects: then no pair is left without a rubric."""
        return any(r.projects is None for r in self.rubrics)

    @property
    def judges_by_project(self) -> bool:
        """True when the project of a pair can matter: more than one rubric, or one naming its projects."""
        return len(self.rubrics) > 1 or not self.covers_every_project

    def named(self, name: object) -> Rubric | None:
        """The rubric called `name`, or None."""
        return next((r for r in self.rubrics if r.name == name), None)

    def for_project(self, project: str | None) -> Rubric | None:
        """The rubric that judges `project`: the one naming it, else the default one; None when none does."""
        named = next((r for r in self.rubrics if r.projects is not None and project in r.projects), None)
        if named is not None:
            return named
        return next((r for r in self.rubrics if r.projects is None), None)

    def project_problem(self, rubric_name: str, project: str) -> str | None:
        """Why a line under `rubric_name` cannot label a pair of `project`; None when it can."""
        judge = self.for_project(project)
        if judge is None:
            return f"no rubric in use judges project {project!r}; a line under {rubric_name!r} cannot label its pairs"
        if judge.name != rubric_name:
            return f"project {project!r} is judged under rubric {judge.name!r}, not {rubric_name!r}"
        return None

    def require_closed(self) -> RubricSet:
        """Return the set when every rubric is closed; RubricError naming the first open file."""
        for r in self.rubrics:
            r.require_closed()
        return self

    def only(self, purpose: str) -> Rubric:
        """The one rubric of the set; RubricError saying `purpose` needs one when there are several."""
        if len(self.rubrics) == 1:
            return self.rubrics[0]
        raise RubricError(
            f"{self.source} holds {len(self.rubrics)} rubrics ({self.name}); {purpose} works under one: "
            "pass --rubric FILE naming one of its files"
        )

    def grade_of(self, rubric_name: str, label: str) -> int:
        """The grade of `label` in the rubric called `rubric_name` (ValueError when either is unknown)."""
        rubric = self.named(rubric_name)
        if rubric is None:
            raise ValueError(f"no rubric {rubric_name!r} in use; the rubrics are {self.name}")
        return rubric.grade_of(label)

    def label_grades(self) -> LabelGrades:
        """Each label name's grade across the rubrics; RubricError when two rubrics grade one name apart."""
        grades: dict[str, tuple[int, str]] = {}
        for r in self.rubrics:
            for lab in r.labels:
                seen = grades.setdefault(lab.name, (lab.grade, r.name))
                if seen[0] != lab.grade:
                    raise RubricError(
                        f"label {lab.name!r} has grade {seen[0]} in rubric {seen[1]!r} and {lab.grade} in "
                        f"{r.name!r}; agreement reads a label's grade by its name: give it one grade, or rename it"
                    )
        return LabelGrades({name: g for name, (g, _) in grades.items()})


@dataclass(frozen=True)
class LabelGrades:
    """Label name -> grade over a set of rubrics (what agreement needs of a rubric)."""

    grades: dict[str, int]

    def grade_of(self, label: str) -> int:
        """The grade of `label`; ValueError when no rubric has it."""
        if label not in self.grades:
            raise ValueError(f"no rubric in use has a label {label!r}")
        return self.grades[label]


Rubrics = Rubric | RubricSet  # what the line checks take: one rubric (contract 7), or the rubrics in use (9.5)


def single(rubric: Rubric) -> RubricSet:
    """A set of one rubric (a single file: contract 7.1 as written)."""
    return RubricSet((rubric,), rubric.source, rubric.content_sha256, "")


def load_rubrics(path: str | os.PathLike[str]) -> RubricSet:
    """Read the rubric file, or every `*.yaml` rubric of the folder, at `path`; RubricError on any problem."""
    source = os.fspath(path)
    folder = Path(path)
    if not folder.is_dir():
        rubric = load_rubric(path)
        try:
            text = folder.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):  # pragma: no cover - load_rubric just read and decoded it
            text = ""
        return RubricSet((rubric,), source, rubric.content_sha256, text)
    files = sorted(p for p in folder.iterdir() if p.name.endswith(".yaml") and p.is_file())
    if not files:
        raise RubricError(f"{source}: a rubric folder with no *.yaml file; put one rubric file per task in it")
    rubrics = tuple(load_rubric(p) for p in files)
    _check_clashes(rubrics)
    record = _record(files)
    return RubricSet(rubrics, source, hashlib.sha256(record.encode("utf-8")).hexdigest(), record)


def _check_clashes(rubrics: tuple[Rubric, ...]) -> None:
    """Refuse two rubrics with one name, two claiming one project, or two default rubrics, naming both files."""
    seen_names: dict[str, Rubric] = {}
    claimed: dict[str, Rubric] = {}
    default: Rubric | None = None
    for r in rubrics:
        if r.name in seen_names:
            raise RubricError(
                f"{seen_names[r.name].source} and {r.source} are both named {r.name!r}; give each rubric its own name"
            )
        seen_names[r.name] = r
        if r.projects is None:
            if default is not None:
                raise RubricError(
                    f"{default.source} and {r.source} both name no projects (both would judge every other "
                    "project); add `projects:` to one of them"
                )
            default = r
            continue
        for project in r.projects:
            if project in claimed:
                raise RubricError(
                    f"{claimed[project].source} and {r.source} both claim project {project!r}; "
                    "a project is judged under one rubric"
                )
            claimed[project] = r


def _record(files: list[Path]) -> str:
    parts = []
    for p in files:
        text = p.read_bytes().decode("utf-8")
        parts.append(f"{_FILE_MARK}{p.name}\n{text}{'' if text.endswith(chr(10)) else chr(10)}")
    return FOLDER_HEADER + _SEPARATOR.join(parts)


def recorded_names(content: str) -> str | None:
    """The rubric name(s) of a recorded rubric content (a file's text or a folder's record); None if unreadable."""
    texts = [content]
    if content.startswith(FOLDER_HEADER):
        texts = [
            chunk.split("\n", 1)[1] if "\n" in chunk else ""
            for chunk in content[len(FOLDER_HEADER) :].split("\n" + _SEPARATOR + _FILE_MARK)
        ]
    names = []
    for text in texts:
        try:
            names.append(parse_rubric(text).name)
        except RubricError:
            return None
    return ", ".join(names)


def projects_to_check(con: Connection, rubrics: Rubric | RubricSet) -> dict[str, str] | None:
    """query_id -> project when the rubrics judge by project (a line must then be under its project's); else None."""
    return project_of_queries(con) if isinstance(rubrics, RubricSet) and rubrics.judges_by_project else None


def project_of_queries(con: Connection) -> dict[str, str]:
    """query_id -> project, from the ingested serves and the latest build's rows (near-duplicate merges)."""
    rows = con.execute(
        "SELECT DISTINCT query_id, project FROM log_serves "
        "UNION SELECT DISTINCT query_id, project FROM build_labels WHERE valid_to_build IS NULL"
    ).fetchall()
    return {q: p for q, p in rows}
