"""Long steps report progress through goldenset.progress: the benchmark's queries, embedding a corpus."""

from __future__ import annotations

import pytest
from bench_world import DOCS, QUERIES

from goldenset import progress, warehouse
from goldenset.bench.runner import BenchConfig
from goldenset.bench.service import run_and_store
from goldenset.embeddings import embed_cached


class Recording:
    """A reporter that keeps every step: [description, total, [advances], finished]."""

    def __init__(self):
        self.steps: list[list] = []
        self.notices: list[str] = []

    def start(self, description, total):
        self.steps.append([description, total, [], False])
        return len(self.steps) - 1

    def advance(self, handle, n):
        self.steps[handle][2].append(n)

    def finish(self, handle):
        self.steps[handle][3] = True

    def notice(self, message):
        self.notices.append(message)


@pytest.fixture
def recording():
    rec = Recording()
    previous = progress.set_reporter(rec)
    yield rec
    progress.set_reporter(previous)


@pytest.mark.slow
def test_bench_run_advances_the_benchmark_step_once_per_query(golden, recording):
    run_and_store(
        golden.db,
        golden.corpus,
        BenchConfig(retriever="bench_plugins:keywords", index_dir=golden.index_dir),
        report_dir=golden.root / "r",
    )
    assert recording.steps == [["benchmark queries", len(QUERIES), [1] * len(QUERIES), True]]


@pytest.mark.slow
def test_embedding_a_corpus_reports_each_batch(tmp_path, embedder, recording, monkeypatch):
    monkeypatch.setattr(embedder, "batch_size", 5)
    texts = [f"{title}\n{text}" for _, title, text in DOCS]
    con = warehouse.connect(tmp_path / "w.duckdb")
    try:
        vectors = embed_cached(con, texts, embedder)
        embed_cached(con, texts, embedder)  # all cached: nothing embedded, nothing reported
    finally:
        con.close()
    assert vectors.shape[0] == len(DOCS) == 16
    assert recording.steps == [["embedding texts", 16, [5, 5, 5, 1], True]]


def test_embedding_in_batches_gives_the_vectors_of_one_call(tmp_path, embedder, monkeypatch):
    texts = [f"{title}\n{text}" for _, title, text in DOCS]
    whole = embedder.embed(texts)
    monkeypatch.setattr(embedder, "batch_size", 3)
    batched = embedder.embed(texts)
    assert batched.shape == whole.shape
    assert abs(batched - whole).max() < 1e-5


def test_one_batch_is_not_reported(embedder, recording):
    embedder.embed(["a single query"])
    assert recording.steps == []


def test_a_benchmark_that_fails_mid_way_still_finishes_its_step(golden, recording):
    from goldenset.errors import GoldensetError

    with pytest.raises(GoldensetError) as exc:
        run_and_store(
            golden.db, golden.corpus, BenchConfig(retriever="bench_plugins:fails_on_search", index_dir=golden.index_dir)
        )
    assert recording.steps == [["benchmark queries", len(QUERIES), [1, 1], True]]
    assert type(exc.value) is GoldensetError and exc.value.exit_code == 1
    assert str(exc.value).endswith("search backend went away; nothing was stored, fix the retriever and run again")
