"""The labelling page (`goldenset label serve`): loading, every route, the label line it writes, refusals."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

from goldenset.cli.app import main
from goldenset.cli.label import app as label_app
from goldenset.errors import DatabaseBusy, UsageError
from goldenset.labelling.lines import parse_label_line
from goldenset.labelling.page import LabelWriter, check_annotator, create_app, open_session
from goldenset.labelling.rubric import RubricError
from goldenset.warehouse import connect
from tests.helpers import (
    DIMS,
    PAGE_DOCS,
    PAGE_Q1,
    PAGE_Q2,
    PAGE_Q3,
    PAGE_QUEUE,
    World,
    isolated_settings,
    page_label,
    page_warehouse,
    write_labels,
)

ROOT = Path(__file__).resolve().parents[2]
RUBRIC = ROOT / "tests" / "data" / "conformance" / "rubric.yaml"
OPEN_RUBRIC = ROOT / "goldenset" / "data" / "open-rubric.yaml"
Q1, Q2, Q3 = PAGE_Q1, PAGE_Q2, PAGE_Q3
QUEUE, DOCS = PAGE_QUEUE, PAGE_DOCS
NOW = datetime(2026, 12, 1, 10, 0, 5, tzinfo=UTC)
BASE = "http://127.0.0.1"
make_warehouse = page_warehouse


@pytest.fixture(scope="module")
def page_template(tmp_path_factory) -> Path:
    """make_warehouse's warehouse, made once for the module; `world` copies it."""
    base = tmp_path_factory.mktemp("page-template")
    with isolated_settings(base / "home"):
        return make_warehouse(base / "g.duckdb")


@pytest.fixture
def world(tmp_path, page_template) -> World:
    """A warehouse with five queued pairs (this test's own copy) and an empty LABELS folder."""
    world = World(tmp_path)
    shutil.copy2(page_template, world.db)
    return world


def start(world: World, annotator: str = "ana", **kw):
    session = open_session(annotator, db=world.db, labels=world.labels, rubric=RUBRIC, **kw)
    session.clock = lambda: NOW
    return session


@pytest.fixture
def client(world):
    """A TestClient on the page of annotator ana, its session as `client.session`."""
    session = start(world)
    with TestClient(create_app(session, allowed_hosts=["127.0.0.1"]), base_url=BASE) as c:
        c.session = session  # type: ignore[attr-defined]
        yield c


def form(session, i: int, answers: str, decided_by: str = "answerability", **extra) -> dict:
    """The form the page posts for item i; answers like 'pppfp' in rubric order."""
    item = session.items[i]
    data = {
        "token": session.token,
        "query_id": item.query_id,
        "doc_id": item.doc_id,
        "doc_version": item.doc_version,
        "decided_by": decided_by,
        "note": "",
    }
    data.update({f"dim_{d}": {"p": "pass", "f": "fail"}[a] for d, a in zip(DIMS, answers, strict=True)})
    data.update(extra)
    return data


def written(world: World, dt: str = "2026-12-01", name: str = "ana") -> list[dict]:
    path = world.labels / f"dt={dt}" / f"page-{name}.jsonl"
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


# --------------------------------------------------------------------------- loading


def test_queue_loads_in_priority_order_with_the_text_of_the_latest_loaded_snapshot(world):
    session = start(world)
    assert [(it.priority, it.doc_id, it.reason, it.project) for it in session.items] == [
        (p, d, r, proj) for p, _, d, _, r, proj, _ in QUEUE
    ]
    first = session.items[0]
    assert (first.title, first.text, first.task) == ("Refunds", "Refunds take 14 days.", "how long do refunds take")
    assert first.rankers == ("lexical", "dense") and first.best_rank == 1
    assert session.already_labelled == 0


def test_queue_order_follows_priority_not_insertion(tmp_path):
    shuffled = [QUEUE[3], QUEUE[0], QUEUE[4], QUEUE[2], QUEUE[1]]
    world = World(tmp_path)
    make_warehouse(world.db, queue=shuffled)
    session = start(world)
    assert [it.priority for it in session.items] == [1, 2, 3, 4, 5]


def test_pairs_this_annotator_already_labelled_stay_in_the_queue_with_their_label(world):
    write_labels(world.labels, "2026-11-20", "tool.jsonl.gz", [page_label(Q1, "policies/refunds.md", "2023-03-14")])
    write_labels(
        world.labels,
        "2026-11-21",
        "other.jsonl",
        [
            page_label(Q1, "policies/refunds-v2.md", "v0"),  # an older version: the queued one still needs a label
            page_label(Q2, "legal/terms.md", "v3", annotator="ben"),  # someone else's label
            page_label(
                Q2,
                "policies/shipping.md",
                "v1",
                label="relevant",
                decided_by="coverage",
                dimensions={d: "fail" if d == "coverage" else "pass" for d in DIMS},
            ),  # the build rejects it
            page_label(Q3, "policies/plans.md", "v2", kind="judge"),  # a judge's line is not the annotator's
            "not json",
        ],
    )
    write_labels(
        world.labels,
        "2026-11-22",
        "page-ana.jsonl",
        [page_label(Q2, "legal/terms.md", "v3", label="partial", decided_by="coverage")],
    )
    session = start(world)
    # Every queued pair stays, numbered by its priority; ana's two labels are known, to reopen them.
    assert [it.doc_id for it in session.items] == [d for _, _, d, *_ in QUEUE]
    assert session.already_labelled == 2
    assert {session.number(i): line["label"] for i, line in session.before.items()} == {1: "relevant", 3: "partial"}
    assert [session.number(session.next_pending())] == [2]
    ben = start(world, "ben")
    assert {ben.number(i): line["label"] for i, line in ben.before.items()} == {3: "relevant"}


def test_labels_elsewhere_than_dt_partitions_are_not_read(world):
    write_labels(world.labels, "2026-11-20", "notes.txt", [page_label(Q1, "policies/refunds.md", "2023-03-14")])
    (world.labels / "page-ana.jsonl").write_text(json.dumps(page_label(Q1, "policies/refunds.md", "2023-03-14")))
    assert start(world).already_labelled == 0


@pytest.mark.parametrize("name", ["", "a/b", "../ana", "ana b", "ána", "a" * 65, "ana\n"])
def test_annotator_names_that_are_not_plain_file_name_parts_are_refused(world, name):
    with pytest.raises(UsageError, match=re.escape(repr(name))) as exc:
        start(world, name)
    assert exc.value.exit_code == 2


def test_annotator_names_of_letters_digits_dots_dashes_and_underscores_are_accepted():
    assert check_annotator("Ana.M_2-x") == "Ana.M_2-x"


def test_open_rubric_is_refused_naming_the_file(world):
    with pytest.raises(RubricError, match=re.escape(str(OPEN_RUBRIC))) as exc:
        open_session("ana", db=world.db, labels=world.labels, rubric=OPEN_RUBRIC)
    assert exc.value.exit_code == 1


def test_page_waits_for_a_writer_at_start_and_says_so(world):
    holder = _hold_for_writing(world.db)
    try:
        with pytest.raises(DatabaseBusy, match=r"database busy: held by PID \d+"):
            start(world)
        told = threading.Event()
        result: dict = {}

        def load() -> None:
            result["session"] = start(world, wait=600, notify=lambda msg: (result.setdefault("msg", msg), told.set()))

        loader = threading.Thread(target=load)
        loader.start()
        assert told.wait(120), "the page never said it was waiting"
    finally:
        _release(holder)
    loader.join()
    assert result["msg"] == f"waiting for PID {holder.pid} to finish writing {world.db} (up to 600 s)"
    assert len(result["session"].items) == 5


# --------------------------------------------------------------------------- routes


def test_index_is_the_queue_view_linking_the_first_pair_to_do_by_its_1_based_number(client):
    r = client.get("/", follow_redirects=False)
    assert r.status_code == 200
    assert '<a href="/pair/1" id="continue">Label the first pair to do (pair 1)</a>' in r.text


def test_pair_page_shows_the_pair_the_rubric_and_the_keys(client):
    r = client.get("/pair/2")  # URLs are 1-based, as the page counts: the second queued pair
    assert r.status_code == 200
    page = r.text
    for shown in (
        "how long do refunds take",
        "billing",
        "policies/refunds-v2.md",
        "Refunds, revised",
        "successor",
        "support-policies",
        "as of 2026-08-01",
        '<strong id="labelled-count">0</strong> labelled this session',
        '<strong id="queued-count">5</strong>',
        "labelled before",
    ):
        assert shown in page
    # Document text is escaped, never markup.
    assert "Refunds take 10 &lt;b&gt;business&lt;/b&gt; days." in page
    for dim in client.session.rubric.dimensions:
        assert dim.test in page
        assert f'name="dim_{dim.name}" value="pass"' in page and f'name="dim_{dim.name}" value="fail"' in page
    for key in ("<kbd>p</kbd>", "<kbd>f</kbd>", "<kbd>n</kbd>", "<kbd>Enter</kbd>"):
        assert key in page
    assert 'href="/pair/3?passed=2" id="next"' in page
    assert "pair 2 of 5" in page
    assert f'name="token" value="{client.session.token}"' in page
    assert 'version <code id="doc-version">v1</code>' in page


def test_pair_beyond_the_queue_is_404(client):
    assert client.get("/pair/6").status_code == 404
    assert client.get("/pair/0").status_code == 404


def test_last_pair_links_next_to_the_end_page(client):
    assert 'href="/done?passed=5" id="next"' in client.get("/pair/5").text


def test_end_page_counts_pairs_passed_over(client):
    r = client.get("/done")
    assert r.status_code == 200
    assert "0 of 5 queued pairs labelled this session" in r.text and "5 passed over" in r.text


def test_label_only_accepts_post(client):
    assert client.get("/label").status_code == 405


def test_a_host_header_other_than_loopback_is_refused(client):
    assert client.get("/", headers={"host": "attacker.example"}).status_code == 400


def test_queued_version_no_snapshot_holds_is_shown_with_a_warning(tmp_path):
    queue = [(1, Q1, "policies/gone.md", "v7", "pooled", "billing", "t")]
    world = World(tmp_path)
    make_warehouse(world.db, queue=queue)
    session = start(world)
    with TestClient(create_app(session), base_url=BASE) as c:
        assert "No corpus snapshot holds policies/gone.md at version v7" in c.get("/pair/1").text


def test_empty_queue_shows_the_end_page(tmp_path):
    world = World(tmp_path)
    make_warehouse(world.db, queue=[])
    session = start(world)
    with TestClient(create_app(session), base_url=BASE) as c:
        r = c.get("/done")
        assert r.status_code == 200 and "Every queued pair is labelled: 0 this session" in r.text
        assert "0 of 0 pairs shown" in c.get("/").text


# --------------------------------------------------------------------------- submitting


def test_submission_appends_exactly_the_contract_line_and_fsyncs_it(client, world):
    r = client.post(
        "/label", data=form(client.session, 1, "pppfp", "coverage", note="  states 14 days "), follow_redirects=False
    )
    assert (r.status_code, r.headers["location"]) == (303, "/pair/3?saved=2")
    path = world.labels / "dt=2026-12-01" / "page-ana.jsonl"
    assert path.read_bytes() == (
        b'{"event":"label","query_id":"0123456789abcdef","doc_id":"policies/refunds-v2.md","doc_version":"v1",'
        b'"label":"partial","decided_by":"coverage","annotator":"ana","rubric":"support-policies",'
        b'"ts":"2026-12-01T10:00:05Z","dimensions":{"answerability":"pass","authority":"pass","recency":"pass",'
        b'"coverage":"fail","entity":"pass"},"note":"states 14 days","kind":"human"}\n'
    )
    # The build's own line parser accepts it.
    record = parse_label_line(path.read_bytes().rstrip(b"\n"), client.session.rubric)
    assert (record.query_id, record.doc_id, record.label, record.kind, record.note) == (
        Q1,
        "policies/refunds-v2.md",
        "partial",
        "human",
        "states 14 days",
    )
    page = client.get("/pair/3?saved=2").text
    assert "Saved policies/refunds-v2.md as <strong>partial</strong>" in page
    assert '<strong id="labelled-count">1</strong> labelled this session' in page


def test_a_line_without_note_has_no_note_field_and_the_label_follows_from_the_answers(client, world):
    client.post("/label", data=form(client.session, 0, "ppppp", "entity"))
    client.post("/label", data=form(client.session, 2, "pfpff", "entity"))
    assert [(x["label"], x["decided_by"], "note" in x) for x in written(world)] == [
        ("relevant", "entity", False),
        ("irrelevant", "entity", False),
    ]


def test_labelled_pairs_leave_the_walk_and_the_last_one_ends_it(client, world):
    for i in range(5):
        r = client.post("/label", data=form(client.session, i, "ppppp"), follow_redirects=False)
    assert r.headers["location"] == "/done?saved=5"
    # A labelled pair opens again (for a correction), showing the label it holds.
    assert 'id="previous">You labelled this pair <strong>relevant</strong>' in client.get("/pair/4").text
    assert "Every queued pair is labelled: 5 this session" in client.get("/done").text
    assert [x["doc_id"] for x in written(world)] == [d for _, _, d, *_ in QUEUE]
    # A restart finds them labelled, still in the queue under the same numbers, to reopen.
    again = start(world)
    assert [again.number(i) for i in sorted(again.before)] == [1, 2, 3, 4, 5] and again.next_pending() is None


def test_skipping_writes_nothing(client, world):
    r = client.get("/pair/1")
    assert 'href="/pair/2?passed=1" id="next"' in r.text
    client.get("/pair/2?passed=1")
    assert not world.labels.exists()


@pytest.mark.parametrize(
    ("answers", "decided_by", "extra", "message"),
    [
        (
            "pppfp",
            "coverage",
            {"label": "relevant"},
            "label 'relevant' contradicts the answers: the rubric gives 'partial' with coverage failing",
        ),
        (
            "pppfp",
            "authority",
            {},
            "decided_by 'authority' cannot decide 'partial' with coverage failing; choose one of coverage",
        ),
        (
            "fpfpp",
            "authority",
            {},
            "decided_by 'authority' cannot decide 'irrelevant' with answerability, recency failing; "
            "choose one of answerability, recency",
        ),
        (
            "ppppp",
            "nonsense",
            {},
            "decided_by 'nonsense' cannot decide 'relevant' when every test passes; choose one of "
            "answerability, authority, recency, coverage, entity",
        ),
        ("ppppp", "entity", {"dim_coverage": ""}, "answer every question first: coverage unanswered"),
        ("ppppp", "entity", {"dim_coverage": "maybe"}, "answer every question first: coverage unanswered"),
        (
            "ppppp",
            "entity",
            {"doc_version": "v0"},
            "policies/refunds-v2.md is queued at version 'v1', the form says 'v0'",
        ),
    ],
)
def test_a_submission_the_rubric_refuses_is_shown_again_with_the_reason_and_writes_nothing(
    client, world, answers, decided_by, extra, message
):
    r = client.post("/label", data=form(client.session, 1, answers, decided_by, **extra))
    assert r.status_code == 400
    assert message.replace("'", "&#39;") in r.text
    assert 'id="pair" data-item="1"' in r.text
    assert not world.labels.exists() and client.session.done == {}


def test_a_pair_not_in_the_loaded_queue_is_refused(client, world):
    data = form(client.session, 0, "ppppp", doc_id="../../../etc/passwd")
    r = client.post("/label", data=data)
    assert r.status_code == 404 and "is not in the queue this page loaded" in r.text
    assert not world.labels.exists()


def test_a_pair_labelled_twice_in_one_session_is_refused(client, world):
    assert client.post("/label", data=form(client.session, 0, "ppppp"), follow_redirects=False).status_code == 303
    r = client.post("/label", data=form(client.session, 0, "ppppp"))
    assert r.status_code == 409 and "already labelled (relevant); open pair 1 from the queue to correct it" in r.text
    assert len(written(world)) == 1


@pytest.mark.parametrize(
    ("headers", "data_change", "message"),
    [
        ({}, {"token": ""}, "token is missing"),
        ({}, {"token": "x" * 43}, "token is missing"),
        ({"origin": "http://attacker.example"}, {}, "refused a form posted from &#39;http://attacker.example&#39;"),
        ({"sec-fetch-site": "cross-site"}, {}, "refused a form posted from another site"),
    ],
)
def test_a_form_from_another_site_is_refused(client, world, headers, data_change, message):
    data = form(client.session, 0, "ppppp") | data_change
    r = client.post("/label", data=data, headers=headers)
    assert r.status_code == 403 and message in r.text
    assert not world.labels.exists()


def test_a_form_from_the_page_itself_is_accepted(client, world):
    headers = {"origin": BASE, "sec-fetch-site": "same-origin"}
    assert client.post("/label", data=form(client.session, 0, "ppppp"), headers=headers).status_code == 200
    assert len(written(world)) == 1


def test_a_form_field_given_twice_or_a_non_form_body_is_refused(client, world):
    body = "&".join(f"{k}={v}" for k, v in form(client.session, 0, "ppppp").items()) + "&decided_by=entity"
    r = client.post("/label", content=body, headers={"content-type": "application/x-www-form-urlencoded"})
    assert r.status_code == 400 and "field &#39;decided_by&#39; is given more than once" in r.text
    r = client.post("/label", json=form(client.session, 0, "ppppp"))
    assert r.status_code == 415
    assert not world.labels.exists()


# --------------------------------------------------------------------------- the file


def test_concurrent_appends_never_interleave(tmp_path):
    writer = LabelWriter(tmp_path / "labels", "ana")
    lines = [page_label(Q1, f"doc-{t}-{n}", "v1", note="x" * 5000) for t in range(8) for n in range(25)]

    def append(chunk: list[dict]) -> None:
        for line in chunk:
            writer.append(line, "2026-12-01")

    threads = [threading.Thread(target=append, args=(lines[t * 25 : (t + 1) * 25],)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = [json.loads(x) for x in writer.path_for("2026-12-01").read_text(encoding="utf-8").splitlines()]
    assert sorted(x["doc_id"] for x in got) == sorted(x["doc_id"] for x in lines)


def test_a_torn_last_line_is_closed_before_the_next_line(tmp_path):
    writer = LabelWriter(tmp_path / "labels", "ana")
    path = writer.path_for("2026-12-01")
    path.parent.mkdir(parents=True)
    path.write_text('{"event":"label","query_')
    writer.append({"event": "label"}, "2026-12-01")
    assert path.read_text().split("\n") == ['{"event":"label","query_', '{"event":"label"}', ""]


def test_the_page_keeps_working_while_another_process_holds_the_warehouse(client, world):
    holder = _hold_for_writing(world.db)
    try:
        with pytest.raises(DatabaseBusy):
            connect(world.db, read_only=True)  # the holder really holds it
        assert client.get("/pair/1").status_code == 200
        assert client.post("/label", data=form(client.session, 0, "ppppp"), follow_redirects=False).status_code == 303
        assert (
            client.post("/label", data=form(client.session, 1, "ppppf", "entity"), follow_redirects=False).status_code
            == 303
        )
    finally:
        _release(holder)
    assert [x["label"] for x in written(world)] == ["relevant", "irrelevant"]


def _hold_for_writing(db: Path) -> subprocess.Popen:
    """Another process that opens the DuckDB file for writing and keeps it until told to stop."""
    code = (
        "import sys, duckdb\ncon = duckdb.connect(sys.argv[1])\ncon.execute('CREATE TABLE IF NOT EXISTS t (x INT)')\n"
        "print('holding', flush=True)\nsys.stdin.readline()\ncon.close()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline() == "holding\n"
    return proc


def _release(proc: subprocess.Popen) -> None:
    assert proc.stdin is not None
    proc.stdin.write("\n")
    proc.stdin.close()
    assert proc.wait(120) == 0


# --------------------------------------------------------------------------- the command


def test_serve_refuses_a_bad_annotator_name_with_exit_2(world, capsys):
    code = main(
        ["serve", "--annotator", "../x", "--db", str(world.db), "--labels", str(world.labels), "--rubric", str(RUBRIC)],
        application=label_app,
    )
    assert code == 2
    assert capsys.readouterr().err == (
        "Error: annotator name '../x' must match [A-Za-z0-9._-]{1,64} (letters, digits, '.', '_', '-'); "
        "pass --annotator with such a name\n"
    )


def test_serve_refuses_an_open_rubric_with_exit_1_naming_the_file(world, capsys):
    code = main(
        ["serve", "--annotator", "ana", "--db", str(world.db), "--rubric", str(OPEN_RUBRIC)], application=label_app
    )
    assert code == 1
    assert capsys.readouterr().err == (
        f"Error: {OPEN_RUBRIC}: rubric 'onboarding-docs' is open: 2 assignments match no label and 1 match several; "
        f"run `goldenset rubric check {OPEN_RUBRIC}` to list them\n"
    )


def test_serve_help_names_every_option():
    result = CliRunner().invoke(label_app, ["serve", "--help"])
    assert result.exit_code == 0
    for option in ("--annotator", "--port", "--host", "--db", "--labels", "--rubric", "--wait"):
        assert option in result.output


@pytest.mark.slow
def test_serve_prints_the_url_and_counts_then_serves_the_page(world):
    write_labels(world.labels, "2026-11-20", "x.jsonl", [page_label(Q1, "policies/refunds.md", "2023-03-14")])
    code = (
        "import sys\nfrom goldenset.cli.app import main\nfrom goldenset.cli.label import app\n"
        "sys.exit(main(sys.argv[1:], application=app))\n"
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            code,
            "serve",
            "--annotator",
            "ana",
            "--port",
            "0",
            "--db",
            str(world.db),
            "--labels",
            str(world.labels),
            "--rubric",
            str(RUBRIC),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        m = re.fullmatch(r"labelling page for ana: (http://127\.0\.0\.1:(\d+)/)\n", first)
        assert m, first + (proc.stderr.read() if proc.poll() is not None and proc.stderr else "")
        assert proc.stdout.readline() == (
            f"5 pairs queued, 1 labelled by ana before (listed, to correct); label lines go to {world.labels}"
            "/dt=<UTC day>/page-ana.jsonl\n"
        )
        assert proc.stdout.readline() == f"the set explorer (read-only): {m.group(1)}set\n"
        assert proc.stdout.readline() == "Ctrl+C stops the page.\n"
        assert httpx.get(m.group(1) + "set/builds", timeout=60).status_code == 200
        page = httpx.get(m.group(1) + "pair/2", timeout=60)  # pair 1 is labelled already: its number stays
        assert page.status_code == 200 and "policies/refunds-v2.md" in page.text
        token = re.search(r'name="token" value="([^"]+)"', page.text)
        assert token
        data = {
            "token": token.group(1),
            "query_id": Q1,
            "doc_id": "policies/refunds-v2.md",
            "doc_version": "v1",
            "decided_by": "authority",
        } | {f"dim_{d}": "pass" for d in DIMS}
        r = httpx.post(m.group(1) + "label", data=data, timeout=60)
        assert r.status_code == 303
        assert proc.stdout.readline().startswith(
            f"labelled {Q1} policies/refunds-v2.md@v1: relevant (decided by authority) [1/5] -> "
        )
    finally:
        proc.terminate()
        proc.wait(60)
    lines = [
        json.loads(x) for p in sorted(world.labels.glob("dt=*/page-ana.jsonl")) for x in p.read_text().splitlines()
    ]
    assert [(x["doc_id"], x["label"], x["kind"]) for x in lines] == [("policies/refunds-v2.md", "relevant", "human")]


def test_label_app_mounts_as_goldenset_label():
    import typer

    parent = typer.Typer()
    parent.add_typer(label_app)

    @parent.command()
    def other() -> None:  # a second command, so the parent is a group like the real CLI
        """Another command."""

    result = CliRunner().invoke(parent, ["label", "serve", "--help"])
    assert result.exit_code == 0 and "Usage: root label serve [OPTIONS]" in result.output


# --------------------------------------------------------------------------- the queue view, corrections, restarts


def _rows(page: str) -> list[tuple[str, ...]]:
    """(number, project, reason, status, labelled by, label) of each row of the queue table."""
    out = []
    for row in re.findall(r'<tr id="row-(\d+)">(.*?)</tr>', page, flags=re.S):
        cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row[1], flags=re.S)]
        out.append((row[0], cells[1], cells[4], cells[5], cells[6], cells[7]))
    return out


def test_the_queue_view_shows_status_filters_and_progress_per_project(client):
    client.post("/label", data=form(client.session, 0, "pppfp", "coverage"), follow_redirects=False)  # pair 1
    client.get("/pair/3?passed=2")  # pair 2 left with `n`
    everything = client.get("/").text
    assert _rows(everything) == [
        ("1", "billing", "stale", "labelled", "ana", "partial"),
        ("2", "billing", "successor", "passed over", "", ""),
        ("3", "search", "pooled", "to do", "", ""),
        ("4", "search", "pooled", "to do", "", ""),
        ("5", "billing", "pooled", "to do", "", ""),
    ]
    # billing: 1 labelled, 1 passed over, 1 to do; search: 2 to do (QUEUE's projects).
    assert re.sub(r"<[^>]+>", " ", re.search(r'<tr id="progress-billing">.*?</tr>', everything).group(0)).split() == [
        "billing",
        "1",
        "1",
        "1",
        "3",
    ]
    assert _rows(client.get("/queue?project=billing&status=to+do").text) == [
        ("5", "billing", "pooled", "to do", "", "")
    ]
    assert [r[0] for r in _rows(client.get("/queue?reason=pooled").text)] == ["3", "4", "5"]
    assert "No pair matches these filters." in client.get("/queue?project=nope").text
    assert "3 of 5 pairs shown" in client.get("/queue?reason=pooled").text


def test_jump_goes_to_a_pair_by_its_number_and_refuses_one_outside_the_queue(client):
    r = client.get("/jump?n=4", follow_redirects=False)
    assert (r.status_code, r.headers["location"]) == (303, "/pair/4")
    assert client.get("/jump?n=9").status_code == 404 and "pairs 1 to 5" in client.get("/jump?n=9").text


def test_a_correction_after_back_appends_a_line_and_says_what_it_replaces(client, world):
    first = form(client.session, 0, "pppfp", "coverage")
    assert client.post("/label", data=first, follow_redirects=False).status_code == 303
    back = client.get("/pair/1").text
    assert 'id="previous">You labelled this pair <strong>partial</strong>' in back
    replaces = re.search(r'name="replaces" value="([^"]+)"', back).group(1)
    r = client.post("/label", data=form(client.session, 0, "ppppp", replaces=replaces), follow_redirects=False)
    assert (r.status_code, r.headers["location"]) == (303, "/pair/2?saved=1")
    assert "replacing <strong>partial</strong>" in client.get("/pair/2?saved=1").text
    # History kept: both lines, the correction last (on a tied ts the later line is the label, 7.2).
    assert [x["label"] for x in written(world)] == ["partial", "relevant"]
    # A double Enter on the correction (the same `replaces`) is refused: one line per intent.
    r = client.post("/label", data=form(client.session, 0, "ppppp", replaces=replaces))
    assert r.status_code == 409 and len(written(world)) == 2


def test_a_form_from_before_a_restart_keeps_its_answers_and_saves_on_the_next_enter(world):
    before = start(world)
    typed = form(before, 2, "ppfpp", "recency", note="the plan page is older")
    after = start(world)  # the server restarted: a new session, a new token
    with TestClient(create_app(after, allowed_hosts=["127.0.0.1"]), base_url=BASE) as c:
        r = c.post("/label", data=typed)
        assert r.status_code == 403 and "Your answers and note are kept below" in r.text
        assert not world.labels.exists()
        page = r.text
        assert 'name="dim_recency" value="fail" checked' in page and "the plan page is older</textarea>" in page
        token = re.search(r'name="token" value="([^"]+)"', page).group(1)
        assert token == after.token
        assert c.post("/label", data={**typed, "token": token}, follow_redirects=False).status_code == 303
    assert [(x["doc_id"], x["label"], x["note"]) for x in written(world)] == [
        ("legal/terms.md", "irrelevant", "the plan page is older")
    ]


def test_the_pair_page_says_what_decided_by_means_in_one_sentence(client):
    page = client.get("/pair/1").text
    sentence = re.search(r'<p class="meta" id="decided-by-meaning">(.*?)</p>', page, flags=re.S).group(1)
    assert " ".join(sentence.split()).startswith("decided by: the one test that settled the label (contract 7.1)")
    assert sentence.count(".") == 2  # one sentence: "7.1" and its full stop


def test_behind_a_reverse_proxy_forms_from_its_public_origin_are_accepted_and_others_refused(world):
    public = "https://label.example.com"
    hosts = ["127.0.0.1", "localhost", "label.example.com"]
    session = start(world)
    # The proxy terminates TLS and passes its Host on: the page sees http://label.example.com.
    with TestClient(
        create_app(session, allowed_hosts=hosts, public_origin=public), base_url="http://label.example.com"
    ) as c:
        refused = c.post("/label", data=form(session, 0, "ppppp"), headers={"origin": "https://evil.example"})
        assert refused.status_code == 403 and not world.labels.exists()
        ok = c.post("/label", data=form(session, 0, "ppppp"), headers={"origin": public}, follow_redirects=False)
        assert ok.status_code == 303 and len(written(world)) == 1
    # Without --public-url the same form is refused: the page cannot tell the proxy from another site.
    other = start(world)
    with TestClient(create_app(other, allowed_hosts=hosts), base_url="http://label.example.com") as c:
        assert c.post("/label", data=form(other, 1, "ppppp"), headers={"origin": public}).status_code == 403


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://label.example.com", "https://label.example.com"),
        ("http://lab.example:8443/", "http://lab.example:8443"),
    ],
)
def test_public_url_is_reduced_to_its_origin(url, origin):
    from goldenset.cli.label import _public_origin

    assert _public_origin(url) == origin


@pytest.mark.parametrize("url", ["label.example.com", "ftp://label.example.com", "https://label.example.com/page"])
def test_a_public_url_that_is_not_an_origin_is_a_usage_error(url):
    from goldenset.cli.label import _public_origin

    with pytest.raises(UsageError, match="--public-url"):
        _public_origin(url)


def test_pair_numbers_are_the_queues_priorities_with_the_pairs_no_rubric_judges_left_unused(world, tmp_path):
    # A rubric for billing alone: the search project's pairs 3 and 4 are left out, and the billing
    # pairs keep their numbers 1, 2 and 5 (not 1, 2, 3).
    rubric = tmp_path / "billing.yaml"
    rubric.write_text(RUBRIC.read_text(encoding="utf-8").replace("as_of:", "projects: [billing]\nas_of:", 1))
    session = open_session("ana", db=world.db, labels=world.labels, rubric=rubric)
    assert [session.number(i) for i in range(len(session.items))] == [1, 2, 5] and session.no_rubric == 2
    assert session.queued == 5  # the labelling queue's count, as `goldenset status` says it
    with TestClient(create_app(session), base_url=BASE) as c:
        page = c.get("/pair/5").text
        assert "pair 5 of 5" in page and "policies/plans.md" in page
        assert 'href="/done?passed=5" id="next"' in page
        assert 'href="/pair/5?passed=2" id="next"' in c.get("/pair/2").text
        missing = c.get("/pair/3")
        assert missing.status_code == 404 and "numbered 1 to 5 with gaps" in missing.text
        view = c.get("/").text
        assert 'id="row-5"' in view and 'id="row-3"' not in view
        assert 'id="no-rubric-count">2<' in view
