"""The set explorer's pages and plot without a browser: filters, errors, the host rule, the SVG's geometry."""

from __future__ import annotations

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
