"""The labelling queue written for annotators: `jsonl` (one task a line) or `label-studio`.

Its own module because it dispatches over both writers: `labelstudio` builds on `pool`
(its queue tasks and atomic write), so the dispatch cannot live in `pool` without an
import cycle.
"""

from __future__ import annotations

import json
import os

from goldenset.connection import Connection
from goldenset.errors import UsageError
from goldenset.labelling.labelstudio import write_label_studio
from goldenset.labelling.pool import QueueExport, queue_tasks, task_json, write_atomically
from goldenset.labelling.rubric import Rubric

EXPORT_FORMATS = ("jsonl", "label-studio")


def export_queue(con: Connection, out: str | os.PathLike[str], rubric: Rubric, fmt: str = "jsonl") -> QueueExport:
    """Write the labelling queue for annotators: `jsonl` (one task a line, the rubric on each) or
    `label-studio` (a tasks file plus FILE.config.xml). GoldensetError before the first pool."""
    tasks = queue_tasks(con)
    if fmt not in EXPORT_FORMATS:
        raise UsageError(f"--format {fmt!r} is not one of {', '.join(EXPORT_FORMATS)}")
    if fmt == "label-studio":
        return write_label_studio(tasks, out, rubric)
    text = "".join(json.dumps(task_json(t, rubric), ensure_ascii=False) + "\n" for t in tasks)
    return QueueExport((write_atomically(out, text),), len(tasks))
