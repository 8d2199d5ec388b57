"""`pool` embeds the golden tasks in one model call, as `bench run` does, not one call per query.

One call per query cost a model call's overhead each: 60 calls took 33 s against 2 s for one
batch on a loaded 2-core machine (the demo's pool). A pool of the lexical ranker alone embeds
nothing at all.
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE.parent / "bench") not in sys.path:
    sys.path.insert(0, str(HERE.parent / "bench"))

import pytest  # noqa: E402
from bench_world import World, build_golden, copy_golden  # noqa: E402

from goldenset import warehouse  # noqa: E402
from goldenset.embeddings import Embedder  # noqa: E402
from goldenset.labelling.pool import run_pool  # noqa: E402

POOLED_AT = datetime(2026, 11, 30, 8, 0, 0)


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> World:
    return build_golden(tmp_path_factory.mktemp("pool-batch") / "g")


def _pool_counting_calls(template, tmp_path, embedder, monkeypatch, rankers) -> tuple[list[list[str]], set[str]]:
    calls: list[list[str]] = []
    original = Embedder._encode

    def counting(self, model, texts):
        calls.append(list(texts))
        return original(self, model, texts)

    monkeypatch.setattr(Embedder, "_encode", counting)
    g = copy_golden(template, tmp_path / "g")
    con = warehouse.connect(g.db)
    try:
        tasks = {t for (t,) in con.execute("SELECT DISTINCT task FROM golden_set").fetchall()}
        run_pool(con, None, embedder, rankers=rankers, index_dir=g.index_dir, now=POOLED_AT)
    finally:
        con.close()
    return calls, tasks


@pytest.mark.slow
def test_the_golden_tasks_are_embedded_in_one_call(template, tmp_path, embedder, monkeypatch):
    calls, tasks = _pool_counting_calls(template, tmp_path, embedder, monkeypatch, ("lexical", "dense", "core"))
    with_tasks = [c for c in calls if set(c) & tasks]
    assert len(tasks) == 6
    assert len(with_tasks) == 1 and set(with_tasks[0]) == tasks, [len(c) for c in with_tasks]


def test_a_lexical_pool_calls_no_model(template, tmp_path, embedder, monkeypatch):
    calls, _ = _pool_counting_calls(template, tmp_path, embedder, monkeypatch, ("lexical",))
    assert calls == []
