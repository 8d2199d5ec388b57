"""Label Studio in and out: tasks and a labelling config from the queue, label lines from an export.

Out: `write_label_studio` (what `queue_export.export_queue` calls for `label-studio`) writes the labelling queue as a Label Studio tasks file (a JSON
list of `{"data": {...}}`, in priority order) and, next to it as `FILE.config.xml`, a
labelling config generated from the rubric: one pass/fail `Choices` per dimension (named
after the dimension), a `Choices` named `decided-by` listing every dimension, and a
`TextArea` named `annotator-note`. Import both into one Label Studio project.

In: `import_labels` reads a Label Studio JSON export of such tasks (the "JSON" export:
tasks with `annotations`, each with `completed_by`, `created_at`/`updated_at` and
`result` items `{from_name, to_name, type, value: {choices | text}}`), or a JSONL file of
label lines (contract 7.2), and appends one label line per valid annotation or line to
`LABELS/dt=<UTC today>/import-<annotator>.jsonl`, fsynced. It never writes DuckDB.

Decisions
---------
- **Names in the config.** Dimension controls carry the dimension's name; everything else
  has a hyphen in its name (`decided-by`, `annotator-note`, `query-text`, `document-text`,
  `rubric-task`, `test-<dimension>`), and dimension names cannot hold one, so no rubric
  makes two controls collide.
- **Rubric text lives in the task data** (`rubric_task`, `test_<dimension>`), shown by
  `$field` references: Label Studio reads `$name` inside a config attribute as a data
  reference, so text that contains a `$` (a price) would be mangled if written into the
  config itself.
- **The label** is what the rubric gives for the dimension answers (the annotator answers
  tests, not a scale); `decided_by` is the annotator's `decided-by` choice, required, and
  checked like any label line (admissible for the label, and a dimension that failed when
  the label's rule has fail clauses).
- **Annotator.** `--annotator NAME` names every line, and is refused when the export holds
  annotations by more than one Label Studio user (they would merge into one annotator).
  Without it: the user's email (when the export has it) with every character outside
  `[A-Za-z0-9._-]` replaced by `_` (`ana@example.com` -> `ana_example.com`), else
  `label-studio-user-<id>`. For JSONL input each line keeps its own annotator; --annotator
  fills lines that have none and a line naming another annotator is rejected. Annotator
  names must match `[A-Za-z0-9._-]{1,64}` (the labelling page's rule) because they name the
  file; nothing else of the input goes into a path.
- **ts** is the annotation's `updated_at` (its last edit), else `created_at`, in UTC, `Z`
  form; a time without an offset is taken as UTC (Label Studio stores UTC).
- **Skipped and empty.** A cancelled (skipped) annotation is rejected as `cancelled`; a
  task without annotations is counted as unannotated, not rejected. Predictions and drafts
  are ignored: they are not a person's label.
- **Re-importing** the same export appends nothing: a line identical to one already in an
  `import-<annotator>.jsonl` of any dt= folder is counted as already imported.
- **Reasons** are the contract's (`not_an_object`, `unknown_event`, `missing_field`,
  `invalid_field`, `label_contradicts_rubric`, `invalid_json`), plus `cancelled`. Every
  line, from either input, is held to the build's own line check
  (`goldenset.labelling.lines.parse_label_line`) before it is written, so an import never
  writes a line the build would reject for its content; `unknown_document_version` is left
  to the build, which knows the snapshots.
- **Exit.** The import succeeds (exit 0) when at least one item is valid (written now or
  already imported), with every reject printed; with no valid item it is an error (exit 1).
"""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from goldenset.clock import utcnow
from goldenset.errors import InputError, UsageError
from goldenset.jsonstrict import StrictJSONError, loads
from goldenset.labelling.annotator import ANNOTATOR_PATTERN, check_annotator_name, is_annotator_name
from goldenset.labelling.lines import parse_label_line
from goldenset.labelling.pool import QueueExport, QueueTask, write_atomically
from goldenset.labelling.rubric import Rubric
from goldenset.labelling.rubric_set import RubricSet, single
from goldenset.records import Rejected

DECIDED_BY = "decided-by"
NOTE = "annotator-note"
QUERY_TEXT = "query-text"
DOCUMENT_TEXT = "document-text"
RUBRIC_TASK = "rubric-task"
# The labelling page's rule too, so a name that imports can also label on the page.
_NOT_NAME = re.compile(r"[^A-Za-z0-9._-]")
CONFIG_SUFFIX = ".config.xml"


# --------------------------------------------------------------------------- export


def config_path(tasks_file: str | os.PathLike[str]) -> Path:
    """Where the labelling config goes: next to the tasks file, as FILE.config.xml."""
    return Path(os.fspath(tasks_file) + CONFIG_SUFFIX)


def task_data(task: QueueTask, rubric: Rubric) -> dict[str, Any]:
    """The `data` of one Label Studio task: the queued pair, the document, the rubric's texts."""
    data: dict[str, Any] = {
        **task.pair_fields(),
        "title": task.title or "",
        "text": task.text,
        "doc_heading": f"{task.doc_id} (version {task.doc_version})" + (f": {task.title}" if task.title else ""),
        "rubric": rubric.name,
        "rubric_task": rubric.task,
    }
    for dim in rubric.dimensions:
        data[f"test_{dim.name}"] = dim.test
    return data


def label_studio_tasks(tasks: Iterable[QueueTask], rubric: Rubric) -> list[dict[str, Any]]:
    """The Label Studio tasks JSON: a list of {"data": {...}}, in priority order."""
    return [{"data": task_data(t, rubric)} for t in tasks]


def _decided_by_help(rubric: Rubric) -> str:
    parts = []
    for lab in rubric.labels:
        named = lab.failing_dimensions
        parts.append(
            f"{lab.name}: "
            + (
                f"one that failed of {', '.join(rubric.admissible_decided_by(lab.name))}"
                if named
                else "any dimension, the one closest to failing"
            )
        )
    return "decided_by (" + "; ".join(parts) + ")"


def label_studio_config(rubric: Rubric) -> str:
    """The labelling config XML: one pass/fail Choices per dimension, a decided-by Choices, a note TextArea."""
    view = ET.Element("View")

    def header(value: str, size: str = "5") -> None:
        ET.SubElement(view, "Header", value=value, size=size)

    def choices(name: str, values: Iterable[str]) -> None:
        c = ET.SubElement(
            view, "Choices", name=name, toName=DOCUMENT_TEXT, choice="single-radio", required="true", showInline="true"
        )
        for v in values:
            ET.SubElement(c, "Choice", value=v)

    header(f"Rubric {rubric.name}")
    ET.SubElement(view, "Text", name=RUBRIC_TASK, value="$rubric_task")
    if rubric.as_of is not None:
        header("As of the date the query names" if rubric.as_of == "from_query" else f"As of {rubric.as_of}", "6")
    header("Query")
    ET.SubElement(view, "Text", name=QUERY_TEXT, value="$task")
    header("Document")
    header("$doc_heading", "6")
    ET.SubElement(view, "Text", name=DOCUMENT_TEXT, value="$text")
    header("Does the document pass each test?")
    for dim in rubric.dimensions:
        header(dim.name, "6")
        ET.SubElement(view, "Text", name=f"test-{dim.name}", value=f"$test_{dim.name}")
        choices(dim.name, ("pass", "fail"))
    header(_decided_by_help(rubric), "6")
    choices(DECIDED_BY, rubric.dimension_names)
    header("Note (optional)", "6")
    ET.SubElement(view, "TextArea", name=NOTE, toName=DOCUMENT_TEXT, rows="2", maxSubmissions="1", editable="true")
    ET.indent(view)
    return ET.tostring(view, encoding="unicode") + "\n"


def write_label_studio(
    tasks: list[tuple[QueueTask, Rubric]], out: str | os.PathLike[str], fallback: Rubric | None = None
) -> QueueExport:
    """Write queued tasks, each with its rubric, as Label Studio tasks files and labelling configs.

    Tasks all under one rubric (or none, with `fallback` for the config) go to `out` and
    `out.config.xml`, as with a single rubric. Under several rubrics a Label Studio project
    holds one config, so each rubric gets its own pair of files, `STEM.RUBRIC.SUFFIX` and
    its `.config.xml`, to import into a project of its own; `out` itself is not written.
    """
    by_rubric: dict[str, tuple[Rubric, list[QueueTask]]] = {}
    for task, rubric in tasks:
        by_rubric.setdefault(rubric.name, (rubric, []))[1].append(task)
    if len(by_rubric) <= 1:
        only, chosen = next(iter(by_rubric.values())) if by_rubric else (fallback, [])
        text = json.dumps(label_studio_tasks(chosen, only) if only else [], ensure_ascii=False, indent=1)
        path = write_atomically(out, text + "\n")
        if only is None:
            return QueueExport((path,), 0)
        config = write_atomically(config_path(out), label_studio_config(only))
        return QueueExport((path, config), len(chosen))
    target = Path(out)
    files: list[Path] = []
    parts: list[tuple[str, int, Path, Path]] = []
    for name, (rubric, chosen) in by_rubric.items():
        each = target.with_name(f"{target.stem}.{name}{target.suffix}")
        path = write_atomically(
            each, json.dumps(label_studio_tasks(chosen, rubric), ensure_ascii=False, indent=1) + "\n"
        )
        config = write_atomically(config_path(each), label_studio_config(rubric))
        files += [path, config]
        parts.append((name, len(chosen), path, config))
    return QueueExport(tuple(files), len(tasks), tuple(parts))


# --------------------------------------------------------------------------- import


@dataclass(frozen=True)
class ImportReject:
    """An item that did not become a label line: where it was, the reason, what exactly was wrong."""

    where: str
    reason: str
    detail: str
    items: int = 1  # items this one report stands for (lines that all lack an annotator are reported once)

    def line(self) -> str:
        """`rejected <where>: <reason>: <detail>`."""
        return f"rejected {self.where}: {self.reason}: {self.detail}"


class _Bad(Exception):
    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


@dataclass
class LabelStudioImport:
    """What an import read and wrote."""

    source: str
    kind: str  # label-studio or jsonl
    written: dict[Path, int] = field(default_factory=dict)
    already_imported: int = 0
    rejects: list[ImportReject] = field(default_factory=list)
    unannotated: int = 0

    @property
    def n_written(self) -> int:
        """Label lines appended by this import."""
        return sum(self.written.values())

    @property
    def n_rejected(self) -> int:
        """Items rejected (a grouped report counts every item it stands for)."""
        return sum(r.items for r in self.rejects)

    @property
    def ok(self) -> bool:
        """True when some item was valid (written now or by an earlier import of the same lines)."""
        return self.n_written + self.already_imported > 0

    def summary(self) -> list[str]:
        """What the CLI prints after the rejects: one line per file written, then the counts."""
        out = [f"wrote {n} label line{'s' if n != 1 else ''} to {p}" for p, n in self.written.items()]
        counts = [
            f"{self.n_written} written",
            f"{self.already_imported} already imported",
            f"{self.n_rejected} rejected",
        ]
        if self.kind == "label-studio":
            counts.append(f"{self.unannotated} task{'s' if self.unannotated != 1 else ''} without annotations")
        out.append(f"{self.source} ({self.kind}): " + ", ".join(counts))
        return out

    def failure(self) -> str:
        """The one-line error when nothing was valid."""
        return (
            f"{self.source}: no valid label in it ({self.n_rejected} rejected); nothing written. "
            "Fix the rejected items and import again"
        )


def check_annotator(name: str) -> str:
    """`name` when it matches ANNOTATOR_PATTERN (it names the import file); UsageError otherwise."""
    return check_annotator_name(
        name, "annotator", "it names the file the labels go to", "use letters, digits, '.', '_' or '-'"
    )


def import_labels(
    path: str | os.PathLike[str],
    *,
    rubric: Rubric | RubricSet,
    labels_dir: str | os.PathLike[str],
    annotator: str | None = None,
    now: datetime | None = None,
) -> LabelStudioImport:
    """Turn a Label Studio JSON export or a JSONL of label lines into appended, fsynced label lines.

    Each Label Studio task is labelled under the rubric of its `project` (contract 9.5); a
    JSONL line is held to the rubric it names (its project is checked by the build).
    """
    rubrics = single(rubric) if isinstance(rubric, Rubric) else rubric
    if annotator is not None:
        check_annotator(annotator)
    source = os.fspath(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"{source}: cannot read it ({exc.strerror or exc}); check the path") from None
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    if raw.lstrip()[:1] == b"[":
        result = LabelStudioImport(source, "label-studio")
        lines = _from_label_studio(raw, source, rubrics, annotator, result)
    else:
        result = LabelStudioImport(source, "jsonl")
        lines = _from_jsonl(raw, rubrics, annotator, result)
    today = (now or utcnow()).date()
    by_annotator: dict[str, list[str]] = {}
    for obj in lines:
        by_annotator.setdefault(obj["annotator"], []).append(json.dumps(obj, ensure_ascii=False))
    for name, texts in by_annotator.items():
        known = _already_imported(Path(labels_dir), name)
        new = []
        for text in texts:
            if text in known:
                result.already_imported += 1
            else:
                known.add(text)
                new.append(text)
        if new:
            result.written[append_lines(labels_dir, name, new, today)] = len(new)
    return result


def _from_label_studio(
    raw: bytes, source: str, rubrics: RubricSet, annotator: str | None, result: LabelStudioImport
) -> list[dict[str, Any]]:
    try:
        tasks = loads(raw)
    except StrictJSONError as exc:
        raise InputError(f"{source}: not valid JSON ({exc}); export the project from Label Studio as JSON") from None
    if not isinstance(tasks, list):
        raise InputError(f"{source}: a Label Studio JSON export is a list of tasks, got {type(tasks).__name__}")
    if annotator is not None:
        users = sorted(
            {u for t in tasks if isinstance(t, dict) for a in _annotations(t) if (u := _user_name(a)) is not None}
        )
        if len(users) > 1:
            raise UsageError(
                f"{source} holds annotations by {len(users)} Label Studio users ({', '.join(users)}); "
                "--annotator would merge them into one annotator: drop --annotator to keep them apart"
            )
    out = []
    for i, task in enumerate(tasks, start=1):
        where = f"task {task.get('id', f'#{i}') if isinstance(task, dict) else f'#{i}'}"
        try:
            data = _task_fields(task)
        except _Bad as bad:
            result.rejects.append(ImportReject(where, bad.reason, bad.detail))
            continue
        annotations = _annotations(task)
        if not annotations:
            result.unannotated += 1
            continue
        for j, ann in enumerate(annotations, start=1):
            ann_where = f"{where} annotation {ann.get('id', f'#{j}') if isinstance(ann, dict) else f'#{j}'}"
            try:
                rubric = _task_rubric(data, rubrics)
                obj = _annotation_line(ann, data, rubric, annotator)
                project = data.get("project")
                _check(obj, rubrics, {obj["query_id"]: project} if isinstance(project, str) else None)
            except _Bad as bad:
                result.rejects.append(ImportReject(ann_where, bad.reason, bad.detail))
                continue
            out.append(obj)
    return out


def _task_rubric(data: Mapping[str, Any], rubrics: RubricSet) -> Rubric:
    """The rubric a task is labelled under: its project's; else the one it names; else the only one."""
    project = data.get("project")
    if isinstance(project, str):
        rubric = rubrics.for_project(project)
        if rubric is None:
            raise _Bad("invalid_field", f"no rubric in use judges project {project!r}; add one and import again")
        return rubric
    named = rubrics.named(data.get("rubric"))
    if named is not None:
        return named
    if len(rubrics) == 1:
        return rubrics.rubrics[0]
    raise _Bad("missing_field", f"the task names no project or rubric in use ({rubrics.name})")


def _annotations(task: Mapping[str, Any]) -> list[Any]:
    anns = task.get("annotations")
    return anns if isinstance(anns, list) else []


def _task_fields(task: Any) -> dict[str, str]:
    if not isinstance(task, dict):
        raise _Bad("not_an_object", f"a task must be an object, got {type(task).__name__}")
    data = task.get("data")
    if not isinstance(data, dict):
        raise _Bad(
            "missing_field", "the task has no data object (export with Label Studio's JSON format, not JSON_MIN or CSV)"
        )
    for name in ("query_id", "doc_id", "doc_version"):
        if data.get(name) is None:
            raise _Bad(
                "missing_field",
                f"task data has no {name}; import tasks made by `goldenset pool export --format label-studio`",
            )
    return data


def _user_name(ann: Any) -> str | None:
    """The annotator name Label Studio's `completed_by` gives, sanitised; None when it names no one."""
    if not isinstance(ann, dict):
        return None
    user = ann.get("completed_by")
    if isinstance(user, dict):
        email = user.get("email")
        if isinstance(email, str) and email.strip():
            return _NOT_NAME.sub("_", email.strip())
        user = user.get("id")
    if isinstance(user, int) and not isinstance(user, bool):
        return f"label-studio-user-{user}"
    return None


def _annotation_line(ann: Any, data: Mapping[str, Any], rubric: Rubric, annotator: str | None) -> dict[str, Any]:
    if not isinstance(ann, dict):
        raise _Bad("not_an_object", f"an annotation must be an object, got {type(ann).__name__}")
    if ann.get("was_cancelled") is True:
        raise _Bad("cancelled", "the annotator skipped this task in Label Studio")
    if data.get("rubric") not in (None, rubric.name):
        raise _Bad(
            "invalid_field",
            f"the task was exported for rubric {data['rubric']!r}, not {rubric.name!r}; import it with that rubric",
        )
    results = ann.get("result")
    if not isinstance(results, list):
        raise _Bad("missing_field", "the annotation has no result list")
    dims = set(rubric.dimension_names)
    answers: dict[str, str] = {}
    decided_by: str | None = None
    notes: list[str] = []
    for item in results:
        if not isinstance(item, dict) or not isinstance(item.get("value"), dict):
            raise _Bad("invalid_field", f"result item {item!r} is not an object with a value")
        name, value = item.get("from_name"), item["value"]
        if name in answers or (name == DECIDED_BY and decided_by is not None):
            raise _Bad("invalid_field", f"{name} is answered twice in one annotation")
        if name in dims or name == DECIDED_BY:
            chosen = value.get("choices")
            allowed = ("pass", "fail") if name in dims else rubric.dimension_names
            if not isinstance(chosen, list) or len(chosen) != 1 or chosen[0] not in allowed:
                raise _Bad("invalid_field", f"{name}: expected one choice of {', '.join(allowed)}, got {chosen!r}")
            if name == DECIDED_BY:
                decided_by = chosen[0]
            else:
                answers[name] = chosen[0]
        elif name == NOTE:
            text = value.get("text")
            if not isinstance(text, list) or not all(isinstance(t, str) for t in text):
                raise _Bad("invalid_field", f"{NOTE}: expected a list of text, got {text!r}")
            notes.extend(text)
        else:
            raise _Bad(
                "invalid_field",
                f"result from_name {name!r} is not a control of the config "
                "`goldenset pool export --format label-studio` writes for this rubric",
            )
    unanswered = [d for d in rubric.dimension_names if d not in answers]
    if unanswered:
        raise _Bad("missing_field", f"dimension {unanswered[0]} is not answered")
    if decided_by is None:
        raise _Bad("missing_field", f"{DECIDED_BY} is not chosen")
    labels = rubric.labels_for([d for d, v in answers.items() if v == "fail"])
    if len(labels) != 1:  # only an open rubric, which callers refuse first
        raise _Bad("label_contradicts_rubric", f"the answers match {len(labels)} labels of the rubric")
    name = annotator or _user_name(ann)
    if name is None:
        raise _Bad("missing_field", "completed_by names no user; pass --annotator NAME")
    obj: dict[str, Any] = {
        "event": "label",
        "query_id": data["query_id"],
        "doc_id": data["doc_id"],
        "doc_version": data["doc_version"],
        "label": labels[0],
        "decided_by": decided_by,
        "annotator": name,
        "rubric": rubric.name,
        "ts": _utc_z(ann),
        "dimensions": {d: answers[d] for d in rubric.dimension_names},
    }
    if notes and any(n.strip() for n in notes):
        obj["note"] = "\n".join(notes)
    obj["kind"] = "human"
    obj["origin"] = {"tool": "label-studio", "task": ann.get("task"), "annotation": ann.get("id")}
    return obj


def _utc_z(ann: Mapping[str, Any]) -> str:
    """The annotation's updated_at, else created_at, as a UTC `...Z` timestamp."""
    for key in ("updated_at", "created_at"):
        value = ann.get(key)
        if value is None:
            continue
        try:
            ts = datetime.fromisoformat(value) if isinstance(value, str) else None
        except ValueError:
            ts = None
        if ts is None:
            raise _Bad("invalid_field", f"{key} {value!r} is not an ISO 8601 time")
        ts = ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)
        frac = f".{ts.microsecond:06d}" if ts.microsecond else ""
        return ts.strftime("%Y-%m-%dT%H:%M:%S") + frac + "Z"
    raise _Bad("missing_field", "the annotation has neither updated_at nor created_at")


def _from_jsonl(
    raw: bytes, rubric: RubricSet, annotator: str | None, result: LabelStudioImport
) -> list[dict[str, Any]]:
    """The valid label lines of a JSONL file; each bad line rejected with its reason.

    Lines that only lack an annotator (a file written by a script that never named one)
    are reported together in one line with the fix, `--annotator NAME`, rather than once
    per line with the same words.
    """
    out = []
    unnamed: list[int] = []
    for n, line in enumerate(raw.split(b"\n"), start=1):
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line.strip():
            continue
        try:
            try:
                obj = loads(line)
            except StrictJSONError as exc:
                raise _Bad("invalid_json", str(exc)) from None
            if isinstance(obj, dict) and annotator is not None:
                if obj.get("annotator") is None:
                    obj["annotator"] = annotator
                elif obj["annotator"] != annotator:
                    raise _Bad("invalid_field", f"annotator {obj['annotator']!r} is not --annotator {annotator!r}")
            if annotator is None and isinstance(obj, dict) and obj.get("annotator") is None:
                probe = dict(obj, annotator="annotator")
                _check(probe, rubric)  # any other fault is reported on its own line, as usual
                unnamed.append(n)
                continue
            _check(obj, rubric)
        except _Bad as bad:
            result.rejects.append(ImportReject(f"line {n}", bad.reason, bad.detail))
            continue
        out.append(obj)
    if unnamed:
        shown = ", ".join(str(n) for n in unnamed[:5]) + (", ..." if len(unnamed) > 5 else "")
        result.rejects.append(
            ImportReject(
                f"{len(unnamed)} line{'s' if len(unnamed) != 1 else ''} ({shown})",
                "missing_field",
                "no annotator named in the line; give one with --annotator NAME",
                items=len(unnamed),
            )
        )
    return out


def _check(obj: Any, rubric: RubricSet, project_of: Mapping[str, str] | None = None) -> None:
    """Hold a line to exactly the rules the build's ingestion applies (7.2, 9.5), plus a name that can name a file."""
    try:
        parse_label_line(json.dumps(obj, ensure_ascii=False).encode("utf-8"), rubric, project_of)
    except Rejected as exc:
        raise _Bad(exc.reason, exc.detail) from None
    if not is_annotator_name(obj["annotator"]):
        raise _Bad(
            "invalid_field", f"annotator {obj['annotator']!r} must match {ANNOTATOR_PATTERN} (it names the import file)"
        )


# --------------------------------------------------------------------------- writing


def label_file(labels_dir: str | os.PathLike[str], annotator: str, today: date) -> Path:
    """LABELS/dt=<today>/import-<annotator>.jsonl, refusing a name that would leave LABELS."""
    check_annotator(annotator)
    return Path(labels_dir) / f"dt={today.isoformat()}" / f"import-{annotator}.jsonl"


def _already_imported(labels_dir: Path, annotator: str) -> set[str]:
    known: set[str] = set()
    for path in sorted(labels_dir.glob(f"dt=*/import-{annotator}.jsonl")):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue  # an unreadable file cannot prove a line is there; the build reports it
        known.update(line.rstrip("\r") for line in text.split("\n") if line.strip())
    return known


def append_lines(labels_dir: str | os.PathLike[str], annotator: str, lines: list[str], today: date) -> Path:
    """Append lines to the annotator's import file of today's partition, then fsync file and folder."""
    path = label_file(labels_dir, annotator, today)
    path.parent.mkdir(parents=True, exist_ok=True)
    created = not path.exists()
    with open(path, "ab") as fh:
        # A line cut short by a crash must not swallow the first line appended now.
        if fh.tell() > 0:
            with open(path, "rb") as check:
                check.seek(-1, os.SEEK_END)
                if check.read(1) != b"\n":
                    fh.write(b"\n")
        fh.write("".join(line + "\n" for line in lines).encode("utf-8"))
        fh.flush()
        os.fsync(fh.fileno())
    if created:
        # The new file's directory entry must survive a crash too.
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    return path
