"""One rubric per task (contract 9.5): each pair is pooled, shown, labelled and merged under its project's rubric.

The world: three projects, each with one golden query that served one helped document,
and a fixed ranker (project_rankers.py) returning that document and one nobody judged:

    project  query task                        served (verdict)  ranker adds  rubric
    billing  How long is the refund window?    a helped, b noise d            support-policies (billing.yaml)
    ops      Restart the stuck worker          c helped          f            ops-runbooks (ops.yaml)
    web      Rotate the API key                e helped          b            none

So the pool returns 6 pairs, 3 already in the golden set; of the 3 pooled, (billing, d) and
(ops, f) are queued and (web, b) is counted under `no_rubric` (worked out by hand).
Everything runs through the command line, the real page (Starlette's test client) and
real builds, each on its own DuckDB file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from starlette.testclient import TestClient

HERE = Path(__file__).resolve().parent
for folder in (HERE, HERE.parent.parent):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from project_rankers import BILLING_TASK, OPS_TASK, WEB_TASK  # noqa: E402

from goldenset.build import build_golden_set  # noqa: E402
from goldenset.cli.app import main as library_main  # noqa: E402  (pool, labels import: not their Dagster runs)
from goldenset.corpus import read_corpus  # noqa: E402
from goldenset.ingest import ingest_all  # noqa: E402
from goldenset.labelling.lines import parse_label_line  # noqa: E402
from goldenset.labelling.page import create_app, open_session  # noqa: E402
from goldenset.labelling.pool import run_pool  # noqa: E402
from goldenset.labelling.rubric import RubricError  # noqa: E402
from goldenset.labelling.rubric_set import load_rubrics  # noqa: E402
from goldenset.records import Rejected, normalise_task, query_id  # noqa: E402
from goldenset.snapshots import store_snapshot  # noqa: E402
from goldenset.warehouse import connect  # noqa: E402
from goldenset_dagster.cli import main  # noqa: E402
from tests.helpers import doc, ranked, serve, verdict, write_corpus, write_labels, write_log  # noqa: E402

DATA = HERE.parent / "data" / "conformance"
DAY = "2026-11-28"
QB = query_id("billing", normalise_task(BILLING_TASK))
QO = query_id("ops", normalise_task(OPS_TASK))
QW = query_id("web", normalise_task(WEB_TASK))
RANKER = "project_rankers:fixed"

OPS_RUBRIC = """\
name: ops-runbooks
task: An on-call assistant that answers from the runbooks in force.
projects: [ops]
dimensions:
  answerability: A reader who sees ONLY this passage can carry out the step asked for.
  current: The passage is the runbook version in force.
labels:
  useful:  {grade: 2, pass: [answerability, current]}
  useless: {grade: 0, any_fail: [answerability, current]}
"""
SUPPORT_DIMS = ("answerability", "authority", "recency", "coverage", "entity")


def _billing_rubric() -> str:
    return (DATA / "rubric.yaml").read_text(encoding="utf-8").replace("as_of:", "projects: [billing]\nas_of:", 1)


@pytest.fixture
def world(tmp_path, monkeypatch):
    """Logs of three projects, a corpus, and a rubric folder covering billing and ops (not web)."""
    monkeypatch.chdir(tmp_path)
    write_corpus(tmp_path / "corpus.jsonl", [doc(d) for d in "abcdef"])
    write_log(
        tmp_path / "logs",
        DAY,
        "part-0001.jsonl",
        [
            serve("s1", f"{DAY}T10:00:00Z", BILLING_TASK, [ranked("a", 1), ranked("b", 2)], project="billing"),
            serve("s2", f"{DAY}T10:01:00Z", OPS_TASK, [ranked("c", 1)], project="ops"),
            serve("s3", f"{DAY}T10:02:00Z", WEB_TASK, [ranked("e", 1)], project="web"),
            verdict("s1", "a", "helped", f"{DAY}T11:00:00Z"),
            verdict("s1", "b", "noise", f"{DAY}T11:00:01Z"),
            verdict("s2", "c", "helped", f"{DAY}T11:01:00Z"),
            verdict("s3", "e", "helped", f"{DAY}T11:02:00Z"),
        ],
    )
    rubrics = tmp_path / "rubrics"
    rubrics.mkdir()
    (rubrics / "billing.yaml").write_text(_billing_rubric(), encoding="utf-8")
    (rubrics / "ops.yaml").write_text(OPS_RUBRIC, encoding="utf-8")
    return tmp_path


def _args(w: Path) -> list[str]:
    return ["--db", str(w / "g.duckdb")]


def _build(w: Path, *extra: str) -> int:
    return main(
        [
            "build",
            "--logs",
            str(w / "logs"),
            "--corpus",
            str(w / "corpus.jsonl"),
            *_args(w),
            "--labels",
            str(w / "labels"),
            "--rubric",
            str(w / "rubrics"),
            *extra,
        ]
    )


def _rows(w: Path, sql: str, params=None) -> list[tuple]:
    con = connect(w / "g.duckdb", read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def _pool(w: Path, capsys) -> dict:
    capsys.readouterr()
    assert library_main(["pool", "--rankers", RANKER, "--json", "--rubric", str(w / "rubrics"), *_args(w)]) == 0
    return json.loads(capsys.readouterr().out)


def _form(session, i: int, answers: dict[str, str], decided_by: str) -> dict[str, str]:
    item = session.items[i]
    return {
        "token": session.token,
        "query_id": item.query_id,
        "doc_id": item.doc_id,
        "doc_version": item.doc_version,
        "decided_by": decided_by,
        "note": "",
        **{f"dim_{d}": v for d, v in answers.items()},
    }


# --------------------------------------------------------------------------- end to end


@pytest.mark.slow
def test_two_projects_two_rubrics_pool_page_and_build_each_pair_under_its_own(world, capsys):
    assert _build(world) == 0  # no LABELS folder yet: logs only

    report = _pool(world, capsys)
    assert report["returned_distinct"] == 6 and report["already_labelled"] == 3 and report["pooled"] == 3
    assert report["no_rubric"] == {"web": 1}
    assert report["queue"] == {"stale": 0, "successor": 0, "pooled": 2, "total": 2}
    queued = _rows(world, "SELECT query_id, doc_id, project FROM labelling_queue ORDER BY priority")
    assert queued == sorted([(QB, "d", "billing"), (QO, "f", "ops")])  # equal ranks: query_id decides

    session = open_session("ana", db=world / "g.duckdb", labels=world / "labels", rubric=world / "rubrics")
    assert session.no_rubric == 0 and [it.project for it in session.items] == [p for _, _, p in queued]
    ops = next(i for i, it in enumerate(session.items) if it.project == "ops")
    billing = 1 - ops
    with TestClient(create_app(session, allowed_hosts=["127.0.0.1"]), base_url="http://127.0.0.1") as client:
        page = client.get(f"/pair/{ops + 1}").text
        assert "rubric <strong>ops-runbooks</strong>" in page
        assert 'name="dim_current"' in page and 'name="dim_authority"' not in page
        page = client.get(f"/pair/{billing + 1}").text
        assert "rubric <strong>support-policies</strong>" in page and 'name="dim_authority"' in page
        # Billing's five tests on the ops pair are refused: the ops rubric asks two others.
        wrong = _form(session, ops, dict.fromkeys(SUPPORT_DIMS, "pass"), "answerability")
        refused = client.post("/label", data=wrong, follow_redirects=False)
        assert refused.status_code == 400 and "current unanswered" in refused.text
        r = client.post(
            "/label",
            data=_form(session, ops, {"answerability": "pass", "current": "fail"}, "current"),
            follow_redirects=False,
        )
        assert r.status_code == 303
        r = client.post(
            "/label",
            data=_form(session, billing, dict.fromkeys(SUPPORT_DIMS, "pass"), "entity"),
            follow_redirects=False,
        )
        assert r.status_code == 303
    (path,) = (world / "labels").glob("dt=*/page-ana.jsonl")
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    assert [(x["doc_id"], x["rubric"], x["label"]) for x in lines] == [
        ("f", "ops-runbooks", "useless"),
        ("d", "support-policies", "relevant"),
    ][:: 1 if ops == 0 else -1]

    capsys.readouterr()
    assert _build(world) == 0
    human = _rows(world, "SELECT project, doc_id, label, grade FROM golden_set WHERE source = 'human' ORDER BY 1")
    assert human == [("billing", "d", "relevant", 2), ("ops", "f", "useless", 0)]
    assert _rows(world, "SELECT name FROM rubrics") == [("support-policies, ops-runbooks",)]
    capsys.readouterr()
    assert main(["status", "--json", *_args(world)]) == 0
    assert json.loads(capsys.readouterr().out)["rubric"]["name"] == "support-policies, ops-runbooks"


@pytest.mark.slow
def test_an_audit_draws_only_queries_some_rubric_judges_and_its_counts_agree(world):
    con = connect(world / "g.duckdb")
    try:
        ingest_all(con, world / "logs")  # the library's build: the Dagster job costs 10 s here
        store_snapshot(con, read_corpus(world / "corpus.jsonl"))
        build_golden_set(con)
        result = run_pool(
            con, rankers=(RANKER,), index_dir=world / "index", audit=3, seed=0, rubrics=load_rubrics(world / "rubrics")
        )
    finally:
        con.close()
    report = result.report.to_json()
    # The population is billing's and ops' queries: web's, which no rubric judges, would get no pair
    # asked and count as audited at once. Asked: billing's a (log helped) and d, ops' c (log helped) and f.
    assert (report["audit"]["population"], report["audit"]["sample_size"]) == (2, 2)
    assert _rows(world, "SELECT query_id FROM audit_queries ORDER BY 1") == sorted([(QB,), (QO,)])
    asked = _rows(world, "SELECT query_id, doc_id FROM audit_pairs ORDER BY ALL")
    assert asked == sorted([(QB, "a"), (QB, "d"), (QO, "c"), (QO, "f")])
    assert report["audit"]["pairs"] == report["queue"]["audit"] == len(asked) == 4
    # Of the 6 pairs returned: web's e already labelled, the 4 asked, web's b pooled (then left out, no rubric).
    assert (report["already_labelled"], report["returned_audit"], report["pooled"]) == (1, 4, 1)
    assert report["queue"] == {"stale": 0, "successor": 0, "audit": 4, "pooled": 0, "total": 4}
    assert report["no_rubric"] == {"web": 1}


@pytest.mark.slow
@pytest.mark.parametrize("logs_first", [True, False], ids=["labels-after-a-build", "labels-in-the-first-build"])
def test_a_label_line_under_another_projects_rubric_is_rejected_naming_the_right_one(world, capsys, logs_first):
    if logs_first:
        assert _build(world) == 0
    # Valid lines of the support-policies rubric, on pairs of ops (judged by ops-runbooks) and web (no rubric).
    line = {
        "event": "label",
        "doc_version": "v1",
        "label": "relevant",
        "decided_by": "answerability",
        "annotator": "ana",
        "rubric": "support-policies",
        "ts": f"{DAY}T12:00:00Z",
    }
    good_ops = {
        **line,
        "query_id": QO,
        "doc_id": "f",
        "rubric": "ops-runbooks",
        "label": "useful",
        "dimensions": {"answerability": "pass", "current": "pass"},
    }
    write_labels(
        world / "labels",
        DAY,
        "part-0001.jsonl",
        [{**line, "query_id": QO, "doc_id": "f"}, {**line, "query_id": QW, "doc_id": "e"}, good_ops],
    )
    capsys.readouterr()
    assert _build(world) == 0
    rejected = _rows(
        world, "SELECT line, reason, detail FROM rejected_records WHERE source_file LIKE 'labels/%' ORDER BY line"
    )
    assert rejected == [
        (1, "invalid_field", "project 'ops' is judged under rubric 'ops-runbooks', not 'support-policies'"),
        (
            2,
            "invalid_field",
            "no rubric in use judges project 'web'; a line under 'support-policies' cannot label its pairs",
        ),
    ]
    assert _rows(world, "SELECT query_id, doc_id, label FROM golden_set WHERE source = 'human'") == [
        (QO, "f", "useful")
    ]
    assert "WARNING: 2 label line(s) rejected (invalid_field 2)" in capsys.readouterr().err


@pytest.mark.slow
def test_moving_a_project_to_another_rubric_is_a_rubric_change_the_build_refuses(world, capsys):
    write_labels(
        world / "labels",
        DAY,
        "part-0001.jsonl",
        [
            {
                "event": "label",
                "query_id": QO,
                "doc_id": "c",
                "doc_version": "v1",
                "label": "useful",
                "decided_by": "answerability",
                "annotator": "ana",
                "rubric": "ops-runbooks",
                "ts": f"{DAY}T12:00:00Z",
            }
        ],
    )
    assert _build(world) == 0
    # Billing's rubric now claims ops too: ana's ops line no longer stands under its project's rubric.
    billing = world / "rubrics" / "billing.yaml"
    billing.write_text(billing.read_text().replace("projects: [billing]", "projects: [billing, ops]"))
    (world / "rubrics" / "ops.yaml").write_text(OPS_RUBRIC.replace("projects: [ops]", "projects: [ops-old]"))
    capsys.readouterr()
    assert _build(world) == 1
    err = capsys.readouterr().err
    assert "1 label line(s) become invalid" in err
    assert f"query {QO} doc c by ana: useful (grade 2) -> rejected: project 'ops' is judged under rubric " in err


# --------------------------------------------------------------------------- selection and its errors


def test_two_rubrics_claiming_one_project_is_one_error_naming_both_files(world, capsys):
    (world / "rubrics" / "web.yaml").write_text(OPS_RUBRIC.replace("ops-runbooks", "ops-two"), encoding="utf-8")
    folder = world / "rubrics"
    with pytest.raises(RubricError) as err:
        load_rubrics(folder)
    assert str(err.value) == (
        f"{folder / 'ops.yaml'} and {folder / 'web.yaml'} both claim project 'ops'; a project is judged under one rubric"
    )
    (world / "labels").mkdir()  # with a LABELS folder the build reads the rubrics, and refuses
    assert _build(world) == 1
    assert capsys.readouterr().err == f"Error: {err.value}\n"


def test_two_default_rubrics_or_two_of_one_name_are_refused(tmp_path):
    plain = (DATA / "rubric.yaml").read_text(encoding="utf-8")
    (tmp_path / "a.yaml").write_text(plain, encoding="utf-8")
    (tmp_path / "b.yaml").write_text(plain.replace("support-policies", "other"), encoding="utf-8")
    with pytest.raises(RubricError, match="a.yaml and .*b.yaml both name no projects"):
        load_rubrics(tmp_path)
    (tmp_path / "b.yaml").write_text(plain.replace("as_of:", "projects: [x]\nas_of:"), encoding="utf-8")
    with pytest.raises(RubricError, match="a.yaml and .*b.yaml are both named 'support-policies'"):
        load_rubrics(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(RubricError, match="a rubric folder with no \\*.yaml file"):
        load_rubrics(empty)


def test_a_rubric_without_projects_judges_every_project_the_others_do_not_claim(world):
    (world / "rubrics" / "billing.yaml").write_text((DATA / "rubric.yaml").read_text(encoding="utf-8"))
    rubrics = load_rubrics(world / "rubrics")
    assert [(p, rubrics.for_project(p).name) for p in ("billing", "ops", "web")] == [
        ("billing", "support-policies"),
        ("ops", "ops-runbooks"),
        ("web", "support-policies"),
    ]
    single = load_rubrics(DATA / "rubric.yaml")
    # One file: its own sha256, as contract 9.3 records it, and every project.
    import hashlib

    assert single.content_sha256 == hashlib.sha256((DATA / "rubric.yaml").read_bytes()).hexdigest()
    assert not single.judges_by_project and single.for_project("anything").name == "support-policies"


def test_a_line_naming_a_rubric_not_in_use_is_invalid_field(world):
    rubrics = load_rubrics(world / "rubrics")
    raw = json.dumps(
        {
            "event": "label",
            "query_id": QB,
            "doc_id": "a",
            "doc_version": "v1",
            "label": "relevant",
            "decided_by": "answerability",
            "annotator": "ana",
            "rubric": "onboarding",
            "ts": f"{DAY}T12:00:00Z",
        }
    ).encode()
    with pytest.raises(Rejected) as err:
        parse_label_line(raw, rubrics)
    assert (err.value.reason, err.value.detail) == (
        "invalid_field",
        "rubric 'onboarding' is not one of the rubrics in use (support-policies, ops-runbooks)",
    )


def test_rubric_check_of_a_folder_checks_each_file_and_names_its_projects(world, capsys):
    folder = world / "rubrics"
    assert main(["rubric", "check", str(folder)]) == 0
    assert capsys.readouterr().out == (
        f"{folder / 'billing.yaml'} (support-policies, projects billing):\n"
        "  closed: 32 assignments, 3 labels\n"
        f"{folder / 'ops.yaml'} (ops-runbooks, projects ops):\n"
        "  closed: 4 assignments, 2 labels\n"
    )


# One build, pool and Label Studio export serve both checks: the export (each task under its project's
# rubric, one Label Studio project per rubric) and the import of that export's annotations.
@pytest.mark.slow
def test_pool_export_gives_each_task_its_projects_rubric_and_label_studio_imports_check_it(world, capsys):
    assert _build(world) == 0
    _pool(world, capsys)
    out = world / "queue.jsonl"
    assert main(["pool", "export", "--out", str(out), "--rubric", str(world / "rubrics"), *_args(world)]) == 0
    tasks = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert {t["project"]: t["rubric"]["name"] for t in tasks} == {"billing": "support-policies", "ops": "ops-runbooks"}
    capsys.readouterr()
    ls = world / "ls" / "tasks.json"
    assert (
        main(
            [
                "pool",
                "export",
                "--out",
                str(ls),
                "--format",
                "label-studio",
                "--rubric",
                str(world / "rubrics"),
                *_args(world),
            ]
        )
        == 0
    )
    assert sorted(capsys.readouterr().out.splitlines()) == [
        f"wrote 1 task of rubric ops-runbooks to {ls.parent / 'tasks.ops-runbooks.json'} "
        f"and its labelling config to {ls.parent / 'tasks.ops-runbooks.json.config.xml'}",
        f"wrote 1 task of rubric support-policies to {ls.parent / 'tasks.support-policies.json'} "
        f"and its labelling config to {ls.parent / 'tasks.support-policies.json.config.xml'}",
    ]
    assert not ls.exists()
    config = (ls.parent / "tasks.ops-runbooks.json.config.xml").read_text(encoding="utf-8")
    assert 'name="current"' in config and 'name="authority"' not in config

    # Label Studio import checks each annotation against its task's project rubric.
    (task,) = json.loads((ls.parent / "tasks.ops-runbooks.json").read_text(encoding="utf-8"))

    def annotation(answers: dict[str, str], decided_by: str) -> dict:
        result = [
            {"from_name": d, "to_name": "document-text", "type": "choices", "value": {"choices": [v]}}
            for d, v in answers.items()
        ]
        result.append(
            {
                "from_name": "decided-by",
                "to_name": "document-text",
                "type": "choices",
                "value": {"choices": [decided_by]},
            }
        )
        return {
            "id": 1,
            "completed_by": {"id": 7, "email": "ana@example.com"},
            "created_at": "2026-12-01T10:00:00Z",
            "result": result,
        }

    good = {**task, "id": 1, "annotations": [annotation({"answerability": "pass", "current": "pass"}, "answerability")]}
    # The same task relabelled as if it were billing's: its data still says ops, so it is refused.
    moved = {
        **task,
        "id": 2,
        "data": {**task["data"], "rubric": "support-policies"},
        "annotations": [annotation(dict.fromkeys(SUPPORT_DIMS, "pass"), "answerability")],
    }
    export = world / "export.json"
    export.write_text(json.dumps([good, moved]), encoding="utf-8")
    capsys.readouterr()
    assert (
        library_main(
            ["labels", "import", str(export), "--labels", str(world / "labels"), "--rubric", str(world / "rubrics")]
        )
        == 0
    )
    imported = capsys.readouterr().out.splitlines()
    assert imported[0] == (
        "rejected task 2 annotation 1: invalid_field: the task was exported for rubric 'support-policies', "
        "not 'ops-runbooks'; import it with that rubric"
    )
    (path,) = (world / "labels").glob("dt=*/import-ana_example.com.jsonl")
    (line,) = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    assert (line["query_id"], line["doc_id"], line["rubric"], line["label"]) == (QO, "f", "ops-runbooks", "useful")
