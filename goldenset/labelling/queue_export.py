"""The labelling queue written for annotators: `jsonl` (one task a line) or `label-studio`.

Its own module because it dispatches over both writers: `labelstudio` builds on `pool`
(its queue tasks and atomic write), so the dispatch cannot live in `pool` without an
import cycle.

Each task carries the rubric of its query's project (contract 9.5); a queued pair whose
project no rubric judges (a queue pooled before the rubrics changed) is left out and
counted by project.
"""

from __future__ import annotations

import json
import os

from goldenset.connection import Connection
from goldenset.errors import UsageError
from goldenset.labelling.labelstudio import write_label_studio
from goldenset.labelling.pool import QueueExport, QueueTask, queue_tasks, task_json, write_atomically
from goldenset.labelling.rubric import Rubric
from goldenset.labelling.rubric_set import RubricSet, single

EXPORT_FORMATS = ("jsonl", "label-studio")


def judged_tasks(tasks: list[QueueTask], rubrics: RubricSet) -> tuple[list[tuple[QueueTask, Rubric]], dict[str, int]]:
    """Each task with the rubric of its project, and the tasks no rubric judges counted by project."""
    kept: list[tuple[QueueTask, Rubric]] = []
    left: dict[str, int] = {}
    for t in tasks:
        rubric = rubrics.for_project(t.project)
        if rubric is None:
            left[t.project] = left.get(t.project, 0) + 1
        else:
            kept.append((t, rubric))
    return kept, dict(sorted(left.items()))


def export_queue(
    con: Connection, out: str | os.PathLike[str], rubric: Rubric | RubricSet, fmt: str = "jsonl"
) -> QueueExport:
    """Write the labelling queue for annotators: `jsonl` (one task a line, its rubric on each) or
    `label-studio` (a tasks file plus FILE.config.xml; one such pair per rubric when the queue
    holds pairs of several). GoldensetError before the first pool."""
    tasks = queue_tasks(con)
    if fmt not in EXPORT_FORMATS:
        raise UsageError(f"--format {fmt!r} is not one of {', '.join(EXPORT_FORMATS)}")
    rubrics = single(rubric) if isinstance(rubric, Rubric) else rubric
    kept, left = judged_tasks(tasks, rubrics)
    if fmt == "label-studio":
        result = write_label_studio(kept, out, rubrics.rubrics[0] if len(rubrics) == 1 else None)
        return QueueExport(result.files, result.n_tasks, result.parts, left)
    text = "".join(json.dumps(task_json(t, r), ensure_ascii=False) + "\n" for t, r in kept)
    return QueueExport((write_atomically(out, text),), len(kept), no_rubric=left)
