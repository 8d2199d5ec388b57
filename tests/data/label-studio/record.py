"""Record a Label Studio export for tests/labelling/test_labelstudio.py from a REAL Label Studio.

Not run by the tests: run once by hand, with a Label Studio server already started (see
README.md next to this file), from the repository root:

    python tests/data/label-studio/record.py http://127.0.0.1:18120 <token>

It builds the pool tests' world (tests/labelling/pool_rankers.py), exports its queue with
`export_queue(..., "label-studio")`, creates a project with that labelling config, imports the
tasks, annotates some of them through the API (the requests Label Studio's own editor sends:
a `result` list of choices and textarea items), and saves Label Studio's JSON export as
`export.json`. Everything in `export.json` but the `result` items is written by Label Studio.
"""

from __future__ import annotations

import json
import sys
import tempfile
from datetime import datetime
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "labelling"))

from pool_rankers import FIRST, SECOND, build_world  # noqa: E402

from goldenset import warehouse  # noqa: E402
from goldenset.labelling.pool import run_pool  # noqa: E402
from goldenset.labelling.queue_export import export_queue  # noqa: E402
from goldenset.labelling.rubric import load_rubric  # noqa: E402

DIMS = ("answerability", "authority", "recency", "coverage", "entity")
RUBRIC = load_rubric(ROOT / "tests" / "data" / "conformance" / "rubric.yaml")


def choice(name: str, value: str) -> dict:
    return {"from_name": name, "to_name": "document-text", "type": "choices", "value": {"choices": [value]}}


def result(fails: tuple[str, ...] = (), decided_by: str | None = None, note: str | None = None, skip=()) -> list:
    items = [choice(d, "fail" if d in fails else "pass") for d in DIMS if d not in skip]
    if decided_by:
        items.append(choice("decided-by", decided_by))
    if note:
        items.append(
            {"from_name": "annotator-note", "to_name": "document-text", "type": "textarea", "value": {"text": [note]}}
        )
    return items


# (task index, annotations); an annotation is (result, was_cancelled)
PLAN = [
    (0, [(result(decided_by="coverage", note="states 14 days"), False)]),  # relevant
    (1, [(result(("coverage",), "coverage"), False)]),  # partial
    (2, [(result(("authority", "recency"), "recency"), False)]),  # irrelevant
    # task 3: not annotated
    (4, [(result(decided_by="coverage", skip=("entity",)), False)]),  # a dimension left unanswered
    (5, [(result(("authority",), "coverage"), False), ([], True), (result(("authority",), "answerability"), False)]),
    (6, [(result(), False)]),  # no decided-by
]


def main(url: str, token: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        world = build_world(Path(tmp) / "w")
        con = warehouse.connect(world.db)
        run_pool(con, rankers=(FIRST, SECOND), index_dir=world.index_dir, now=datetime(2026, 11, 30, 8, 0))
        export_queue(con, Path(tmp) / "tasks.json", RUBRIC, "label-studio")
        con.close()
        tasks = json.loads((Path(tmp) / "tasks.json").read_text(encoding="utf-8"))
        config = (Path(tmp) / "tasks.json.config.xml").read_text(encoding="utf-8")
    http = httpx.Client(base_url=url, headers={"Authorization": f"Token {token}"}, timeout=60)
    project = http.post("/api/projects", json={"title": "goldenset support-policies", "label_config": config})
    project.raise_for_status()
    pid = project.json()["id"]
    http.post(f"/api/projects/{pid}/import", json=tasks).raise_for_status()
    ids = [t["id"] for t in http.get("/api/tasks", params={"project": pid, "page_size": 100}).json()["tasks"]]
    ids.sort()
    for index, wanted in PLAN:
        for items, cancelled in wanted:
            body = {"result": items, "was_cancelled": cancelled, "lead_time": 12.5}
            http.post(f"/api/tasks/{ids[index]}/annotations", json=body).raise_for_status()
    export = http.get(f"/api/projects/{pid}/export", params={"exportType": "JSON", "download_all_tasks": "true"})
    export.raise_for_status()
    (HERE / "export.json").write_text(json.dumps(export.json(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    version = http.get("/api/version").json()["release"]
    print(f"recorded {len(export.json())} tasks from Label Studio {version} into {HERE / 'export.json'}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
