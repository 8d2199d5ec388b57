"""The labelling page for a team (`goldenset label serve --team`): names, leases, overlap, the panel.

Each annotator is a Starlette TestClient of its own (its own cookie jar) on one real app; the
clock is injected (the team's `clock`), so a lease expires without sleeping.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from goldenset.cli.app import main
from goldenset.cli.label import app as label_app
from goldenset.labelling.agreement import LabelLine, LineOrder, annotator_agreement
from goldenset.labelling.lines import parse_label_line
from goldenset.labelling.rubric import load_rubric
from goldenset.labelling.team import overlap_pairs
from goldenset.labelling.team_page import COOKIE, TeamApp, TeamPage, open_team
from tests.helpers import DIMS, PAGE_DOCS, PAGE_Q1, PAGE_QUEUE, RUBRIC_PATH, page_label, page_warehouse, write_labels

RUBRIC = RUBRIC_PATH
Q1 = PAGE_Q1
BASE = "http://127.0.0.1"

START = datetime(2026, 12, 1, 10, 0, 5)  # naive UTC, as goldenset.clock gives it


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: datetime = START):
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def twenty_pairs() -> list[tuple]:
    """Twenty pooled pairs over four queries (no snapshot holds them: the page says so, which is fine here)."""
    return [
        (k + 1, f"{q:016x}", f"docs/d{k:02d}.md", "v1", "pooled", "billing" if q % 2 else "search", f"task {q}")
        for k, q in enumerate(1 + k // 5 for k in range(20))
    ]


def open_page(tmp_path: Path, queue=PAGE_QUEUE, clock: Clock | None = None, **kw) -> TeamPage:
    db = page_warehouse(tmp_path / "g.duckdb", queue=queue, docs=PAGE_DOCS)
    return open_team(db=db, labels=tmp_path / "labels", rubric=RUBRIC, clock=clock or Clock(), **kw)


def client(page: TeamPage) -> TestClient:
    return TestClient(TeamApp(page, allowed_hosts=["127.0.0.1"]), base_url=BASE)


def sign_in(c: TestClient, name: str) -> None:
    who = c.get("/").text
    token = re.search(r'name="token" value="([^"]+)"', who).group(1)
    r = c.post("/who", data={"token": token, "name": name, "next": "/"}, follow_redirects=False)
    assert (r.status_code, r.headers["location"]) == (303, "/"), r.text


def first_to_do(c: TestClient) -> int | None:
    m = re.search(r'href="/pair/(\d+)" id="continue"', c.get("/").text)
    return int(m.group(1)) if m else None


def label_form(page: TeamPage, n: int, answers: str = "ppppp", decided_by: str = "answerability") -> dict:
    item = page.team.items[n - 1]
    data = {
        "token": page.token,
        "query_id": item.query_id,
        "doc_id": item.doc_id,
        "doc_version": item.doc_version,
        "decided_by": decided_by,
        "note": "",
    }
    data.update({f"dim_{d}": {"p": "pass", "f": "fail"}[a] for d, a in zip(DIMS, answers, strict=True)})
    return data


def lines_of(labels: Path, name: str) -> list[dict]:
    return [json.loads(x) for f in sorted(labels.glob(f"dt=*/page-{name}.jsonl")) for x in f.read_text().splitlines()]


def walk(page: TeamPage, clients: dict[str, TestClient]) -> dict[str, list[int]]:
    """Every annotator in turn opens the first pair offered to them, then each labels the pair they opened."""
    got: dict[str, list[int]] = {name: [] for name in clients}
    while True:
        opened = {}
        for name, c in clients.items():
            n = first_to_do(c)
            if n is not None:
                assert c.get(f"/pair/{n}").status_code == 200
                opened[name] = n
        if not opened:
            return got
        for name, n in opened.items():
            r = clients[name].post("/label", data=label_form(page, n), follow_redirects=False)
            assert r.status_code == 303, r.text
            got[name].append(n)


# --------------------------------------------------------------------------- names


def test_a_name_is_asked_first_kept_in_a_cookie_and_shown_on_the_page(tmp_path):
    page = open_page(tmp_path)
    with client(page) as c:
        who = c.get("/pair/2")
        assert who.status_code == 200 and 'id="who-form"' in who.text
        assert 'name="next" value="/pair/2"' in who.text  # back to what was asked for
        token = re.search(r'name="token" value="([^"]+)"', who.text).group(1)
        r = c.post("/who", data={"token": token, "name": "ana", "next": "/pair/2"}, follow_redirects=False)
        assert (r.status_code, r.headers["location"]) == (303, "/pair/2")
        cookie = r.headers["set-cookie"]
        assert cookie.startswith(f"{COOKIE}=ana;") and "HttpOnly" in cookie and "SameSite=strict" in cookie
        shown = c.get("/pair/2").text
        assert '<strong id="annotator">ana</strong>' in shown and 'id="change-name"' in shown


@pytest.mark.parametrize("name", ["a b", "", "x" * 65, "../etc", "ana;bob"])
def test_a_name_the_annotator_rule_refuses_is_refused_with_the_rule_and_sets_no_cookie(tmp_path, name):
    page = open_page(tmp_path)
    with client(page) as c:
        token = re.search(r'name="token" value="([^"]+)"', c.get("/").text).group(1)
        r = c.post("/who", data={"token": token, "name": name, "next": "/"}, follow_redirects=False)
        assert r.status_code == 400 and "set-cookie" not in r.headers
        assert (
            "cannot be an annotator name: use 1 to 64 letters, digits, &#39;.&#39;, &#39;_&#39; or &#39;-&#39;"
            in r.text
        )
        assert page.sessions == {}


def test_a_cookie_holding_a_name_the_rule_refuses_gets_the_name_form(tmp_path):
    page = open_page(tmp_path)
    with client(page) as c:
        c.cookies.set(COOKIE, "../../x")
        assert 'id="who-form"' in c.get("/").text and page.sessions == {}


def test_the_name_form_refuses_another_site_and_a_missing_token(tmp_path):
    page = open_page(tmp_path)
    with client(page) as c:
        r = c.post("/who", data={"name": "ana"}, headers={"origin": "https://evil.example"})
        assert r.status_code == 403 and "refused a form posted from" in r.text
        r = c.post("/who", data={"name": "ana", "token": "old"})
        assert r.status_code == 403 and page.sessions == {}


def test_a_label_posted_without_a_name_is_not_written_and_says_so(tmp_path):
    page = open_page(tmp_path)
    with client(page) as c:
        r = c.post("/label", data=label_form(page, 1))
        assert r.status_code == 403 and "Not saved" in r.text and 'id="who-form"' in r.text
    assert not (tmp_path / "labels").exists()


# --------------------------------------------------------------------------- handing out


def test_two_annotators_never_get_the_same_pair_without_overlap(tmp_path):
    page = open_page(tmp_path, queue=twenty_pairs())
    with client(page) as ana, client(page) as bob:
        sign_in(ana, "ana")
        sign_in(bob, "bob")
        got = walk(page, {"ana": ana, "bob": bob})
    assert set(got["ana"]).isdisjoint(got["bob"])
    assert sorted(got["ana"] + got["bob"]) == list(range(1, 21))
    assert len(got["ana"]) == len(got["bob"]) == 10  # turn by turn, each takes the next free pair
    written = {(x["query_id"], x["doc_id"]) for x in lines_of(tmp_path / "labels", "ana")}
    assert written.isdisjoint({(x["query_id"], x["doc_id"]) for x in lines_of(tmp_path / "labels", "bob")})


def _smallest_hashes(queue: list[tuple], seed: int, k: int) -> set[int]:
    """The k pairs (1-based numbers) of smallest sha256("<seed>:<query_id>:<doc_id>:<doc_version>"), by hand."""
    digests = {hashlib.sha256(f"{seed}:{q}:{d}:{v}".encode()).hexdigest(): n for n, q, d, v, *_ in queue}
    return {digests[h] for h in sorted(digests)[:k]}


@pytest.mark.parametrize("seed", [0, 7])
def test_with_overlap_the_share_asked_is_labelled_by_two_and_the_seed_chooses_which(tmp_path, seed):
    queue = twenty_pairs()
    page = open_page(tmp_path, queue=queue, overlap=0.25, seed=seed)
    with client(page) as ana, client(page) as bob:
        sign_in(ana, "ana")
        sign_in(bob, "bob")
        got = walk(page, {"ana": ana, "bob": bob})
    both = set(got["ana"]) & set(got["bob"])
    assert len(both) == 5  # 0.25 of 20
    assert both == _smallest_hashes(queue, seed, 5)
    assert set(got["ana"]) | set(got["bob"]) == set(range(1, 21))
    assert len(lines_of(tmp_path / "labels", "ana")) + len(lines_of(tmp_path / "labels", "bob")) == 25


def test_the_overlap_pairs_differ_with_the_seed(tmp_path):
    queue = twenty_pairs()
    assert _smallest_hashes(queue, 0, 5) != _smallest_hashes(queue, 7, 5)
    page = open_page(tmp_path, queue=queue, overlap=0.25, seed=7)
    assert {i + 1 for i in page.team.overlap_pairs} == _smallest_hashes(queue, 7, 5)


@dataclass(frozen=True)
class _Pair:
    query_id: str
    doc_id: str
    doc_version: str
    project: str | None = None
    task: str | None = None
    reason: str = "pooled"


# round(share x pairs) with halves rounded up: 0.5 x 3 = 1.5 gives 2, 0.25 x 2 = 0.5 gives 1 (Python's
# round() would give 0), 1.25 gives 1 and 1.75 gives 2; every product is exact in binary.
@pytest.mark.parametrize(
    ("share", "pairs", "twice"), [(0.5, 3, 2), (0.25, 2, 1), (0.125, 4, 1), (0.25, 5, 1), (0.25, 7, 2), (0.5, 4, 2)]
)
def test_the_overlap_share_rounds_half_up(share, pairs, twice):
    queue = twenty_pairs()[:pairs]
    chosen = overlap_pairs([_Pair(q, d, v) for _, q, d, v, *_ in queue], share, seed=0)
    assert {i + 1 for i in chosen} == _smallest_hashes(queue, 0, twice)


def test_a_lease_ends_after_its_minutes_and_the_pair_is_offered_again(tmp_path):
    clock = Clock()
    page = open_page(tmp_path, clock=clock, lease_minutes=30)
    with client(page) as ana, client(page) as bob:
        sign_in(ana, "ana")
        sign_in(bob, "bob")
        assert ana.get("/pair/1").status_code == 200  # ana holds pair 1 from 10:00:05
        assert first_to_do(bob) == 2
        held = bob.get("/pair/1").text  # opened on purpose: it says who holds it
        assert "ana is labelling this pair (until 10:30 UTC" in held
        r = bob.post("/label", data=label_form(page, 1), follow_redirects=False)
        assert r.status_code == 409 and "not saved: ana is labelling this pair until 10:30 UTC" in r.text
        assert 'name="dim_coverage" value="pass" checked' in r.text  # the answers are kept
        assert lines_of(tmp_path / "labels", "bob") == []
        clock.now = START + timedelta(minutes=30) - timedelta(seconds=1)
        assert first_to_do(bob) == 2
        clock.now = START + timedelta(minutes=30)
        assert first_to_do(bob) == 1  # ana closed the tab: the pair is free again
        assert bob.post("/label", data=label_form(page, 1), follow_redirects=False).status_code == 303
        assert first_to_do(ana) == 2  # and ana is offered the next one


def test_opening_a_pair_again_renews_the_lease_and_opening_another_drops_it(tmp_path):
    clock = Clock()
    page = open_page(tmp_path, clock=clock)
    with client(page) as ana, client(page) as bob:
        sign_in(ana, "ana")
        sign_in(bob, "bob")
        ana.get("/pair/1")
        clock.now = START + timedelta(minutes=20)
        ana.get("/pair/1")  # renewed until 10:40
        clock.now = START + timedelta(minutes=35)
        assert first_to_do(bob) == 2
        ana.get("/pair/3")  # one lease at a time: pair 1 is free again
        assert first_to_do(bob) == 1


def test_passing_over_a_pair_frees_it_for_the_others(tmp_path):
    page = open_page(tmp_path)
    with client(page) as ana, client(page) as bob:
        sign_in(ana, "ana")
        sign_in(bob, "bob")
        nxt = re.search(r'href="([^"]+)" id="next"', ana.get("/pair/1").text).group(1)
        assert nxt == "/pair/2?passed=1"
        assert first_to_do(bob) == 2
        ana.get(nxt)  # n: ana leaves pair 1 and takes pair 2
        assert first_to_do(bob) == 1


def test_a_pair_labelled_by_others_is_not_offered_but_a_deliberate_label_is_written(tmp_path):
    page = open_page(tmp_path)
    with client(page) as ana, client(page) as bob:
        sign_in(ana, "ana")
        sign_in(bob, "bob")
        ana.get("/pair/1")
        assert ana.post("/label", data=label_form(page, 1), follow_redirects=False).status_code == 303
        assert first_to_do(bob) == 2
        shown = bob.get("/pair/1").text
        assert "already has the label it needs, from ana: a label from you adds another opinion" in shown
        assert bob.post("/label", data=label_form(page, 1), follow_redirects=False).status_code == 303
    assert [x["doc_id"] for x in lines_of(tmp_path / "labels", "bob")] == ["policies/refunds.md"]


def test_pairs_labelled_before_the_server_started_count_for_the_team(tmp_path):
    labels = tmp_path / "labels"
    write_labels(
        labels, "2026-11-20", "page-cy.jsonl", [page_label(Q1, "policies/refunds.md", "2023-03-14", annotator="cy")]
    )
    page = open_page(tmp_path)
    with client(page) as ana:
        sign_in(ana, "ana")
        assert first_to_do(ana) == 2
        rows = re.findall(
            r'<tr id="row-(\d+)">.*?class="status-([a-z-]+)">.*?<td>([^<]*)</td>', ana.get("/").text, re.S
        )
        assert rows[0] == ("1", "labelled", "cy")


# --------------------------------------------------------------------------- the panel


def _panel(page_text: str) -> dict[str, tuple[str, ...]]:
    rows = re.findall(r'<tr id="(annotator-[^"]+|agreement-[^"]+)">(.*?)</tr>', page_text, re.S)
    return {
        rid: tuple(re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", body, re.S))
        for rid, body in rows
    }


def _read_back(labels: Path) -> list[LabelLine]:
    rubric = load_rubric(RUBRIC)
    out = []
    for f in sorted(labels.glob("dt=*/*.jsonl")):
        for n, raw in enumerate(f.read_bytes().splitlines(), 1):
            rec = parse_label_line(raw, rubric)
            out.append(
                LabelLine(
                    rec.annotator,
                    "human",
                    rec.query_id,
                    rec.doc_id,
                    rec.doc_version,
                    rec.label,
                    rec.decided_by,
                    rec.ts.replace(tzinfo=UTC),
                    LineOrder(f.parent.name[3:], f.name, n),
                )
            )
    return out


def test_the_panel_counts_each_annotator_and_its_agreement_is_agreement_py_on_the_same_lines(tmp_path):
    labels = tmp_path / "labels"
    # Before the server: ana and bob both labelled pairs 1 and 2; bob's later line on pair 2 corrects his first.
    write_labels(
        labels,
        "2026-11-20",
        "page-ana.jsonl",
        [
            page_label(Q1, "policies/refunds.md", "2023-03-14", "relevant", annotator="ana"),
            page_label(Q1, "policies/refunds-v2.md", "v1", "relevant", annotator="ana"),
        ],
    )
    write_labels(
        labels,
        "2026-11-20",
        "page-bob.jsonl",
        [
            page_label(Q1, "policies/refunds.md", "2023-03-14", "relevant", annotator="bob"),
            page_label(Q1, "policies/refunds-v2.md", "v1", "irrelevant", annotator="bob"),
            page_label(
                Q1, "policies/refunds-v2.md", "v1", "partial", "coverage", annotator="bob", ts="2026-11-21T09:00:00Z"
            ),
        ],
    )
    page = open_page(tmp_path, overlap=1.0)  # every pair wants two labels
    with client(page) as ana, client(page) as bob:
        sign_in(ana, "ana")
        sign_in(bob, "bob")
        for n, a, b in ((3, "pppfp", "pppfp"), (4, "fpppp", "fpppp")):  # both: partial, then irrelevant
            ana.get(f"/pair/{n}")
            decided = "coverage" if a == "pppfp" else "answerability"
            assert ana.post("/label", data=label_form(page, n, a, decided), follow_redirects=False).status_code == 303
            bob.get(f"/pair/{n}")
            assert bob.post("/label", data=label_form(page, n, b, decided), follow_redirects=False).status_code == 303
        ana.get("/pair/5")
        text = bob.get("/").text
    shown = _panel(text)
    assert "1 of 5 pairs left" in text
    # Planned and done apart: every pair is planned for agreement, four of them have two labels so far.
    assert _text(text, "overlap-planned") == "5" and _text(text, "overlap-done") == "4"
    # ana: relevant, relevant, partial, irrelevant; bob: relevant, partial, partial, irrelevant.
    # By hand: po = 3/4, pe = 2/4*1/4 + 1/4*2/4 + 1/4*1/4 = 5/16, kappa = (12/16 - 5/16) / (11/16) = 7/11.
    (expected,) = annotator_agreement(_read_back(labels))
    assert expected.agreement.kappa == Fraction(7, 11) and expected.agreement.po == Fraction(3, 4)
    j = expected.to_json()
    assert shown["agreement-ana-bob"] == ("ana and bob", str(j["n"]), f"{j['po']:.4f}", f"{j['kappa']:.4f}")
    assert shown["agreement-ana-bob"] == ("ana and bob", "4", "0.7500", "0.6364")
    assert shown["annotator-ana"] == ("ana", "4", "pair 5")
    assert shown["annotator-bob"] == ("bob", "4", "")


def _text(html: str, element_id: str) -> str:
    m = re.search(rf'id="{element_id}">([^<]*)<', html)
    assert m is not None, element_id
    return m.group(1)


def test_the_panel_says_so_before_any_pair_has_two_labels(tmp_path):
    page = open_page(tmp_path)
    with client(page) as ana:
        sign_in(ana, "ana")
        text = ana.get("/").text
        assert 'id="no-agreement"' in text and "5 of 5 pairs left" in text
        assert _panel(text)["annotator-ana"] == ("ana", "0", "")


# --------------------------------------------------------------------------- the command line


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--overlap", "0.1"], "Error: --overlap is for a team; add --team"),
        (["--lease-minutes", "5", "--seed", "3"], "Error: --seed, --lease-minutes are for a team; add --team"),
        (
            ["--team", "--annotator", "ana"],
            "Error: --team lets each person choose their name in the page; drop --annotator",
        ),
        (["--team", "--overlap", "1.5"], "Error: --overlap must be a share from 0 to 1"),
        (["--team", "--lease-minutes", "0"], "Error: --lease-minutes must be more than 0, got 0.0"),
    ],
)
def test_team_options_out_of_place_are_wrong_usage(tmp_path, capsys, args, message):
    db = page_warehouse(tmp_path / "g.duckdb")
    code = main(
        ["serve", "--db", str(db), "--labels", str(tmp_path / "l"), "--rubric", str(RUBRIC), *args],
        application=label_app,
    )
    assert code == 2
    assert capsys.readouterr().err.startswith(message)


@pytest.mark.slow
def test_serve_team_prints_the_url_and_the_overlap_then_serves_two_people(tmp_path):
    import subprocess
    import sys

    import httpx

    db = page_warehouse(tmp_path / "g.duckdb", queue=twenty_pairs())
    labels = tmp_path / "labels"
    code = (
        "import sys\nfrom goldenset.cli.app import main\nfrom goldenset.cli.label import app\n"
        "sys.exit(main(sys.argv[1:], application=app))\n"
    )
    args = ["serve", "--team", "--overlap", "0.1", "--seed", "3", "--lease-minutes", "5", "--port", "0"]
    args += ["--db", str(db), "--labels", str(labels), "--rubric", str(RUBRIC)]
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        m = re.fullmatch(
            r"labelling page for a team: (http://127\.0\.0\.1:\d+/) \(each person chooses a name there\)\n", first
        )
        assert m, first + (proc.stderr.read() if proc.poll() is not None and proc.stderr else "")
        assert proc.stdout.readline() == (
            "20 pairs queued, 2 of them to be labelled twice (--overlap 0.1, seed 3); a pair opened is held 5 "
            f"minutes; label lines go to {labels}/dt=<UTC day>/page-<name>.jsonl\n"
        )
        assert proc.stdout.readline() == f"the set explorer (read-only): {m.group(1)}set (after choosing a name)\n"
        assert proc.stdout.readline() == "Ctrl+C stops the page.\n"
        opened = []
        for name in ("ana", "bob"):
            with httpx.Client(base_url=m.group(1), timeout=60) as c:
                assert 'id="who-form"' in c.get("/set/builds").text  # the explorer, behind the name too
                token = re.search(r'name="token" value="([^"]+)"', c.get("/").text).group(1)
                assert c.post("/who", data={"token": token, "name": name, "next": "/"}).status_code == 303
                builds = c.get("/set/builds")
                assert builds.status_code == 200 and 'id="who-form"' not in builds.text
                n = int(re.search(r'href="/pair/(\d+)" id="continue"', c.get("/").text).group(1))
                assert c.get(f"/pair/{n}").status_code == 200
                opened.append(n)
                item = twenty_pairs()[n - 1]
                data = {"token": token, "query_id": item[1], "doc_id": item[2], "doc_version": item[3]}
                data |= {"decided_by": "answerability"} | {f"dim_{d}": "pass" for d in DIMS}
                assert c.post("/label", data=data).status_code == 303
                assert proc.stdout.readline().startswith(
                    f"{name} labelled {item[1]} {item[2]}@v1: relevant (decided by answerability) ["
                )
        assert opened == [1, 2]  # pair 1 is labelled and not one of seed 3's two overlap pairs: bob gets pair 2
    finally:
        proc.terminate()
        proc.wait(60)
    assert [x["doc_id"] for x in lines_of(labels, "ana")] == ["docs/d00.md"]
    assert [x["doc_id"] for x in lines_of(labels, "bob")] == ["docs/d01.md"]
