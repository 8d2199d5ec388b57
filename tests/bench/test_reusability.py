"""Leave-one-run-out (Zobel 1998) on a hand-made case, and `goldenset pool report --leave-one-out`.

Expected values are worked out by hand below; Kendall's tau of two rankers in swapped
order is -1 by definition.
"""

from __future__ import annotations

import json
import math
import sys
from datetime import datetime
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
LABELLING = HERE.parent / "labelling"
if str(LABELLING) not in sys.path:
    sys.path.insert(0, str(LABELLING))

from pool_rankers import Q1, Q2, build_world  # noqa: E402

from goldenset import warehouse  # noqa: E402
from goldenset.bench.reusability import leave_one_out  # noqa: E402
from goldenset.bench.runs import store_run  # noqa: E402
from goldenset.cli.app import main  # noqa: E402
from goldenset.cli.pool import app as pool_app  # noqa: E402
from goldenset.errors import UsageError  # noqa: E402
from tests.helpers import hand_made_run  # noqa: E402

QRELS = {"q": {"x": 1, "y": 1, "z": 0}}
RANKINGS = {"A": {"q": ["x", "z", "w"]}, "B": {"q": ["y", "x"]}}


def test_leaving_out_the_only_finder_of_a_relevant_document_by_hand():
    result = leave_one_out(RANKINGS, QRELS, depth=2, metric="map")
    # Before: A finds x at 1 of R = 2 -> AP 1/2; B finds y at 1 and x at 2 -> (1/1 + 2/2) / 2 = 1.
    assert result.before == {"A": pytest.approx(0.5), "B": pytest.approx(1.0)}
    rows = {r.ranker: r for r in result.rows}
    # A contributed nothing only it found (x is B's too, z is not relevant): nothing changes.
    assert rows["A"].unique_relevant == 0
    assert rows["A"].largest_change == 0 and rows["A"].kendall_tau == pytest.approx(1.0)
    # B alone found y. Without it R = 1: A's AP is 1, B's is 1/2 (x at 2); the order flips.
    assert rows["B"].unique_relevant == 1
    assert (rows["B"].own_before, rows["B"].own_after) == (pytest.approx(1.0), pytest.approx(0.5))
    assert rows["B"].largest_change == pytest.approx(-0.5) and rows["B"].largest_change_ranker == "B"
    assert rows["B"].kendall_tau == pytest.approx(-1.0)


def test_one_ranker_has_no_tau_and_bad_input_is_a_usage_error():
    assert math.isnan(leave_one_out({"A": RANKINGS["A"]}, QRELS, depth=2).rows[0].kendall_tau)
    with pytest.raises(UsageError):
        leave_one_out(RANKINGS, QRELS, depth=0)
    with pytest.raises(UsageError, match="no relevant document"):
        leave_one_out(RANKINGS, {"q": {"z": 0}})


def _store(db, run_id: str, retriever: str, ranking: dict[str, list[str]]) -> None:
    run = hand_made_run(
        run_id,
        datetime(2026, 11, 30, 8, 0, int(run_id[-1])),
        {"core": {q: {"recall@5": 0.0} for q in ranking}},
        retriever=retriever,
        ranking=ranking,
    )
    con = warehouse.connect(db)
    try:
        store_run(con, run)
    finally:
        con.close()


def test_pool_report_leave_one_out_over_stored_runs(tmp_path, capsys):
    world = build_world(tmp_path / "w")
    # Golden relevant labels: Q1 a and b, Q2 n; k is noise.
    _store(world.db, "run1", "x:one", {Q1: ["a", "j"], Q2: ["n"]})
    _store(world.db, "run2", "y:two", {Q1: ["b", "a"], Q2: ["k", "n"]})
    code = main(["report", "--leave-one-out", "--db", str(world.db), "--depth", "1", "--json"], application=pool_app)
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    rows = {r["ranker"]: r for r in out["rows"]}
    # At depth 1, x:one alone found Q1 a and Q2 n; y:two alone found Q1 b (k is not relevant).
    assert (rows["x:one"]["unique_relevant"], rows["y:two"]["unique_relevant"]) == (2, 1)
    assert out["queries"] == 2 and out["metric"] == "map"
    assert main(["report", "--db", str(world.db)], application=pool_app) == 2
