"""The reference hybrid retriever, the embedding cache and the learned graph and boosts."""

from __future__ import annotations

import pytest
from bench_world import DOCS, write_corpus

from goldenset import warehouse
from goldenset.bench import feedback as fb
from goldenset.corpus import read_corpus
from goldenset.embeddings import Embedder, EmbeddingModelError, embed_cached
from goldenset.errors import UsageError
from goldenset.retrieval.reference import HybridRetriever, hybrid
from goldenset.retrieval.retriever import RetrieverContext


@pytest.fixture
def con(tmp_path):
    c = warehouse.connect(tmp_path / "w.duckdb")
    yield c
    c.close()


def _retriever(tmp_path, con, embedder, docs=DOCS, **opts):
    corpus = read_corpus(write_corpus(tmp_path / "corpus.jsonl", docs))
    return HybridRetriever(RetrieverContext(corpus, con, embedder, tmp_path / "index"), **opts)


def test_reindex_embeds_only_new_or_changed_documents(tmp_path, con, embedder):
    first = _retriever(tmp_path, con, embedder).reindex()
    assert first["texts_embedded"] == len(DOCS)
    changed = [(d, t, x + " Now with examples." if d == "billing/refunds" else x) for d, t, x in DOCS]
    changed.append(("new/doc", "New", "A brand new document about feature flags."))
    second = _retriever(tmp_path, con, embedder, changed).reindex()
    assert second["texts_embedded"] == 2
    assert second["lexical_index"] != first["lexical_index"]  # keyed by content
    again = _retriever(tmp_path, con, embedder, changed).reindex()
    assert again == {"lexical_index": second["lexical_index"], "texts_embedded": 0}


def test_the_hybrid_ranks_the_obvious_document_first(tmp_path, con, embedder):
    r = _retriever(tmp_path, con, embedder)
    for query, doc in [
        ("retry webhook deliveries with backoff", "webhooks/retries"),
        ("forgot my password", "auth/password-reset"),
    ]:
        assert r.search(query, 5)[0][0] == doc
        assert r.search_component("dense", query, 3)[0][0] == doc


def test_lexical_side_returns_only_matching_documents(tmp_path, con, embedder):
    r = _retriever(tmp_path, con, embedder)
    hits = r.search_component("lexical", "invoices", 10)
    assert [d for d, _ in hits] == ["billing/invoices"]
    assert r.search_component("lexical", "zebra", 10) == []  # nothing matched, not an error


def test_fusion_is_reciprocal_rank_with_k_60(tmp_path, con, embedder):
    r = _retriever(tmp_path, con, embedder)
    q = "database backups restored weekly"
    lex = [d for d, _ in r.search_component("lexical", q, 100)]
    den = [d for d, _ in r.search_component("dense", q, 100)]
    expected = {d: sum(1 / (60 + lst.index(d) + 1) for lst in (lex, den) if d in lst) for d in set(lex) | set(den)}
    got = dict(r.search(q, 100))
    assert got == pytest.approx(expected)


def test_unknown_component_and_option_are_usage_errors(tmp_path, con, embedder):
    with pytest.raises(UsageError, match="has no component 'sparse'"):
        _retriever(tmp_path, con, embedder).search_component("sparse", "x", 1)
    corpus = read_corpus(write_corpus(tmp_path / "c.jsonl"))
    with pytest.raises(UsageError, match=r"unknown option\(s\) \['alpha'\]"):
        hybrid(RetrieverContext(corpus, con, embedder, tmp_path, {"alpha": 1}))


def test_embed_cached_reuses_vectors_by_text_hash(con, embedder):
    before = embedder.texts_embedded
    v1 = embed_cached(con, ["alpha beta", "gamma", "alpha beta"], embedder)
    assert embedder.texts_embedded - before == 2
    v2 = embed_cached(con, ["gamma", "alpha beta"], embedder)
    assert embedder.texts_embedded - before == 2
    assert v1.shape == (3, 384) and (v2[1] == v1[0]).all()
    assert abs(float((v1[0] ** 2).sum()) - 1.0) < 1e-5


def test_a_missing_model_raises_instead_of_returning_nothing(tmp_path):
    with pytest.raises(EmbeddingModelError, match="does not exist"):
        Embedder(str(tmp_path / "nope")).embed(["text"])


def test_embedder_reads_the_model_path_from_the_environment_lazily(tmp_path, monkeypatch):
    e = Embedder()
    monkeypatch.setenv("GOLDENSET_DENSE_MODEL", str(tmp_path / "elsewhere"))
    assert e.model_path == str(tmp_path / "elsewhere")


# ----------------------------------------------------------------------------- graph and boosts
HELPED = {"q1": frozenset({"a", "b"}), "q2": frozenset({"a", "c"}), "q3": frozenset({"b"})}
ACTIVE = frozenset("abcdz")


def test_graph_links_documents_that_helped_on_the_same_query():
    f = fb.Feedback(HELPED, ACTIVE)
    assert f.neighbours("a") == {"b": 1, "c": 1}
    assert f.neighbours("a", exclude_query="q1") == {"c": 1}


def test_boosts_count_queries_and_leave_one_out():
    f = fb.Feedback(HELPED, ACTIVE)
    assert f.boost("a") == 2 and f.boost("a", "q1") == 1 and f.boost("d") == 0


def test_neighbours_must_be_active():
    f = fb.Feedback(HELPED, frozenset("ab"))
    assert f.neighbours("a") == {"b": 1}


def test_graph_hop_pulls_in_a_neighbour_of_a_top_hit():
    f = fb.Feedback({"q1": frozenset({"a", "z"})}, ACTIVE)
    hits = [("a", 9.0), ("b", 8.0), ("c", 7.0), ("d", 6.0)]
    assert [d for d, _ in fb.rerank(hits, f, graph=True, boosts=False, depth=10)] == ["a", "z", "b", "c", "d"]
    honest = fb.rerank(hits, f, graph=True, boosts=False, depth=10, exclude_query="q1")
    assert [d for d, _ in honest] == ["a", "b", "c", "d"]


def test_boosts_lift_documents_that_helped_before():
    f = fb.Feedback({"q1": frozenset({"c"}), "q2": frozenset({"c"})}, ACTIVE)
    hits = [("a", 3.0), ("b", 2.0), ("c", 1.0)]
    assert [d for d, _ in fb.rerank(hits, f, graph=False, boosts=True, depth=10)] == ["a", "c", "b"]


def test_rerank_without_features_keeps_the_list():
    hits = [("a", 3.0), ("b", 2.0)]
    assert fb.rerank(hits, fb.Feedback({}, ACTIVE), graph=False, boosts=False, depth=1) == [("a", 3.0)]


def test_the_reference_loads_by_its_name_before_the_retrieval_package_and_by_its_own():
    """`--retriever goldenset.bench.reference:hybrid` (scripts and plug-ins written against 0.2)
    still loads the one reference, and a plug-in's `from goldenset.bench.retriever import
    RetrieverContext` still gets the class the benchmark passes."""
    from goldenset.bench.retriever import RetrieverContext as OldContext
    from goldenset.retrieval.retriever import REFERENCE, load_factory

    assert REFERENCE == "goldenset.retrieval.reference:hybrid"
    assert load_factory("goldenset.bench.reference:hybrid") is hybrid
    assert load_factory(REFERENCE) is hybrid
    assert OldContext is RetrieverContext
