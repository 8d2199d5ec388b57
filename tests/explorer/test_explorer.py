"""The set explorer's pages and plot without a browser: filters, errors, the host rule, the SVG's geometry."""

from __future__ import annotations

import html
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.testclient import TestClient
from story_world import QID

from goldenset.explorer.plot import HEIGHT, MARGIN, difference_bars
from goldenset.explorer.routes import explorer_routes, timeline

pytestmark = pytest.mark.slow  # the story world's first test pays for it

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def client(story):
    app = Starlette(
        routes=explorer_routes(story.db),
        middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=["127.0.0.1", "testserver"])],
    )
    return TestClient(app)


def _listed(client, **params) -> set[str]:
    r = client.get("/set", params=params)
    assert r.status_code == 200
    return {qid for qid in QID.values() if f'data-query="{qid}"' in r.text}


def test_each_filter_keeps_exactly_the_queries_it_names(client):
    assert _listed(client) == {QID[n] for n in ("RESET", "GDB", "REFUND", "EXPENSES", "VPN")}
    assert _listed(client, status="in") == {QID["RESET"], QID["GDB"]}
    assert _listed(client, status="left") == {QID["REFUND"], QID["EXPENSES"], QID["VPN"]}
    assert _listed(client, project="debian") == {QID["GDB"]}
    assert _listed(client, source="human") == {QID["GDB"]}
    assert _listed(client, source="log") == {QID["RESET"], QID["GDB"]}
    assert _listed(client, audit="yes") == {QID["RESET"], QID["GDB"]}  # the audit drew 2 of the 2 golden queries
    assert _listed(client, stale="yes") == set()
    assert _listed(client, q="REFUND window") == {QID["REFUND"]}
    assert _listed(client, q=QID["VPN"][:6]) == {QID["VPN"]}


def test_bad_requests_get_a_page_saying_what_to_do(client):
    r = client.get("/set", params={"source": "robot"})
    assert r.status_code == 400 and "source &#39;robot&#39; is not one of log, human, judge" in r.text
    r = client.get("/set/query/0123456789abcdef")
    assert r.status_code == 404 and "no serve, label or label history names query 0123456789abcdef" in r.text
    r = client.get("/set/compare", params={"a": "run-1-words", "b": "nope"})
    assert r.status_code == 400 and "no benchmark run &#39;nope&#39;" in r.text
    assert client.get("/set", headers={"host": "attacker.example"}).status_code == 400


def test_a_build_holding_the_warehouse_gets_a_page_asking_to_reload(story, client):
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys; c = duckdb.connect(sys.argv[1]); print('held', flush=True); input()",
        ]
        + [str(story.db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        r = client.get("/set/builds")
        assert r.status_code == 503 and "reload this page in a moment" in r.text
    finally:
        holder.communicate("\n", timeout=60)
    assert client.get("/set/builds").status_code == 200


def test_the_comparison_page_plots_every_query_both_runs_measured(client, story):
    r = client.get("/set/compare", params={"a": story.runs[0], "b": story.runs[1], "metric": "recall@1"})
    assert r.status_code == 200
    svg = ET.fromstring(r.text[r.text.index("<svg") : r.text.index("</svg>") + 6])
    bars = [rect.get("data-query") for rect in svg.iter(SVG + "rect") if rect.get("class") == "diff-bar"]
    assert sorted(bars) == sorted([QID["RESET"], QID["GDB"]])
    assert 'id="n-run-comparison"' in r.text  # issue 42's place


def _comparison(diffs, lo, hi):
    rows = [{"query_id": f"q{i}", "task": f"t{i}", "a": 0.5, "b": 0.5 + d, "diff": d} for i, d in enumerate(diffs)]
    mean = sum(diffs) / len(diffs)
    paired = {"n": len(diffs), "diff": mean, "lo": lo, "hi": hi, "verdict": "x", "mean_a": 0.5, "mean_b": 0.5 + mean}
    return {"metric": "recall@5", "queries": rows, "paired": paired}


def test_bars_are_drawn_to_scale_from_zero_and_the_interval_band_spans_lo_to_hi():
    c = _comparison([-0.75, 0.25, 0.5], -0.5, 0.5)
    svg = ET.fromstring(difference_bars(c, 1))
    bars = [r for r in svg.iter(SVG + "rect") if r.get("class") == "diff-bar"]
    heights = [float(b.get("height")) for b in bars]
    # Axis: from -0.75 to 0.5, padded by a tenth of its 1.25 span: 1.5 across the plot's height.
    top, _, bottom, _ = MARGIN
    per_unit = (HEIGHT - top - bottom) / 1.5
    assert heights == pytest.approx([0.75 * per_unit, 0.25 * per_unit, 0.5 * per_unit], abs=0.1)
    assert [b.get("fill") for b in bars] == ["#b3261e", "#1f7a3a", "#1f7a3a"]  # worse red, better green
    band = next(r for r in svg.iter(SVG + "rect") if r.get("id") == "interval")
    assert float(band.get("height")) == pytest.approx(1.0 * per_unit, abs=0.1)
    zero_y = top + (0.5 + 0.125) * per_unit
    assert float(bars[1].get("y")) + float(bars[1].get("height")) == pytest.approx(zero_y, abs=0.1)


def test_a_metric_without_direction_is_drawn_grey_and_one_query_has_no_band():
    svg = ET.fromstring(difference_bars(_comparison([0.25], None, None), 0))
    assert [r.get("fill") for r in svg.iter(SVG + "rect")] == ["#6b7580"]


def test_the_timeline_shows_what_each_build_held_a_repeat_holding_its_labels_build():
    history = [
        {"doc_id": "d", "source": "log", "verdict": "helped", "label": None, "doc_version": "v1",
         "stale_reason": None, "valid_from_build": 1, "valid_to_build": 3},
        {"doc_id": "d", "source": "human", "verdict": None, "label": "irrelevant", "doc_version": "v1",
         "stale_reason": None, "valid_from_build": 3, "valid_to_build": None},
    ]  # fmt: skip
    # Build 2 repeats build 1; build 4 repeats build 3.
    t = timeline(history, [(1, 1), (2, 1), (3, 3), (4, 3)])
    assert t["builds"] == [1, 2, 3, 4]
    assert [c["value"] for c in t["rows"][0]["cells"]] == ["helped", "helped", "human:irrelevant", "human:irrelevant"]
    assert [c["positive"] for c in t["rows"][0]["cells"]] == [True, True, False, False]


def test_a_warehouse_older_than_the_explorer_gets_a_page_saying_what_to_run(story, client):
    import duckdb

    con = duckdb.connect(str(story.db))  # plain DuckDB: take the warehouse back to before v5
    con.execute("DROP VIEW golden_queries")
    con.close()
    r = client.get("/set")
    assert r.status_code == 404 and "run `goldenset build` once to upgrade it" in r.text


def _stored_runs(path, n_queries: int = 12) -> list[str]:
    """Three runs stored by hand over 12 queries, seeded values: differences with spread, so the raw and
    the corrected p-values differ (the story world's two queries give p of 0 or 1 only)."""
    import random
    from datetime import datetime

    from goldenset import warehouse
    from goldenset.bench.runs import store_run
    from tests.helpers import hand_made_run

    rng = random.Random(7)
    names = ["recall@5", "ndcg@10", "mrr"]
    queries = [f"{i:016x}" for i in range(n_queries)]
    con = warehouse.connect(path)
    try:
        ids = []
        for run_no, shift in enumerate((0.0, 0.08, 0.2)):
            values = {q: {m: min(1.0, max(0.0, 0.4 + shift + rng.gauss(0, 0.2))) for m in names} for q in queries}
            started = datetime(2026, 1, 1, 12, run_no, 0)
            run = hand_made_run(
                f"run{run_no}",
                started,
                {"core": values},
                retriever=f"plugin:r{run_no}",
                metric_names=names,
                labels_build_id=1,
            )
            store_run(con, run)
            ids.append(run.run_id)
        return ids
    finally:
        con.close()


def _per_query(db, run_id: str) -> dict[str, dict[str, float]]:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute(
            "SELECT metric, query_id, value FROM benchmark_results WHERE run_id = ? AND row_name = 'core' "
            "AND query_id <> 'all'",
            [run_id],
        ).fetchall()
    finally:
        con.close()
    out: dict[str, dict[str, float]] = {}
    for metric, qid, value in rows:
        out.setdefault(metric, {})[qid] = value
    return out


def test_several_runs_are_compared_as_bench_compare_does_against_scipy_and_statsmodels(tmp_path):
    from itertools import combinations

    from scipy.stats import ttest_rel
    from statsmodels.stats.multitest import multipletests

    db = tmp_path / "runs.duckdb"
    ids = _stored_runs(db)
    client = TestClient(Starlette(routes=explorer_routes(db)))
    r = client.get("/set/compare-runs", params=[("run", i) for i in ids])
    assert r.status_code == 200
    page = r.text
    start = page.index('<table id="comparisons">')
    rows = page[start : page.index("</table>", start)]
    shown = {}
    for tr in rows.split("<tr data-metric=")[1:]:
        metric, a, b = (tr.split('"')[i] for i in (1, 3, 5))
        cells = [html.unescape(c.split("</td>")[0]) for c in tr.split('<td class="num">')[1:]]
        shown[metric, a, b] = cells  # B - A, interval, p, p corrected
    values = {i: _per_query(db, i) for i in ids}
    family = [(m, a, b) for m in ("recall@5", "ndcg@10", "mrr") for a, b in combinations(ids, 2)]
    assert sorted(shown) == sorted(family) and "<svg" in page
    raw = []
    for m, a, b in family:
        queries = sorted(values[a][m])
        diffs = [values[b][m][q] - values[a][m][q] for q in queries]
        assert float(shown[m, a, b][0]) == pytest.approx(sum(diffs) / len(diffs), abs=5e-5)
        raw.append(ttest_rel([values[b][m][q] for q in queries], [values[a][m][q] for q in queries]).pvalue)
    holm = multipletests(raw, alpha=0.05, method="holm")[1]
    assert any(abs(h - p) > 1e-3 for p, h in zip(raw, holm, strict=True))  # the correction shows
    for key, p, ph in zip(family, raw, holm, strict=True):
        for text, want in ((shown[key][2], p), (shown[key][3], ph)):
            assert (text == "<0.0001") if want < 0.00005 else (float(text) == pytest.approx(want, abs=5e-5)), key


def test_a_comparison_of_several_runs_refuses_what_it_cannot_compare(client, story):
    a, b = story.runs
    cases = [
        ([("run", a)], "choose at least two runs"),
        ([("run", a), ("run", "nope")], "no benchmark run &#39;nope&#39;"),
        ([("run", a), ("run", b), ("baseline", "other")], "the baseline &#39;other&#39; is not one of the runs"),
        ([("run", a), ("run", b), ("test", "z")], "test &#39;z&#39; is not one of t, randomization"),
    ]
    for params, message in cases:
        r = client.get("/set/compare-runs", params=params)
        assert r.status_code == 400 and message in r.text


def test_the_two_run_page_draws_both_means_and_links_to_the_comparison_of_several(client, story):
    r = client.get("/set/compare", params={"a": story.runs[0], "b": story.runs[1], "metric": "recall@1"})
    section = r.text[r.text.index('id="n-run-comparison"') :]
    assert "<svg" in section.split("</section>")[0] and "/set/runs#compare-runs" in section
    runs_page = client.get("/set/runs").text
    assert 'action="/set/compare-runs"' in runs_page and runs_page.count('name="run"') == 2


def test_in_team_mode_the_explorer_needs_the_name_the_token_protected_form_gives(story):
    from goldenset.explorer.routes import PREFIX
    from goldenset.labelling.team_page import COOKIE, TeamApp, open_team
    from tests.helpers import RUBRIC_PATH

    page = open_team(db=story.db, labels=story.labels, rubric=RUBRIC_PATH)
    app = TeamApp(page, allowed_hosts=["127.0.0.1"], extra_routes=explorer_routes(story.db), explorer_link=PREFIX)
    every_page = ["/set", f"/set/query/{QID['GDB']}", "/set/builds", "/set/runs"]
    every_page.append(f"/set/compare?a={story.runs[0]}&b={story.runs[1]}")
    with TestClient(app, base_url="http://127.0.0.1") as c:
        # No name: every explorer page answers with the name form, and nothing of the set.
        for path in every_page:
            r = c.get(path)
            assert r.status_code == 200 and 'id="who-form"' in r.text, path
            shown = r.text.replace(f'name="next" value="{html.escape(path)}"', "")  # where to go once named
            assert not any(qid in shown for qid in QID.values()), path
            assert "kept by" not in shown and story.runs[0] not in shown, path
        token = re.search(r'name="token" value="([^"]+)"', c.get("/set").text).group(1)
        assert token == page.token
        # A name form without the server's per-run token sets no name: still no set.
        for form in ({"name": "ana", "next": "/set"}, {"name": "ana", "next": "/set", "token": "guessed"}):
            r = c.post("/who", data=form, follow_redirects=False)
            assert r.status_code == 403 and "set-cookie" not in r.headers
        assert 'id="who-form"' in c.get("/set").text and page.sessions == {}
        # With it: the name is kept and the browser goes on to the explorer page it asked for.
        r = c.post("/who", data={"token": token, "name": "ana", "next": "/set?status=in"}, follow_redirects=False)
        assert (r.status_code, r.headers["location"]) == (303, "/set?status=in")
        assert c.cookies.get(COOKIE) == "ana"
        r = c.get(r.headers["location"])
        assert r.status_code == 200 and 'id="who-form"' not in r.text
        assert {q for q in QID.values() if f'data-query="{q}"' in r.text} == {QID["RESET"], QID["GDB"]}
        for path in every_page:
            assert c.get(path).status_code == 200, path
        assert "kept by a human positive only" in c.get(f"/set/query/{QID['GDB']}").text
        assert 'href="/set" id="nav-set"' in c.get("/").text  # the labelling page links to it
        # Read-only, and under the team's host rule, with a name or without.
        assert c.post("/set", data={"token": token}).status_code == 405
        assert c.get("/set", headers={"host": "attacker.example"}).status_code == 400
        c.cookies.clear()
        assert c.get("/set", headers={"host": "attacker.example"}).status_code == 400
