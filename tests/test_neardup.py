"""Near-duplicate task merging with the real packaged model (off by default)."""

from __future__ import annotations

from goldenset.build import build_golden_set
from goldenset.corpus import read_corpus
from goldenset.ingest import ingest_all
from goldenset.neardup import plan_merges, query_map
from goldenset.records import normalise_task, query_id
from goldenset.snapshots import store_snapshot
from goldenset.warehouse import connect
from tests.helpers import doc, ranked, serve, verdict, write_corpus, write_log

TASKS = [
    "parse a CSV file with a custom delimiter",
    "parsing a csv file using a custom delimiter",
    "rotate the TLS certificates of the load balancer",
]


def _world(tmp_path):
    logs = tmp_path / "logs"
    lines = []
    for n, task in enumerate(TASKS, start=1):
        lines += [
            serve(f"s{n}", f"2026-11-01T0{n}:00:00Z", task, [ranked("d1", 1), ranked("d2", 2)]),
            verdict(f"s{n}", "d1", "helped", f"2026-11-01T0{n}:05:00Z"),
            verdict(f"s{n}", "d2", "noise", f"2026-11-01T0{n}:05:00Z"),
        ]
    write_log(logs, "2026-11-01", "part-0001.jsonl", lines)
    con = connect(tmp_path / "g.duckdb")
    ingest_all(con, logs)
    store_snapshot(con, read_corpus(write_corpus(tmp_path / "c.jsonl", [doc("d1"), doc("d2")])))
    return con


def test_exact_normalisation_decides_unless_merging_is_on(tmp_path):
    con = _world(tmp_path)
    result = build_golden_set(con)
    assert result.record.n_queries == 3
    assert con.execute("SELECT near_duplicate_merges FROM golden_builds").fetchall() == [(0,)]


def test_close_paraphrases_merge_and_unrelated_tasks_do_not(tmp_path, embedder):
    con = _world(tmp_path)
    merges = plan_merges(con, embedder, threshold=0.8)
    # Equal serve counts, so the text orders them: "parse ..." is the representative.
    assert [(m.task_norm, m.merged_into) for m in merges] == [(normalise_task(TASKS[1]), normalise_task(TASKS[0]))]
    assert 0.8 <= merges[0].cosine <= 1.0
    result = build_golden_set(con, query_map=query_map(merges))
    assert result.record.n_queries == 2
    assert [s.units_left for s in result.funnel if s.step == "repeats"] == [2]
    kept = {r[0] for r in con.execute("SELECT DISTINCT query_id FROM golden_set").fetchall()}
    assert query_id("billing", merges[0].merged_into) in kept
    assert con.execute("SELECT near_duplicate_merges FROM golden_builds WHERE build_id = 1").fetchall() == [(1,)]
    # Vectors are cached by text hash: planning again embeds nothing new.
    before = embedder.texts_embedded
    plan_merges(con, embedder, threshold=0.8)
    assert embedder.texts_embedded == before
